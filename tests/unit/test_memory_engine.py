"""The memory engine (py_agent.memory.engine) built from a store, a FunctionModel and the
session table alone: no Agent anywhere in this file."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from py_agent import InMemoryStore, MemoryPolicy
from py_agent.bases import BaseSessions
from py_agent.events import AgentEvent
from py_agent.memory import MemoryAccountant
from py_agent.memory.engine import MemoryEngine
from py_agent.memory.steps import base_prompts
from py_agent.model import Purpose
from py_agent.prefix import PrefixPlanner
from py_agent.prompting import SYSTEM_INSTRUCTION
from py_agent.sessions import SessionTable
from py_agent.state import Turn
from py_agent.testing import FunctionModel, PromptCall
from py_agent.tokens import TokenCounter
from tests.unit.support import LONG, PREFERENCE, SMALL, make_responder, run


async def never(call: PromptCall) -> str:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


@dataclass
class Rig:
    store: InMemoryStore
    table: SessionTable
    model: FunctionModel
    bases: BaseSessions
    engine: MemoryEngine
    events: list[AgentEvent] = field(default_factory=list)

    def kinds(self) -> list[str]:
        return [e.type for e in self.events]


def rig(policy: MemoryPolicy = SMALL["memory"], window: int = SMALL["window"],
        store: InMemoryStore | None = None, **responders) -> Rig:
    store = store if store is not None else InMemoryStore()
    table = SessionTable(store)
    model = FunctionModel(make_responder(**responders), context_window=window)
    counter = TokenCounter()
    accountant = MemoryAccountant(policy, counter)
    events: list[AgentEvent] = []

    async def emit(event: AgentEvent) -> None:
        events.append(event)

    bases = BaseSessions(model, PrefixPlanner(policy, counter, SYSTEM_INSTRUCTION, lambda: [], 3),
                         base_prompts(), emit)
    engine = MemoryEngine(table, bases, accountant, emit)
    return Rig(store, table, model, bases, engine, events)


async def answered_turns(r: Rig, n: int, session_id: str = "s", first: str = "") -> None:
    """``n`` long answered turns written through the table, as turns would leave them."""
    await r.table.open(session_id, create=True)
    for i in range(n):
        user = first if i == 0 and first else f"Message number {i}: {LONG}"
        await r.table.save_turn(session_id, Turn(id=0, user=user, answer=f"You said: {user}"),
                                allocate=True)
    await r.engine.plan()  # the budget is measured on the step base, with its policy


async def schedule(r: Rig, session_id: str = "s") -> bool:
    """What a turn does when it ends (inside the event loop, where passes run)."""
    return r.engine.schedule(session_id, "auto", None)


async def until(condition, timeout: float = 10.0) -> None:
    """Poll ``condition()`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.01)


def test_a_due_compaction_runs_in_the_background_and_commits_through_the_table():
    r = rig()
    run(answered_turns(r, 10, first=PREFERENCE))
    assert run(schedule(r)) is True and r.engine.running("s")
    assert run(r.engine.wait_idle(timeout=30)) is True
    state = r.table.state("s")
    assert "The user said: Message number 1" in state.summary and state.compactions >= 1
    assert len(state.recent_turns) < 10
    assert "- [preference] The user is vegetarian" in "\n".join(
        f"- [{f.category}] {f.text}" for f in state.facts)
    stored = run(r.store.load("s"))
    assert stored.summary == state.summary and stored.version == state.version
    records = run(r.store.compressions("s"))
    compacted = {i for rec in records if rec.ok and rec.kind == "compaction"
                 for i in rec.turn_ids}
    assert compacted and not compacted & {t.id for t in state.recent_turns}
    assert {"compaction_started", "memory_updated"} <= set(r.kinds())
    assert r.engine.calls["summary"] >= 1 and r.engine.calls["facts"] >= 1


def test_nothing_is_scheduled_before_the_turns_outgrow_their_budget():
    r = rig()
    run(answered_turns(r, 2))
    assert run(schedule(r)) is False and not r.engine.running("s")
    assert r.model.calls_for(Purpose.SUMMARY) == []


def test_a_manual_compaction_keeps_only_the_newest_turns():
    r = rig(policy=MemoryPolicy())
    run(answered_turns(r, 5))
    report = run(r.engine.compact("s", "manual", "keep the numbers", everything=True))
    assert report.ok and report.compacted_turns == 3
    assert [t.id for t in r.table.state("s").recent_turns] == [4, 5]
    assert "keep the numbers" in r.model.calls_for(Purpose.SUMMARY)[-1].input


def test_turns_that_cannot_wait_are_compacted_without_a_hanging_summarizer():
    r = rig(summary=never)
    run(answered_turns(r, 10))
    began = time.monotonic()
    run(r.engine.make_room("s", need=SMALL["window"] // 2))
    assert time.monotonic() - began < 5
    state = r.table.state("s")
    assert state.summary.startswith("In turn 1 the user said: Message number 0")
    assert "could not keep up" in state.degraded
    records = [rec for rec in run(r.store.compressions("s")) if rec.kind == "compaction"]
    assert records and records[-1].fallback and records[-1].ok


def test_close_stops_a_hanging_pass_at_once_and_the_store_stays_consistent():
    store = InMemoryStore()
    r = rig(summary=never, store=store)
    run(answered_turns(r, 10))
    assert run(schedule(r)) and r.engine.running("s")
    # The pass reaches its summary call, which never answers.
    run(until(lambda: r.model.calls_for(Purpose.SUMMARY)))
    began = time.monotonic()
    run(r.engine.close())
    assert time.monotonic() - began < 1.0 and not r.engine.running("s")
    # The stopped pass had read facts and asked for a summary: none of it was written.
    assert r.model.calls_for(Purpose.FACTS) and run(store.compressions("s")) == []
    later = SessionTable(store)
    state = run(later.open("s", create=False))
    assert [t.id for t in state.recent_turns] == list(range(1, 11))
    assert state.summary == "" and state.facts == [] and state.compactions == 0
    assert [t.id for t in run(later.transcript("s"))] == list(range(1, 11))


def test_forget_stops_one_sessions_pass_and_leaves_the_others():
    r = rig(summary=never, policy=replace(SMALL["memory"], summary_timeout_s=60))
    run(answered_turns(r, 10, session_id="a"))
    run(answered_turns(r, 10, session_id="b"))
    assert run(schedule(r, "a")) and run(schedule(r, "b"))
    run(until(lambda: len(r.model.calls_for(Purpose.SUMMARY)) == 2))
    began = time.monotonic()
    run(r.engine.forget("a"))
    assert time.monotonic() - began < 1.0
    assert not r.engine.running("a") and r.engine.running("b")
    run(r.engine.close())
