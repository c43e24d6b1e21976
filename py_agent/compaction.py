"""Compaction, in one place: when it runs, what it asks, what it commits, what it logs.

Read top to bottom:

1. **Scheduling** (:meth:`Compactor.schedule`). After each committed turn the
   agent asks; a compaction starts in the background when the session's raw
   turns have outgrown their token budget, or the user or the model asked for
   one. One runs at a time per session; a request arriving meanwhile is queued
   as one more pass. After a failed summary the model is left alone for a
   while (the back-off doubles with each failure); a compaction still starts
   then if the raw turns are about to overflow, and runs without the model.
2. **One compaction** (:meth:`Compactor.compact_once`). Every raw turn is
   archived first. The turns before the boundary are chosen; then
   a. **facts**: the extractor sees the known facts and those turns and
      adds, updates or retracts facts (:mod:`py_agent.facts`). It runs first,
      on its own timeout, so a summarizer that hangs cannot starve it;
   b. **fold**: if the facts are over their token budget, the lowest-priority
      ones are handed to the summarizer to keep in the summary;
   c. **summary**: the previous summary, the turns, the handed-over facts and
      the facts that just became outdated go to the summarizer, on its own
      timeout; the reply is validated, and a handed-over fact the summary did not
      carry stays a key fact;
   d. **fallback**: when the summary fails for the ``fallback_after_failures``-th
      time in a row, or while backing off, the summary is built without the
      model (the user's own words, shortened) and the session is marked degraded
      until a summary works again. Otherwise a failed summary keeps the raw
      turns for a later try (the facts found meanwhile are kept).
3. **Commit and log.** Only the turns compacted leave the raw turns (turns
   that arrived meanwhile stay); the state and a :class:`CompressionRecord`
   holding every input as sent, every reply, the timings and each fact's
   supersession, retraction or fold with its reason are written together.

Every model call is a clone of a prefilled base session, bounded by a timeout
and destroyed afterwards, so an aborted call leaves nothing running. Prompts
live in :mod:`py_agent._compaction_prompts` and :mod:`py_agent.facts`; budget
arithmetic in :mod:`py_agent.memory`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ._compaction_prompts import InvalidSummaryError, fallback_summary
from ._compaction_steps import Ask, extract_facts, outdated, settle_folds, summarize
from .events import AgentEvent, log
from .facts import over_budget, render_known
from .memory import Budget
from .model import ModelError, ModelSession, Purpose
from .results import CompactionReport
from .state import CompressionRecord, Fact, FactChange, SessionState, Turn, now_ms

if TYPE_CHECKING:  # the agent owns the compactor; its session tables are shared
    from .agent import Agent

MAX_COMPACTIONS_PER_RUN = 4
# While backing off, compact without the model once the raw turns fill this share
# of their budget: past it the next prompt would start leaving turns out.
FALLBACK_FILL = 0.9
DESTROY_TIMEOUT_S = 5.0


class CompactionTimeoutError(ModelError):
    """A compaction's model call took longer than its timeout and was stopped."""


class CompactionPreemptedError(ModelError):
    """A compaction's model call was stopped because the raw turns were about to
    overflow while it ran; not a failure of the model."""


@dataclass
class _Pass:
    """What one compaction gathers before it commits."""

    record: CompressionRecord
    chosen: list[Turn]
    facts: list[Fact]
    next_fact_id: int
    facts_through: int
    changes: list[FactChange] = field(default_factory=list)
    summary: str | None = None
    summary_error: str | None = None
    summary_asked: bool = False
    last_turn_id: int = 0


