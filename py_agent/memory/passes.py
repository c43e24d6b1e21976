"""One memory pass, top to bottom: choose turns, read facts, summarize or fall back, commit.

Two kinds of pass keep a session's memory (when each runs is
:mod:`py_agent.memory.engine`'s business):

- a **facts refresh**: the extractor sees the known facts (with short ids) and the
  raw turns not read yet, and adds, updates or retracts facts
  (:mod:`py_agent.memory.facts`); if that puts the facts over their budget, the
  summarizer folds the least of them into the summary;
- a **compaction** of the turns before the boundary: (a) if some of its turns
  were not read for facts yet, facts from every unread turn; (b) if the facts are
  over their budget, the lowest-priority ones are handed to the summarizer to
  keep; (c) the previous summary, the older turns, those facts and the facts that
  no longer hold go to the summarizer; a handed-over fact the summary does not
  carry stays a key fact; (d) if the summary fails for the
  ``fallback_after_failures``-th time in a row, or the model is resting after a
  failure, or new turns need the room at once, the summary is built without the
  model (the user's own words, shortened) and the session is shown as degraded
  until a summary works again; otherwise the raw turns wait for the next try.

The user profile takes part in both (:mod:`py_agent.memory.profile_rules`): the
extractor of a session that is not private sees the profile's facts beside the
session's own, so it can update or retract a fact another session contributed; the
commit writes the profile's changes (facts that left it, lasting facts that enter it)
in the transaction of the session's state.

Every model call is a clone of a prefilled base session with a timeout, destroyed
afterwards (:func:`~py_agent.memory.steps.bounded_call`); a failure makes the model
rest for ``retry_backoff_s``, doubling. Every raw turn is archived before a pass
starts (:meth:`~py_agent.sessions.SessionTable.flush`), a pass commits only the
turns it compacted (:func:`~py_agent.memory.outcome.apply_pass`: turns that
arrived meanwhile stay), and the new state and a :class:`CompressionRecord`
(every input as sent, every reply, timings, each fact's supersession, retraction
or fold with its reason) are written together.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from ..bases import BaseSessions
from ..budget import Budget, MemoryAccountant, MemoryPolicy
from ..constraints import LevelChange
from ..events import AgentEvent, Emit, log
from ..model import ModelError, Purpose
from ..profile import UserProfile
from ..results import CompactionReport
from ..sessions import SessionTable
from ..state import CompressionRecord, Fact, FactChange, SessionState, Turn, now_ms
from ..store import UnknownSessionError
from .facts import Consolidation, over_budget, render_known
from .outcome import Pass, StaleSummaryError, apply_pass
from .profile_rules import block_forgotten, own_facts, profile_after_pass, stated_turns
from .steps import (Ask, CompactionPreemptedError, bounded_call, extract_facts, outdated,
                    settle_folds, summarize)
from .summary import InvalidSummaryError, fallback_summary


@dataclass
class Upkeep:
    """One session's memory upkeep between passes: which model rests until when, the
    facts the next summary must hear are outdated, and the pressure of new turns."""

    retry_at: dict[Purpose, float] = field(default_factory=dict)  # when it may be asked
    facts_failures: int = 0
    outdated: list[FactChange] = field(default_factory=list)  # for the next summary
    # Set when a turn needs room at once: the call under way stops, the pass falls back.
    pressure: asyncio.Event = field(default_factory=asyncio.Event)
    preempted: bool = False

    def resting(self, purpose: Purpose) -> bool:
        return time.monotonic() < self.retry_at.get(purpose, 0.0)

    def rest(self, purpose: Purpose, seconds: float) -> None:
        self.retry_at[purpose] = time.monotonic() + seconds


def _settle(work: Pass, folding: list[Fact]) -> None:
    """Take out of the key facts the folded ones the new summary carries, each part by
    its own summary (a marked fact lives on only in the marked part)."""
    work.facts, settled = settle_folds(work.facts, [f for f in folding if not f.untrusted],
                                       work.summary or "")
    marked = [f for f in folding if f.untrusted]
    if marked:
        work.facts, more = settle_folds(work.facts, marked, work.untrusted_summary or "")
        settled += more
    work.changes += settled


class Passes:
    """Runs the passes of an agent's sessions; see the module docstring.

    Args:
        sessions: the session table the passes read and commit through.
        bases: the base model sessions (the step base sizes the budget).
        accountant: the budget arithmetic, with the memory policy in use.
        emit: where the pass's events go (``compaction_started``, ``memory_updated``,
            ``compaction_failed``, ``storage_error``).
        upkeep: a session's :class:`Upkeep` record.
        calls: model calls counted by purpose.
        profile_facts: the user profile's facts a session shows (none if not given).
    """

    def __init__(self, sessions: SessionTable, bases: BaseSessions,
                 accountant: MemoryAccountant, emit: Emit,
                 upkeep: Callable[[str], Upkeep], calls: Counter[str],
                 profile_facts: Callable[[SessionState], Sequence[Fact]] = lambda _: ()) -> None:
        self.sessions, self.bases, self.accountant = sessions, bases, accountant
        self.emit, self.upkeep, self.calls = emit, upkeep, calls
        self.profile_facts = profile_facts

    @property
    def policy(self) -> MemoryPolicy:
        return self.accountant.policy

    def budget(self, state: SessionState | None) -> Budget | None:
        """The session's budget on the step base's window (None before there is one)."""
        window = self.bases.window(Purpose.STEP)
        if window is None or state is None:
            return None
        return self.accountant.budget(state, *window, self.profile_facts(state))

    def fit(self, turns: list[Turn], facts_tokens: int) -> list[Turn]:
        """The oldest turns whose prompts fit the summarizer's and the extractor's window
        (the summary prompt holds the previous summary and maybe some facts, the facts
        prompt the known facts; both the turns)."""
        window, used = self.bases.window(Purpose.SUMMARY) or self.bases.window(Purpose.STEP)
        return self.accountant.oldest_within(turns, (
            window - used - 2 * self.policy.summary_max_tokens - facts_tokens - 300))

    # ------------------------------------------------------------ model calls

    def _asker(self, session_id: str) -> Ask:
        async def ask(purpose: Purpose, text: str, schema: dict | None,
                      timeout: float) -> tuple[str, float]:
            self.calls[purpose.value] += 1
            return await bounded_call(lambda: self.bases.get(purpose), purpose, text, schema,
                                      timeout, self.upkeep(session_id).pressure,
                                      conversation_id=session_id)
        return ask

    def _rest(self, session_id: str, purpose: Purpose, failures: int) -> None:
        self.upkeep(session_id).rest(purpose, self.policy.backoff_s(failures))

    # ------------------------------------------------------------ the passes

    async def refresh_facts(self, session_id: str) -> bool:
        """A facts refresh: read the unread raw turns for facts, and if that puts the
        facts over their budget, have the summarizer fold the least of them into the
        summary (a summary call without turns). True if the extraction worked."""
        if self.sessions.state(session_id) is None:
            return False
        work = await self._start(session_id, "auto", None, [])
        if work is None:
            return False
        work.record.kind = "facts"
        state, clock = self.sessions.state(session_id), time.perf_counter()
        await self._extract_facts(session_id, work, asked=False)
        folding = over_budget(work.facts, self.policy, self.accountant.counter)
        if folding and not self.upkeep(session_id).resting(Purpose.SUMMARY):
            work.record.folded = folding
            await self._summarize(session_id, state, work, None, folding, rest=False)
            work.record.error = work.summary_error
        if work.summary is not None:
            _settle(work, folding)
        else:
            work.summary, work.untrusted_summary = work.record.previous_summary, None
        work.record.duration_ms = (time.perf_counter() - clock) * 1000
        await self._commit(session_id, work, 0, "auto")
        return work.record.facts_error is None

    async def compact(self, session_id: str, trigger: str, focus: str | None, *,
                      everything: bool) -> CompactionReport:
        """A compaction of the turns before the boundary (all but the newest
        ``min_recent_turns`` with ``everything``), committing exactly those."""
        policy, upkeep = self.policy, self.upkeep(session_id)
        state = self.sessions.state(session_id)
        if state is None:
            return CompactionReport(False, 0, error="the session is gone")
        budget = self.budget(state)
        if budget is None:  # the engine plans first (MemoryEngine.plan)
            return CompactionReport(False, 0, error="the model has no step session yet")
        turns = state.recent_turns
        cut = (max(0, len(turns) - policy.min_recent_turns) if everything
               else self.accountant.boundary(turns, budget.keep))
        chosen = self.fit(turns[:cut], budget.facts)
        if not chosen:
            return CompactionReport(False, 0, error="nothing to compact")
        work = await self._start(session_id, trigger, focus, chosen)
        if work is None:
            return CompactionReport(False, 0, error="unsaved turns could not be archived")
        record, pressure = work.record, upkeep.pressure
        unread = chosen[-1].id > state.facts_through  # else the refreshes read them
        asked = trigger != "auto"  # the user or the model asked: try the model now
        resting = upkeep.resting(Purpose.SUMMARY)
        use_model = asked or not (resting or pressure.is_set() or (budget.pressing() and (
            upkeep.preempted or state.consecutive_failures > 0)))
        await self.emit(AgentEvent("compaction_started", session_id,
                                   {"turn_ids": record.turn_ids, "trigger": trigger}))
        clock = time.perf_counter()
        if unread:
            await self._extract_facts(session_id, work, asked)
        folding = over_budget(work.facts, policy, self.accountant.counter)
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
        pressing = pressure.is_set() or (self.budget(self.sessions.state(session_id))
                                         or budget).pressing()
        if work.summary is None and (failures >= policy.fallback_after_failures or pressing):
            # The user's own words only: trusted; the marked part stays as it was, and
            # a marked fact is never handed to the trusted summary.
            folding = [f for f in folding if not f.untrusted]
            work.summary = fallback_summary(state.summary, chosen, folding, policy,
                                            self.accountant.counter)
            work.untrusted_summary = None
            record.fallback = True
        record.error = work.summary_error
        if work.summary is not None:
            _settle(work, folding)
        record.duration_ms = (time.perf_counter() - clock) * 1000
        report = await self._commit(session_id, work, failures, trigger)
        if record.fallback:
            pressure.clear()  # room is made; the next turn sets it again if need be
        return report

    # ------------------------------------------------------------ the steps

    async def _start(self, session_id: str, trigger: str, focus: str | None,
                     chosen: list[Turn]) -> Pass | None:
        """Archive unsaved turns, then a pass over the session as it is now (None if the
        turns could not be archived: nothing is compacted that the archive lacks)."""
        problem = await self.sessions.flush(session_id)
        if problem is not None:
            log.warning("not compacting %s: unsaved turns (%s)", session_id, problem)
            return None
        state = self.sessions.state(session_id)
        budget = self.budget(state)
        record = CompressionRecord(
            session_id=session_id, started_at=now_ms(), duration_ms=0, ok=False,
            turn_ids=[t.id for t in chosen], previous_summary=state.summary, summary_prompt="",
            summary="", focus=focus, trigger=trigger,  # type: ignore[arg-type]
            tokens_before=budget.summary + budget.facts + budget.turns if budget else 0,
            facts_before=list(state.facts), policy=self.policy.to_dict(),
            previous_untrusted_summary=state.untrusted_summary)
        return Pass(record, chosen, list(state.facts), state.next_fact_id, state.facts_through,
                    last_turn_id=state.recent_turns[-1].id if state.recent_turns else 0,
                    profile_shown=list(self.profile_facts(state)))

    async def _extract_facts(self, session_id: str, work: Pass, asked: bool) -> None:
        """Facts from the unread turns (up to the newest raw one), consolidated; a failed
        call leaves them unread for the next pass and rests the extractor."""
        record, upkeep = work.record, self.upkeep(session_id)
        if not self.policy.extract_facts:
            return
        if not asked and upkeep.resting(Purpose.FACTS):
            record.facts_error = "the fact extractor failed recently and is given a rest"
            return
        unread = await self._unread(session_id, work)
        if not unread:
            return
        async def announce(change: LevelChange) -> None:
            await self.emit(AgentEvent("constraint_level", session_id, change.to_dict()))

        # The profile's facts beside the session's own: consolidation works across sessions.
        # The user's part and the untrusted part are read apart (see _extract_untrusted):
        # this call reads only the user's and the app's words, and the facts that came
        # from them, so what it writes is trusted.
        own_ids = {f.id for f in work.facts}
        shown = work.profile_shown = [f for f in work.profile_shown if f.id not in own_ids]
        trusted = [f for f in work.facts if not f.untrusted]
        marked = [f for f in work.facts if f.untrusted]
        try:
            result, next_id = await extract_facts(
                self._asker(session_id), record, trusted + shown,
                [t.trusted_part() for t in unread], self.policy, work.next_fact_id,
                constraints=self.bases.constraints(), announce=announce)
            tainted = [t for t in unread if t.untrusted]
            untrusted, next_id = (await self._extract_untrusted(
                session_id, record, marked, tainted, next_id, announce) if tainted
                else (None, next_id))
        except CompactionPreemptedError as exc:
            record.facts_error = str(exc)
            return
        except ModelError as exc:
            record.facts_error = f"{type(exc).__name__}: {exc}"
            upkeep.facts_failures += 1
            self._rest(session_id, Purpose.FACTS, upkeep.facts_failures)
            return
        upkeep.facts_failures = 0
        upkeep.retry_at.pop(Purpose.FACTS, None)
        work.next_fact_id = next_id
        stated = stated_turns(result.added, unread)
        facts, blocked = block_forgotten(own_facts(result.facts, shown), result.added,
                                         self.sessions.profiles.current, session_id, stated)
        changes = result.changes + blocked
        if untrusted is None:
            facts += marked
        else:
            known = {f.key() for f in facts}
            facts += [f for f in untrusted.facts if f.key() not in known]
            changes += untrusted.changes
            stated.update(stated_turns(untrusted.added, unread))
            record.facts_added = record.facts_added + untrusted.added
        work.facts, work.facts_through = facts, unread[-1].id
        work.stated.update(stated)
        work.changes += changes
        upkeep.outdated.extend(outdated(changes))
        record.fact_changes = work.changes

    async def _extract_untrusted(self, session_id: str, record: CompressionRecord,
                                 marked: list[Fact], tainted: list[Turn], next_id: int,
                                 announce) -> tuple[Consolidation, int]:
        """Facts from the turns that read someone else's words, read whole in a call of
        their own that knows only the facts already marked: everything it writes is
        marked with what it read (the pass's provenance is its input, whatever the
        reply says), and it can neither change nor retract a trusted fact."""
        scratch = replace(record, facts_prompt="", facts_reply="", model_calls=0)
        result, next_id = await extract_facts(
            self._asker(session_id), scratch, marked, tainted, self.policy, next_id,
            constraints=self.bases.constraints(), announce=announce)
        record.untrusted_facts_prompt = scratch.facts_prompt
        record.untrusted_facts_reply = scratch.facts_reply
        record.model_calls += scratch.model_calls
        read = list(dict.fromkeys([*(s for t in tainted for s in t.untrusted),
                                   *(s for f in marked for s in f.untrusted)]))
        result.facts = [f if f.untrusted else replace(f, untrusted=tuple(read))
                        for f in result.facts]
        added = {f.id for f in result.added}
        result.added = [f for f in result.facts if f.id in added]
        return result, next_id

    async def _unread(self, session_id: str, work: Pass) -> list[Turn]:
        """Turns not read for facts yet, oldest first, as many as fit one prompt: raw
        turns, and any compacted while the extractor was stopped or failing (read back
        from the archive)."""
        state = self.sessions.state(session_id)
        raw = [t for t in state.recent_turns if t.id > work.facts_through]
        earlier: list[Turn] = []
        if state.recent_turns and work.facts_through < state.recent_turns[0].id - 1:
            earlier = [t for t in await self.sessions.transcript(session_id)
                       if work.facts_through < t.id < state.recent_turns[0].id
                       and t.status != "error"]
        return self.fit(earlier + raw, self.accountant.counter.count(
            render_known(work.facts + work.profile_shown)))

    async def _summarize(self, session_id: str, state: SessionState, work: Pass,
                         focus: str | None, folding: list[Fact], *, rest: bool = True) -> None:
        """The updated summary, or ``summary_error`` saying why there is none. A failure
        rests the summarizer (``rest``: only a compaction's failure counts)."""
        upkeep = self.upkeep(session_id)
        work.summary_asked = True
        told = list(upkeep.outdated)
        # Two parts, asked apart: the user's summary reads only the user's and the app's
        # words (a turn that read someone else's words gives only its user's message);
        # the marked part reads those turns whole. Its provenance is what it was fed,
        # whatever the summarizer wrote, so it is shown as data only.
        tainted = [t for t in work.chosen if t.untrusted]
        keep_marked = [f for f in folding if f.untrusted]
        clean = [c for c in told if not c.fact.untrusted
                 and not (c.replaced_by is not None and c.replaced_by.untrusted)]
        try:
            work.summary = await summarize(
                self._asker(session_id), work.record, state.summary,
                [t.trusted_part() for t in work.chosen], self.policy,
                self.accountant.counter, focus,
                keep=[f for f in folding if not f.untrusted], outdated=clean) \
                if work.chosen or len(keep_marked) < len(folding) else state.summary
            if tainted or keep_marked:
                scratch = replace(work.record, model_calls=0)
                work.untrusted_summary = await summarize(
                    self._asker(session_id), scratch, state.untrusted_summary, tainted,
                    self.policy, self.accountant.counter, focus, keep=keep_marked,
                    outdated=told)
                work.record.untrusted_summary_prompt = scratch.summary_prompt
                work.record.untrusted_summary_reply = scratch.summary_reply
                work.record.model_calls += scratch.model_calls
                work.untrusted_sources = list(dict.fromkeys([
                    *state.untrusted_sources, *(s for t in tainted for s in t.untrusted),
                    *(s for f in keep_marked for s in f.untrusted)]))
        except CompactionPreemptedError as exc:
            work.summary = work.untrusted_summary = None
            work.summary_error, work.summary_asked = str(exc), False
            upkeep.preempted = True
            return
        except (ModelError, InvalidSummaryError) as exc:
            work.summary = work.untrusted_summary = None
            work.summary_error = f"{type(exc).__name__}: {exc}"
            if rest:
                self._rest(session_id, Purpose.SUMMARY, state.consecutive_failures + 1)
            return
        upkeep.retry_at.pop(Purpose.SUMMARY, None)
        upkeep.outdated.clear()

    # ------------------------------------------------------------ the commit

    async def _commit(self, session_id: str, work: Pass, failures: int,
                      trigger: str) -> CompactionReport:
        """Write the new state and the record together and tell the page. ``failures``:
        summaries failed in a row, this one included. The new state, record and profile
        are computed from the pass and the session as it is at the commit, changing
        neither, so a commit that starts over after another writer's write is safe."""
        gathered = work.record
        ok = work.summary is not None
        compaction = gathered.kind == "compaction"
        asked = work.summary_asked or self.upkeep(session_id).preempted

        def update(current: SessionState) -> tuple[SessionState, CompressionRecord]:
            updated = apply_pass(current, work, failures, asked=asked)
            # Measured on the turns there were at the start: turns that arrived
            # meanwhile are not this pass's doing.
            after = self.budget(replace(updated, recent_turns=[
                t for t in updated.recent_turns if t.id <= work.last_turn_id]))
            return updated, replace(
                gathered, fact_changes=list(work.changes),
                ok=ok and (compaction or gathered.facts_error is None),
                summary=updated.summary if ok else gathered.previous_summary,
                untrusted_summary=(updated.untrusted_summary if ok
                                   else gathered.previous_untrusted_summary),
                tokens_after=(after.summary + after.facts + after.turns) if after else 0)

        def profile_change(state: SessionState,
                           profile: UserProfile) -> tuple[SessionState, UserProfile | None]:
            return state, profile_after_pass(profile, state, work.changes, self.policy,
                                             shown=work.profile_shown, stated=work.stated)

        try:
            commit = await self.sessions.commit_compaction(session_id, update,
                                                           profile_change=profile_change)
        except UnknownSessionError:
            return CompactionReport(False, 0, error="the session was deleted meanwhile")
        except StaleSummaryError as exc:
            return CompactionReport(False, 0, error=str(exc), record=gathered)
        except Exception as exc:
            await self.emit(AgentEvent("storage_error", session_id, {
                "message": f"Could not save the compacted memory ({exc}); the raw turns "
                           "are kept.", "kind": getattr(exc, "kind", "unknown")}))
            return CompactionReport(False, 0, error=str(exc), record=gathered)
        updated, record = commit.state, commit.record
        if commit.profile is not None:
            profile = self.sessions.profiles.current
            await self.emit(AgentEvent("profile_updated", session_id, {
                "version": profile.version, "facts": len(profile.facts), "by": "memory"}))
        brief = {"kind": record.kind, "turn_ids": record.turn_ids,
                 "facts_turn_ids": record.facts_turn_ids, "trigger": trigger,
                 "tokens_before": record.tokens_before, "tokens_after": record.tokens_after,
                 "duration_ms": round(record.duration_ms, 1), "fallback": record.fallback,
                 "fact_changes": [c.to_dict() for c in record.fact_changes]}
        if ok:
            await self.emit(AgentEvent("memory_updated", session_id, {
                "summary": updated.summary, "facts": [f.to_dict() for f in updated.facts],
                "untrusted_summary": updated.untrusted_summary,
                "untrusted_sources": list(updated.untrusted_sources),
                "recent_turns": len(updated.recent_turns), "compactions": updated.compactions,
                "degraded": updated.degraded, "record": brief}))
            return CompactionReport(compaction, len(record.turn_ids), record.tokens_before,
                                    record.tokens_after, error=record.error, record=record)
        await self.emit(AgentEvent("compaction_failed", session_id, {
            "error": record.error, "trigger": trigger, "degraded": updated.degraded,
            "facts": [f.to_dict() for f in updated.facts], "record": brief}))
        return CompactionReport(False, 0, tokens_before=record.tokens_before,
                                error=record.error, record=record)
