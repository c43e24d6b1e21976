"""The base model sessions: one prefilled session per purpose, created once, cloned per use.

Every model call of an agent starts from a clone of a base session that has read
a fixed prefix as ``initialPrompts``: the step prefix (system instruction and
worked examples, planned for the model's window by :mod:`py_agent.prefix`) for
the turn's steps, the summarizer's and the extractor's instructions for memory
passes. The prefix is processed once and reused by every clone.

The response constraints each model accepts are learnt here too, per model
(:attr:`BaseSessions.ladder`), as every purpose's calls find them out.

Planning the step prefix may scale the memory policy down to a small window: the
plan (:attr:`BaseSessions.plan`) carries the policy that goes with it, and a plan
other than the full prefix is announced with a ``prefix_planned`` event. Making a
base session changes nothing else: the memory policy in use is taken from the plan
by its one owner, :meth:`py_agent.memory.engine.MemoryEngine.plan`.
"""

from __future__ import annotations

import asyncio
from typing import Mapping

from ._model_guard import create_guarded
from .constraints import ConstraintLadder, ModelConstraints
from .events import AgentEvent, Emit
from .model import (GEMINI_NANO_WINDOW, LanguageModel, MediaSupport, Message, ModelSession,
                    Purpose, destroy_quietly, media_support_of)
from .prefix import PrefixPlan, PrefixPlanner

# The window assumed before any model session exists: Gemini Nano's.
DEFAULT_CONTEXT_WINDOW = GEMINI_NANO_WINDOW
# Base sessions kept for instructions of tools' own (a page summarizer's); the oldest
# goes when another is needed.
MAX_TOOL_BASES = 4


class BaseSessions:
    """The base sessions of one model, by purpose; see the module docstring.

    Args:
        model: the language model; :meth:`use` switches to another.
        planner: plans the step prefix (and the policy with it) for the model's window.
        prefixes: the initial prompts of every purpose but the step's (the
            summarizer's and the fact extractor's instructions).
        emit: where the ``prefix_planned`` event goes.
    """

    def __init__(self, model: LanguageModel, planner: PrefixPlanner,
                 prefixes: Mapping[Purpose, list[Message]], emit: Emit) -> None:
        self.model = model
        self.planner = planner
        self.prefixes = dict(prefixes)
        self.emit = emit
        self._sessions: dict[Purpose, ModelSession] = {}
        self._tool_bases: dict[tuple[Purpose, str], ModelSession] = {}
        # Step bases made to take images or sounds, by the kinds they take: made on the
        # first turn that sends one (declaring media can make a browser load more).
        self._media: dict[tuple[str, ...], ModelSession] = {}
        self._lock = asyncio.Lock()
        self.ladder = ConstraintLadder()

    def use(self, model: LanguageModel) -> None:
        """Answer with ``model`` from now on: the next call creates its base sessions
        (the old ones are dropped, not destroyed: they belong to the old model)."""
        self.model = model
        self._sessions.clear()
        self._tool_bases.clear()
        self._media.clear()

    async def media_support(self) -> MediaSupport:
        """What the model in use takes besides text (see :class:`MediaSupport`)."""
        return await media_support_of(self.model)

    async def media_base(self, kinds: frozenset[str]) -> ModelSession:
        """A step base made to take ``kinds`` of media (the Prompt API's
        ``expectedInputs``), with the step prefix in use: made on first use, kept."""
        await self.get(Purpose.STEP)   # the plan, and the prefix it chose
        key = tuple(sorted(kinds))
        async with self._lock:
            if key not in self._media:
                plan = self.planner.current
                self._media[key] = await create_guarded(self.model, plan.messages,
                                                        Purpose.STEP, key)
            return self._media[key]

    def constraints(self) -> ModelConstraints:
        """The response constraints the model in use accepted so far (see
        :mod:`py_agent.constraints`); kept per model, so a switch back finds them."""
        return self.ladder.of(self.model)

    async def get(self, purpose: Purpose) -> ModelSession:
        """The base session for ``purpose``, created on first use."""
        async with self._lock:
            if purpose not in self._sessions:
                if purpose is Purpose.STEP:
                    self._sessions[purpose] = await self._create_step_base()
                else:
                    self._sessions[purpose] = await create_guarded(
                        self.model, self.prefixes[purpose], purpose)
            return self._sessions[purpose]

    async def clone(self, purpose: Purpose) -> ModelSession:
        return await (await self.get(purpose)).clone()

    async def for_instructions(self, purpose: Purpose, instructions: str) -> ModelSession:
        """A base session that read ``instructions`` (a tool's own, such as the page
        summarizer's), made once and kept like the agent's own; clone it to use it."""
        key = (purpose, instructions)
        async with self._lock:
            if key not in self._tool_bases:
                if len(self._tool_bases) >= MAX_TOOL_BASES:
                    oldest = next(iter(self._tool_bases))
                    await destroy_quietly(self._tool_bases.pop(oldest), "a tool's base session")
                self._tool_bases[key] = await create_guarded(
                    self.model, [{"role": "system", "content": instructions}], purpose)
            return self._tool_bases[key]

    def existing(self, purpose: Purpose) -> ModelSession | None:
        """The base session for ``purpose`` if one was made; never creates one (creating
        a session can start a model download)."""
        return self._sessions.get(purpose)

    @property
    def purposes(self) -> list[Purpose]:
        """The purposes that have a base session now."""
        return list(self._sessions)

    def window(self, purpose: Purpose) -> tuple[int, int] | None:
        """``(context_window, context_usage)`` of the existing base session for
        ``purpose``: the window and what its prefix takes; None before there is one."""
        base = self._sessions.get(purpose)
        return None if base is None else (base.context_window, base.context_usage)

    def known_window(self) -> int:
        """The model's window if it says so as a plain attribute, else Gemini Nano's."""
        window = getattr(self.model, "context_window", None)
        if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
            return DEFAULT_CONTEXT_WINDOW
        return window

    @property
    def plan(self) -> PrefixPlan | None:
        """The step prefix in use and the memory policy that goes with it, planned for
        the model's window when its step base session was made."""
        return self.planner.current

    def estimate(self) -> PrefixPlan:
        """The step prefix as it would be planned now, without any model session."""
        return self.planner.estimate(self.known_window())

    def tools_tokens(self) -> int:
        """The longest tool list a turn could be offered, in tokens."""
        return self.planner.tools_tokens()

    async def _create_step_base(self) -> ModelSession:
        """The step base session, with the prefix planned for the model's window (see
        :mod:`py_agent.prefix`); a plan other than the full prefix is announced."""
        base = await self.planner.create_base(self.model, self.known_window())
        plan = self.planner.current
        if plan.level != "full" or plan.scaled:
            await self.emit(AgentEvent("prefix_planned", "", plan.to_dict()))
        return base

    async def close(self) -> None:
        """Destroy every base session (each bounded; a failure only leaks it)."""
        for session in [*self._sessions.values(), *self._tool_bases.values(),
                        *self._media.values()]:
            await destroy_quietly(session, "a base session")
        self._sessions.clear()
        self._tool_bases.clear()
        self._media.clear()