class Compactor:
    """Runs the compactions of an :class:`~py_agent.agent.Agent`'s sessions.

    It reads the agent's in-memory session states and replaces them under the
    agent's per-session state lock, so a turn committed meanwhile is never lost.
    """

    def __init__(self, agent: "Agent") -> None:
        self.agent = agent
        self._running: dict[str, asyncio.Task] = {}
        self._again: dict[str, tuple[str, str | None]] = {}
        # Back-off per (session, purpose): when the model may be asked again.
        self._retry_at: dict[tuple[str, Purpose], float] = {}
        self._facts_failures: dict[str, int] = {}
        # Set when a turn lands while the raw turns are about to overflow: the model
        # call under way is stopped and the pass falls back (see _ask).
        self._pressure: dict[str, asyncio.Event] = {}
        self._preempted: set[str] = set()

    @property
    def policy(self):
        return self.agent.policy

    # ------------------------------------------------------------ scheduling

    def running(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        return bool(task and not task.done())

    def _budget(self, state: SessionState) -> Budget | None:
        base = self.agent._bases.get(Purpose.STEP)
        if base is None:
            return None
        return self.agent.accountant.budget(state, base.context_window, base.context_usage)

    def _backing_off(self, session_id: str, purpose: Purpose) -> bool:
        return time.monotonic() < self._retry_at.get((session_id, purpose), 0.0)

    def _pressing(self, budget: Budget, need: int | None = None) -> bool:
        """The raw turns are about to overflow: with ``need`` more tokens (the next
        message and its tools; a tenth of the turn budget when unknown), the next
        prompt would have to leave some out."""
        if need is None:
            need = int(budget.turn_budget * (1 - FALLBACK_FILL))
        return budget.turns + need > budget.turn_budget

    def _wanted(self, session_id: str) -> bool:
        """A compaction is due, and either the model may be asked or it cannot wait."""
        state = self.agent._states.get(session_id)
        budget = self._budget(state) if state is not None else None
        if budget is None or not budget.due:
            return False
        return not self._backing_off(session_id, Purpose.SUMMARY) or self._pressing(budget)

    def schedule(self, session_id: str, trigger: str, focus: str | None, *,
                 force: bool = False) -> bool:
        """Start a background compaction if one is due (or ``force``); True if one will run."""
        state = self.agent._states.get(session_id)
        if state is None or self._budget(state) is None:
            return False
        if not force and not self._wanted(session_id):
            return False
        if self.running(session_id):
            self._again[session_id] = (trigger, focus)
        else:
            self._running[session_id] = asyncio.ensure_future(
                self._worker(session_id, trigger, focus, force))
        return True

    async def make_room(self, session_id: str, need: int) -> None:
        """Called before a turn's first prompt, with the tokens its message and tools
        need. If the raw turns would not fit beside them (the user writes faster than
        the model summarizes), the compaction under way stops its model call and
        finishes without the model, or one starts that way; either takes milliseconds,
        so the prompt can carry every raw turn."""
        for _ in range(2):  # a run may be ending as this starts: then one more
            state = self.agent._states.get(session_id)
            budget = self._budget(state) if state is not None else None
            if budget is None or not budget.turns or not self._pressing(budget, need):
                return
            self._pressure.setdefault(session_id, asyncio.Event()).set()
            if not self.running(session_id):
                self._running[session_id] = asyncio.ensure_future(
                    self._worker(session_id, "auto", None, False))
            await asyncio.wait({self._running[session_id]}, timeout=2 * DESTROY_TIMEOUT_S)

    async def _worker(self, session_id: str, trigger: str, focus: str | None,
                      force: bool) -> None:
        self._pressure.setdefault(session_id, asyncio.Event())
        try:
            for _ in range(MAX_COMPACTIONS_PER_RUN):
                report = await self.compact_once(session_id, trigger, focus, everything=force)
                again = self._again.pop(session_id, None)
                if not report.ok:
                    break
                if again is None and not self._wanted(session_id):
                    break
                if again is not None:
                    trigger, focus = again
                force = False
        except asyncio.CancelledError:
            raise
        except Exception:  # a background task must never die silently
            log.exception("background compaction failed for %s", session_id)
        finally:
            self._preempted.discard(session_id)
            self._pressure.pop(session_id, None)

    async def wait_idle(self, session_id: str | None = None,
                        timeout: float | None = None) -> bool:
        """Wait for background compactions (of one session, or all) to finish, at most
        ``timeout`` seconds; True if none is running any more."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            tasks = [t for sid, t in self._running.items()
                     if (session_id is None or sid == session_id) and not t.done()]
            if not tasks:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(tasks, timeout=left)

    async def cancel(self, session_id: str | None = None) -> None:
        """Stop running compactions (of one session, or all). Nothing is lost: every
        raw turn is archived before a compaction starts, and a stopped one commits nothing."""
        tasks = [t for sid, t in self._running.items()
                 if (session_id is None or sid == session_id) and not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=DESTROY_TIMEOUT_S + 1)
        for sid in [sid for sid in self._running if session_id in (None, sid)]:
            self._again.pop(sid, None)
            if session_id is not None:
                self._forget(sid)

    def _forget(self, session_id: str) -> None:
        self._running.pop(session_id, None)
        self._facts_failures.pop(session_id, None)
        for key in [k for k in self._retry_at if k[0] == session_id]:
            del self._retry_at[key]

    # ----------------------------------------------------------- model calls

    def _asker(self, session_id: str) -> Ask:
        async def ask(purpose: Purpose, text: str, schema: dict | None,
                      timeout: float) -> tuple[str, float]:
            return await self._ask(session_id, purpose, text, schema, timeout)
        return ask

    async def _ask(self, session_id: str, purpose: Purpose, text: str, schema: dict | None,
                   timeout: float) -> tuple[str, float]:
        """One model call on a fresh clone, stopped after ``timeout`` seconds or when
        the raw turns press; the clone is destroyed either way. Returns the reply and
        its duration in ms."""
        agent = self.agent
        clock = time.perf_counter()
        session: ModelSession | None = None

        async def call() -> str:
            nonlocal session
            session = await (await agent._base(purpose)).clone()
            return await session.prompt(text, response_constraint=schema, purpose=purpose)

        agent.model_calls[purpose.value] += 1
        task = asyncio.ensure_future(call())
        pressure = asyncio.ensure_future(self._pressure[session_id].wait())
        try:
            await asyncio.wait({task, pressure}, timeout=timeout,
                               return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                reply = task.result()
            else:
                task.cancel()
                await asyncio.wait({task}, timeout=DESTROY_TIMEOUT_S)
                if pressure.done():
                    raise CompactionPreemptedError(
                        f"the {purpose.value} call was stopped: new turns were about to "
                        "overflow the prompt while it ran")
                raise CompactionTimeoutError(f"the {purpose.value} call took longer than "
                                             f"{timeout:g} s and was stopped")
        finally:
            pressure.cancel()
            if not task.done():
                task.cancel()
            if session is not None:
                try:
                    await asyncio.wait_for(session.destroy(), DESTROY_TIMEOUT_S)
                except Exception:
                    log.warning("could not destroy a %s session", purpose.value)
        return reply, (time.perf_counter() - clock) * 1000

    def _failed_call(self, session_id: str, purpose: Purpose, failures: int) -> None:
        self._retry_at[(session_id, purpose)] = time.monotonic() + self.policy.backoff_s(failures)

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
        """Compact the turns before the boundary (all but the newest few with
        ``everything``), and commit exactly those."""
        agent, policy = self.agent, self.policy
        state = agent._states.get(session_id)
        if state is None:
            return CompactionReport(False, 0, error="the session is gone")
        problem = await self._archive_unsaved(session_id)
        if problem:
            return CompactionReport(False, 0, error=problem)
        await agent._base(Purpose.STEP)
        budget = self._budget(state)
        assert budget is not None
        turns = state.recent_turns
        cut = (max(0, len(turns) - policy.min_recent_turns) if everything
               else agent.accountant.boundary(turns, budget.keep))
        asked = trigger != "auto"  # the user or the model asked: try the model now
        # Without the model when it is resting, or when it just failed or was stopped
        # in this run and the raw turns are still about to overflow.
        pressure = self._pressure.setdefault(session_id, asyncio.Event())
        use_model = asked or not (
            self._backing_off(session_id, Purpose.SUMMARY) or pressure.is_set()
            or (self._pressing(budget) and (session_id in self._preempted
                                            or state.consecutive_failures > 0)))
        chosen = self.fit_for_summary(turns[:cut], budget.facts)
        if not chosen:
            return CompactionReport(False, 0, error="nothing to compact")

        ids = [t.id for t in chosen]
        await agent._emit(AgentEvent("compaction_started", session_id,
                                     {"turn_ids": ids, "trigger": trigger}))
        clock = time.perf_counter()
        record = CompressionRecord(
            session_id=session_id, started_at=now_ms(), duration_ms=0, ok=False, turn_ids=ids,
            previous_summary=state.summary, summary_prompt="", summary="", focus=focus,
            trigger=trigger,  # type: ignore[arg-type]
            tokens_before=budget.summary + budget.facts + budget.turns,
            facts_before=list(state.facts), policy=policy.to_dict())
        work = _Pass(record, chosen, list(state.facts), state.next_fact_id, state.facts_through,
                     last_turn_id=turns[-1].id)
        await self._extract_facts(session_id, work, asked)
        folding = over_budget(work.facts, policy, agent.accountant.counter)
        record.folded = folding
        if use_model:
            await self._summarize(session_id, state, work, focus, folding)
        elif self._backing_off(session_id, Purpose.SUMMARY):
            work.summary_error = (f"the summarizer failed {state.consecutive_failures} time(s) "
                                  "in a row and is given a rest")
        elif pressure.is_set():
            work.summary_error = ("new turns needed the room at once, sooner than the "
                                  "summarizer could make it")
        else:
            work.summary_error = ("the raw turns were about to overflow while the summarizer "
                                  "was failing")
        failures = state.consecutive_failures + (work.summary_asked and work.summary is None)
        now = agent._states.get(session_id)
        pressing = pressure.is_set() or (now is not None and
                                         self._pressing(self._budget(now) or budget))
        fallback = work.summary is None and (failures >= policy.fallback_after_failures
                                             or pressing)
        if fallback:
            work.summary = fallback_summary(state.summary, chosen, folding, policy,
                                            agent.accountant.counter)
            record.fallback = True
        record.error = work.summary_error
        if work.summary is not None:
            work.facts, settled = settle_folds(work.facts, folding, work.summary)
            work.changes += settled
        record.fact_changes = work.changes
        record.duration_ms = (time.perf_counter() - clock) * 1000
        report = await self._commit(session_id, work, failures, trigger)
        if record.fallback:
            pressure.clear()  # room is made; the next turn sets it again if need be
        return report

    async def _backlog(self, session_id: str, work: _Pass) -> list[Turn]:
        """The turns whose facts are still to be extracted, oldest first, up to the last
        chosen one: the chosen turns, and any compacted earlier while the extractor
        was stopped or failing (read back from the archive)."""
        first = work.chosen[0].id
        earlier: list[Turn] = []
        if work.facts_through < first - 1:
            earlier = [t for t in await self.agent.transcript(session_id)
                       if work.facts_through < t.id < first and t.status != "error"]
        fresh = earlier + [t for t in work.chosen if t.id > work.facts_through]
        return self.fit_for_summary(fresh, self.agent.accountant.counter.count(
            render_known(work.facts)))

    async def _extract_facts(self, session_id: str, work: _Pass, asked: bool) -> None:
        """Step a: facts from the turns not extracted yet, consolidated."""
        policy, record = self.policy, work.record
        if not policy.extract_facts:
            return
        fresh = await self._backlog(session_id, work)
        if not fresh:
            return
        if not asked and self._backing_off(session_id, Purpose.FACTS):
            record.facts_error = "the fact extractor failed recently and is given a rest"
            return
        ask = self._asker(session_id)
        try:
            result, work.next_fact_id = await extract_facts(ask, record, work.facts, fresh,
                                                            policy, work.next_fact_id)
        except CompactionPreemptedError as exc:
            record.facts_error = str(exc)
            return
        except ModelError as exc:
            record.facts_error = f"{type(exc).__name__}: {exc}"
            failures = self._facts_failures.get(session_id, 0) + 1
            self._facts_failures[session_id] = failures
            self._failed_call(session_id, Purpose.FACTS, failures)
            return
        self._facts_failures.pop(session_id, None)
        self._retry_at.pop((session_id, Purpose.FACTS), None)
        work.facts, work.facts_through = result.facts, fresh[-1].id
        work.changes += result.changes

    async def _summarize(self, session_id: str, state: SessionState, work: _Pass,
                         focus: str | None, folding: list[Fact]) -> None:
        """Step c: the updated summary, or ``summary_error`` saying why there is none."""
        work.summary_asked = True
        try:
            work.summary = await summarize(
                self._asker(session_id), work.record, state.summary, work.chosen, self.policy,
                self.agent.accountant.counter, focus, keep=folding,
                outdated=outdated(work.changes))
        except CompactionPreemptedError as exc:
            work.summary_error, work.summary_asked = str(exc), False
            self._preempted.add(session_id)
            return
        except (ModelError, InvalidSummaryError) as exc:
            work.summary_error = f"{type(exc).__name__}: {exc}"
            self._failed_call(session_id, Purpose.SUMMARY, state.consecutive_failures + 1)
            return
        self._retry_at.pop((session_id, Purpose.SUMMARY), None)

    async def _commit(self, session_id: str, work: _Pass, failures: int,
                      trigger: str) -> CompactionReport:
        """Step 3: write the new state and the record together; tell the page."""
        agent, record = self.agent, work.record
        ok = work.summary is not None
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
                updated.compactions += 1
            else:
                updated.failed_compactions += 1
            if record.fallback or not ok:
                updated.consecutive_failures = failures
            else:
                updated.consecutive_failures = 0
            if record.fallback:
                # Say why in the model's words when it was asked; otherwise keep the
                # reason already shown.
                asked = work.summary_asked or session_id in self._preempted
                updated.degraded = (_degraded_reason(record, failures) if asked
                                    or not current.degraded else current.degraded)
            elif ok:
                updated.degraded = ""
            updated.updated_at = now_ms()
            # Measured on the turns there were at the start: turns that arrived
            # meanwhile are not the compaction's doing.
            after = self._budget(replace(updated, recent_turns=[
                t for t in updated.recent_turns if t.id <= work.last_turn_id]))
            record.ok = ok
            record.summary = work.summary or ""
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
        summary_of_record = {"turn_ids": record.turn_ids, "tokens_before": record.tokens_before,
                             "tokens_after": record.tokens_after, "trigger": trigger,
                             "duration_ms": round(record.duration_ms, 1),
                             "fallback": record.fallback,
                             "fact_changes": [c.to_dict() for c in record.fact_changes]}
        if ok:
            await agent._emit(AgentEvent("memory_updated", session_id, {
                "summary": updated.summary, "facts": [f.to_dict() for f in updated.facts],
                "recent_turns": len(updated.recent_turns), "compactions": updated.compactions,
                "degraded": updated.degraded, "record": summary_of_record}))
            return CompactionReport(True, len(record.turn_ids), record.tokens_before,
                                    record.tokens_after, error=record.error, record=record)
        await agent._emit(AgentEvent("compaction_failed", session_id, {
            "error": record.error, "trigger": trigger, "degraded": updated.degraded,
            "facts": [f.to_dict() for f in updated.facts], "record": summary_of_record}))
        return CompactionReport(False, 0, tokens_before=record.tokens_before,
                                error=record.error, record=record)

    def fit_for_summary(self, turns: list[Turn], facts_tokens: int) -> list[Turn]:
        """The oldest turns whose prompts fit the summarizer's and the extractor's window
        (the summary prompt holds the previous summary and maybe some facts, the facts
        prompt the known facts; both the turns)."""
        agent, policy = self.agent, self.policy
        base = agent._bases.get(Purpose.SUMMARY) or agent._bases[Purpose.STEP]
        room = (base.context_window - base.context_usage - 2 * policy.summary_max_tokens
                - facts_tokens - 300)
        chosen: list[Turn] = []
        used = 0
        for turn in turns:
            cost = agent.accountant.turn_tokens(turn)
            if chosen and used + cost > room:
                break
            chosen.append(turn)
            used += cost
        return chosen


def _degraded_reason(record: CompressionRecord, failures: int) -> str:
    why = record.error or "the summarizer failed"
    if failures:
        head = f"The summarizer failed {failures} time(s) in a row (last: {why})"
    else:
        head = f"The summarizer could not keep up ({why})"
    return (f"{head}, so older turns are kept as the user's own words, shortened, without tool "
            "output, until it works again. Everything is still in the archive.")
