"""Shared helpers for unit tests: run coroutines, and a plausible scripted model."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Callable

import pytest

from py_agent import Agent, InMemoryStore, MemoryPolicy, ToolPolicy
from py_agent.model import Purpose
from py_agent.testing import FunctionModel, PromptCall, step_json, user_message


_LOOP: asyncio.AbstractEventLoop | None = None


def run(coro):
    """Run a coroutine on this test's event loop.

    One loop per test, as in the browser worker: background compactions that a
    call schedules keep running across later calls in the same test.
    """
    assert _LOOP is not None, "run() needs the per-test event loop fixture"
    return _LOOP.run_until_complete(coro)


@pytest.fixture(autouse=True)
def event_loop_per_test():
    global _LOOP
    _LOOP = asyncio.new_event_loop()
    yield _LOOP
    pending = [t for t in asyncio.all_tasks(_LOOP) if not t.done()]
    for task in pending:
        task.cancel()

    async def settle():
        await asyncio.gather(*pending, return_exceptions=True)

    _LOOP.run_until_complete(settle())
    _LOOP.close()
    _LOOP = None


def summarizer_reply(call: PromptCall) -> str:
    """A summary that keeps every user sentence it saw, compressed: a faithful summarizer."""
    users = re.findall(r"^User: (.*)$", call.input, re.MULTILINE)
    previous = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", call.input, re.DOTALL)
    old = previous.group(1) if previous and previous.group(1) != "(none)" else ""
    text = (old + " " + " ".join(f"The user said: {u[:60]}." for u in users)).strip()
    words = text.split()
    return " ".join(words[-300:])


def facts_reply(call: PromptCall) -> str:
    """Extract a preference from any 'I am vegetarian'-style sentence."""
    facts = []
    for sentence in re.findall(r"^User: (.*)$", call.input, re.MULTILINE):
        if re.search(r"\bI(?:'m| am) (vegetarian|vegan)", sentence, re.IGNORECASE):
            facts.append({"category": "preference", "text": "The user is " +
                          re.search(r"(vegetarian|vegan)", sentence, re.I).group(1).lower()})
    return json.dumps({"facts": facts})


def echo_agent_reply(call: PromptCall) -> str:
    """Answer every turn directly, echoing the user's message."""
    message = user_message(call)
    return step_json(thought="I can answer directly.", answer=f"You said: {message}")


def make_responder(step: Callable[[PromptCall], str] = echo_agent_reply,
                   summary: Callable[[PromptCall], str] = summarizer_reply,
                   facts: Callable[[PromptCall], str] = facts_reply) -> Callable[[PromptCall], str]:
    """Dispatch on the call's purpose, as a real model would see three kinds of prompt."""

    def respond(call: PromptCall) -> str:
        if call.purpose is Purpose.SUMMARY:
            return summary(call)
        if call.purpose is Purpose.FACTS:
            return facts(call)
        return step(call)

    return respond


FAST_TOOLS = ToolPolicy(timeout_s=0.3, max_attempts=3, backoff_s=0.01)

# A small window makes compaction come quickly; the policy fits it (make_agent(**SMALL)).
# A small window whose policy fits unscaled: recalled turns and the profile get about
# the share of the window they get in Gemini Nano's.
SMALL = dict(window=3500, memory=MemoryPolicy(reserved_turn_tokens=900, summary_target_tokens=200,
                                              summary_max_tokens=400, recall_max_tokens=150,
                                              profile_max_tokens=120))
LONG = "and here are many more details about it " * 12
PREFERENCE = "I'm vegetarian, please remember that."


async def chat(agent, n: int, session_id: str = "s", start: int = 0, wait: bool = True) -> None:
    """``n`` long turns ("Message number {i}: ..."), then (with ``wait``) the compactions."""
    for i in range(start, start + n):
        await agent.run(f"Message number {i}: {LONG}", session_id=session_id)
    if wait:
        await agent.wait_idle()


async def compactions(agent, session_id: str = "s") -> list:
    """The session's compression log without its facts refreshes."""
    return [r for r in await agent.compressions(session_id) if r.kind == "compaction"]


async def stopped_turn(agent, text: str, *, after: float, session_id: str = "s",
                       within: float = 2.0):
    """A turn of ``text`` that the user stops ``after`` seconds; its result, which must
    come ``within`` seconds of the start (a stop never waits on the model or a tool)."""
    abort = asyncio.Event()
    task = asyncio.ensure_future(agent.run(text, session_id=session_id, abort=abort))
    await asyncio.sleep(after)
    abort.set()
    return await asyncio.wait_for(task, within)


async def preference_then_chat(agent, n: int, session_id: str = "s") -> None:
    """Turn 1 says the user is vegetarian (facts_reply makes it a key fact once it is
    compacted); then ``n`` long turns push it out of the raw turns."""
    await agent.run(PREFERENCE, session_id=session_id)
    await chat(agent, n, session_id, start=1)


@pytest.fixture
def make_agent():
    """Build an agent over a FunctionModel; returns (agent, model, store)."""

    def build(step=echo_agent_reply, *, tools=(), memory: MemoryPolicy | None = None,
              window: int = 9216, store: InMemoryStore | None = None, summary=summarizer_reply,
              facts=facts_reply, **kwargs: Any):
        model = FunctionModel(make_responder(step, summary, facts), context_window=window)
        store = store if store is not None else InMemoryStore()
        kwargs.setdefault("tool_policy", FAST_TOOLS)
        agent = Agent(model=model, store=store, tools=list(tools), memory=memory, **kwargs)
        return agent, model, store

    return build
