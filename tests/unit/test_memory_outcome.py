"""apply_pass (py_agent.memory.outcome): the rules of a pass's result, on plain data."""

from __future__ import annotations

import copy

import pytest

from py_agent.memory.outcome import Pass, StaleSummaryError, apply_pass
from py_agent.state import CompressionRecord, Fact, SessionState, Turn


def state(turns=(1, 2, 3, 4), **fields) -> SessionState:
    return SessionState(session_id="s", summary="Old summary.",
                        recent_turns=[Turn(id=i, user=f"u{i}", answer=f"a{i}") for i in turns],
                        next_turn_id=max(turns) + 1, **fields)


def work(chosen=(1, 2), summary: str | None = "New summary.", *, kind="compaction",
         fallback=False, error=None, facts=(), facts_through=0) -> Pass:
    record = CompressionRecord(session_id="s", started_at=0, duration_ms=0, ok=False,
                               turn_ids=list(chosen), previous_summary="Old summary.",
                               summary_prompt="", summary="", kind=kind, error=error)
    record.fallback = fallback
    return Pass(record, [Turn(id=i, user=f"u{i}", answer=f"a{i}") for i in chosen],
                list(facts), next_fact_id=len(facts) + 1, facts_through=facts_through,
                last_turn_id=4, summary=summary)


def test_a_summary_replaces_exactly_the_compacted_turns_and_later_ones_stay():
    current = state(turns=(1, 2, 3, 4, 5))  # turn 5 arrived while the pass ran
    updated = apply_pass(current, work(), 0, asked=True, at=123.0)
    assert [t.id for t in updated.recent_turns] == [3, 4, 5]
    assert updated.summary == "New summary." and updated.compactions == 1
    assert updated.consecutive_failures == 0 and updated.updated_at == 123.0


def test_the_inputs_are_not_changed():
    current, gathered = state(), work()
    before, record_before = copy.deepcopy(current), copy.deepcopy(gathered.record)
    apply_pass(current, gathered, 0, asked=True)
    assert current == before and gathered.record == record_before


def test_a_failed_summary_keeps_the_turns_and_counts_the_failure():
    updated = apply_pass(state(), work(summary=None, error="timeout"), 2, asked=True)
    assert [t.id for t in updated.recent_turns] == [1, 2, 3, 4]
    assert updated.summary == "Old summary." and updated.compactions == 0
    assert updated.failed_compactions == 1 and updated.consecutive_failures == 2
    assert updated.degraded == ""


def test_a_fallback_compacts_and_says_why_the_session_is_degraded():
    updated = apply_pass(state(), work(summary="u1. u2.", fallback=True, error="timeout"), 2,
                         asked=True)
    assert [t.id for t in updated.recent_turns] == [3, 4] and updated.compactions == 1
    assert updated.consecutive_failures == 2
    assert updated.degraded.startswith("The summarizer failed 2 time(s) in a row (last: "
                                       "timeout)")


def test_a_fallback_without_asking_keeps_the_reason_already_shown():
    current = state(degraded="The summarizer failed 3 time(s) in a row (last: x), so ...")
    updated = apply_pass(current, work(summary="u1.", fallback=True,
                                       error="new turns needed the room"), 3, asked=False)
    assert updated.degraded == current.degraded
    fresh = apply_pass(state(), work(summary="u1.", fallback=True, error="no room"), 0,
                       asked=False)
    assert fresh.degraded.startswith("The summarizer could not keep up (no room)")


def test_a_working_summary_clears_the_degraded_notice():
    current = state(degraded="The summarizer failed ...", consecutive_failures=3)
    updated = apply_pass(current, work(), 0, asked=True)
    assert updated.degraded == "" and updated.consecutive_failures == 0


def test_a_facts_refresh_changes_facts_but_no_counter_or_turn():
    fact = Fact("preference", "The user is vegan", 4, "f1")
    current = state(consecutive_failures=1, degraded="degraded")
    updated = apply_pass(current, work(chosen=(), summary="Old summary.", kind="facts",
                                       facts=[fact], facts_through=4), 0, asked=False)
    assert updated.facts == [fact] and updated.facts_through == 4 and updated.next_fact_id == 2
    assert [t.id for t in updated.recent_turns] == [1, 2, 3, 4]
    assert (updated.compactions, updated.failed_compactions) == (0, 0)
    assert (updated.consecutive_failures, updated.degraded) == (1, "degraded")


def test_facts_read_is_never_moved_back():
    updated = apply_pass(state(facts_through=4), work(facts_through=2), 0, asked=True)
    assert updated.facts_through == 4


def test_a_session_compacted_by_someone_else_is_refused():
    current = state()
    current.summary = "Another tab's summary."
    with pytest.raises(StaleSummaryError, match="another tab or process"):
        apply_pass(current, work(), 0, asked=True)
