"""serve.py --gguf: local GGUF files served same-origin with their size and SHA-256, URLs
with their size asked once and their origin in the CSP's connect-src, bad arguments
refused with the reason, and the static build's copy (serving/page_models.py, over real
HTTP with serve.py's request handler)."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import urllib.error
import urllib.request

import pytest

from serve import main as serve_main
from serving.common import PrepareError
from serving.http_server import AppRequestHandler, AppServer
from serving.model_server import model_server_from_args
from serving.page_models import page_models_from_args
from serving.static_build import page_policy
from tests.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture
def other_origin():
    """A plain server answering HEAD for /model.gguf with a size, 404 otherwise."""
    class Handler(http.server.BaseHTTPRequestHandler):
        heads = 0

        def do_HEAD(self):  # noqa: N802
            Handler.heads += 1
            self.send_response(200 if self.path == "/model.gguf" else 404)
            self.send_header("Content-Length", "806058240" if self.path == "/model.gguf" else "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Handler
    server.shutdown()
    server.server_close()


def serve(page_models):
    handler = type("Handler", (AppRequestHandler,), {"quiet": True, "page_models": page_models})
    server = AppServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def connect_src(headers: dict) -> list[str]:
    policy = headers["Content-Security-Policy"]
    return next(d.strip() for d in policy.split(";")
                if d.strip().startswith("connect-src")).split()[1:]


def test_a_local_file_is_served_same_origin_with_its_size_and_checksum(gguf, tmp_path):
    cache = tmp_path / "hashes.json"
    models = page_models_from_args([str(gguf)], hash_cache=cache)
    data = gguf.read_bytes()
    assert models.manifest_entries() == [{"url": "models/tiny.gguf", "name": "tiny.gguf",
                                          "size": len(data),
                                          "sha256": hashlib.sha256(data).hexdigest()}]
    assert models.connect_sources() == [] and "1.0 MB" in models.notes[0]
    server = serve(models)
    try:
        status, headers, body = get(server.url + "/models/tiny.gguf")
        assert status == 200 and body == data
        assert connect_src(headers) == ["'self'"]
        assert get(server.url + "/models/other.gguf")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
    # The checksum is remembered for this version of the file, and computed anew for another.
    assert json.loads(cache.read_text())[str(gguf.resolve())]["sha256"] == hashlib.sha256(data).hexdigest()
    cache.write_text(json.dumps({str(gguf.resolve()): {**json.loads(cache.read_text())[str(gguf.resolve())],
                                                       "sha256": "remembered"}}))
    assert page_models_from_args([str(gguf)], hash_cache=cache).models[0].sha256 == "remembered"


def test_a_url_is_fetched_by_the_browser_from_an_origin_the_policy_names(other_origin):
    origin, handler = other_origin
    models = page_models_from_args([origin + "/model.gguf", origin + "/gone.gguf"])
    assert [m.manifest_entry() for m in models.models] == [
        {"url": origin + "/model.gguf", "name": "model.gguf", "size": 806058240, "sha256": None},
        {"url": origin + "/gone.gguf", "name": "gone.gguf", "size": None, "sha256": None}]
    assert "806.1 MB" in models.notes[0] and "allow CORS" in models.notes[0]
    assert "size is unknown" in models.notes[1]
    assert handler.heads == 2
    server = serve(models)
    try:
        status, headers, _ = get(server.url + "/index.html")
        assert connect_src(headers) == ["'self'", origin]          # once, for both
        assert get(server.url + "/models/model.gguf")[0] == 404    # not served here
    finally:
        server.shutdown()
        server.server_close()


def test_bad_arguments_are_refused_with_the_reason(gguf, tmp_path):
    with pytest.raises(PrepareError, match="no such file"):
        page_models_from_args([str(tmp_path / "missing.gguf")])
    html = tmp_path / "page.gguf"
    html.write_bytes(b"<!doctype html>")
    with pytest.raises(PrepareError, match="not a GGUF model file"):
        page_models_from_args([str(html)])
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "tiny.gguf").write_bytes(gguf.read_bytes())
    with pytest.raises(PrepareError, match="offered at models/tiny.gguf already"):
        page_models_from_args([str(gguf), str(twin / "tiny.gguf")])
    assert serve_main(["--gguf", str(html), "--prepare-only"]) == 1


def test_a_static_build_names_the_urls_origins_in_its_policies(gguf, tmp_path):
    models = page_models_from_args([str(gguf), "https://models.example.test/b.gguf"],
                                   probe=False)
    assert [e["url"] for e in models.manifest_entries()] == ["models/tiny.gguf",
                                                             "https://models.example.test/b.gguf"]
    assert models.local_files() == {"models/tiny.gguf": gguf.resolve()}
    page = tmp_path / "index.html"
    page.write_text("<!doctype html><meta charset=utf-8><script>1</script>")
    server = model_server_from_args("http://127.0.0.1:11434/v1", environ={})
    assert "connect-src 'self' http://127.0.0.1:11434 https://models.example.test;" in \
        page_policy(page, server, models)
    assert "connect-src 'self' https://models.example.test;" in page_policy(page, None, models)
