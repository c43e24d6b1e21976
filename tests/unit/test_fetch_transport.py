"""The worker's fetch-based HttpTransport, driven in CPython with a JavaScript-shaped fake.

``BrowserFetch`` below plays ``fetch``/``AbortController`` as the browser does (a promise
of a Response whose body is a ReadableStream reader of Uint8Array chunks; a rejected
promise with only ``TypeError: Failed to fetch`` for any network failure). It speaks real
HTTP to the fake OpenAI server through the stdlib transport, so OpenAIModel runs over
FetchTransport against the real wire format, streaming included.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from py_agent.browser.fetch_transport import FetchTransport
from py_agent.model import Purpose
from py_agent.openai_compat import (HttpRequest, OpenAIModel, ServerUnreachableError,
                                    StdlibTransport, Timeouts)
from tests.fake_openai_server import FakeServer, Hang, Reply, agent_responder
from tests.unit.support import run

FAST = Timeouts(connect=2, read=1.0, call=5, probe=1.0)


class JsError(Exception):
    """What a rejected JavaScript promise raises in Pyodide: the error as ``js_error``."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.js_error = SimpleNamespace(name=name, message=message)


class Controller:
    def __init__(self, log: list) -> None:
        self.signal = SimpleNamespace(aborted=False)
        self._log = log

    def abort(self) -> None:
        self.signal.aborted = True
        self._log.append("abort")


class BrowserFetch:
    """``fetch`` as the browser behaves, over real HTTP (see the module docstring)."""

    def __init__(self, *, reject: bool = False, hang: bool = False) -> None:
        self.reject, self.hang = reject, hang
        self.inits: list[dict] = []
        self.aborts: list[str] = []

    def new_controller(self) -> Controller:
        return Controller(self.aborts)

    async def fetch(self, url: str, init: dict):
        self.inits.append(init)
        if self.reject:
            raise JsError("TypeError", "Failed to fetch")
        if self.hang:
            await asyncio.sleep(3600)
        body = init.get("body")
        response = await StdlibTransport().send(HttpRequest(
            init["method"], url, dict(init["headers"]),
            body.encode() if body is not None else None, connect_timeout=2, read_timeout=2))
        signal = init["signal"]
        pieces = response.chunks()

        async def read():
            if signal.aborted:
                raise JsError("AbortError", "The user aborted a request.")
            try:
                data = await pieces.__anext__()
            except StopAsyncIteration:
                return SimpleNamespace(done=True, value=None)
            return SimpleNamespace(done=False, value=SimpleNamespace(to_bytes=lambda: data))

        headers = SimpleNamespace(entries=lambda: list(response.headers.items()))
        reader = SimpleNamespace(read=read)
        return SimpleNamespace(status=response.status, headers=headers,
                               body=SimpleNamespace(getReader=lambda: reader))

    def transport(self) -> FetchTransport:
        return FetchTransport("http://page.test", fetch=self.fetch,
                              new_abort_controller=self.new_controller, make_init=dict)


@pytest.fixture
def server():
    with FakeServer(agent_responder) as fake:
        yield fake


def test_the_model_streams_through_fetch_and_sends_no_credentials(server):
    browser = BrowserFetch()
    chunks = []
    model = OpenAIModel(server.url, "fake-model", transport=browser.transport(), timeouts=FAST,
                        on_chunk=chunks.append, context_window=4000)

    async def go():
        session = await model.create(initial_prompts=[{"role": "system", "content": "Hi."}])
        return await session.prompt("User: hello over fetch", purpose=Purpose.STEP)

    reply = run(go())
    assert "You said: hello over fetch" in reply
    texts = [c.text for c in chunks]
    assert len(texts) > 3 and texts[-1] == reply   # in pieces, as the server sent them
    chat = [i for i in browser.inits if i["method"] == "POST"]
    assert json.loads(chat[-1]["body"])["stream"] is True
    assert all(i["credentials"] == "omit" and i["mode"] == "cors" for i in browser.inits)


def test_a_rejected_fetch_is_an_unreachable_server_naming_every_cause(server):
    browser = BrowserFetch(reject=True)
    model = OpenAIModel(server.url, "fake-model", transport=browser.transport(), timeouts=FAST,
                        max_retries=0)
    with pytest.raises(ServerUnreachableError) as caught:
        run(model.connect())
    message = str(caught.value)
    assert server.url in message and "Failed to fetch" in message
    assert "not running" in message and "CORS" in message and "http://page.test" in message
    assert browser.aborts   # nothing left open


def test_a_fetch_that_never_answers_times_out_and_is_aborted():
    browser = BrowserFetch(hang=True)

    async def go():
        return await browser.transport().send(HttpRequest("GET", "http://x.test/v1/models",
                                                          connect_timeout=0.1,
                                                          read_timeout=0.1))

    with pytest.raises(TimeoutError):
        run(go())
    assert browser.aborts == ["abort"]


def test_a_body_that_stalls_times_out_and_closing_early_aborts(server):
    browser = BrowserFetch()
    server.push(Reply("x" * 200, chunk_chars=5, hang_after_chunks=2))

    async def stalled():
        body = json.dumps({"model": "fake-model", "stream": True,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        response = await browser.transport().send(HttpRequest(
            "POST", server.url + "/chat/completions", {"Content-Type": "application/json"},
            body, connect_timeout=1, read_timeout=0.5))
        return [chunk async for chunk in response.chunks()]

    with pytest.raises(TimeoutError):
        run(stalled())
    assert browser.aborts == ["abort"]

    async def closed_early():
        response = await browser.transport().send(HttpRequest("GET", server.url + "/models"))
        await response.close()
        return await response.read()

    assert run(closed_early()) == b""
    assert browser.aborts == ["abort", "abort"]


def test_cancelling_a_request_aborts_it():
    browser = BrowserFetch(hang=True)

    async def go():
        task = asyncio.ensure_future(browser.transport().send(
            HttpRequest("GET", "http://x.test/v1/models")))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    assert browser.aborts == ["abort"]
