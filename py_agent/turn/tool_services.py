"""What a tool may use of the agent through its :class:`~py_agent.tools.RunContext`.

- :class:`AgentModel`: the agent's model, reached through its base sessions (a tool's
  instructions are read once and cloned for each call, like the agent's own prefixes),
  with the memory policy in use (scaled to the model's window) and the agent's token
  counter; every call is counted under its purpose and has a deadline.
- :class:`TurnMemory`: one turn's view of its chat's memory: recall from the archive
  (leaving out what the prompt holds already) and a compaction asked for after the
  answer.

The turn runner makes them and the loop puts them into each call's context: no tool
reaches the agent through a closure or a side door.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Awaitable, Callable

from ..bases import BaseSessions
from ..budget import MemoryAccountant
from ..model import ModelTimeoutError, Purpose
from ..waiting import DeadlineExceeded, bounded

# search(query) -> (the observation, the untrusted text it holds: one reason per turn)
Search = Callable[[str], Awaitable[tuple[str, list[str]]]]


class AgentModel:
    """The agent's model for tools (a :class:`~py_agent.tools.ModelAccess`)."""

    def __init__(self, bases: BaseSessions, accountant: MemoryAccountant,
                 calls: Counter[str]) -> None:
        self.bases, self.accountant, self.calls = bases, accountant, calls

    @property
    def policy(self) -> Any:
        """The memory policy in use (its summary sizes and deadlines serve tools too)."""
        return self.accountant.policy

    @property
    def counter(self) -> Any:
        return self.accountant.counter

    async def room(self, instructions: str, purpose: Purpose) -> int:
        base = await self.bases.for_instructions(purpose, instructions)
        return base.context_window - base.context_usage

    async def prompt(self, instructions: str, text: str, purpose: Purpose, *,
                     response_constraint: dict[str, Any] | None = None) -> str:
        timeout = self._deadline(purpose)
        base = await self.bases.for_instructions(purpose, instructions)
        session = await base.clone()
        try:
            self.calls[purpose.value] += 1
            return await bounded(session.prompt(text, response_constraint=response_constraint,
                                                purpose=purpose), timeout=timeout)
        except DeadlineExceeded:
            raise ModelTimeoutError(f"the model did not answer within {timeout:g} s") from None
        finally:
            await session.destroy()

    def _deadline(self, purpose: Purpose) -> float:
        policy = self.accountant.policy
        return float(policy.facts_timeout_s if purpose is Purpose.FACTS
                     else policy.summary_timeout_s)


class TurnMemory:
    """One turn's chat memory for tools (a :class:`~py_agent.tools.MemoryAccess`).

    ``search(query)`` is the turn's recall (None: the agent keeps no archive index).
    What the model asked for is kept here for the turn to act on after the answer:
    :attr:`compaction_focus` and :attr:`compaction_requests`.
    """

    def __init__(self, search: Search | None) -> None:
        self.search = search
        self.compaction_requests = 0
        self.compaction_focus: list[str] = []
        # What the recall searches brought in that is untrusted text (turns from the
        # archive, marked as data): the loop has the approval gate ask while it is read.
        self.untrusted: list[str] = []

    async def recall(self, query: str) -> str:
        if self.search is None:
            return "Recall is not available here: this agent keeps no archive index."
        text, reasons = await self.search(str(query))
        self.untrusted.extend(reasons)
        return text

    def request_compaction(self, focus: str = "") -> None:
        self.compaction_requests += 1
        if focus and focus.strip():
            self.compaction_focus.append(focus.strip())

