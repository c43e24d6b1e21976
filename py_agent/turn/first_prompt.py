"""The first prompt of a turn: memory, offered tools and the message, within the room left.

Later prompts of a turn carry only the new observation (:mod:`py_agent.turn.loop`);
the first one carries what the model needs to start. It is built from data only:
the message, the offered tools, the memory (or None when the model session has
read it already, see :mod:`py_agent.memory.live`), the turns recalled from the
archive for this message (:mod:`py_agent.turn.recalled`: in the first prompt
whichever session the turn runs on, never in the memory session) and the free room
of the step base session. The memory is shown as :meth:`MemoryAccountant.view` renders it:
old observations cut, and, if compaction lags behind, the oldest raw turns left
out of this one prompt rather than overflow the window.

When a turn's own work outgrew the window, the loop starts over on a fresh clone
with a ``tight`` prompt: half the room for the memory, and the steps taken so far
condensed below the message.

:class:`TurnPrompt` is one turn's first prompt as the loop asks for it, built again
from what holds at that moment, and remembering how long the last one was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from ..budget import MemoryAccountant
from ..prompting import MemoryView, first_prompt
from ..results import StepTrace
from ..retrieval import ScoredTool
from ..state import Fact, SessionState
from .loop import condensed_steps


def without_memory(message: str, offered: list[ScoredTool], recalled: str = "") -> str:
    """The first prompt with no memory in it (but the recalled turns, which every
    first prompt carries): what a turn needs at the very least."""
    return first_prompt(message, offered, MemoryView(), recalled)


def build_first_prompt(message: str, offered: list[ScoredTool], memory: SessionState | None,
                       free_tokens: int, accountant: MemoryAccountant,
                       steps: Iterable[StepTrace] = (), *, tight: bool = False,
                       recalled: str = "", profile: Sequence[Fact] = (),
                       untrusted: list[str] | None = None) -> str:
    """The first prompt of a turn.

    Args:
        message: the user's message.
        offered: the tools retrieved for it.
        memory: the session's state (summary, key facts, raw turns) to show; None when
            the model session has read the memory already (then only tools and message).
        free_tokens: the step base session's window less what its prefix takes.
        accountant: counts tokens and renders the memory within a room.
        steps: the steps taken so far, shown condensed when ``tight``.
        tight: the turn's work overflowed once: give the memory half the room.
        recalled: the recalled turns' section (:func:`py_agent.turn.recalled.render`),
            within the room the policy planned for it; "" for none.
        profile: the user profile's facts the session shows (chosen within their
            budget, see :mod:`py_agent.memory.profile_rules`), at the head of the memory.
        untrusted: if given, filled with the untrusted text the memory shown holds
            (:attr:`~py_agent.prompting.MemoryView.untrusted`).
    """
    counter, policy = accountant.counter, accountant.policy
    fixed = without_memory(message, offered, recalled)
    if memory is None:
        return fixed
    room = free_tokens - policy.reserved_turn_tokens - counter.count(fixed)
    extra = condensed_steps(list(steps), policy.micro_compact_chars) if tight else ""
    if tight:
        room = room // 2 - counter.count(extra)
    view, _ = accountant.view(memory, max(0, room), profile)
    if untrusted is not None:
        untrusted.extend(view.untrusted)
    text = first_prompt(message, offered, view, recalled)
    return text + "\n\n" + extra if extra else text


@dataclass
class TurnPrompt:
    """One turn's first prompt, built when the loop asks for it (again, ``tight``, after
    an overflow), from what holds then: the memory the model session lacks, the room
    of the step base. ``recalled`` is filled in once the turn's recall is done;
    ``tokens`` is the size of the last prompt built, which the turn reports.

    Args:
        message, offered: the user's message and the tools offered for it.
        accountant: counts tokens and renders the memory.
        free_tokens: the step base's window less its prefix, now.
        memory: the session's state to show, or None when the model session has read
            the memory already.
        profile: the user profile's facts a state shows.

    ``untrusted`` lists the untrusted text the last prompt built holds (the memory's,
    and ``recalled_untrusted`` for the recalled turns), for the approval gate.
    """

    message: str
    offered: Sequence[ScoredTool]
    accountant: MemoryAccountant
    free_tokens: Callable[[], int]
    memory: Callable[[], SessionState | None]
    profile: Callable[[SessionState | None], Sequence[Fact]]
    recalled: str = ""
    recalled_untrusted: list[str] = field(default_factory=list)
    tokens: int = 0
    untrusted: list[str] = field(default_factory=list)

    def least(self) -> str:
        """The least this turn's first prompt carries: no memory, the recalled turns."""
        return without_memory(self.message, list(self.offered), self.recalled)

    def build(self, steps: Iterable[StepTrace] = (), tight: bool = False) -> str:
        """The first prompt as it is now (see :func:`build_first_prompt`)."""
        memory = self.memory()
        shown: list[str] = []
        text = build_first_prompt(self.message, list(self.offered), memory, self.free_tokens(),
                                  self.accountant, steps, tight=tight, recalled=self.recalled,
                                  profile=self.profile(memory), untrusted=shown)
        self.untrusted = shown + (list(self.recalled_untrusted) if self.recalled else [])
        self.tokens = self.accountant.counter.count(text)
        return text
