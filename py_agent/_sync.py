"""Keeping one session right when several writers share its store.

Two browser tabs (or two terminals) on one session each hold the state in
memory. Stores refuse a write made from an outdated state
(:class:`~py_agent.store.StateConflictError`); the writer then takes the stored
state and re-applies what it has not saved yet, with these pure functions.
Turn ids come from the stored ``next_turn_id`` when a turn starts, and the
start is written at once, so two writers never hand out the same id; a turn
whose start could not be written is renumbered if the id was taken meanwhile.
"""

from __future__ import annotations

from .state import SessionState, Turn, now_ms
from .store import StateConflictError, Store


def title_from(message: str) -> str:
    """A session's title from its first message (the page keeps a copy of this rule)."""
    text = " ".join(message.split())
    return text if len(text) <= 60 else text[:57].rstrip() + "…"


def with_turn(state: SessionState, turn: Turn) -> SessionState:
    """A copy of ``state`` that knows ``turn``: in memory if it was answered (in id order),
    its id used, the title set by the first message."""
    updated = state.copy()
    if turn.in_memory and all(t.id != turn.id for t in updated.recent_turns):
        updated.recent_turns.append(turn)
        updated.recent_turns.sort(key=lambda t: t.id)
    updated.next_turn_id = max(updated.next_turn_id, turn.id + 1)
    updated.title = updated.title or title_from(turn.user)
    updated.updated_at = now_ms()
    return updated


def next_turn_id(state: SessionState, pending: list[Turn], exclude: Turn | None = None) -> int:
    """The id for a new turn: above the state's and every unsaved turn's."""
    return max(state.next_turn_id, 1, *(t.id + 1 for t in pending if t is not exclude))


def rebase(stored: SessionState | None, session_id: str, pending: list[Turn],
           reserved: set[int]) -> SessionState:
    """The stored state (a new one if there is none) with the unsaved ``pending`` turns
    re-applied. A pending turn whose id was never written (not in ``reserved``) and is
    taken in ``stored`` gets the next free id; the Turn object is changed in place."""
    state = stored.copy() if stored is not None else SessionState(session_id=session_id)
    for turn in sorted(pending, key=lambda t: t.id):
        if turn.id not in reserved and turn.id < state.next_turn_id:
            turn.id = state.next_turn_id
        state = with_turn(state, turn)
    return state


async def write_turn(store: Store | None, states: dict[str, SessionState], session_id: str,
                     turn: Turn, pending: list[Turn], reserved: set[int], *, allocate: bool,
                     attempts: int) -> Exception | None:
    """Put ``turn`` into ``states[session_id]`` and write it with the other ``pending``
    (unsaved) turns; what went wrong, or None once written.

    With ``allocate`` the turn first gets the session's next id. On a conflict (another
    writer was first) the stored state is taken, the pending turns re-applied and the
    write tried again, up to ``attempts`` times. A failed write leaves the turn in
    ``pending``, written with the next one. Without a ``store`` (a session that could
    not be read) the turn is only kept in memory.
    """
    problem: Exception | None = None
    for _ in range(attempts):
        if allocate:
            turn.id = next_turn_id(states[session_id], pending, exclude=turn)
        states[session_id] = with_turn(states[session_id], turn)
        if not any(t is turn for t in pending):
            pending[:] = [t for t in pending if t.id != turn.id] + [turn]
        if store is None:
            return None
        try:
            await store.commit_turn(states[session_id], list(pending))
        except StateConflictError as exc:
            problem = exc
            try:
                stored = await store.load(session_id)
            except Exception as load_error:
                return load_error
            states[session_id] = rebase(stored, session_id, pending, reserved)
            continue
        except Exception as exc:
            return exc
        reserved.update(t.id for t in pending)
        pending.clear()
        return None
    return problem
