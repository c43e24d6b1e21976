"""``serve.py --model-url``: the page's OpenAI-compatible model server.

Two ways for the agent worker to reach it:

- **Directly** (the default without an API key): the worker ``fetch``es the server,
  and the Content-Security-Policy's ``connect-src`` opens to exactly its origin. The
  server must allow the page's origin (CORS); Ollama, llama.cpp's ``llama-server``
  and vLLM do for a page on localhost out of the box. Nothing passes through
  ``serve.py``, and the page could as well be hosted elsewhere.
- **Through serve.py** (``--model-proxy``, and always when an API key is set): the
  worker posts to ``/model/v1/...`` on the page's own origin and ``serve.py``
  forwards to the server, adding ``Authorization: Bearer <key>`` from the
  environment. The key never reaches the page, the manifest or any file, and CORS
  does not apply (one origin). ``connect-src`` stays ``'self'``.

A key cannot be used directly: the page would have to hold it, and anyone who can
open the page could read it. Hence: with a key, the proxy.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

from py_agent.openai_compat import normalize_base_url
from py_agent.openai_compat.environment import api_key_from_environment

from .common import PrepareError

PROXY_PREFIX = "/model"
MAX_BODY = 32 * 1024 * 1024     # a request body larger than this is refused (413)
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 600.0          # longer than the worker's own, so the worker says why
CHECK_TIMEOUT_S = 3.0
# Reply headers passed on to the page (hop-by-hop and server cookies are not).
PASSED_HEADERS = ("content-type", "retry-after", "x-request-id")


@dataclass(frozen=True)
class ModelServer:
    """The configured server; ``api_key`` is only ever sent to it, never shown."""

    base_url: str                  # the API base, ending in /v1 as a rule
    root_url: str                  # the server root (llama.cpp's /props, Ollama's /api/...)
    model: str | None = None
    context_window: int | None = None
    proxy: bool = False
    api_key: str | None = field(default=None, repr=False)

    @property
    def origin(self) -> str:
        parts = urlsplit(self.root_url)
        return f"{parts.scheme}://{parts.netloc}"

    def manifest_entry(self) -> dict[str, Any]:
        """What the worker learns (never the key)."""
        url = PROXY_PREFIX + self.base_url[len(self.root_url):] if self.proxy else self.base_url
        return {"url": url, "shown_url": self.base_url, "model": self.model,
                "context_window": self.context_window, "proxied": self.proxy}

    def connect_sources(self) -> list[str]:
        """Extra ``connect-src`` sources: the server's origin, unless proxied."""
        return [] if self.proxy else [self.origin]

    def upstream(self, path: str) -> str | None:
        """The server URL for a page request to ``/model/...``, or None if it is not one."""
        if not self.proxy or not (path == PROXY_PREFIX or path.startswith(PROXY_PREFIX + "/")):
            return None
        return self.root_url + path[len(PROXY_PREFIX):]


def model_server_from_args(url: str, model: str | None = None,
                           context_window: int | None = None, *, proxy: bool = False,
                           environ: Mapping[str, str] | None = None) -> ModelServer:
    """The server of ``--model-url`` (PrepareError for an unusable one)."""
    try:
        base, root = normalize_base_url(url)
    except ValueError as exc:
        raise PrepareError(f"--model-url {url}: {exc}") from None
    if context_window is not None and context_window < 256:
        raise PrepareError("--context-window must be at least 256 tokens")
    key = api_key_from_environment(environ)
    # A CSP host-source cannot name an IPv6 literal: such a server goes through the proxy.
    ipv6 = urlsplit(root).netloc.startswith("[")
    return ModelServer(base, root, model or None, context_window,
                       proxy=proxy or key is not None or ipv6, api_key=key)


# ------------------------------------------------------------------ the proxy

