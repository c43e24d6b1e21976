"""close() and delete_session() stop background memory work at once, whatever the model
does, and leave every stored session whole for the next agent on the store."""

from __future__ import annotations

import asyncio
import time

import pytest

from py_agent import Agent, UnknownSessionError
from py_agent.model import Purpose
from py_agent.testing import FunctionModel, PromptCall
from tests.unit.support import SMALL, chat, make_responder, run, summarizer_reply


async def never(call: PromptCall) -> str:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def hanging(make_agent, hangs: str):
    """An agent whose summarizer or fact extractor never answers, with today's default
    timeouts (minutes), and a compaction of session "s" stuck in that call."""
    agent, model, store = make_agent(window=SMALL["window"], memory=SMALL["memory"],
                                     **{hangs: never})
    run(chat(agent, 10, wait=False))
    purpose = Purpose.SUMMARY if hangs == "summary" else Purpose.FACTS

    async def stuck() -> None:
        deadline = time.monotonic() + 10
        while not (model.calls_for(purpose) and agent.memory.running("s")):
            assert time.monotonic() < deadline, "no compaction got stuck"
            await asyncio.sleep(0.01)

    run(stuck())
    assert run(agent.memory_state("s")).compacting
    return agent, store


def later_agent(store) -> Agent:
    return Agent(model=FunctionModel(make_responder()), store=store)


def assert_whole(store, session_id: str = "s") -> None:
    """A later agent reads the session: every turn, each once, in the memory or in a
    compaction that was written whole."""
    later = later_agent(store)
    state = run(later.memory_state(session_id))
    turns = run(later.transcript(session_id))
    assert [t.id for t in turns] == list(range(1, 11))
    assert all(t.status == "answered" for t in turns)
    compacted = {i for r in run(later.compressions(session_id)) if r.ok
                 for i in r.turn_ids}
    raw = {t.id for t in state.recent_turns}
    assert not compacted & raw and compacted | raw == set(range(1, 11))
    assert run(later.run("Are you still there?", session_id=session_id)).status == "answered"


@pytest.mark.parametrize("hangs", ["summary", "facts"])
def test_close_returns_at_once_while_a_model_call_hangs(make_agent, hangs):
    agent, store = hanging(make_agent, hangs)
    began = time.monotonic()
    run(agent.close())
    assert time.monotonic() - began < 1.0
    assert not agent.memory.running("s")
    assert_whole(store)


@pytest.mark.parametrize("hangs", ["summary", "facts"])
def test_delete_session_returns_at_once_while_a_model_call_hangs(make_agent, hangs):
    agent, store = hanging(make_agent, hangs)
    run(chat(agent, 10, session_id="t", wait=False))
    began = time.monotonic()
    assert run(agent.delete_session("s")) is True
    assert time.monotonic() - began < 1.0
    assert run(store.load("s")) is None and run(store.read_archive("s")) == []
    assert run(store.compressions("s")) == []
    run(agent.close())
    with pytest.raises(UnknownSessionError):
        run(later_agent(store).memory_state("s"))
    assert_whole(store, "t")


def test_close_may_still_give_passes_time_to_finish(make_agent):
    async def slow(call: PromptCall) -> str:
        await asyncio.sleep(0.3)
        return summarizer_reply(call)

    agent, model, store = make_agent(window=SMALL["window"], memory=SMALL["memory"],
                                     summary=slow)
    run(chat(agent, 9, wait=False))  # a compaction starts at the 7th (recall has room too)
    assert run(agent.memory_state("s")).compacting
    run(agent.close(timeout=30))
    records = run(store.compressions("s"))
    assert any(r.ok and r.kind == "compaction" and not r.fallback for r in records)
