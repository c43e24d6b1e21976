"""The in-page model as the page's third backend (py_agent/browser/page_model.py and
backends.py): chosen, described, refused when not offered, and one session that moves
between Gemini Nano, the in-page model and a model server keeps its memory.

Gemini Nano and the in-page model are FunctionModels behind the LLM host's protocol (the
in-page model's host also answers ``info`` as web/page_model/ does once loaded); the
server is the fake OpenAI server over real HTTP.
"""

from __future__ import annotations

import asyncio

import pytest

from demo_tools import calculate
from py_agent import Agent, InMemoryStore
from py_agent.browser.backends import PROMPT_API, SERVER, BackendSwitch
from py_agent.browser.page_model import PAGE_MODEL, PageModelBridge, PageModelSource
from py_agent.browser.server_model import ServerModel, ServerSettings
from py_agent.model import Purpose
from py_agent.openai_compat import StdlibTransport, Timeouts
from tests.unit.test_backend_switch import SwitchReplies
from py_agent.rpc import BridgeModel
from py_agent.testing import FunctionModel, context_text, step_json, user_message
from tests.fake_openai_server import FakeServer, agent_responder
from tests.unit.support import make_responder, run
from tests.unit.test_rpc_and_host import host_transport

FAST = Timeouts(connect=1, read=2, call=5, probe=1)
TINY = PageModelSource(url="/models/tiny.gguf", name="tiny.gguf", size=1_002_080, sha256="ab" * 32)
OTHER = PageModelSource(url="/models/other.gguf", name="other.gguf", size=2_000_000)
ENGINE_INFO = {"name": "tiny-random-llama", "contextWindow": 4096, "threads": 2,
               "multiThreaded": True, "crossOriginIsolated": True, "fileSize": 1_002_080}
REMEMBERED = ("My cat is called Biscuit.", "I live in Lisbon.")


def remembering(name: str):
    """A model that answers with the earlier messages it finds in what it has read."""
    def step(call):
        message = user_message(call)
        if message is None:
            return step_json(answer=f"{name}: done.")
        seen = [m for m in REMEMBERED if m in context_text(call) and m != message]
        return step_json(thought="From memory.", answer=f"{name} remembers: [{' | '.join(seen)}]")
    return FunctionModel(make_responder(step=step))


class Engine:
    """The page's LLM host serving the in-page model: the protocol over a FunctionModel,
    plus ``info`` (null until the page has loaded the model)."""

    def __init__(self, model: FunctionModel) -> None:
        self.log: list = []
        self.loaded = True
        self.inner, _ = host_transport(model, self.log)

    async def transport(self, method, args):
        if method == "info":
            self.log.append((method, args))
            return {"ok": True, "value": dict(ENGINE_INFO) if self.loaded else None}
        return await self.inner(method, args)


class Page(SwitchReplies):
    def __init__(self, nano: FunctionModel, engine: Engine, server_url: str | None = None,
                 offered=(TINY, OTHER)) -> None:
        self.posted: list[dict] = []
        self.store = InMemoryStore()
        self.engine = engine
        self.made: list[PageModelSource] = []
        settings = ServerSettings(url=server_url, shown_url=server_url) if server_url else None
        nano_log: list = []
        self.nano_transport, _ = host_transport(nano, nano_log)

        def make_page_model(source):
            self.made.append(source)
            return PageModelBridge(source, engine.transport,
                                   stream_purposes=frozenset({Purpose.STEP}))

        self.switch = BackendSwitch(
            BridgeModel(self.nano_transport), settings,
            make_server_model=lambda name: ServerModel(settings, StdlibTransport(), wanted=name,
                                                       timeouts=FAST),
            make_agent=lambda model, policy: Agent(model=model, store=self.store,
                                                   tools=[calculate], memory=policy),
            post=self.posted.append, page_models=offered, make_page_model=make_page_model)
        self._ids = 0



