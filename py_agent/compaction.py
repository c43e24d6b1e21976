"""Memory upkeep, in one place: when it runs, what it asks, what it commits and logs.

Two kinds of background pass keep a session's memory, one at a time per session:

- a **facts refresh** once the raw turns not yet read for facts fill
  ``facts_refresh_ratio`` of the turn budget: the extractor sees the known facts (with short ids)
  and those turns, and adds, updates or retracts facts (:mod:`py_agent.facts`);
  also right after a turn that may change a known fact
  (:func:`~py_agent._fact_rules.may_revise`), so an old value is not shown as current;
- a **compaction** once the raw turns outgrow their token budget (or the user or
  the model asks): (a) if some of its turns were not read for facts yet, facts
  from every unread turn; (b) if the facts are
  over their budget, the lowest-priority ones are handed to the summarizer to
  keep; (c) the previous summary, the older turns, those facts and the facts that
  no longer hold go to the summarizer; a handed-over fact the summary does not
  carry stays a key fact; (d) if the summary fails for the
  ``fallback_after_failures``-th time in a row, or the model is resting after a
  failure, or new turns need the room at once, the summary is built without the
  model (the user's own words, shortened) and the session is shown as degraded
  until a summary works again; otherwise the raw turns wait for the next try.

Every model call is a clone of a prefilled base session with a timeout, destroyed
afterwards (:func:`~py_agent._compaction_steps.bounded_call`); a failure makes the
model rest for ``retry_backoff_s``, doubling. Before a turn's prompt,
:meth:`Compactor.make_room` makes sure the raw turns fit beside it, so no prompt
leaves a turn out. Every raw turn is archived before a pass starts, a pass commits
only the turns it compacted (turns that arrived meanwhile stay), and the new state
and a :class:`CompressionRecord` (every input as sent, every reply, timings, each
fact's supersession, retraction or fold with its reason) are written together.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ._compaction_commit import Pass, commit_pass, start_pass
from ._compaction_prompts import InvalidSummaryError, fallback_summary
from ._compaction_steps import (DESTROY_TIMEOUT_S, Ask, CompactionPreemptedError,
                                bounded_call, extract_facts, outdated, settle_folds, summarize)
from .events import AgentEvent, log
from ._fact_rules import may_revise
from .facts import over_budget, render_known
from .memory import Budget
from .model import ModelError, Purpose
from .results import CompactionReport
from .state import Fact, FactChange, SessionState, Turn

if TYPE_CHECKING:  # the agent owns the compactor; its session tables are shared
    from .agent import Agent

MAX_PASSES_PER_RUN = 4
# While the model rests, compact without it once the raw turns fill this share of
# their budget: past it the next prompt could not carry them all.
FALLBACK_FILL = 0.9


class Compactor:
    """Keeps the memory of an :class:`~py_agent.agent.Agent`'s sessions.

    It reads the agent's in-memory session states and replaces them under the
    agent's per-session state lock, so a turn committed meanwhile is never lost.
    """

    def __init__(self, agent: "Agent") -> None:
        self.agent = agent
        self._running: dict[str, asyncio.Task] = {}
        self._again: dict[str, tuple[str, str | None]] = {}
        self._retry_at: dict[tuple[str, Purpose], float] = {}  # when the model may be asked
        self._facts_failures: dict[str, int] = {}
        self._outdated: dict[str, list[FactChange]] = {}  # for the next summary to hear of
        # Set when a turn needs room at once: the call under way stops, the pass falls back.
        self._pressure: dict[str, asyncio.Event] = {}
        self._preempted: set[str] = set()

    @property
    def policy(self):
        return self.agent.policy

    # ------------------------------------------------------------ conditions

    def running(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        return bool(task and not task.done())

    def _budget(self, state: SessionState | None) -> Budget | None:
        base = self.agent._bases.get(Purpose.STEP)
        if base is None or state is None:
            return None
        return self.agent.accountant.budget(state, base.context_window, base.context_usage)

    def _backing_off(self, session_id: str, purpose: Purpose) -> bool:
        return time.monotonic() < self._retry_at.get((session_id, purpose), 0.0)

    def _pressing(self, budget: Budget, need: int | None = None) -> bool:
        """With ``need`` more tokens (the next message and its tools; a tenth of the turn
        budget when unknown) the next prompt could not carry every raw turn."""
        if need is None:
            need = int(budget.turn_budget * (1 - FALLBACK_FILL))
        return budget.turns + need > budget.turn_budget

    def _compaction_wanted(self, session_id: str) -> bool:
        """A compaction is due, and the model may be asked or the turns cannot wait."""
        budget = self._budget(self.agent._states.get(session_id))
        if budget is None or not budget.due:
            return False
        return not self._backing_off(session_id, Purpose.SUMMARY) or self._pressing(budget)

    def _facts_wanted(self, session_id: str) -> bool:
        """Enough raw turns are unread for facts, and the extractor is not resting."""
        state = self.agent._states.get(session_id)
        budget = self._budget(state)
        if budget is None or not self.policy.extract_facts or \
                self._backing_off(session_id, Purpose.FACTS):
            return False
        unread = [t for t in state.recent_turns if t.id > state.facts_through]
        tokens = sum(self.agent.accountant.turn_tokens(t) for t in unread)
        # A turn that may change a key fact is read at once: else the old value would
        # be shown as current until the next periodic refresh.
        return tokens >= budget.turn_budget * self.policy.facts_refresh_ratio or \
            any(may_revise(t.user, state.facts) for t in unread)

    # ------------------------------------------------------------ scheduling

    def schedule(self, session_id: str, trigger: str, focus: str | None, *,
                 force: bool = False) -> bool:
        """After a turn: start a background pass if one is wanted (a compaction with
        ``force``); True if a compaction will run."""
        if self._budget(self.agent._states.get(session_id)) is None:
            return False
        compaction = force or self._compaction_wanted(session_id)
        if not compaction and not self._facts_wanted(session_id):
            return False
        if self.running(session_id):
            if compaction:
                self._again[session_id] = (trigger, focus)
        else:
            self._running[session_id] = asyncio.ensure_future(
                self._worker(session_id, trigger, focus, force))
        return compaction

    async def make_room(self, session_id: str, need: int) -> None:
        """Called before a turn's first prompt, with the tokens its message and tools
        need. If the raw turns would not fit beside them (the user writes faster than
        the model summarizes), the pass under way stops its model call and compacts
        without the model, or one starts that way: milliseconds, not a model call."""
        for _ in range(2):  # a run may be ending as this starts: then one more
            budget = self._budget(self.agent._states.get(session_id))
            if budget is None or not budget.turns or not self._pressing(budget, need):
                return
            self._pressure.setdefault(session_id, asyncio.Event()).set()
            if not self.running(session_id):
                self._running[session_id] = asyncio.ensure_future(
                    self._worker(session_id, "auto", None, False))
            await asyncio.wait({self._running[session_id]}, timeout=2 * DESTROY_TIMEOUT_S)

    async def _worker(self, session_id: str, trigger: str, focus: str | None,
                      force: bool) -> None:
        pressure = self._pressure.setdefault(session_id, asyncio.Event())
        asked = force
        try:
            for _ in range(MAX_PASSES_PER_RUN):
                if asked or pressure.is_set() or self._compaction_wanted(session_id):
                    ok = (await self.compact_once(session_id, trigger, focus,
                                                  everything=force)).ok
                elif self._facts_wanted(session_id):
                    ok = await self.refresh_facts(session_id)
                else:
                    break
                again = self._again.pop(session_id, None)
                asked, force = again is not None, False  # a request that came meanwhile
                if again is not None:
                    trigger, focus = again
                elif not ok:
                    break
        except asyncio.CancelledError:
            raise
        except Exception:  # a background task must never die silently
            log.exception("background memory pass failed for %s", session_id)
        finally:
            self._preempted.discard(session_id)
            self._pressure.pop(session_id, None)

    async def wait_idle(self, session_id: str | None = None,
                        timeout: float | None = None) -> bool:
        """Wait for background passes (of one session, or all) to finish, at most
        ``timeout`` seconds; True if none is running any more."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            tasks = [t for sid, t in self._running.items()
                     if session_id in (None, sid) and not t.done()]
            if not tasks:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(tasks, timeout=left)

    async def cancel(self, session_id: str | None = None) -> None:
        """Stop running passes (of one session, or all). Nothing is lost: every raw turn
        is archived before a pass starts, and a stopped pass commits nothing."""
        tasks = [t for sid, t in self._running.items()
                 if session_id in (None, sid) and not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=DESTROY_TIMEOUT_S + 1)
        for sid in [sid for sid in self._running if session_id in (None, sid)]:
            for table in (self._running, self._again, self._facts_failures, self._outdated):
                table.pop(sid, None)
            for key in [k for k in self._retry_at if k[0] == sid]:
                del self._retry_at[key]

    # ----------------------------------------------------------- model calls

    def _asker(self, session_id: str) -> Ask:
        async def ask(purpose: Purpose, text: str, schema: dict | None,
                      timeout: float) -> tuple[str, float]:
            self.agent.model_calls[purpose.value] += 1
            return await bounded_call(lambda: self.agent._base(purpose), purpose, text, schema,
                                      timeout, self._pressure.get(session_id))
        return ask

    def _rest(self, session_id: str, purpose: Purpose, failures: int) -> None:
        self._retry_at[(session_id, purpose)] = time.monotonic() + self.policy.backoff_s(failures)

    # ------------------------------------------------------------ the passes

    async def _start(self, session_id: str, trigger: str, focus: str | None,
                     chosen: list[Turn]) -> Pass | None:
        return await start_pass(self.agent, session_id, trigger, focus, chosen, self._budget)

    async def refresh_facts(self, session_id: str) -> bool:
        """A facts refresh: read the unread raw turns for facts, and if that puts the
        facts over their budget, have the summarizer fold the least of them into the
        summary (a summary call without turns). True if the extraction worked."""
        if session_id not in self.agent._states:
            return False
        work = await self._start(session_id, "auto", None, [])
        if work is None:
            return False
        work.record.kind = "facts"
        state, clock = self.agent._states[session_id], time.perf_counter()
        await self._extract_facts(session_id, work, asked=False)
        folding = over_budget(work.facts, self.policy, self.agent.accountant.counter)
        if folding and not self._backing_off(session_id, Purpose.SUMMARY):
            work.record.folded = folding
            await self._summarize(session_id, state, work, None, folding, rest=False)
            work.record.error = work.summary_error
        if work.summary is not None:
            work.facts, settled = settle_folds(work.facts, folding, work.summary)
            work.changes += settled
        else:
            work.summary = work.record.previous_summary
        work.record.duration_ms = (time.perf_counter() - clock) * 1000
        await self._commit(session_id, work, 0, "auto")
        return work.record.facts_error is None

    async def compact_once(self, session_id: str, trigger: str, focus: str | None, *,
                           everything: bool) -> CompactionReport:
        """A compaction of the turns before the boundary (all but the newest
        ``min_recent_turns`` with ``everything``), committing exactly those."""
        agent, policy = self.agent, self.policy
        state = agent._states.get(session_id)
        if state is None:
            return CompactionReport(False, 0, error="the session is gone")
        await agent._base(Purpose.STEP)
        budget = self._budget(state)
        turns = state.recent_turns
        cut = (max(0, len(turns) - policy.min_recent_turns) if everything
               else agent.accountant.boundary(turns, budget.keep))
        chosen = self.fit(turns[:cut], budget.facts)
        if not chosen:
            return CompactionReport(False, 0, error="nothing to compact")
        work = await self._start(session_id, trigger, focus, chosen)
        if work is None:
            return CompactionReport(False, 0, error="unsaved turns could not be archived")
        record, pressure = work.record, self._pressure.setdefault(session_id, asyncio.Event())
        unread = chosen[-1].id > state.facts_through  # else the refreshes read them
        asked = trigger != "auto"  # the user or the model asked: try the model now
        resting = self._backing_off(session_id, Purpose.SUMMARY)
        use_model = asked or not (resting or pressure.is_set() or (self._pressing(budget) and (
            session_id in self._preempted or state.consecutive_failures > 0)))
        await agent._emit(AgentEvent("compaction_started", session_id,
                                     {"turn_ids": record.turn_ids, "trigger": trigger}))
        clock = time.perf_counter()
        if unread:
            await self._extract_facts(session_id, work, asked)
        folding = over_budget(work.facts, policy, agent.accountant.counter)
        record.folded = folding
        if use_model:
            await self._summarize(session_id, state, work, focus, folding)
        else:
            work.summary_error = (
                f"the summarizer failed {state.consecutive_failures} time(s) in a row and is "
                "given a rest" if resting else "new turns needed the room at once, sooner "
                "than the summarizer could make it" if pressure.is_set() else
                "the raw turns were about to overflow while the summarizer was failing")
        failures = state.consecutive_failures + (work.summary_asked and work.summary is None)
        pressing = pressure.is_set() or self._pressing(self._budget(agent._states.get(
            session_id)) or budget)
        if work.summary is None and (failures >= policy.fallback_after_failures or pressing):
            work.summary = fallback_summary(state.summary, chosen, folding, policy,
                                            agent.accountant.counter)
            record.fallback = True
        record.error = work.summary_error
        if work.summary is not None:
            work.facts, settled = settle_folds(work.facts, folding, work.summary)
            work.changes += settled
        record.duration_ms = (time.perf_counter() - clock) * 1000
        report = await self._commit(session_id, work, failures, trigger)
        if record.fallback:
            pressure.clear()  # room is made; the next turn sets it again if need be
        return report

    async def _extract_facts(self, session_id: str, work: Pass, asked: bool) -> None:
        """Facts from the unread turns (up to the newest raw one), consolidated; a failed
        call leaves them unread for the next pass and rests the extractor."""
        record = work.record
        if not self.policy.extract_facts:
            return
        if not asked and self._backing_off(session_id, Purpose.FACTS):
            record.facts_error = "the fact extractor failed recently and is given a rest"
            return
        unread = await self._unread(session_id, work)
        if not unread:
            return
        try:
            result, work.next_fact_id = await extract_facts(
                self._asker(session_id), record, work.facts, unread, self.policy,
                work.next_fact_id)
        except CompactionPreemptedError as exc:
            record.facts_error = str(exc)
            return
        except ModelError as exc:
            record.facts_error = f"{type(exc).__name__}: {exc}"
            failures = self._facts_failures.get(session_id, 0) + 1
            self._facts_failures[session_id] = failures
            self._rest(session_id, Purpose.FACTS, failures)
            return
        self._facts_failures.pop(session_id, None)
        self._retry_at.pop((session_id, Purpose.FACTS), None)
        work.facts, work.facts_through = result.facts, unread[-1].id
        work.changes += result.changes
        self._outdated.setdefault(session_id, []).extend(outdated(result.changes))
        record.fact_changes = work.changes

    async def _unread(self, session_id: str, work: Pass) -> list[Turn]:
        """Turns not read for facts yet, oldest first, as many as fit one prompt: raw
        turns, and any compacted while the extractor was stopped or failing (read back
        from the archive)."""
        state = self.agent._states[session_id]
        raw = [t for t in state.recent_turns if t.id > work.facts_through]
        earlier: list[Turn] = []
        if state.recent_turns and work.facts_through < state.recent_turns[0].id - 1:
            earlier = [t for t in await self.agent.transcript(session_id)
                       if work.facts_through < t.id < state.recent_turns[0].id
                       and t.status != "error"]
        return self.fit(earlier + raw, self.agent.accountant.counter.count(
            render_known(work.facts)))

    async def _summarize(self, session_id: str, state: SessionState, work: Pass,
                         focus: str | None, folding: list[Fact], *, rest: bool = True) -> None:
        """The updated summary, or ``summary_error`` saying why there is none. A failure
        rests the summarizer (``rest``: only a compaction's failure counts)."""
        work.summary_asked = True
        told = list(self._outdated.get(session_id, []))
        try:
            work.summary = await summarize(
                self._asker(session_id), work.record, state.summary, work.chosen, self.policy,
                self.agent.accountant.counter, focus, keep=folding, outdated=told)
        except CompactionPreemptedError as exc:
            work.summary_error, work.summary_asked = str(exc), False
            self._preempted.add(session_id)
            return
        except (ModelError, InvalidSummaryError) as exc:
            work.summary_error = f"{type(exc).__name__}: {exc}"
            if rest:
                self._rest(session_id, Purpose.SUMMARY, state.consecutive_failures + 1)
            return
        self._retry_at.pop((session_id, Purpose.SUMMARY), None)
        self._outdated.pop(session_id, None)

    async def _commit(self, session_id: str, work: Pass, failures: int,
                      trigger: str) -> CompactionReport:
        return await commit_pass(self.agent, session_id, work, failures, trigger,
                                 asked=work.summary_asked or session_id in self._preempted)

    def fit(self, turns: list[Turn], facts_tokens: int) -> list[Turn]:
        """The oldest turns whose prompts fit the summarizer's and the extractor's window
        (the summary prompt holds the previous summary and maybe some facts, the facts
        prompt the known facts; both the turns)."""
        base = self.agent._bases.get(Purpose.SUMMARY) or self.agent._bases[Purpose.STEP]
        return self.agent.accountant.oldest_within(turns, (
            base.context_window - base.context_usage - 2 * self.policy.summary_max_tokens
            - facts_tokens - 300))
