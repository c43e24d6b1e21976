"""The headers serve.py sends: the Content-Security-Policy (with the hashes of a page's
inline scripts), cross-origin isolation, caching, and content types."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

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
#   'sha256-…'           a page only: index.html's small inline scripts (one starts the
#                        worker before PyScript is up, saving ~0.5 s of boot). Each home
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
#                        directly (not when serve.py proxies it), of the --gguf URLs, and
#                        of the --mcp tool servers: those origins only.
#   img-src 'self' data: the page's empty data: icon (so no request for /favicon.ico);
#     blob:              blob: for an attachment's thumbnail, drawn from its Blob
#                        (URL.createObjectURL), never from markup.
#   media-src 'self'     blob: to play a recording back from its Blob.
#     blob:
# Everything else is closed: no plugins, no <base>, no framing, forms post only here.
# Each home (serving/http_server.py, serving/static_build.py, serving/extension_build.py)
# calls content_security_policy() with its page's hashes and its extra origins.

# The policy as data: each directive and its sources, in the order they are written.
DIRECTIVES: dict[str, tuple[str, ...]] = {
    "default-src": ("'self'",),
    "script-src": ("'self'", "'wasm-unsafe-eval'"),
    "style-src": ("'self'",),
    "worker-src": ("'self'", "blob:"),
    "connect-src": ("'self'",),
    "img-src": ("'self'", "data:", "blob:"),
    "media-src": ("'self'", "blob:"),
    "font-src": ("'self'",),
    "object-src": ("'none'",),
    "base-uri": ("'none'",),
    "form-action": ("'self'",),
    "frame-ancestors": ("'none'",),
}
# Directives a <meta> policy cannot carry (browsers ignore them there, with a warning).
META_IGNORED = ("frame-ancestors", "report-uri", "report-to", "sandbox")
# An extension's pages: web pages cannot frame them anyway (they are not web-accessible),
# so 'frame-ancestors' would only risk the side panel's own host; and Manifest V3
# refuses to load an extension whose pages' policy names blob: among the worker sources
# (measured in Chromium 156: the extension does not load at all).
EXTENSION_DROPS = ("frame-ancestors",)
EXTENSION_WORKER_SOURCES = ("'self'",)


@dataclass(frozen=True)
class Policy:
    """A Content-Security-Policy as data: its directives and their sources, in order.
    ``str()`` is the header's text; :meth:`meta` and :meth:`extension` the forms a
    ``<meta>`` element and an extension's manifest take."""

    directives: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def of(cls, directives: Mapping[str, Iterable[str]]) -> "Policy":
        return cls(tuple((name, tuple(sources)) for name, sources in directives.items()))

    @classmethod
    def parse(cls, text: str) -> "Policy":
        """A policy from its text (``"default-src 'self'; img-src data:"``)."""
        directives: dict[str, tuple[str, ...]] = {}
        for part in text.split(";"):
            if not part.strip():
                continue
            name, *sources = part.split()
            if name.lower() not in directives:   # as browsers do: the first one counts
                directives[name.lower()] = tuple(sources)
        return cls.of(directives)

    def sources(self, directive: str) -> tuple[str, ...]:
        return dict(self.directives).get(directive, ())

    def adding(self, directive: str, sources: Iterable[str]) -> "Policy":
        """This policy with ``sources`` after ``directive``'s own (each once)."""
        current = dict(self.directives)
        added = list(current.get(directive, ()))
        for source in sources:
            if source not in added:
                added.append(source)
        current[directive] = tuple(added)
        return Policy.of(current)

    def replacing(self, directive: str, sources: Iterable[str]) -> "Policy":
        return Policy.of({**dict(self.directives), directive: tuple(sources)})

    def without(self, names: Iterable[str]) -> "Policy":
        names = set(names)
        return Policy(tuple(d for d in self.directives if d[0] not in names))

    def meta(self) -> str:
        """The form a ``<meta http-equiv>`` takes: without what it cannot carry."""
        return str(self.without(META_IGNORED))

    def extension(self) -> str:
        """The form an extension's manifest takes (``extension_pages``)."""
        return str(self.without(EXTENSION_DROPS).replacing("worker-src",
                                                           EXTENSION_WORKER_SOURCES))

    def __str__(self) -> str:
        return "; ".join(" ".join((name, *sources)) for name, sources in self.directives)


def content_security_policy(*, script_hashes: Iterable[str] = (),
                            connect: Iterable[str] = ()) -> Policy:
    """The app's policy: :data:`DIRECTIVES`, with the hashes of a page's inline scripts
    (:func:`inline_script_hashes`) in ``script-src``, and the origins the page or its
    workers fetch besides its own (a model server, ``--gguf`` URLs, tool servers) in
    ``connect-src``."""
    return (Policy.of(DIRECTIVES)
            .adding("script-src", (f"'{h}'" for h in script_hashes))
            .adding("connect-src", connect))


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
