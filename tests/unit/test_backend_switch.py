"""The page's choice of model (py_agent/browser/backends.py): Gemini Nano or the
server of ``serve.py --model-url``, with the agent rebuilt on a switch.

Gemini Nano is a FunctionModel; the server is the fake OpenAI server over real HTTP
(the stdlib transport standing in for the worker's fetch, which keeps the same contract).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from demo_tools import calculate
from py_agent import Agent, InMemoryStore
from py_agent.browser.backends import PROMPT_API, SERVER, BackendSwitch
from py_agent.browser.server_model import ServerModel, ServerSettings
from py_agent.openai_compat import StdlibTransport, Timeouts
from py_agent.testing import FunctionModel, step_json
from tests.fake_openai_server import FakeServer, agent_responder
from tests.unit.support import run

FAST = Timeouts(connect=1, read=2, call=5, probe=1)


def nano(availability: str = "available") -> FunctionModel:
    model = FunctionModel(lambda call: step_json(answer="Nano says hi."))
    model.set_availability(availability)
    return model


class SwitchReplies:
    """The page's side of a BackendSwitch: requests in, the replies and events it posted."""

    switch: BackendSwitch
    posted: list[dict]
    _ids = 0

    async def ask(self, kind: str, **fields) -> dict:
        self._ids += 1
        request_id = f"r{self._ids}"
        self.switch.handle({"type": kind, "id": request_id, **fields})
        for _ in range(500):
            replies = [m for m in self.posted if m.get("id") == request_id]
            if replies:
                return replies[0]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no reply to {kind}")

    def model_events(self) -> list[dict]:
        return [m["event"]["data"] for m in self.posted
                if m.get("type") == "event" and m["event"].get("type") == "model"]


class Page(SwitchReplies):
    """The switch with its page: what it posted, and a way to ask and wait."""

    def __init__(self, prompt_api, settings: ServerSettings | None) -> None:
        self.posted: list[dict] = []
        self.store = InMemoryStore()
        self.switch = BackendSwitch(
            prompt_api, settings,
            make_server_model=lambda name: ServerModel(settings, StdlibTransport(),
                                                       wanted=name, timeouts=FAST),
            make_agent=lambda model, policy: Agent(model=model, store=self.store,
                                                   tools=[calculate], memory=policy),
            post=self.posted.append)
        self._ids = 0



def settings_for(url: str, **kwargs) -> ServerSettings:
    return ServerSettings(url=url, shown_url=url, **kwargs)


@pytest.fixture
def server():
    with FakeServer(agent_responder, models=("fake-model", "other-model"),
                    context_window=2048, flavor="vllm") as fake:
        yield fake


def test_without_gemini_nano_the_server_answers_and_says_so(server):
    page = Page(nano("unavailable"), settings_for(server.url))

    async def go():
        shown = await page.switch.start()
        reply = await page.ask("run", session_id="s", text="What is 17 times 23?")
        return shown, reply

    shown, reply = run(go())
    assert shown["backend"] == SERVER and shown["name"] == "fake-model"   # first listed
    assert shown["context_window"] == 2048 and shown["window_source"]
    assert shown["server"]["models"] == ["fake-model", "other-model"]
    assert reply["ok"] and "391" in reply["value"]["answer"]
    assert page.switch.agent.policy.reserved_turn_tokens < 1024   # sized for 2,048 tokens


def test_gemini_nano_stays_the_default_where_it_is_available(server):
    page = Page(nano("available"), settings_for(server.url))

    async def go():
        shown = await page.switch.start()
        return shown, await page.ask("run", session_id="s", text="hello")

    shown, reply = run(go())
    assert shown["backend"] == PROMPT_API and shown["server"]["url"] == server.url
    assert reply["value"]["answer"] == "Nano says hi."
    assert server.chat_requests() == []


def test_the_user_switches_model_and_the_memory_stays(server):
    page = Page(nano("available"), settings_for(server.url))

    async def go():
        await page.switch.start()
        await page.ask("run", session_id="s", text="first, with Nano")
        switched = await page.ask("use_model", backend=SERVER, model="other-model")
        reply = await page.ask("run", session_id="s", text="Do you remember what I said before?")
        back = await page.ask("use_model", backend=PROMPT_API)
        return switched, reply, back

    switched, reply, back = run(go())
    assert switched["ok"] and switched["value"]["name"] == "other-model"
    assert "first, with Nano" in reply["value"]["answer"]   # same store, new agent
    assert server.chat_requests()[-1]["model"] == "other-model"
    assert back["ok"] and back["value"]["backend"] == PROMPT_API
    assert page.model_events()[-1]["backend"] == PROMPT_API


def test_a_switch_to_nothing_configured_is_refused_clearly():
    page = Page(nano("available"), None)

    async def go():
        await page.switch.start(backend=SERVER)   # a saved choice that no longer holds
        return await page.ask("use_model", backend=SERVER), await page.ask("use_model",
                                                                           backend="gpt")

    (no_server, unknown), shown = run(go()), page.switch.describe()
    assert shown["backend"] == PROMPT_API and shown["server"] is None
    assert not no_server["ok"] and "--model-url" in no_server["error"]["message"]
    assert not unknown["ok"] and "unknown model backend" in unknown["error"]["message"]


def test_a_server_down_at_start_is_said_and_used_once_it_is_up():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    page = Page(nano("unavailable"), settings_for(url, model="fake-model"))

    async def go():
        shown = await page.switch.start()
        failed = await page.ask("run", session_id="s", text="anyone there?")
        with FakeServer(agent_responder, port=port, context_window=3000, flavor="vllm"):
            answered = await page.ask("run", session_id="s", text="now?")
            await asyncio.sleep(0.05)
        return shown, failed, answered

    shown, failed, answered = run(go())
    assert shown["backend"] == SERVER and "is the model server running" in shown["error"]
    assert failed["ok"] and failed["value"]["status"] == "error"
    assert "is the model server running" in failed["value"]["error"]
    assert answered["value"]["answer"] == "You said: now?"
    # The turn that failed is kept (the store has both), and the page learned the window.
    archive = run(page.store.read_archive("s"))
    assert [(t.user, t.status) for t in archive] == [("anyone there?", "error"), ("now?", "answered")]
    assert page.model_events()[-1]["context_window"] == 3000
    assert page.model_events()[-1]["error"] is None
