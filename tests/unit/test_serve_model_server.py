"""serve.py --model-url: the CSP's connect-src, the same-origin proxy and the start-up check,
over real HTTP (serve.py's request handler and the fake OpenAI server on localhost)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import pytest

from py_agent.openai_compat import OpenAIModel, StdlibTransport, Timeouts
from serving.common import PrepareError
from serving.http_server import AppRequestHandler, AppServer
from serving.model_server import model_server_from_args, probe_model_server
from tests.fake_openai_server import FakeServer, agent_responder
from tests.unit.support import run

KEY = "sk-test-secret-123"


@pytest.fixture
def page_server():
    """serve.py's handler (no manifest needed) for a given ModelServer; yields a starter."""
    servers = []

    def start(model_server):
        handler = type("Handler", (AppRequestHandler,),
                       {"quiet": True, "model_server": model_server})
        server = AppServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def get(url: str, **kwargs):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, **kwargs), timeout=5) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def connect_src(headers: dict) -> list[str]:
    policy = headers["Content-Security-Policy"]
    directive = next(d.strip() for d in policy.split(";") if d.strip().startswith("connect-src"))
    return directive.split()[1:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_arguments_pick_direct_or_proxy_and_never_show_the_key():
    direct = model_server_from_args("http://localhost:11434/v1", "gemma3:4b", environ={})
    assert not direct.proxy and direct.connect_sources() == ["http://localhost:11434"]
    assert direct.manifest_entry()["url"] == "http://localhost:11434/v1"
    keyed = model_server_from_args("https://api.example.test", environ={"OPENAI_API_KEY": KEY})
    assert keyed.proxy and keyed.connect_sources() == []
    entry = keyed.manifest_entry()
    assert entry["url"] == "/model/v1" and entry["proxied"] and KEY not in json.dumps(entry)
    assert KEY not in repr(keyed)
    assert model_server_from_args("http://[::1]:8080", environ={}).proxy   # no CSP host-source
    with pytest.raises(PrepareError, match="--model-url ftp://x"):
        model_server_from_args("ftp://x", environ={})
    with pytest.raises(PrepareError, match="--context-window"):
        model_server_from_args("http://localhost:8080", context_window=10, environ={})


def test_connect_src_opens_to_the_model_servers_origin_only(page_server):
    url = page_server(model_server_from_args("http://127.0.0.1:11434/v1", environ={}))
    for path in ("/", "/worker/agent_worker.js"):   # the page and the worker's own CSP
        status, headers, _ = get(url + path)
        assert status == 200
        assert connect_src(headers) == ["'self'", "http://127.0.0.1:11434"]
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    proxied = page_server(model_server_from_args("http://127.0.0.1:11434/v1", proxy=True,
                                                 environ={}))
    assert connect_src(get(proxied + "/")[1]) == ["'self'"]
    assert get(url + "/model/v1/models")[0] == 404   # no proxy unless asked for


def test_the_proxy_adds_the_key_and_streams_the_agents_calls(page_server):
    with FakeServer(agent_responder, api_key=KEY) as fake:
        url = page_server(model_server_from_args(fake.url, "fake-model",
                                                 environ={"PY_AGENT_API_KEY": KEY}))
        status, headers, body = get(url + "/model/v1/models")
        assert status == 200 and json.loads(body)["data"][0]["id"] == "fake-model"
        model = OpenAIModel(url + "/model/v1", "fake-model", transport=StdlibTransport(),
                            timeouts=Timeouts(connect=2, read=2, call=5, probe=1),
                            context_window=4000)
        chunks = []
        model.on_chunk = chunks.append

        async def go():
            session = await model.create(initial_prompts=[{"role": "system", "content": "x"}])
            return await session.prompt("User: through the proxy")

        assert "You said: through the proxy" in run(go())
        assert len(chunks) > 3   # relayed as it streamed
        assert all(r["headers"].get("authorization") == f"Bearer {KEY}" for r in fake.requests)
        assert KEY not in json.dumps(get(url + "/vendor/manifest.json")[1])


def test_the_proxy_says_clearly_when_the_server_is_down(page_server):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    url = page_server(model_server_from_args(dead, proxy=True, environ={}))
    status, _, body = get(url + "/model/v1/chat/completions", data=b"{}",
                          headers={"Content-Type": "application/json"})
    error = json.loads(body)["error"]
    assert status == 502 and error["code"] == "upstream_unreachable"
    assert "connection refused" in error["message"] and dead in error["message"]


def test_the_start_up_check_names_the_models_and_a_cors_refusal():
    with FakeServer(agent_responder, cors=False) as fake:
        notes = probe_model_server(model_server_from_args(fake.url, "nope", environ={}),
                                   "http://127.0.0.1:8000")
    assert "directly from the page" in notes[0] and "serving fake-model" in notes[1]
    assert any("'nope' is not among them" in n for n in notes)
    assert any("CORS" in n and "--model-proxy" in n for n in notes)
    with FakeServer(agent_responder) as fake:
        notes = probe_model_server(model_server_from_args(fake.url, environ={}),
                                   "http://127.0.0.1:8000")
    assert not any("warning" in n for n in notes)
    notes = probe_model_server(model_server_from_args(f"http://127.0.0.1:{free_port()}",
                                                      environ={}), "http://127.0.0.1:8000")
    assert "not reachable" in notes[-1]
