"""The toolbox (py_agent.tools.toolbox): sources listed and listed again while dirty, names
resolved by origin, a version raised only when the tools change, turns that wait for a
source still connecting, and an agent that follows changes with no call of its own."""

from __future__ import annotations

import asyncio

import pytest

from py_agent import Agent, tool
from py_agent.testing import FunctionModel, step_json
from py_agent.tools import (OriginKind, RunContext, StaticSource, Tool, Toolbox, ToolOrigin,
                            Trust)
from py_agent.tools.remote import remote_tool
from py_agent.tools.toolbox import Signal
from tests.unit.support import run


def server_origin(server: str) -> ToolOrigin:
    return ToolOrigin(kind=OriginKind.MCP, trust=Trust.UNTRUSTED, source=f"mcp:{server}",
                      server=server)


def remote(name: str, server: str) -> Tool:
    async def call(remote_name, arguments):
        return f"{server}:{remote_name}"
    return remote_tool(name, f"The {name} tool of {server}.", None, call,
                       origin=server_origin(server), annotations={"readOnlyHint": True})


class FakeServer:
    """A tool source whose list changes when told, and that can be slow to list."""

    def __init__(self, key: str, names: list[str], delay: float = 0.0) -> None:
        self.key = key
        self.origin = server_origin(key)
        self.changed = Signal()
        self.names = list(names)
        self.delay = delay
        self.lists = 0
        self.closed = False

    async def list(self) -> list[Tool]:
        self.lists += 1
        names = list(self.names)
        await asyncio.sleep(self.delay)
        return [remote(n, self.key) for n in names]

    async def close(self) -> None:
        self.closed = True


@tool
def echo(text: str) -> str:
    """Repeat the text."""
    return text


def names(box: Toolbox) -> list[str]:
    return [t.name for t in box.tools]


def test_static_tools_are_there_at_once_and_the_version_moves_only_on_change() -> None:
    box = Toolbox([echo])
    assert names(box) == ["echo"] and box.version == 1
    own = box.source("own")
    assert isinstance(own, StaticSource)
    own.set([echo])                 # the same tool again: nothing changed
    assert box.version == 1
    own.set([])
    assert names(box) == [] and box.version == 2


def test_a_source_is_listed_again_while_it_says_it_changed_and_never_twice_at_once() -> None:
    async def scenario():
        server = FakeServer("a", ["one"], delay=0.05)
        box = Toolbox(sources=[server])
        seen = []
        box.subscribe(lambda snap: seen.append([t.name for t in snap.tools]))
        await box.listed("a")
        assert names(box) == ["one"] and server.lists == 1
        server.names = ["one", "two"]
        server.changed.fire()
        await asyncio.sleep(0.01)        # a list is on its way...
        server.names = ["one", "two", "three"]
        server.changed.fire()            # ...and the server changes again
        server.changed.fire()
        await asyncio.sleep(0.2)
        # one more list after the one on its way, not one per signal
        assert server.lists == 3 and names(box) == ["one", "two", "three"]
        assert seen[-1] == ["one", "two", "three"]
    run(scenario())


def test_a_failing_list_keeps_what_was_listed_and_says_why() -> None:
    async def scenario():
        server = FakeServer("a", ["one"])
        box = Toolbox(sources=[server])
        await box.listed("a")

        async def broken():
            raise ConnectionError("the network is down")
        server.list = broken   # type: ignore[method-assign]
        server.changed.fire()
        await asyncio.sleep(0.05)
        assert names(box) == ["one"]
        assert any("network is down" in p for p in box.snapshot().problems)
    run(scenario())


def test_local_tools_keep_their_names_and_server_tools_get_a_prefix() -> None:
    async def scenario():
        box = Toolbox([echo], sources=[FakeServer("everything", ["echo", "add", "recall"]),
                                       FakeServer("other", ["add"])])
        agent = Agent(FunctionModel(lambda call: step_json(answer="ok")), tools=box)
        await box.settled(1)
        assert names(box) == ["echo", "everything_echo", "everything_add",
                              "everything_recall", "other_add", "compact", "recall"]
        recall = box.snapshot().named("recall")
        assert recall is not None and recall.origin.kind is OriginKind.BUILTIN
        assert box.snapshot().named("everything_recall").origin.name == "recall"
        await agent.close()
    run(scenario())


