"""The headers serve.py sends: the Content-Security-Policy (with the hashes of a page's
inline scripts), cross-origin isolation, caching, and content types."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from pathlib import Path

# Content-Security-Policy. Everything must come from this origin. A CSP applies to the
# document or worker whose response carries it, so the page and the agent worker each get
# their own, and each extra keyword is the minimum that was found to be needed:
#
#   'wasm-unsafe-eval'   WebAssembly.instantiate*() of micropython.wasm (page) and
#                        pyodide.asm.wasm (worker). Without it neither interpreter starts.
#   (no 'unsafe-eval')   no JavaScript eval anywhere. PyScript compiles the hooks it gives
#                        its own workers with Function(); index.html clears its one
#                        default worker hook (the page runs no PyScript worker), so
#                        nothing is compiled from a string.
#   'sha256-…'           the page only: index.html's small inline scripts (one starts the
#                        worker before PyScript is up, saving ~0.5 s of boot). The server
#                        hashes the inline scripts of each HTML file it serves, so exactly
#                        those and no others may run.
#   style-src 'self'     no inline styles: PyScript styles its error banner through the
#                        CSSOM (element.style), which CSP does not restrict.
#   worker-src 'self'    the agent worker is a same-origin module script; blob: for the
#     blob:              in-page model's threads, which llama.cpp's worker starts from the
#                        Blob of its code (the worker itself starts from a file:
#                        web/page_model/llama_worker_file.js; an extension, with no blob:,
#                        runs the model on one thread).
#   connect-src 'self'   fetch() of the manifest, stdlib zip, lock file and wheels; plus
#                        the origin of --model-url's server when the worker reaches it
#                        directly (not when serve.py proxies it): that origin only.
#   img-src 'self' data: the page's empty data: icon (so no request for /favicon.ico).
# Everything else is closed: no plugins, no <base>, no framing, forms post only here.
_CSP_COMMON = [
    "worker-src 'self' blob:",
    "connect-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
]
# For HTML documents (the page); {hashes} are those of the document's inline scripts.
CSP_PAGE = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'{hashes}",
    "style-src 'self'",
    *_CSP_COMMON,
])
# For everything else, which matters for the agent worker's script.
CSP = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    *_CSP_COMMON,
])

SECURITY_HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

CACHE_IMMUTABLE = "public, max-age=31536000, immutable"
CACHE_REVALIDATE = "no-cache"

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "application/javascript; charset=utf-8",
    ".mjs": "application/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".tar": "application/x-tar",
    ".py": "text/x-python; charset=utf-8",
    ".toml": "application/toml; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script\s*>",
                            re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=32)
def _hashes_of(path: Path, mtime_ns: int) -> tuple[str, ...]:
    html = path.read_text(encoding="utf-8")
    return tuple(
        "sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        for body in _INLINE_SCRIPT.findall(html) if body.strip())


def inline_script_hashes(path: Path) -> tuple[str, ...]:
    """CSP hash sources of the inline <script> elements of an HTML file."""
    try:
        return _hashes_of(path, path.stat().st_mtime_ns)
    except OSError:
        return ()
