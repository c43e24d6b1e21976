"""The memory engine: when a session's memory is kept up, in the background, one pass at a time.

After every turn :meth:`MemoryEngine.schedule` decides whether a pass is due:

- a **facts refresh** once the raw turns not yet read for facts fill
  ``facts_refresh_ratio`` of the turn budget, or right after a turn that may
  change a known fact (:func:`~py_agent.memory.fact_rules.may_revise`), so an
  old value is not shown as current;
- a **compaction** once the raw turns outgrow their token budget (or the user or
  the model asks), unless the summarizer rests after a failure and the turns can
  still wait.

What a pass does is :mod:`py_agent.memory.passes`. Before a turn's prompt,
:meth:`MemoryEngine.make_room` makes sure the raw turns fit beside it, so no prompt
leaves a turn out.

The engine owns the memory policy in use: :meth:`MemoryEngine.plan`, which every turn
and every compaction calls first, makes the model's step base session and takes the
policy planned with it for the model's window (scaled down for a small one, back to
the policy asked for after a switch to a larger one), announcing a change with a
``policy_changed`` event. Nothing else changes the policy.

The engine also keeps the live memory sessions (:mod:`py_agent.memory.live`) in step
with every change of a session's memory.

It is built from the session table and the base sessions alone (never from an
agent), and it reports only through the ``emit`` callable it is given. The user
profile's facts a session shows (:meth:`MemoryEngine.profile_facts`) count in its
budget, are read by its fact extractor and held by its live memory session.
:meth:`close` and :meth:`forget` stop background work at once: every raw turn is
archived before a pass starts and a stopped pass commits nothing, so nothing is
lost and nothing is left half-written.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from ..bases import BaseSessions
from ..budget import MemoryAccountant, MemoryPolicy
from ..events import AgentEvent, Emit, log
from ..model import DESTROY_TIMEOUT_S, Purpose
from ..prefix import PrefixPlan
from ..results import CompactionReport
from ..sessions import SessionTable
from ..state import Fact, SessionState
from .fact_rules import may_revise
from .live import DEFAULT_MAX_LIVE, MemorySessions
from .passes import Passes, Upkeep
from .profile_rules import shown_facts

MAX_PASSES_PER_RUN = 4


class MemoryEngine:
    """Keeps the memory of the sessions in a session table; see the module docstring.

    Args:
        sessions: the session table: states are read from it and committed through it.
        bases: the base model sessions the passes clone.
        accountant: the budget arithmetic, with the memory policy in use.
        emit: where the passes' events go.
        calls: model calls counted by purpose (a fresh counter if not given).
        memory_sessions: how many chats keep a live memory session (0: none).
    """

    def __init__(self, sessions: SessionTable, bases: BaseSessions,
                 accountant: MemoryAccountant, emit: Emit, *,
                 calls: Counter[str] | None = None,
                 memory_sessions: int = DEFAULT_MAX_LIVE) -> None:
        self.sessions, self.bases, self.accountant = sessions, bases, accountant
        self.emit = emit
        self.calls: Counter[str] = calls if calls is not None else Counter()
        self.live = MemorySessions(
            accountant, sessions.state, max_live=memory_sessions,
            reserve=lambda: (accountant.policy.reserved_turn_tokens + bases.tools_tokens()
                             + accountant.policy.recall_tokens),  # recalled turns: per prompt
            profile_of=self.profile_facts)
        sessions.when_changed(self.live.memory_changed)
        sessions.when_changed(self._committed)
        self._commits: dict[str, asyncio.Event] = {}
        self.passes = Passes(sessions, bases, accountant, emit, self.upkeep, self.calls,
                             profile_facts=self.profile_facts)
        self._upkeep: dict[str, Upkeep] = {}
        self._shown: dict[str, tuple[tuple, list[Fact]]] = {}  # see profile_facts
        self._running: dict[str, asyncio.Task] = {}
        self._again: dict[str, tuple[str, str | None]] = {}

    # ------------------------------------------------------------ the policy

    async def plan(self) -> PrefixPlan:
        """The model's step base session made (once per model), and the memory policy in
        use the one planned with it for the model's window; a change of policy is
        announced (``policy_changed``, with the sizes before and after and why). The one
        place the policy in use changes: call it before anything that reads the budget."""
        await self.bases.get(Purpose.STEP)
        plan = self.bases.plan
        assert plan is not None  # made with the step base
        previous = self.accountant.policy
        if plan.policy != previous:
            self.accountant.policy = plan.policy
            await self.emit(AgentEvent("policy_changed", "", {
                "window": plan.window, "level": plan.level, "scaled": plan.scaled,
                "reason": plan.reason, "before": policy_sizes(previous),
                "after": policy_sizes(plan.policy)}))
        return plan

    def upkeep(self, session_id: str) -> Upkeep:
        """The session's upkeep record (rests, pressure, outdated facts)."""
        return self._upkeep.setdefault(session_id, Upkeep())

    def profile_facts(self, state: SessionState | None) -> list[Fact]:
        """The user profile's facts the next prompt of ``state``'s session shows (from the
        profile as last read; see :mod:`py_agent.memory.profile_rules`)."""
        profiles = self.sessions.profiles
        if state is None or not profiles.enabled:
            return []
        profile, policy = profiles.current, self.accountant.policy
        # Asked several times a turn (budgets, the prompt, the memory session): the choice
        # only changes with the profile, the session's own facts or the policy.
        key = (id(profile), profile.version, id(policy), state.private,
               tuple((f.id, f.category, f.text) for f in state.facts))
        cached = self._shown.get(state.session_id)
        if cached is None or cached[0] != key:
            cached = self._shown[state.session_id] = (
                key, shown_facts(profile, state, policy, self.accountant.counter))
        return list(cached[1])

    # ------------------------------------------------------------ conditions

    def running(self, session_id: str) -> bool:
        """True while a background pass of the session runs."""
        task = self._running.get(session_id)
        return bool(task and not task.done())

    def _compaction_wanted(self, session_id: str) -> bool:
        """A compaction is due, and the model may be asked or the turns cannot wait."""
        budget = self.passes.budget(self.sessions.state(session_id))
        if budget is None or not budget.due:
            return False
        return not self.upkeep(session_id).resting(Purpose.SUMMARY) or budget.pressing()

    def _facts_wanted(self, session_id: str) -> bool:
        """Enough raw turns are unread for facts, and the extractor is not resting."""
        state = self.sessions.state(session_id)
        budget = self.passes.budget(state)
        policy = self.accountant.policy
        if budget is None or not policy.extract_facts or \
                self.upkeep(session_id).resting(Purpose.FACTS):
            return False
        unread = [t for t in state.recent_turns if t.id > state.facts_through]
        tokens = sum(self.accountant.turn_tokens(t) for t in unread)
        # A turn that may change a key fact is read at once: else the old value would
        # be shown as current until the next periodic refresh.
        known = state.facts + self.profile_facts(state)
        return tokens >= budget.turn_budget * policy.facts_refresh_ratio or \
            any(may_revise(t.user, known) for t in unread)

    # ------------------------------------------------------------ scheduling

    def schedule(self, session_id: str, trigger: str, focus: str | None, *,
                 force: bool = False) -> bool:
        """After a turn: start a background pass if one is wanted (a compaction with
        ``force``); True if a compaction will run."""
        if self.passes.budget(self.sessions.state(session_id)) is None:
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
        deadline = time.monotonic() + 2 * DESTROY_TIMEOUT_S
        for _ in range(3):  # a run may be ending as this starts: then one more
            budget = self.passes.budget(self.sessions.state(session_id))
            if budget is None or not budget.turns or not budget.pressing(need):
                return
            self.upkeep(session_id).pressure.set()
            if not self.running(session_id):
                self._running[session_id] = asyncio.ensure_future(
                    self._worker(session_id, "auto", None, False))
            # Until the room is made (a commit), not until the run ends: after the pass
            # that made room, the run may go on with a slow model pass.
            committed = self._commits.setdefault(session_id, asyncio.Event())
            committed.clear()
            waiter = asyncio.ensure_future(committed.wait())
            try:
                await asyncio.wait({self._running[session_id], waiter},
                                   timeout=max(0.0, deadline - time.monotonic()),
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()

    def _committed(self, session_id: str) -> None:
        """A session's memory changed (a pass committed): wake a turn waiting for room."""
        event = self._commits.get(session_id)
        if event is not None:
            event.set()

    async def compact(self, session_id: str, trigger: str, focus: str | None, *,
                      everything: bool) -> CompactionReport:
        """One compaction now, in the caller's task (a manual one: ``everything`` but the
        newest ``min_recent_turns``)."""
        await self.plan()
        return await self.passes.compact(session_id, trigger, focus, everything=everything)

    async def _worker(self, session_id: str, trigger: str, focus: str | None,
                      force: bool) -> None:
        upkeep = self.upkeep(session_id)
        asked = force
        try:
            for _ in range(MAX_PASSES_PER_RUN):
                if asked or upkeep.pressure.is_set() or self._compaction_wanted(session_id):
                    ok = (await self.compact(session_id, trigger, focus, everything=force)).ok
                elif self._facts_wanted(session_id):
                    ok = await self.passes.refresh_facts(session_id)
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
            upkeep.preempted = False
            upkeep.pressure = asyncio.Event()

    # ------------------------------------------------------------ lifecycle

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
        """Stop running passes (of one session, or all) at once. Nothing is lost: every
        raw turn is archived before a pass starts, and a stopped pass commits nothing."""
        tasks = [t for sid, t in self._running.items()
                 if session_id in (None, sid) and not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=DESTROY_TIMEOUT_S + 1)
        for sid in [sid for sid in self._running if session_id in (None, sid)]:
            for table in (self._running, self._again, self._upkeep, self._commits):
                table.pop(sid, None)

    async def forget(self, session_id: str) -> None:
        """A session is going away: stop its passes, drop its live memory session."""
        await self.cancel(session_id)
        self.live.invalidate(session_id)
        self._shown.pop(session_id, None)

    async def close(self) -> None:
        """Stop every pass and free every live memory session, at once."""
        await self.cancel()
        await self.live.close()


def policy_sizes(policy: MemoryPolicy) -> dict[str, int]:
    """The token sizes of a policy that a plan scales, for the ``policy_changed`` event."""
    return {"reserved_turn_tokens": policy.reserved_turn_tokens,
            "summary_target_tokens": policy.summary_target_tokens,
            "summary_max_tokens": policy.summary_max_tokens,
            "facts_max_tokens": policy.facts_max_tokens,
            "recall_tokens": policy.recall_tokens,
            "profile_tokens": policy.planned_profile_tokens}