def test_two_local_tools_of_one_name_keep_the_first_by_precedence_and_say_so() -> None:
    @tool
    def recall(query: str) -> str:
        """The app's own recall."""
        return query

    box = Toolbox([recall])
    Agent(FunctionModel(lambda call: step_json(answer="ok")), tools=box)
    kept = box.snapshot().named("recall")
    assert kept is not None and kept.origin.kind is OriginKind.OWN
    assert any("left out" in p and "builtin" in p for p in box.snapshot().problems)


def test_a_turn_waits_for_a_connecting_source_up_to_a_bound_and_says_which_was_not_ready() -> None:
    async def scenario():
        fast = FakeServer("fast", ["weather"], delay=0.1)
        slow = FakeServer("slow", ["stocks"], delay=5)
        box = Toolbox(sources=[fast, slow])
        events = []
        agent = Agent(FunctionModel(lambda call: step_json(answer="ok")), tools=box,
                      on_event=events.append)
        agent.settings.tool_sources_wait_s = 0.5
        started = asyncio.get_running_loop().time()
        await agent.run("what's the weather")
        waited = asyncio.get_running_loop().time() - started
        retrieved = next(e for e in events if e.type == "tools_retrieved")
        assert retrieved.data["not_ready"] == ["slow"]   # the server's name
        assert "weather" in [t.name for t in agent.tools]
        assert 0.4 < waited < 3
        await box.close()
        assert fast.closed and slow.closed
    run(scenario())


def test_a_list_change_reaches_the_next_turns_offer_with_no_call_to_the_agent() -> None:
    async def scenario():
        server = FakeServer("srv", ["get_weather"])
        box = Toolbox(sources=[server])
        offered = []
        agent = Agent(FunctionModel(lambda call: step_json(answer="ok")), tools=box,
                      on_event=lambda e: e.type == "tools_retrieved" and offered.append(
                          [t["name"] for t in e.data["tools"]]))
        await agent.run("what's the weather in Oslo", session_id="s")
        assert "get_weather" in offered[-1]
        server.names = ["get_weather", "convert_currency"]
        server.changed.fire()
        await agent.run("convert 20 euros to yen currency", session_id="s")
        assert "convert_currency" in offered[-1]
        await box.close()
    run(scenario())


def test_a_removed_source_takes_its_tools_and_is_not_listed_again() -> None:
    async def scenario():
        server = FakeServer("a", ["one"])
        box = Toolbox(sources=[server])
        await box.listed("a")
        assert box.remove("a") and not box.remove("a")
        server.changed.fire()
        await asyncio.sleep(0.02)
        assert names(box) == [] and server.lists == 1
    run(scenario())


def test_a_tool_is_never_changed_after_it_is_made() -> None:
    with pytest.raises(AttributeError):
        echo.timeout_s = 1   # type: ignore[misc]
    made = tool(lambda text: text, name="shout", description="Shout.", timeout_s=2.5,
                observation_chars=10, confirm=True)
    assert (made.timeout_s, made.observation_chars, made.confirm) == (2.5, 10, True)


def test_a_tool_that_takes_a_context_gets_it_and_the_model_never_sees_it() -> None:
    seen = []

    @tool
    async def whoami(ctx: RunContext, greeting: str) -> str:
        """Say who asks."""
        seen.append((ctx.session_id, ctx.tool_name, ctx.message))
        return f"{greeting}, chat {ctx.session_id}"

    assert [p.name for p in whoami.params] == ["greeting"] and whoami.takes_context
    assert "ctx" not in whoami.signature()

    def respond(call):
        if call.input.startswith("Observation"):
            return step_json(answer=call.input.split(": ", 1)[1])
        return step_json(tool="whoami", tool_input={"greeting": "hi"})

    agent = Agent(FunctionModel(respond), tools=[whoami])
    result = run(agent.run("who am i", session_id="chat-7"))
    assert result.answer == "hi, chat chat-7"
    assert seen == [("chat-7", "whoami", "who am i")]
