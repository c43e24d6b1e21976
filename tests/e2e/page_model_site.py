"""What the in-page model's browser tests share: a server with serve.py's production
headers (CSP, cross-origin isolation) that also serves test models and misbehaves on
purpose on a few paths, and helpers to drive web/page_model/ in a page.

Routes besides the app's: ``/models/<file>`` (files of a folder, counted per path),
``/models/truncated.gguf`` (announces the whole tiny model, sends half, then closes),
``/models/slow.gguf`` (the tiny model, 16 KB every 50 ms, for cancel tests),
``/pm/blank.html`` (an empty page to import the modules into).
"""

from __future__ import annotations

import collections
import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from serving.http_server import make_server
from tests.tiny_gguf import write_tiny_gguf

BLANK = "<!doctype html><meta charset=utf-8><title>page model</title>"


@dataclass
class ModelSite:
    """The running server and the test models it serves."""
    url: str
    folder: Path
    hits: collections.Counter = field(default_factory=collections.Counter)

    def model(self, name: str) -> dict:
        """A source description ({url, size, sha256, name}) of a served file."""
        path = self.folder / name
        data = path.read_bytes()
        return {"url": f"/models/{name}", "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "name": name}


def start_model_site(folder: Path):
    """(server, ModelSite): serve.py's app server with the test routes; call
    server.shutdown() when done."""
    folder.mkdir(parents=True, exist_ok=True)
    write_tiny_gguf(folder / "tiny.gguf", context_length=1024)
    (folder / "not_a_model.gguf").write_bytes(b"<!doctype html><title>Oops</title>" + b" " * 4000)
    tiny = (folder / "tiny.gguf").read_bytes()
    (folder / "cut_header.gguf").write_bytes(tiny[:3000])       # a GGUF cut inside its header
    write_tiny_gguf(folder / "bad_template.gguf", context_length=1024,   # one llama.cpp refuses
                    chat_template="{{ raise_exception('No conversation, sorry.') }}")
    (folder / "pm").mkdir(exist_ok=True)
    (folder / "pm" / "blank.html").write_text(BLANK)

    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, tool_worker=False,
                               mounts={"/models/": folder, "/pm/": folder / "pm"})
    site = ModelSite(url=server.url, folder=folder)
    base = server.RequestHandlerClass

    class Handler(base):
        def do_GET(self):  # noqa: N802
            path = self.path.split("?")[0]
            site.hits[path] += 1
            if path == "/models/truncated.gguf":
                return self._send_partial(tiny, len(tiny) // 2)
            if path == "/models/slow.gguf":
                return self._send_slowly(tiny)
            return super().do_GET()

        def _head(self, size: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("Connection", "close")
            self.end_headers()

        def _send_partial(self, data: bytes, cut: int) -> None:
            self._head(len(data))
            self.wfile.write(data[:cut])
            self.wfile.flush()
            self.close_connection = True

        def _send_slowly(self, data: bytes) -> None:
            self._head(len(data))
            deadline = time.monotonic() + 30   # bounded, whatever the client does
            try:
                for start in range(0, len(data), 16384):
                    if time.monotonic() > deadline:
                        break
                    self.wfile.write(data[start:start + 16384])
                    self.wfile.flush()
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

    server.RequestHandlerClass = Handler
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, site


# JavaScript run in the page (page.evaluate): window.pm holds the module and helpers.
SETUP = """async () => {
  const mod = await import('/page_model/language_model.js');
  const store = await import('/page_model/model_store.js');
  const manifest = await (await fetch('/vendor/manifest.json')).json();
  // The manifest's URLs are relative to the site's root.
  for (const [key, url] of Object.entries(manifest.page_model)) {
    manifest.page_model[key] = new URL(url, location.origin + '/').href;
  }
  window.pm = {
    ...mod, manifest,
    store: new store.ModelStore({sha256URL: manifest.page_model.sha256}),
    err: (e) => ({name: e?.name, message: String(e?.message ?? e), requested: e?.requested ?? null,
                  quota: e?.quota ?? null}),
    async read(stream, onChunk) {
      const reader = stream.getReader(); const chunks = [];
      for (;;) { const {value, done} = await reader.read(); if (done) break; chunks.push(value); onChunk?.(chunks); }
      return chunks;
    },
  };
  return manifest.page_model;
}"""


def open_blank(page, site: ModelSite) -> dict:
    """Open the empty page and load the page-model modules into it."""
    page.goto(site.url + "/pm/blank.html")
    return page.evaluate(SETUP)