def proxy_request(handler: Any, server: ModelServer, target: str) -> None:
    """Forward the handler's request (GET or POST) to ``target``, streaming the reply.

    A page that goes away (a stopped turn) closes the upstream connection too, which
    is how the server learns to stop generating.
    """
    length = int(handler.headers.get("Content-Length") or 0)
    if length > MAX_BODY:
        _error(handler, 413, "the request is too large for serve.py's model proxy", "too_large")
        return
    body = handler.rfile.read(length) if length else None
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=CONNECT_TIMEOUT_S,
            context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=CONNECT_TIMEOUT_S)
    headers = {"Accept": handler.headers.get("Accept") or "application/json",
               "User-Agent": "py-agent serve.py"}
    if body is not None:
        headers["Content-Type"] = handler.headers.get("Content-Type") or "application/json"
    if server.api_key:
        headers["Authorization"] = f"Bearer {server.api_key}"
    try:
        try:
            conn.connect()
            conn.sock.settimeout(READ_TIMEOUT_S)
            conn.request(handler.command, path, body=body, headers=headers)
            reply = conn.getresponse()
        except (socket.timeout, TimeoutError):
            _error(handler, 504, f"serve.py's proxy got no answer from the model server at "
                                 f"{server.base_url} in time", "upstream_timeout")
            return
        except (OSError, http.client.HTTPException) as exc:
            _error(handler, 502, f"serve.py's proxy could not reach the model server at "
                                 f"{server.base_url} ({_reason(exc)}): is it running, and is "
                                 "--model-url right?", "upstream_unreachable")
            return
        handler.send_response(reply.status)
        for name in PASSED_HEADERS:
            if reply.getheader(name):
                handler.send_header(name.title(), reply.getheader(name))
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        _relay(handler, reply)
    finally:
        conn.close()


def _relay(handler: Any, reply: http.client.HTTPResponse) -> None:
    """Copy the body as it arrives, as HTTP/1.1 chunks; stop when either side goes."""
    try:
        while True:
            data = reply.read1(65536)
            if not data:
                break
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
    except (OSError, http.client.HTTPException):
        # The page left (a stopped turn) or the server broke off: end both connections;
        # the page sees a reply cut short, which its client reports as such.
        handler.close_connection = True


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    return str(exc) or type(exc).__name__


def _error(handler: Any, status: int, message: str, code: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "proxy_error",
                                 "code": code}}).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


# ------------------------------------------------------------------ start-up check

def probe_model_server(server: ModelServer, page_origin: str) -> list[str]:
    """Ask the server, once at start-up, and say in lines for the terminal: how the page
    reaches it, is it up, what it serves, will the page be let in (CORS)."""
    how = ("through serve.py at /model/" + (", with the API key from the environment"
                                            if server.api_key else "")
           if server.proxy else "directly from the page (CORS)")
    notes = [f"model server {server.base_url}, reached {how}"]
    headers = {"Authorization": f"Bearer {server.api_key}"} if server.api_key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(
                server.base_url + "/models", headers=headers), timeout=CHECK_TIMEOUT_S) as reply:
            listing = json.loads(reply.read() or b"{}")
        names = [str(m.get("id")) for m in listing.get("data") or [] if isinstance(m, dict)]
        notes.append(f"model server {server.base_url}: up, serving {', '.join(names) or 'no models'}")
        if server.model and names and server.model not in names:
            notes.append(f"warning: {server.model!r} is not among them; the page will say so")
    except urllib.error.HTTPError as exc:
        notes.append(f"warning: model server {server.base_url}/models answered {exc.code}"
                     + (": is the key in PY_AGENT_API_KEY right?" if exc.code in (401, 403) else ""))
    except (OSError, ValueError) as exc:
        notes.append(f"warning: model server {server.base_url} is not reachable now "
                     f"({_reason(getattr(exc, 'reason', exc))}); the page says so until it is")
        return notes
    if not server.proxy:
        allowed = _cors_allows(server, page_origin)
        if allowed is False:
            notes.append(f"warning: the model server does not allow requests from {page_origin} "
                         "(CORS), so the page cannot use it directly: allow that origin on the "
                         "server (see README), or add --model-proxy")
    return notes


def _cors_allows(server: ModelServer, page_origin: str) -> bool | None:
    """Does the server answer the browser's preflight for ``page_origin``? (None: unknown)"""
    request = urllib.request.Request(server.base_url + "/chat/completions", method="OPTIONS",
                                     headers={"Origin": page_origin,
                                              "Access-Control-Request-Method": "POST",
                                              "Access-Control-Request-Headers": "content-type"})
    try:
        with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT_S) as reply:
            allowed = reply.headers.get("Access-Control-Allow-Origin")
    except urllib.error.HTTPError as exc:
        allowed = exc.headers.get("Access-Control-Allow-Origin")
    except OSError:
        return None
    return allowed in ("*", page_origin)
