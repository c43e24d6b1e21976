"""Which model session a turn's steps run on: the chat's memory session, or the base.

A turn first asks for a clone of its chat's memory session (one that has read
the prefix and the memory, :mod:`py_agent.memory.live`), so its first prompt
carries only tools and message. If there is none, or the clone overflowed, the
turn runs on a clone of the plain step base and its first prompt carries the
memory (:mod:`py_agent.turn.first_prompt`).

Either way the session is the turn's own clone, tagged with the turn's chat
(:func:`~py_agent.model.for_conversation`), so what it streams is shown in that chat
only, whatever other chat runs a turn at the same time.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from ..memory.live import MemorySessions
from ..model import ModelSession, for_conversation


class TurnSessions:
    """Opens the sessions of one turn: a clone of the chat's memory session first;
    after an overflow (or without one), a clone of the plain base, whose prompt then
    carries the memory as today. ``uses_memory`` says which the current one is."""

    def __init__(self, memory: MemorySessions, session_id: str,
                 base: Callable[[], ModelSession],
                 base_clone: Callable[[], Awaitable[ModelSession]], prompt_tokens: int,
                 media_clone: Callable[[frozenset[str]], Awaitable[ModelSession]] | None = None,
                 kinds: frozenset[str] = frozenset()) -> None:
        self.memory, self.session_id = memory, session_id
        self.base, self.base_clone, self.prompt_tokens = base, base_clone, prompt_tokens
        # A turn with images or sounds (``kinds``: the user's, or a tool's that came
        # since) runs on a clone of a base made to take them, whose first prompt carries
        # the memory (the memory session takes text only).
        self.media_clone = media_clone
        self.kinds = frozenset(kinds)
        self.uses_memory = False
        self._opened = 0

    async def media_session(self, kinds: frozenset[str]) -> ModelSession:
        """A session that takes ``kinds`` of media from now on in this turn."""
        self.kinds = frozenset(kinds)
        return await self.new_session()

    async def new_session(self) -> ModelSession:
        self._opened += 1
        if self.kinds and self.media_clone is not None:
            self.uses_memory = False
            return for_conversation(await self.media_clone(self.kinds), self.session_id)
        if self._opened == 1:
            clone = await self.memory.clone_for_turn(self.session_id, self.base(),
                                                     self.prompt_tokens)
            if clone is not None:
                self.uses_memory = True
                return for_conversation(clone, self.session_id)
        elif self.uses_memory:
            self.memory.invalidate(self.session_id)  # it left too little room: rebuild
        self.uses_memory = False
        return for_conversation(await self.base_clone(), self.session_id)
