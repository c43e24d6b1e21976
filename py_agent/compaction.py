"""Compaction, in one place: when it runs, what it sends, what it commits, what it logs.

Read top to bottom:

1. **Scheduling** (:meth:`Compactor.schedule`): after each committed turn the agent
   asks; a compaction starts in the background when the session's raw turns have
   outgrown their token budget (or the user or the model asked for one). One runs
   at a time per session; a request arriving meanwhile is queued as one more pass.
2. **One compaction** (:meth:`Compactor.compact_once`): the turns before the
   boundary are summarized with the previous summary into a new one, and key
   facts are extracted from them. Before that, every raw turn must be in the
   archive.
3. **Commit**: only the turns that were summarized leave the raw turns; turns
   that arrived meanwhile stay. The new state and the compression record are
   written together. A failure changes nothing but the log: the raw turns stay
   and the next turn tries again.

The prompts live in :mod:`py_agent._compaction_prompts` (summary) and
:mod:`py_agent.facts` (facts); the budget arithmetic in :mod:`py_agent.memory`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ._compaction_prompts import InvalidSummaryError, summary_prompt, validate_summary
from .events import AgentEvent, log
from .facts import FACTS_SCHEMA, facts_prompt, merge_facts, parse_facts
from .model import ModelError, Purpose
from .results import CompactionReport
from .state import CompressionRecord, Turn, now_ms

if TYPE_CHECKING:  # the agent owns the compactor; only its session tables are used here
    from .agent import Agent

MAX_COMPACTIONS_PER_RUN = 4


class Compactor:
    """Runs a session's compactions for an :class:`~py_agent.agent.Agent`.

    It reads and replaces the agent's in-memory session states under the agent's
    per-session state lock, so a turn committed meanwhile is never lost.
    """

    def __init__(self, agent: "Agent") -> None:
        self.agent = agent
        self._running: dict[str, asyncio.Task] = {}
        self._again: dict[str, tuple[str, str | None] | None] = {}

    @property
    def policy(self):
        return self.agent.policy

    # ------------------------------------------------------------ scheduling

    def running(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        return bool(task and not task.done())

    def schedule(self, session_id: str, trigger: str, focus: str | None, *,
                 force: bool = False) -> bool:
        """Start a background compaction if one is due (or ``force``); True if one will run."""
        agent = self.agent
        state = agent._states.get(session_id)
        base = agent._bases.get(Purpose.STEP)
        if state is None or base is None:
            return False
        if not force and not agent.accountant.budget(state, base.context_window,
                                                     base.context_usage).due:
            return False
        if self.running(session_id):
            self._again[session_id] = (trigger, focus)
            return True
        self._running[session_id] = asyncio.ensure_future(
            self._worker(session_id, trigger, focus, force))
        return True

    async def _worker(self, session_id: str, trigger: str, focus: str | None,
                      force: bool) -> None:
        agent = self.agent
        try:
            for _ in range(MAX_COMPACTIONS_PER_RUN):
                report = await self.compact_once(session_id, trigger, focus, everything=force)
                again = self._again.pop(session_id, None)
                if not report.ok:
                    break
                state, base = agent._states.get(session_id), agent._bases[Purpose.STEP]
                due = state is not None and agent.accountant.budget(
                    state, base.context_window, base.context_usage).due
                if not due and again is None:
                    break
                if again is not None:
                    trigger, focus = again
                force = False
        except Exception:  # a background task must never die silently
            log.exception("background compaction failed for %s", session_id)

    async def wait_idle(self, session_id: str | None = None) -> None:
        """Wait for background compactions (of one session, or all) to finish."""
        while True:
            tasks = [t for sid, t in self._running.items()
                     if (session_id is None or sid == session_id) and not t.done()]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------- one compaction

    async def _archive_unsaved(self, session_id: str) -> str | None:
        """Write turns not saved yet: the archive holds every raw turn before any is
        compacted. Returns an error message if that failed."""
        agent = self.agent
        if not agent._unsaved.get(session_id) or session_id in agent._detached:
            return None
        async with agent._lock(agent._state_locks, session_id):
            try:
                await agent.store.commit_turn(agent._states[session_id],
                                              list(agent._unsaved[session_id]))
                agent._unsaved[session_id].clear()
            except Exception as exc:
                return f"unsaved turns: {exc}"
        return None

    async def compact_once(self, session_id: str, trigger: str, focus: str | None, *,
                           everything: bool) -> CompactionReport:
        """Summarize the turns before the boundary and commit exactly those."""
        agent, policy = self.agent, self.policy
        state = agent._states.get(session_id)
        if state is None:
            return CompactionReport(False, 0, error="the session is gone")
        problem = await self._archive_unsaved(session_id)
        if problem:
            return CompactionReport(False, 0, error=problem)
        base = await agent._base(Purpose.STEP)
        budget = agent.accountant.budget(state, base.context_window, base.context_usage)
        turns = state.recent_turns
        if everything:
            cut = max(0, len(turns) - policy.min_recent_turns)
        else:
            cut = agent.accountant.boundary(turns, budget.keep)
        chosen = self.fit_for_summary(turns[:cut])
        if not chosen:
            return CompactionReport(False, 0, error="nothing to compact")

        ids = [t.id for t in chosen]
        await agent._emit(AgentEvent("compaction_started", session_id,
                                     {"turn_ids": ids, "trigger": trigger}))
        started, clock = now_ms(), time.perf_counter()
        counter = agent.accountant.counter
        prompt = summary_prompt(state.summary, chosen, policy, counter, focus)
        record = CompressionRecord(session_id=session_id, started_at=started, duration_ms=0,
                                   ok=False, turn_ids=ids, previous_summary=state.summary,
                                   summary_prompt=prompt, summary="", focus=focus,
                                   trigger=trigger,  # type: ignore[arg-type]
                                   tokens_before=budget.summary + budget.facts + budget.turns)
        try:
            record.model_calls += 1
            raw = await agent._prompt(Purpose.SUMMARY, prompt)
            record.summary = raw
            summary = validate_summary(raw, policy, counter)
            new_facts = []
            if policy.extract_facts:
                record.model_calls += 1
                try:
                    reply = await agent._prompt(Purpose.FACTS,
                                                facts_prompt(state.facts, chosen, policy),
                                                FACTS_SCHEMA)
                    new_facts = parse_facts(reply, policy, ids[-1])
                except ModelError as exc:
                    record.error = f"fact extraction failed: {exc}"
        except (ModelError, InvalidSummaryError) as exc:
            return await self._failed(session_id, record, clock,
                                      f"{type(exc).__name__}: {exc}", trigger)

        async with agent._lock(agent._state_locks, session_id):
            current = agent._states.get(session_id)
            if current is None:
                return CompactionReport(False, 0, error="the session was deleted meanwhile")
            updated = current.copy()
            done = set(ids)
            updated.recent_turns = [t for t in current.recent_turns if t.id not in done]
            updated.summary = summary
            updated.facts, added = merge_facts(current.facts, new_facts, policy.max_facts)
            updated.compactions += 1
            updated.updated_at = now_ms()
            after = agent.accountant.budget(updated, base.context_window, base.context_usage)
            record.ok, record.summary, record.facts_added = True, summary, added
            record.tokens_after = after.summary + after.facts + after.turns
            record.duration_ms = (time.perf_counter() - clock) * 1000
            try:
                if session_id not in agent._detached:
                    await agent.store.commit_compaction(updated, record)
            except Exception as exc:
                await agent._emit(AgentEvent("storage_error", session_id, {
                    "message": f"Could not save the compacted memory ({exc}); the raw turns "
                               "are kept.", "kind": getattr(exc, "kind", "unknown")}))
                return CompactionReport(False, 0, error=str(exc), record=record)
            agent._states[session_id] = updated
        await agent._emit(AgentEvent("memory_updated", session_id, {
            "summary": summary, "facts": [f.to_dict() for f in updated.facts],
            "recent_turns": len(updated.recent_turns), "compactions": updated.compactions,
            "record": {"turn_ids": ids, "tokens_before": record.tokens_before,
                       "tokens_after": record.tokens_after,
                       "duration_ms": round(record.duration_ms, 1), "trigger": trigger}}))
        return CompactionReport(True, len(ids), record.tokens_before, record.tokens_after,
                                record=record)

    async def _failed(self, session_id: str, record: CompressionRecord, clock: float,
                      error: str, trigger: str) -> CompactionReport:
        """Log a compaction that changed nothing, and tell the page."""
        agent = self.agent
        record.error = error
        record.duration_ms = (time.perf_counter() - clock) * 1000
        if session_id in agent._states:
            agent._states[session_id].failed_compactions += 1
        try:
            if session_id not in agent._detached:
                await agent.store.commit_compaction(None, record)
        except Exception:
            log.exception("could not log a failed compaction")
        await agent._emit(AgentEvent("compaction_failed", session_id,
                                     {"error": record.error, "trigger": trigger}))
        return CompactionReport(False, 0, tokens_before=record.tokens_before,
                                error=record.error, record=record)

    def fit_for_summary(self, turns: list[Turn]) -> list[Turn]:
        """The oldest turns whose summary prompt fits the summarizer's window."""
        agent = self.agent
        base = agent._bases.get(Purpose.SUMMARY) or agent._bases[Purpose.STEP]
        room = (base.context_window - base.context_usage - 2 * self.policy.summary_max_tokens
                - 300)
        chosen, used = [], 0
        for turn in turns:
            cost = agent.accountant.turn_tokens(turn)
            if chosen and used + cost > room:
                break
            chosen.append(turn)
            used += cost
        return chosen
