"""The development server: the app over HTTP with the production headers.

Only the standard library. ``/`` is ``web/`` (with ``--site`` in front of it);
``/worker/`` is the repository's ``worker/``; nothing else is reachable
(``/favicon.ico`` is an empty 204), except ``/model/`` when the model server is proxied
and ``/models/<name>`` for each local ``--gguf`` file (serving/page_models.py).
``/vendor/manifest.json`` is this server's own manifest (serving/manifest.py) and
``/ui-bundle.json`` the UI modules as they are now (serving/ui_bundle.py), and any
``service_worker.js`` one that retires a static build's (serving/offline/). Every response
carries the cross-origin isolation headers and a Content-Security-Policy that allows only
this origin, and the model server's when the worker reaches it directly, and the origins of
the ``--gguf`` URLs and the ``--mcp`` servers (see ``DIRECTIVES`` in serving/headers.py for
why each source is there).
"""

from __future__ import annotations

import http.server
import io
import json
import os
import posixpath
import sys
import urllib.parse
from pathlib import Path
from typing import Callable, Iterable

from . import ui_bundle
from .headers import (CACHE_IMMUTABLE, CACHE_REVALIDATE, MIME_TYPES, SECURITY_HEADERS,
                      content_security_policy, inline_script_hashes)
from .manifest import SiteManifest, read_manifest
from .model_server import ModelServer, proxy_request
from .tool_servers import ToolServers
from .page_models import PageModels
from .paths import WEB, WORKER
from .static_build import RETIRE_SERVICE_WORKER, SERVICE_WORKER
from .validators import body_tag, entity_tag, file_digest, not_modified

DEFAULT_MOUNTS = {"/worker/": WORKER, "/": WEB}


class AppRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from a few mounted directories, with the app's headers.

    No directory listings, no dotfiles; ``/vendor/`` (except the manifest) is
    versioned and cached forever, everything else is revalidated on each use: with an
    ``ETag`` (serving/validators.py), so that an unchanged file costs a ``304`` and no
    body, and the browser keeps what it compiled of it."""

    protocol_version = "HTTP/1.1"
    server_version = "py-agent"
    # URL prefix -> directory, or directories tried in order (a --site in front of web/).
    mounts: dict[str, Path | tuple[Path, ...]] = DEFAULT_MOUNTS
    quiet = False
    manifest: Callable[[], dict] | None = None   # serves /vendor/manifest.json if set
    model_server: ModelServer | None = None      # --model-url: CSP, manifest, /model/ proxy
    page_models: PageModels | None = None        # --gguf: CSP, manifest, /models/<name>
    tool_servers: ToolServers | None = None      # --mcp: CSP, manifest

    def translate_path(self, path: str) -> str:
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
        model_file = self.page_models.local_file(path) if self.page_models else None
        if model_file is not None:
            return str(model_file)
        for prefix, directory in sorted(self.mounts.items(), key=lambda m: -len(m[0])):
            if path.startswith(prefix) or path + "/" == prefix:
                rest = path[len(prefix):]
                break
        else:
            return ""
        parts = [p for p in posixpath.normpath("/" + rest).split("/") if p]
        if any(p.startswith(".") or p in ("..",) for p in parts):
            return ""
        for base in directory if isinstance(directory, tuple) else (directory,):
            result = Path(base, *parts)
            if path.endswith("/"):
                result = result / "index.html"
            if result.is_file():
                break
        return str(result)

    def send_head(self):
        if self.manifest is not None and \
                urllib.parse.urlsplit(self.path).path == "/vendor/manifest.json":
            return self.send_manifest()
        if urllib.parse.urlsplit(self.path).path == ui_bundle.URL:
            return self.send_body(ui_bundle.ui_bundle(WEB / "ui"), MIME_TYPES[".json"])
        local = self.translate_path(self.path)
        if urllib.parse.urlsplit(self.path).path.endswith("/" + SERVICE_WORKER) and \
                not os.path.isfile(local):
            return self.send_body(RETIRE_SERVICE_WORKER.read_bytes(), MIME_TYPES[".js"])
        if urllib.parse.urlsplit(self.path).path == "/favicon.ico" and \
                not os.path.isfile(local):
            # Browsers ask for it for any page without an icon: no icon, and no error.
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if not local or not os.path.isfile(local):
            # The page asks for a directory only as "/"; anything else is a miss.
            self.send_error(404, "Not found")
            return None
        if self.cache_control() == CACHE_REVALIDATE:
            return self.send_revalidated_file(Path(local))
        return super().send_head()

    def send_revalidated_file(self, path: Path):
        """A file browsers ask for again on each use: ``304`` when their copy is this one
        (its ``ETag``), else the file with its ``ETag``. Not ``If-Modified-Since``: it
        compares dates, and a browser's copy from another server on this origin (say a
        static build tried on the same port) can be newer than the file here and still
        not be it."""
        try:
            file = open(path, "rb")
        except OSError:
            self.send_error(404, "Not found")
            return None
        try:
            size = os.fstat(file.fileno()).st_size
            tag = entity_tag(file_digest(path), self.content_security_policy())
            if not_modified(self.headers.get("If-None-Match"), tag):
                file.close()
                return self.send_not_modified(tag)
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Length", str(size))
            self.send_header("ETag", tag)
            self.end_headers()
            return file
        except BaseException:
            file.close()
            raise

    def send_not_modified(self, tag: str):
        self.send_response(304)
        self.send_header("ETag", tag)
        self.end_headers()
        return None

    def send_body(self, body: bytes, content_type: str):
        """A generated response (the manifest, the UI bundle), revalidated like a file."""
        tag = body_tag(body, content_type, self.content_security_policy())
        if not_modified(self.headers.get("If-None-Match"), tag):
            return self.send_not_modified(tag)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", tag)
        self.end_headers()
        return io.BytesIO(body)

    def send_manifest(self):
        """This server's manifest: the prepared runtime and its tool modules as they are
        now (a changed tool module is rebuilt here, so a reload of the page gets it)."""
        try:
            body = (json.dumps(self.manifest(), indent=2) + "\n").encode()
        except Exception as error:   # e.g. a disk error: say it, keep serving
            self.send_error(500, f"cannot build the manifest: {error}")
            return None
        return self.send_body(body, MIME_TYPES[".json"])

    def guess_type(self, path) -> str:
        return MIME_TYPES.get(Path(str(path)).suffix.lower(), "application/octet-stream")

    def cache_control(self) -> str:
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/vendor/") and path != "/vendor/manifest.json":
            return CACHE_IMMUTABLE
        return CACHE_REVALIDATE

    def content_security_policy(self) -> str:
        local = self.translate_path(self.path)
        hashes = inline_script_hashes(Path(local)) if local.endswith(".html") else ()
        # The origins the page and its workers fetch besides this one: the --mcp servers,
        # where the browser downloads the --gguf URLs, and the model server when the
        # worker fetches it directly (listed in this order since the header first named
        # them).
        connect = [*(self.tool_servers.connect_sources() if self.tool_servers else ()),
                   *(self.page_models.connect_sources() if self.page_models else ()),
                   *(self.model_server.connect_sources() if self.model_server else ())]
        return str(content_security_policy(script_hashes=hashes, connect=connect))

    def do_GET(self) -> None:  # noqa: N802
        if not self.proxy_model_request():
            super().do_GET()

    def do_POST(self) -> None:  # noqa: N802
        if not self.proxy_model_request():
            self.send_error(405, "Only the model proxy takes POST")

    def proxy_model_request(self) -> bool:
        """Forward ``/model/...`` to the model server when it is proxied; True if done."""
        target = self.model_server.upstream(urllib.parse.urlsplit(self.path).path) \
            if self.model_server else None
        if target is None:
            return False
        query = urllib.parse.urlsplit(self.path).query
        proxy_request(self, self.model_server, target + (f"?{query}" if query else ""))
        return True

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Security-Policy", self.content_security_policy())
        self.send_header("Cache-Control", self.cache_control())
        super().end_headers()

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args) -> None:
        if not self.quiet:
            sys.stderr.write(f"[serve] {self.address_string()} {format % args}\n")


class AppServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def make_server(host: str = "127.0.0.1", port: int = 8000, *,
                mounts: dict[str, Path] | None = None, quiet: bool = False,
                tools: Iterable[Path] = (), site: Path | None = None,
                model_server: ModelServer | None = None, snapshots: bool = True,
                served_snapshot: bool = True, tool_worker: bool = True,
                page_models: PageModels | None = None,
                tool_servers: ToolServers | None = None, embedder: bool = True) -> AppServer:
    """An HTTP server for the app (not yet serving: call serve_forever()).

    ``port=0`` picks a free port (see ``server.url``). ``mounts`` adds URL-prefix ->
    directory mappings to the defaults (a benchmark mounts its own pages this way).
    ``tools`` are tool modules offered besides the demo's; ``site`` is a folder served
    at / in front of web/ (your own page, using /agent.js); ``model_server`` is the
    OpenAI-compatible server the page may use (see serving/model_server.py);
    ``snapshots=False`` tells the workers to boot without memory snapshots and make
    none (as ``?snapshot=off`` does for one page); ``served_snapshot=False`` offers no
    snapshot made here (serving/boot_snapshot.py), so a browser's first boot is a full
    one and it makes its own; ``tool_worker=False`` runs sync tools in the agent's worker
    (as ``?tool_worker=off``); ``page_models`` are the GGUF files the page offers to run
    in itself (``--gguf``, serving/page_models.py); ``tool_servers`` the MCP servers it
    connects to (``--mcp``, serving/tool_servers.py); ``embedder=False`` offers no
    sentence embedder (as ``?embedder=off``). Call prepare() first: the manifest
    this server hands out
    is the prepared one with its tool modules, rebuilt when their sources change, and a
    boot snapshot made for them (at once here, in the background after a change)."""
    prepared = read_manifest()
    manifest = None
    if prepared is not None and "py_agent" in prepared:
        manifest = SiteManifest(prepared, tools, model_server=model_server, snapshots=snapshots,
                                served_snapshot=served_snapshot, tool_worker=tool_worker,
                                page_models=page_models, tool_servers=tool_servers,
                                embedder=embedder)
        manifest(wait=True)   # the snapshot for the tool modules as they are now

    root = (Path(site), WEB) if site is not None else WEB
    handler = type("Handler", (AppRequestHandler,), {
        "mounts": {**DEFAULT_MOUNTS, "/": root,
                   **{k: Path(v) for k, v in (mounts or {}).items()}},
        "quiet": quiet,
        "manifest": staticmethod(manifest) if manifest else None,
        "model_server": model_server,
        "page_models": page_models,
        "tool_servers": tool_servers,
    })
    return AppServer((host, port), handler)
