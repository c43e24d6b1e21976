"""Memory sessions: a model session per chat that has already read the memory.

Without them every turn's first prompt carries the whole memory (summary, key
facts, every recent raw turn), so the model re-reads thousands of tokens before
it can write a word, although almost none of that text changed since the last
turn. With them, each chat session keeps a model session that has read the
fixed prefix (it is a clone of the step base) and then the memory, in the order
the prompts use. A turn clones it and prompts only the offered tools and the
user's message; after the answer, the finished turn is appended to it in the
background (``append`` processes input without generating, off the critical
path).

How it stays correct:

- It is built from the state (on the first turn after a reload, after a failure,
  or when it no longer fits) as one appended message: the memory as
  :meth:`MemoryAccountant.view` shows it, so old observations are micro-compacted
  exactly as today's prompt would show them. A finished turn is appended whole,
  as the newest turn is shown today; it is cut (micro-compacted) when the memory
  session is next rebuilt, which every compaction does. So the memory session
  shows each turn as the view did when it was added or last rebuilt, and its real
  size is checked against the window before every turn.
- A compaction that changes the summary, facts or kept turns starts a rebuild in
  the background; the old memory session serves until the new one is ready (it
  holds the old summary and the turns now summarized: more, never less). The new
  one catches up with turns that arrived meanwhile, then is swapped in. Facts are
  the exception: a turn never reads a changed or retracted fact from an old memory
  session; if the rebuild is not ready, that turn builds one first.
- Every append and rebuild of one chat runs under one lock, in turn order. An
  append or build that fails (a model error, a quota error, an overflow, a
  timeout, a cancellation) destroys that memory session: nothing half-appended
  is ever cloned; the next turn builds a new one from the stored state.
- The user profile's facts (:mod:`py_agent.memory.profile_rules`) are read first, at
  the head of the memory. The profile changes under a chat (another session's pass
  adds a fact, the user forgets one in another tab), so before every turn the facts the
  chat shows now are compared with those its memory session read: facts that are only
  new are appended as a short message of their own ("More about the user…"); a fact
  that changed, left the profile or was crowded out of its budget means the memory
  session is rebuilt before the turn, as for a changed key fact: a forgotten fact is
  never served from an old memory session.
- A turn whose clone overflows is retried by the loop on a clone of the plain
  base with today's full prompt, and the memory session is rebuilt afterwards.
- At most ``max_live`` chats keep a memory session; the least recently used is
  destroyed. A new base session (another model) invalidates all of them.
- Aborted turns are never committed and failed turns never enter the kept turns,
  so neither is appended.

On an OpenAI-compatible server the same order (prefix, memory, turns, then the
new message) keeps each request's messages a prefix of the next turn's, which is
what servers with prefix caching reuse.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ..budget import MemoryAccountant
from ..model import ModelSession, Purpose, destroy_quietly, for_conversation
from ..memory_view import turn_reasons
from ..prompting import MemoryView, render_facts, render_turn
from ..state import Fact, SessionState

log = logging.getLogger("py_agent")

# How long an append or a build may take before the memory session is given up.
APPEND_TIMEOUT_S = 120.0
DEFAULT_MAX_LIVE = 4


def turn_block(text: str) -> str:
    """One earlier turn as the memory session holds it."""
    return "Earlier turn:\n" + text


def memory_text(view: MemoryView) -> str:
    """The memory as one message: the profile's facts, summary and facts, then each kept
    turn as a block."""
    head = MemoryView(summary=view.summary, facts=view.facts, profile=view.profile,
                      untrusted_summary=view.untrusted_summary,
                      untrusted_sources=view.untrusted_sources).render()
    return "\n\n".join([head or "Memory:", *(turn_block(t) for t in view.turns)])


PROFILE_ADDED_HEADING = "More about the user, remembered across chats:"


def profile_lines(facts: list[Fact]) -> tuple[str, ...]:
    """The profile's facts as a memory session reads them, one line each."""
    return tuple(render_facts([f]) for f in facts)


def supports_append(session: ModelSession) -> bool:
    return callable(getattr(session, "append", None))


@dataclass
class _Live:
    """A memory session and what it has read."""

    session: ModelSession
    base: ModelSession
    head: str  # summary and facts it was built from
    facts: str  # the facts alone, rendered
    last_turn_id: int  # the newest turn it holds (0: none)
    turn_ids: list[int] = field(default_factory=list)
    profile: tuple[str, ...] = ()  # the user profile's facts it has read, one line each
    # The untrusted text it has read (the memory it was built from, the turns appended
    # since), each with where it came from: while it serves, calls are asked about.
    untrusted: list[str] = field(default_factory=list)


@dataclass
class MemorySessionStats:
    built: int = 0  # built on the critical path (first use, reload, repair)
    rebuilt: int = 0  # rebuilt in the background after a compaction
    appended_turns: int = 0
    discarded: int = 0  # given up after a failure or an overflow
    evicted: int = 0  # destroyed as least recently used


