"""Starting and committing one memory pass: the new state and its record written together.

The compactor (:mod:`py_agent.compaction`) gathers a :class:`Pass`: the turns it
compacted, the facts after consolidation and folds, the summary (or None when the
summarizer failed and no fallback was made), and the :class:`CompressionRecord`
with every input and reply. :func:`commit_pass` applies it to the session as it is
*now* (turns that arrived meanwhile stay), updates the counters and the degraded
notice, writes state and record in one store call, and emits the page's event.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from .events import AgentEvent, log
from .memory import Budget
from .model import Purpose
from .results import CompactionReport
from .state import CompressionRecord, Fact, FactChange, SessionState, Turn, now_ms

if TYPE_CHECKING:
    from .agent import Agent


@dataclass
class Pass:
    """What one pass gathers before it commits."""

    record: CompressionRecord
    chosen: list[Turn]            # the turns to compact (none for a facts refresh)
    facts: list[Fact]
    next_fact_id: int
    facts_through: int
    last_turn_id: int
    changes: list[FactChange] = field(default_factory=list)
    summary: str | None = None
    summary_error: str | None = None
    summary_asked: bool = False


async def start_pass(agent: "Agent", session_id: str, trigger: str, focus: str | None,
                     chosen: list[Turn], budget_of: Callable[[SessionState], Budget | None]
                     ) -> Pass | None:
    """Archive unsaved turns, then a pass over the session as it is now (None if the
    turns could not be archived: nothing is compacted that the archive lacks)."""
    if agent._unsaved.get(session_id) and session_id not in agent._detached:
        async with agent._lock(agent._state_locks, session_id):
            try:
                await agent.store.commit_turn(agent._states[session_id],
                                              list(agent._unsaved[session_id]))
                agent._unsaved[session_id].clear()
            except Exception as exc:
                log.warning("not compacting %s: unsaved turns (%s)", session_id, exc)
                return None
    state = agent._states[session_id]
    budget = budget_of(state)
    record = CompressionRecord(
        session_id=session_id, started_at=now_ms(), duration_ms=0, ok=False,
        turn_ids=[t.id for t in chosen], previous_summary=state.summary, summary_prompt="",
        summary="", focus=focus, trigger=trigger,  # type: ignore[arg-type]
        tokens_before=budget.summary + budget.facts + budget.turns if budget else 0,
        facts_before=list(state.facts), policy=agent.policy.to_dict())
    return Pass(record, chosen, list(state.facts), state.next_fact_id, state.facts_through,
                last_turn_id=state.recent_turns[-1].id if state.recent_turns else 0)


async def commit_pass(agent: "Agent", session_id: str, work: Pass, failures: int,
                      trigger: str, *, asked: bool) -> CompactionReport:
    """Write the new state and the record together, under the session's state lock,
    and tell the page. ``failures``: summaries failed in a row, this one included;
    ``asked``: the summarizer was asked (or stopped) in this pass, so a fallback says
    why in its words."""
    record = work.record
    record.fact_changes = work.changes
    ok = work.summary is not None
    compaction = record.kind == "compaction"
    async with agent._lock(agent._state_locks, session_id):
        current = agent._states.get(session_id)
        if current is None:
            return CompactionReport(False, 0, error="the session was deleted meanwhile")
        updated = current.copy()
        updated.facts, updated.next_fact_id = work.facts, work.next_fact_id
        updated.facts_through = max(current.facts_through, work.facts_through)
        if ok:
            done = set(record.turn_ids)
            updated.recent_turns = [t for t in current.recent_turns if t.id not in done]
            updated.summary = work.summary or ""
            updated.compactions += compaction
        elif compaction:
            updated.failed_compactions += 1
        if compaction:
            updated.consecutive_failures = failures if record.fallback or not ok else 0
            if record.fallback:  # say why, in the model's words when it was asked
                updated.degraded = (_degraded_reason(record, failures)
                                    if asked or not current.degraded else current.degraded)
            elif ok:
                updated.degraded = ""
        updated.updated_at = now_ms()
        # Measured on the turns there were at the start: turns that arrived
        # meanwhile are not this pass's doing.
        base = agent._bases.get(Purpose.STEP)
        after = base and agent.accountant.budget(replace(updated, recent_turns=[
            t for t in updated.recent_turns if t.id <= work.last_turn_id]),
            base.context_window, base.context_usage)
        record.ok = ok and (compaction or record.facts_error is None)
        record.summary = updated.summary if ok else record.previous_summary
        record.tokens_after = (after.summary + after.facts + after.turns) if after else 0
        try:
            if session_id not in agent._detached:
                await agent.store.commit_compaction(updated, record)
        except Exception as exc:
            await agent._emit(AgentEvent("storage_error", session_id, {
                "message": f"Could not save the compacted memory ({exc}); the raw turns "
                           "are kept.", "kind": getattr(exc, "kind", "unknown")}))
            return CompactionReport(False, 0, error=str(exc), record=record)
        agent._states[session_id] = updated
    brief = {"kind": record.kind, "turn_ids": record.turn_ids,
             "facts_turn_ids": record.facts_turn_ids, "trigger": trigger,
             "tokens_before": record.tokens_before, "tokens_after": record.tokens_after,
             "duration_ms": round(record.duration_ms, 1), "fallback": record.fallback,
             "fact_changes": [c.to_dict() for c in record.fact_changes]}
    if ok:
        await agent._emit(AgentEvent("memory_updated", session_id, {
            "summary": updated.summary, "facts": [f.to_dict() for f in updated.facts],
            "recent_turns": len(updated.recent_turns), "compactions": updated.compactions,
            "degraded": updated.degraded, "record": brief}))
        return CompactionReport(compaction, len(record.turn_ids), record.tokens_before,
                                record.tokens_after, error=record.error, record=record)
    await agent._emit(AgentEvent("compaction_failed", session_id, {
        "error": record.error, "trigger": trigger, "degraded": updated.degraded,
        "facts": [f.to_dict() for f in updated.facts], "record": brief}))
    return CompactionReport(False, 0, tokens_before=record.tokens_before,
                            error=record.error, record=record)


def _degraded_reason(record: CompressionRecord, failures: int) -> str:
    why = record.error or "the summarizer failed"
    head = (f"The summarizer failed {failures} time(s) in a row (last: {why})" if failures
            else f"The summarizer could not keep up ({why})")
    return (f"{head}, so older turns are kept as the user's own words, shortened, without tool "
            "output, until it works again. Everything is still in the archive.")
