"""What a tool gets with each call when it asks for it: :class:`RunContext`.

A tool asks by naming a first parameter annotated ``RunContext`` (as pydantic-ai's tools
do); the model never sees that parameter. The context is made for one call: the turn's
chat, message, id and stop button, the agent's model as tools may use it
(:class:`ModelAccess`: through the agent's base sessions, with the memory policy in use
and its token counter, each call counted) and the chat's memory as tools may use it
(:class:`MemoryAccess`: recall, a compaction after the answer). Nothing a tool needs is
reached through a closure over the agent or a global.

A tool that takes a context always runs where the agent runs (never in the page's tool
worker: the context cannot cross to another thread).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from ..model import Purpose

# emit(type, data): an event of the turn, shown in its trace.
ToolEmit = Callable[[str, dict[str, Any]], Awaitable[None]]


class TokenCounting(Protocol):
    """Counts tokens as the agent does (its :class:`~py_agent.tokens.TokenCounter`)."""

    def count(self, text: str) -> int:
        ...


class ModelAccess(Protocol):
    """The agent's model as a tool may use it.

    Each :meth:`prompt` clones a base session that read ``instructions`` once (kept by
    the agent, like its own prefixes) and is counted under its purpose; ``policy`` is
    the memory policy in use (scaled to the model's window) and ``counter`` the agent's
    token counter (calibrated by the model's exact counts).
    """

    # The agent's MemoryPolicy in use (typed loosely: the budget's module sits above the
    # tools, which it renders), and its token counter.
    policy: Any
    counter: TokenCounting

    async def room(self, instructions: str, purpose: Purpose) -> int:
        """Tokens left in one call's window once ``instructions`` are read."""

    async def prompt(self, instructions: str, text: str, purpose: Purpose, *,
                     response_constraint: dict[str, Any] | None = None) -> str:
        """One call: a fresh session that read ``instructions`` is asked ``text``; it
        raises :class:`~py_agent.model.ModelError` (a timeout included) on failure."""


class MemoryAccess(Protocol):
    """The chat's memory as a tool may use it."""

    async def recall(self, query: str) -> str:
        """Earlier turns (of this chat and others the user shares) that match ``query``,
        as observation text; the turns the prompt holds already are left out."""

    def request_compaction(self, focus: str = "") -> None:
        """Compact this chat's memory right after the turn's answer, keeping ``focus``."""


@dataclass(frozen=True)
class RunContext:
    """One tool call's context (see the module docstring).

    Attributes:
        session_id: the chat the turn is in.
        message: the user's message of the turn.
        turn_id: the turn's id in the chat's transcript.
        tool_name: the name the tool was called by.
        abort: set when the user stops the turn (None: it cannot be stopped).
        model: the agent's model (None where there is no agent, as in a test).
        memory: the chat's memory (None where there is none).
        emit: an event of the turn, ``emit(type, data)``.
    """

    session_id: str = ""
    message: str = ""
    turn_id: int = 0
    tool_name: str = ""
    abort: asyncio.Event | None = None
    model: ModelAccess | None = None
    memory: MemoryAccess | None = None
    emit: ToolEmit | None = field(default=None, repr=False)

    async def tell(self, event_type: str, data: dict[str, Any]) -> None:
        """Emit an event of the turn, if anyone listens."""
        if self.emit is not None:
            await self.emit(event_type, data)
