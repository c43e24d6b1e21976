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
