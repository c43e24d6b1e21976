"""The response-constraint ladder: each call asks for the richest constraint the model accepts.

Browsers and servers differ in the JSON schemas they take as a response constraint:
Chrome's engine takes ``anyOf`` and ``const``, a stricter one refuses them, structured
output may be switched off, a model server may take no ``response_format`` at all. A
refusal is a :class:`~py_agent.model.ResponseConstraintError` (never a missing model),
and the call is made again one level down:

==========  ==========================================================  ===============
level       a ReAct step asks for                                        fact extraction
==========  ==========================================================  ===============
``full``    one ``anyOf`` branch per offered tool, binding its name      the fact schema
            (``const``) to its typed arguments
``names``   ``toolName`` an enum of the offered tools, arguments free    (skipped)
``object``  any JSON object                                              any JSON object
``none``    no constraint: the reply is parsed as text, and the loop     the same
            corrects what it cannot use
==========  ==========================================================  ===============

A refusal that says the model cannot apply a constraint (``NotSupportedError``,
``TypeError``, a server's 400) is remembered per model and purpose for the life of the
agent, so later calls start at the level that works, and the caller is told once. A
``SyntaxError`` (the model could not write a compliant reply this time) steps down for
that call only. What each purpose asks at each level is built by its own module
(:func:`py_agent.prompting.step_constraint`, :func:`py_agent.memory.facts.facts_constraint`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Awaitable, Callable, TypeVar

from .model import Purpose, ResponseConstraintError

T = TypeVar("T")


class ConstraintLevel(str, Enum):
    """How much of a reply's shape a call asks the model to be held to; see the module."""

    FULL = "full"
    NAMES = "names"
    OBJECT = "object"
    NONE = "none"


# The levels each constrained purpose tries, richest first.
LEVELS: dict[Purpose, tuple[ConstraintLevel, ...]] = {
    Purpose.STEP: (ConstraintLevel.FULL, ConstraintLevel.NAMES, ConstraintLevel.OBJECT,
                   ConstraintLevel.NONE),
    Purpose.FACTS: (ConstraintLevel.FULL, ConstraintLevel.OBJECT, ConstraintLevel.NONE),
}

# The schema of the ``object`` level: the reply is one JSON object, of any shape.
PLAIN_OBJECT: dict[str, Any] = {"type": "object"}

_LABELS = {ConstraintLevel.FULL: "per-tool schemas", ConstraintLevel.NAMES: "tool-name enum",
           ConstraintLevel.OBJECT: "plain JSON object",
           ConstraintLevel.NONE: "no constraint (parsed as text)"}
_FACT_LABELS = {ConstraintLevel.FULL: "fact schema"}

# Errors that say this one reply could not comply, not that the constraint is refused.
PASSING_ERRORS = frozenset({"SyntaxError"})


def describe_level(purpose: Purpose, level: ConstraintLevel) -> str:
    """The level as the trace and the status line name it."""
    if purpose is Purpose.FACTS:
        return _FACT_LABELS.get(level, _LABELS[level])
    return _LABELS[level]


def level_below(purpose: Purpose, level: ConstraintLevel) -> ConstraintLevel | None:
    """The next level ``purpose`` tries after ``level``; None at the bottom."""
    levels = LEVELS[purpose]
    index = levels.index(level) + 1
    return levels[index] if index < len(levels) else None


@dataclass(frozen=True)
class Refusal:
    """One level the model would not answer under, and what it said."""

    level: ConstraintLevel
    error: str
    lasting: bool  # remembered for the model (not a one-off SyntaxError)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level.value, "error": self.error, "lasting": self.lasting}


@dataclass(frozen=True)
class LevelChange:
    """A call that had to step down: where it answered, and what was refused on the way."""

    purpose: Purpose
    level: ConstraintLevel
    refused: tuple[Refusal, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"purpose": self.purpose.value, "level": self.level.value,
                "label": describe_level(self.purpose, self.level),
                "refused": [r.to_dict() for r in self.refused]}


Announce = Callable[[LevelChange], Awaitable[None]]


class ModelConstraints:
    """The levels one model answers at, per purpose, learnt from its refusals."""

    def __init__(self) -> None:
        self._levels: dict[Purpose, ConstraintLevel] = {}

    def level(self, purpose: Purpose) -> ConstraintLevel:
        """The level the next call for ``purpose`` starts at."""
        return self._levels.get(purpose, LEVELS[purpose][0])

    def levels(self) -> dict[str, str]:
        """The levels learnt so far, by purpose (empty while nothing was refused)."""
        return {purpose.value: level.value for purpose, level in self._levels.items()}

    async def ask(self, purpose: Purpose,
                  constraint_for: Callable[[ConstraintLevel], dict[str, Any] | None],
                  call: Callable[[dict[str, Any] | None], Awaitable[T]],
                  announce: Announce | None = None) -> tuple[T, ConstraintLevel]:
        """``call(constraint)`` at the level ``purpose`` starts at, then one level down
        after each :class:`ResponseConstraintError`; returns what it returned and the
        level that answered. A lasting refusal is remembered, and ``announce`` hears of
        it once the call has answered. Any other error, and a refusal with no level
        left below, propagate."""
        level = self.level(purpose)
        refused: list[Refusal] = []
        while True:
            try:
                result = await call(constraint_for(level))
            except ResponseConstraintError as exc:
                lower = level_below(purpose, level)
                if lower is None:
                    raise
                lasting = exc.original_name not in PASSING_ERRORS
                refused.append(Refusal(level, _said(exc), lasting))
                if lasting:
                    self._levels[purpose] = lower
                level = lower
                continue
            if announce is not None and any(r.lasting for r in refused):
                await announce(LevelChange(purpose, level, tuple(refused)))
            return result, level


def _said(exc: ResponseConstraintError) -> str:
    """What the model said, led by the browser's error name."""
    text, name = str(exc), exc.original_name or type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}"


class ConstraintLadder:
    """What each model accepted, kept per model object for the life of an agent (a
    backend switched away from and back to keeps what was learnt of it)."""

    def __init__(self) -> None:
        self._models: list[tuple[object, ModelConstraints]] = []

    def of(self, model: object) -> ModelConstraints:
        """The constraints learnt of ``model`` (the same object each time)."""
        for known, constraints in self._models:
            if known is model:
                return constraints
        constraints = ModelConstraints()
        self._models.append((model, constraints))
        return constraints