def test_one_session_moves_between_nano_the_in_page_model_and_a_server_and_keeps_its_memory():
    engine = Engine(remembering("page"))
    with FakeServer(agent_responder, models=("fake-model",), context_window=4096,
                    flavor="vllm") as server:
        page = Page(remembering("nano"), engine, server.url)

        async def go():
            await page.switch.start()
            first = await page.ask("run", session_id="s", text=REMEMBERED[0])
            to_page = await page.ask("use_model", backend=PAGE_MODEL, model=TINY.url)
            second = await page.ask("run", session_id="s", text=REMEMBERED[1])
            to_server = await page.ask("use_model", backend=SERVER)
            third = await page.ask("run", session_id="s", text="Do you remember what I said before?")
            back = await page.ask("use_model", backend=PROMPT_API)
            fourth = await page.ask("run", session_id="s", text="And now?")
            return first, to_page, second, to_server, third, back, fourth

        first, to_page, second, to_server, third, back, fourth = run(go())
    assert first["value"]["answer"] == "nano remembers: []"
    assert to_page["ok"] and to_page["value"]["backend"] == PAGE_MODEL
    assert second["value"]["answer"] == f"page remembers: [{REMEMBERED[0]}]"   # Nano's turn
    assert any(m == "prompt" for m, _ in engine.log)                       # the page model answered
    assert to_server["ok"] and to_server["value"]["backend"] == SERVER
    assert third["value"]["answer"] == f"Earlier you asked: {REMEMBERED[0]}"
    assert back["ok"] and back["value"]["backend"] == PROMPT_API
    assert fourth["value"]["answer"] == f"nano remembers: [{REMEMBERED[0]} | {REMEMBERED[1]}]"
    archive = run(page.store.read_archive("s"))
    assert [t.user for t in archive] == [*REMEMBERED, "Do you remember what I said before?",
                                         "And now?"]


def test_the_in_page_model_describes_itself_with_its_threads_once_the_page_loaded_it():
    engine = Engine(remembering("page"))
    engine.loaded = False     # the page is still loading it when the worker starts
    page = Page(remembering("nano"), engine)

    async def go():
        shown = await page.switch.start(PAGE_MODEL, TINY.url)   # the saved choice
        engine.loaded = True
        described = await page.ask("model_info")
        return shown, described

    shown, described = run(go())
    assert shown["backend"] == PAGE_MODEL and shown["loaded"] is False
    assert shown["name"] == "tiny.gguf" and shown["size"] == TINY.size and shown["threads"] is None
    assert [s["url"] for s in shown["page_models"]] == [TINY.url, OTHER.url]
    value = described["value"]
    assert value["loaded"] is True and value["name"] == "tiny-random-llama"
    assert value["threads"] == 2 and value["multi_threaded"] is True
    assert value["cross_origin_isolated"] is True and value["context_window"] == 4096
    assert page.model_events()[-1]["threads"] == 2          # the page is told without asking again


def test_a_session_made_before_the_first_description_fetches_it():
    engine = Engine(remembering("page"))
    engine.loaded = False
    page = Page(remembering("nano"), engine)

    async def go():
        await page.switch.start(PAGE_MODEL, TINY.url)
        engine.loaded = True
        return await page.ask("run", session_id="s", text="hello")

    reply = run(go())
    assert reply["ok"] and reply["value"]["status"] == "answered"
    assert page.switch.describe()["threads"] == 2


@pytest.mark.parametrize("saved", [("page-model", "/models/gone.gguf"), ("page-model", None)])
def test_a_saved_in_page_model_that_is_no_longer_offered_falls_back_to_the_default(saved):
    page = Page(remembering("nano"), Engine(remembering("page")))
    shown = run(page.switch.start(*saved))
    assert shown["backend"] == PROMPT_API and page.made == []


def test_switching_to_an_in_page_model_the_page_does_not_offer_is_refused_clearly():
    page = Page(remembering("nano"), Engine(remembering("page")), offered=(TINY,))

    async def go():
        await page.switch.start()
        return await page.ask("use_model", backend=PAGE_MODEL, model="/models/gone.gguf")

    refused = run(go())
    assert not refused["ok"] and "offers no in-page model" in refused["error"]["message"]
    assert page.switch.describe()["backend"] == PROMPT_API


def test_without_offered_models_there_is_no_in_page_backend():
    page = Page(remembering("nano"), Engine(remembering("page")), offered=())

    async def go():
        await page.switch.start()
        return await page.ask("use_model", backend=PAGE_MODEL, model=TINY.url)

    refused = run(go())
    assert not refused["ok"] and page.switch.describe()["page_models"] == []


def test_the_manifest_entries_are_read_leniently():
    sources = PageModelSource.from_manifest([
        {"url": "/models/a.gguf", "name": "A", "size": 10, "sha256": "00"},
        {"url": "https://models.example/b.gguf"},
        {"name": "no url"}, "junk", {"url": "/models/c.gguf", "size": "big"}])
    assert [(s.url, s.name, s.size) for s in sources] == [
        ("/models/a.gguf", "A", 10), ("https://models.example/b.gguf", "b.gguf", None),
        ("/models/c.gguf", "c.gguf", None)]
    assert PageModelSource.from_manifest(None) == ()
