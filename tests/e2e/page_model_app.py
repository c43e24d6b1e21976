"""The chat page with in-page models, as ``serve.py --gguf`` serves it, for the browser
tests of the model menu, the download and the chat with no fake at all.

The models are real GGUF files that tests/tiny_gguf.py writes (random weights):

- ``tiny.gguf``: where the step schema lets it name a tool it names ``none`` (every
  other tool name starts with a token it dislikes), and it rarely closes a string at
  once (an empty answer is one the agent sends back), so a turn ends with an answer in a
  step or two (what the chat tests need);
- ``chatty.gguf``: never closes a JSON string, so a step runs until its window is full
  (what the Stop test needs);
- ``bad_template.gguf``: a chat template llama.cpp cannot use;
- ``slow.gguf`` and ``truncated.gguf``: the tiny model, served 16 KB every 50 ms, or cut
  off half-way (while ``site.cut`` is set);

plus, on another origin (another port), with or without CORS headers: the tiny model
(``/cors/tiny.gguf``, ``/nocors/tiny.gguf``), an HTML page (``/cors/not_a_model.gguf``),
a 404 (``/cors/missing.gguf``) and a model whose server announces 40 GB
(``/cors/huge.gguf``).
"""

from __future__ import annotations

import collections
import http.server
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from serving.http_server import make_server
from serving.page_models import page_models_from_args
from tests.tiny_gguf import write_tiny_gguf

WINDOW = 2048      # the tiny models' training context: the agent's prompt fits, and is quick
HUGE = 40 * 10**9

# Deletes Chromium's LanguageModel before any script runs: a page with no Prompt API.
NO_PROMPT_API = "delete window.LanguageModel; delete window.ai;"


# The test models tests/tiny_gguf.py writes (see the module docstring): name -> options.
MODELS = {
    "tiny.gguf": dict(preference={"none": 1.5, '"': 2.3}, others=-3.0),
    "chatty.gguf": dict(preference={'"': -8.0, "}": -8.0}, name="tiny-chatty-llama"),
    "bad_template.gguf": dict(chat_template="{{ raise_exception('No conversation, sorry.') }}"),
}


def write_model(folder: Path, name: str) -> Path:
    """One of the test models (MODELS), written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_tiny_gguf(folder / name, context_length=WINDOW, **MODELS[name])


def write_models(folder: Path) -> dict[str, Path]:
    """The test models (see the module docstring), written once into ``folder``."""
    paths = {name: write_model(folder, name) for name in MODELS}
    for copy in ("slow.gguf", "truncated.gguf"):
        paths[copy] = Path(shutil.copy(paths["tiny.gguf"], folder / copy))
    return paths


@dataclass
class ModelSite:
    """The running app, what it served (requests per path), and the other origin."""
    url: str
    other: str
    hits: collections.Counter = field(default_factory=collections.Counter)
    cut: list = field(default_factory=lambda: [True])   # truncated.gguf is cut while True

    def model_url(self, name: str) -> str:
        """The manifest's URL of a local model (relative to the site's root)."""
        return f"models/{name}"


def _send_file(handler, data: bytes, *, rate: bool = False, cut: bool = False,
               length: int | None = None) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/octet-stream")
    handler.send_header("Content-Length", str(length or len(data)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    if handler.command == "HEAD":
        return
    try:
        if cut:
            handler.wfile.write(data[:len(data) // 2])
        elif rate:
            deadline = time.monotonic() + 30   # bounded, whatever the client does
            for start in range(0, len(data), 16384):
                if time.monotonic() > deadline:
                    break
                handler.wfile.write(data[start:start + 16384])
                handler.wfile.flush()
                time.sleep(0.05)
        else:
            handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    handler.close_connection = True


def start_other_origin(tiny: Path, hits: collections.Counter):
    """A plain server on another port: /cors/... with CORS headers, /nocors/... without."""
    data = tiny.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_HEAD(self):  # noqa: N802
            self.do_GET()

        def do_GET(self):  # noqa: N802
            hits[f"other{self.path}"] += 1
            if self.path == "/cors/tiny.gguf" or self.path == "/nocors/tiny.gguf":
                return _send_file(self, data)
            if self.path == "/cors/not_a_model.gguf":
                return _send_file(self, b"<!doctype html><title>Oops</title>" + b" " * 4000)
            if self.path == "/cors/huge.gguf":
                return _send_file(self, b"", length=HUGE) if self.command == "HEAD" else \
                    _send_file(self, data, length=HUGE, cut=True)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def end_headers(self) -> None:
            if self.path.startswith("/cors/"):
                self.send_header("Access-Control-Allow-Origin", "*")
            super().end_headers()

        def log_message(self, format, *args):  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_app(folder: Path, names: tuple[str, ...], *, remote: tuple[str, ...] = ()):
    """(servers to shut down, ModelSite): serve.py's app offering the models ``names``
    (files written by write_models) and ``remote`` paths of the other origin, each with
    serve.py's own --gguf handling."""
    paths = write_models(folder)
    hits: collections.Counter = collections.Counter()
    other = start_other_origin(paths["tiny.gguf"], hits)
    other_url = f"http://127.0.0.1:{other.server_address[1]}"
    gguf = [str(paths[name]) for name in names] + [other_url + path for path in remote]
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, tool_worker=False,
                         page_models=page_models_from_args(gguf))
    site = ModelSite(url=server.url, other=other_url, hits=hits)
    slow, cut = paths["slow.gguf"].read_bytes(), paths["truncated.gguf"].read_bytes()
    base = server.RequestHandlerClass

    class Handler(base):
        def do_GET(self):  # noqa: N802
            path = self.path.split("?")[0]
            site.hits[path] += 1
            if path == "/models/slow.gguf":
                return _send_file(self, slow, rate=True)
            if path == "/models/truncated.gguf" and site.cut[0]:
                return _send_file(self, cut, cut=True)
            return super().do_GET()

    server.RequestHandlerClass = Handler
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return (server, other), site