class MemorySessions:
    """The live memory sessions of an agent's chats; see the module docstring.

    Args:
        accountant: renders the memory view within a room of tokens.
        state_of: the current state of a chat (the session table's, in memory).
        reserve: tokens a turn needs beyond the memory (the turn's own work and the
            longest tool list), as a callable since the policy is planned late.
        max_live: how many chats keep a memory session (0: the feature is off).
        profile_of: the user profile's facts a chat shows (none if not given).
    """

    def __init__(self, accountant: MemoryAccountant,
                 state_of: Callable[[str], SessionState | None],
                 reserve: Callable[[], int], *, max_live: int = DEFAULT_MAX_LIVE,
                 timeout_s: float = APPEND_TIMEOUT_S,
                 profile_of: Callable[[SessionState], list[Fact]] = lambda _: []) -> None:
        self.accountant = accountant
        self.state_of = state_of
        self.profile_of = profile_of
        self.reserve = reserve
        self.max_live = max_live
        self.timeout_s = timeout_s
        self.stats = MemorySessionStats()
        self._live: OrderedDict[str, _Live] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task] = set()
        self._rebuilding: dict[str, asyncio.Task] = {}

    @property
    def live(self) -> int:
        """How many memory sessions are alive now."""
        return len(self._live)

    @property
    def rebuilding(self) -> int:
        """How many memory sessions are being rebuilt in the background now."""
        return len(self._rebuilding)

    @property
    def enabled(self) -> bool:
        return self.max_live > 0

    def holds(self, session_id: str) -> bool:
        return session_id in self._live

    def untrusted(self, session_id: str) -> list[str]:
        """The untrusted text the chat's memory session has read, each said with where it
        came from (none without one): a turn cloned from it reads all of that."""
        live = self._live.get(session_id)
        return list(live.untrusted) if live is not None else []

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    # ------------------------------------------------------------ the turn

    async def clone_for_turn(self, session_id: str, base: ModelSession,
                             prompt_tokens: int) -> ModelSession | None:
        """A clone that has read prefix and memory, room left for a prompt of
        ``prompt_tokens`` and the turn's work; None if none can be had (the turn then
        goes today's way: a clone of the base and the whole memory in its prompt)."""
        state = self.state_of(session_id)
        if not self.enabled or state is None or not supports_append(base):
            return None
        try:
            async with self._lock(session_id):
                live = await self._usable(session_id, state, base, prompt_tokens)
                if live is None:
                    return None
                self._live.move_to_end(session_id)
                return await asyncio.wait_for(live.session.clone(), self.timeout_s)
        except Exception as exc:  # any trouble: this turn goes today's way
            log.warning("no memory session for %s: %r", session_id, exc)
            await self._discard(session_id)
            return None

    async def _usable(self, session_id: str, state: SessionState, base: ModelSession,
                      prompt_tokens: int) -> _Live | None:
        live = self._live.get(session_id)
        if live is not None and live.base is not base:
            await self._discard(session_id)  # another base: another model or prefix
            live = None
        if live is not None:
            await self._catch_up(session_id, live, state)
            live = self._live.get(session_id)
        if live is not None and live.facts != render_facts(state.facts):
            # A changed or retracted fact must not be served: rebuild now.
            await self._discard(session_id)
            live = None
        if live is not None:
            live = await self._follow_profile(session_id, live, state)
        elif live is not None and live.head != _head(state):
            # Only the summary changed: the old session holds the turns it was made
            # from, so it serves until the one rebuilt in the background is ready.
            self.memory_changed(session_id)
        need = prompt_tokens + self.accountant.policy.reserved_turn_tokens
        if live is not None and live.session.context_usage + need > live.session.context_window:
            await self._discard(session_id)  # outgrew the window: rebuild within it
            live = None
        if live is None:
            room = base.context_window - base.context_usage - need
            live = await self._build(state, base, room)
            self.stats.built += 1
            self._keep(session_id, live)
        return live

    async def _follow_profile(self, session_id: str, live: _Live,
                              state: SessionState) -> _Live | None:
        """Bring the memory session's profile facts up to date: new ones are appended; if
        one it read is no longer shown (changed, removed, crowded out), it is discarded
        (None) so that the turn builds a new one."""
        shown = profile_lines(self.profile_of(state))
        if set(shown) == set(live.profile):
            return live
        if not set(live.profile) <= set(shown):
            await self._discard(session_id)
            return None
        new = [line for line in shown if line not in live.profile]
        try:
            await asyncio.wait_for(live.session.append(
                PROFILE_ADDED_HEADING + "\n" + "\n".join(new), purpose=Purpose.STEP),
                self.timeout_s)
        except asyncio.CancelledError:
            await self._discard(session_id)
            raise
        except Exception as exc:
            log.warning("memory session of %s dropped: append failed (%r)", session_id, exc)
            await self._discard(session_id)
            return None
        live.profile = live.profile + tuple(new)
        return live

    def turn_finished(self, session_id: str) -> None:
        """Append the finished turn (whatever the state holds that the memory session
        does not) in the background, off the critical path."""
        if session_id in self._live:
            self._spawn(self._append_new(session_id))

    def memory_changed(self, session_id: str) -> None:
        """A compaction changed the memory: rebuild in the background, then swap."""
        if session_id not in self._live or session_id in self._rebuilding:
            return
        self._rebuilding[session_id] = self._spawn(self._rebuild(session_id))

    # ------------------------------------------------------------ internals

    async def _append_new(self, session_id: str) -> None:
        async with self._lock(session_id):
            live, state = self._live.get(session_id), self.state_of(session_id)
            if live is not None and state is not None:
                await self._catch_up(session_id, live, state)

    async def _catch_up(self, session_id: str, live: _Live, state: SessionState) -> None:
        """Append the kept turns newer than the memory session's newest; on failure
        the memory session is discarded (never left half-appended)."""
        for turn in [t for t in state.recent_turns if t.id > live.last_turn_id]:
            try:
                await asyncio.wait_for(live.session.append(
                    turn_block(render_turn(turn)), purpose=Purpose.STEP), self.timeout_s)
            except asyncio.CancelledError:
                await self._discard(session_id)  # it may hold part of the turn
                raise
            except Exception as exc:
                log.warning("memory session of %s dropped: append failed (%r)", session_id, exc)
                await self._discard(session_id)
                return
            live.last_turn_id = turn.id
            live.turn_ids.append(turn.id)
            live.untrusted += turn_reasons(turn, "this chat's memory session")
            self.stats.appended_turns += 1

    async def _build(self, state: SessionState, base: ModelSession, room: int) -> _Live:
        """A new memory session from ``state``: a clone of the base that read the memory
        view (within ``room`` tokens) as one appended message."""
        profile = self.profile_of(state)
        view, dropped = self.accountant.view(state, max(0, room), profile)
        kept = [t.id for t in state.recent_turns][dropped:]
        session = for_conversation(await asyncio.wait_for(base.clone(), self.timeout_s),
                                   state.session_id)  # its clones stream in this chat
        try:
            if view.render():
                await asyncio.wait_for(session.append(memory_text(view), purpose=Purpose.STEP),
                                       self.timeout_s)
        except BaseException:
            await _destroy(session)
            raise
        head = _head(state)
        last = state.recent_turns[-1].id if state.recent_turns else 0
        untrusted = [reason.replace("this chat's raw turns", "this chat's memory session")
                     for reason in view.untrusted]
        return _Live(session, base, head, render_facts(state.facts), last, kept,
                     profile_lines(profile), untrusted)

    async def _rebuild(self, session_id: str) -> None:
        try:
            old, state = self._live.get(session_id), self.state_of(session_id)
            if old is None or state is None:
                return
            if _head(state) == old.head and old.turn_ids[:1] == [t.id for t in state.recent_turns][:1]:
                return  # nothing this memory session shows has changed
            room = old.base.context_window - old.base.context_usage - self.reserve()
            try:
                fresh = await self._build(state, old.base, room)
            except Exception as exc:
                log.warning("background rebuild of %s failed: %r", session_id, exc)
                return  # the old one keeps serving; the next compaction tries again
            async with self._lock(session_id):
                current, state = self._live.get(session_id), self.state_of(session_id)
                if current is not old or state is None:
                    await _destroy(fresh.session)  # replaced or dropped meanwhile
                    return
                self._live[session_id] = fresh
                await self._catch_up(session_id, fresh, state)
                self.stats.rebuilt += 1
            await _destroy(old.session)
        finally:
            self._rebuilding.pop(session_id, None)

    def _keep(self, session_id: str, live: _Live) -> None:
        self._live[session_id] = live
        self._live.move_to_end(session_id)
        while len(self._live) > self.max_live:
            evicted_id, evicted = self._live.popitem(last=False)
            self.stats.evicted += 1
            self._spawn(_destroy(evicted.session))
            log.info("memory session of %s destroyed (least recently used)", evicted_id)

    async def _discard(self, session_id: str) -> None:
        live = self._live.pop(session_id, None)
        if live is not None:
            self.stats.discarded += 1
            await _destroy(live.session)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------ lifecycle

    def invalidate(self, session_id: str) -> None:
        """Forget a chat's memory session (its clone overflowed, or it was deleted)."""
        live = self._live.pop(session_id, None)
        if live is not None:
            self.stats.discarded += 1
            self._spawn(_destroy(live.session))

    async def wait_idle(self) -> None:
        """Wait for pending appends and rebuilds (each bounded by its timeout)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        while self._live:
            await _destroy(self._live.popitem()[1].session)


def _head(state: SessionState) -> str:
    """The part of the memory only a compaction changes: summary and facts."""
    return MemoryView(summary=state.summary, facts=list(state.facts),
                      untrusted_summary=state.untrusted_summary,
                      untrusted_sources=list(state.untrusted_sources)).render()


async def _destroy(session: ModelSession) -> None:
    await destroy_quietly(session, "a memory session")
