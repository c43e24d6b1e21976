"""The fixed prefix, compressed when the window is tight.

Every turn's clone starts from a base session holding the system instruction and
worked examples. On Gemini Nano's 9,216 tokens they cost about 6% of the window;
on a 2,048-token model they would cost a quarter, and the memory policy sized for
Nano would not fit at all. So the agent plans its prefix against the real window,
from the richest level down, taking the first that fits:

- ``full``: the system instruction and both worked examples;
- ``compact``: a short instruction (unless the caller gave their own) and the
  tool-call example only;
- ``minimal``: the short instruction alone (the step schema still constrains
  every reply).

A level fits when the prefix takes at most ``max_prefix_ratio`` of the window and
the room left for raw turns, after the reserve for the turn's work (which must
also hold the longest tool descriptions that could be offered), the summary and
the facts, is at least ``min_turns_ratio`` of it. If no level fits, the richest
prefix within its share is kept and the policy's token sizes scale down to the
window (:meth:`MemoryPolicy.scaled`): a 2,048-token model gets the minimal prefix, a
4,096-token one the compact prefix, both with a smaller memory.
The plan says what it chose and why; the agent records it and shows it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

from ._model_guard import create_guarded
from .budget import MemoryPolicy, MemoryPolicyError
from .message_list import messages_tokens
from .model import LanguageModel, Message, ModelSession, Purpose
from .prompting import SYSTEM_INSTRUCTION, worked_examples
from .tokens import TokenCounter
from .tools import Tool

log = logging.getLogger("py_agent")

PrefixLevel = Literal["full", "compact", "minimal"]
LEVELS: tuple[PrefixLevel, ...] = ("full", "compact", "minimal")

COMPACT_SYSTEM_INSTRUCTION = """\
You are a helpful on-device assistant. Reply with one JSON object: "thought" (one short \
sentence), "toolName" (a tool from "Tools for this request", or "none"), "toolInput" (the \
tool's arguments, "" for none), "finalAnswer" (the answer when toolName is "none", else ""). \
Use a tool only when needed; never repeat a call; honour the memory; answer briefly in the \
user's language."""


def prefix_messages(level: PrefixLevel, system_instruction: str = SYSTEM_INSTRUCTION
                    ) -> list[Message]:
    """The initial prompts of a level. A caller's own instruction is kept at every level
    (only the built-in one has a compact form); the examples go."""
    instruction = system_instruction
    if level != "full" and system_instruction == SYSTEM_INSTRUCTION:
        instruction = COMPACT_SYSTEM_INSTRUCTION
    examples = {"full": 2, "compact": 1, "minimal": 0}[level]
    shown = [m for example in worked_examples()[:examples] for m in example]
    return [{"role": "system", "content": instruction}, *shown]


@dataclass(frozen=True)
class PrefixPlan:
    """The prefix level chosen for a window, and the policy that goes with it."""

    level: PrefixLevel
    messages: list[Message]
    tokens: int
    window: int
    policy: MemoryPolicy
    scaled: bool
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"level": self.level, "tokens": self.tokens, "window": self.window,
                "scaled": self.scaled, "reason": self.reason,
                "reserved_turn_tokens": self.policy.reserved_turn_tokens,
                "summary_target_tokens": self.policy.summary_target_tokens,
                "facts_max_tokens": self.policy.facts_max_tokens,
                "recall_max_tokens": self.policy.recall_tokens,
                "profile_max_tokens": self.policy.planned_profile_tokens}


def turn_room(window: int, prefix: int, policy: MemoryPolicy, tools_tokens: int) -> int:
    """Tokens left for raw turns: the window less the prefix, the reserve for the turn's
    work (at least the tool descriptions plus half the reserve), the longest summary,
    the facts budget, the room for recalled turns and the user profile's share."""
    reserve = max(policy.reserved_turn_tokens, tools_tokens + policy.reserved_turn_tokens // 2)
    return (window - prefix - reserve - policy.summary_max_tokens - policy.facts_max_tokens
            - policy.recall_tokens - policy.planned_profile_tokens)


def plan_prefix(window: int, policy: MemoryPolicy, counter: TokenCounter, *,
                system_instruction: str = SYSTEM_INSTRUCTION, tools_tokens: int = 0,
                measured: dict[PrefixLevel, int] | None = None) -> PrefixPlan:
    """The richest prefix that fits ``window`` with ``policy``; see the module doc.

    ``measured`` holds exact prefix sizes where known (the base session's usage);
    other levels are estimated with ``counter``. Raises :class:`MemoryPolicyError`
    when not even the smallest prefix with a scaled-down policy fits.
    """
    sizes = {level: (measured or {}).get(level) or
             messages_tokens(prefix_messages(level, system_instruction), counter.count)
             for level in LEVELS}
    floor = policy.min_turns_ratio * window
    reasons = []
    for level in LEVELS:
        share = sizes[level] / window
        room = turn_room(window, sizes[level], policy, tools_tokens)
        if share <= policy.max_prefix_ratio and room >= floor:
            reason = ("the window holds the full prefix and the memory policy" if level == "full"
                      else f"the {LEVELS[LEVELS.index(level) - 1]} prefix did not fit: "
                      + reasons[-1])
            return PrefixPlan(level, prefix_messages(level, system_instruction), sizes[level],
                              window, policy, False, reason)
        reasons.append(f"{sizes[level]} prefix tokens are {share:.0%} of the {window}-token "
                       f"window (at most {policy.max_prefix_ratio:.0%}) and leave "
                       f"{max(0, room)} tokens for raw turns (at least {int(floor)} needed)")
    # No level fits as the policy stands: take the richest prefix within its share of
    # the window and scale the memory sizes down to what is left.
    level = next((lv for lv in LEVELS if sizes[lv] <= policy.max_prefix_ratio * window),
                 "minimal")
    fixed = (policy.reserved_turn_tokens + policy.summary_max_tokens + policy.facts_max_tokens
             + policy.recall_tokens + policy.planned_profile_tokens)
    factor = min(1.0, max(0.0, (window - floor - sizes[level]) / fixed))
    scaled = policy.scaled(factor)
    room = turn_room(window, sizes[level], scaled, tools_tokens)
    if room < min(floor, 256):
        raise MemoryPolicyError(
            f"the model's context window ({window} tokens) cannot hold even the minimal "
            f"prefix ({sizes[level]} tokens) with the smallest memory policy: "
            f"{reasons[-1]}")
    return PrefixPlan(level, prefix_messages(level, system_instruction), sizes[level], window,
                      scaled, True, f"no prefix fitted the memory policy ({reasons[-1]}), so "
                      f"the {level} prefix is used and the policy's token sizes are scaled by "
                      f"{factor:.2f} to the window")


class PrefixPlanner:
    """Plans an agent's step prefix for its model's window and keeps the plan in use
    (``current``), plus a cached estimate for before any model session exists."""

    def __init__(self, policy: MemoryPolicy, counter: TokenCounter, system_instruction: str,
                 tools: Callable[[], Sequence[Tool]], top_k: int) -> None:
        """``tools()`` gives the agent's tools now (they change while it runs)."""
        self.policy, self.counter = policy, counter
        self.system_instruction, self.tools, self.top_k = system_instruction, tools, top_k
        self.current: PrefixPlan | None = None
        self._estimate: tuple[tuple[int, float], PrefixPlan] | None = None

    def tools_tokens(self) -> int:
        """The longest tool list a turn could be offered (``top_k`` tools, the pinned ones)."""
        cost = lambda t: self.counter.count(f"- {t.signature()}: {t.description}") + 1  # noqa
        tools = self.tools()
        costs = sorted((cost(t) for t in tools if not t.pinned), reverse=True)
        return (sum(costs[:self.top_k]) + sum(cost(t) for t in tools if t.pinned)
                + self.counter.count("Tools for this request:\n- none: answer without a tool"))

    def plan(self, window: int, measured: dict[PrefixLevel, int] | None = None) -> PrefixPlan:
        return plan_prefix(window, self.policy, self.counter,
                           system_instruction=self.system_instruction,
                           tools_tokens=self.tools_tokens(), measured=measured)

    def estimate(self, window: int) -> PrefixPlan:
        """The plan for ``window`` without a session, made once per window and counter
        ratio; for a window too small for any plan, the full prefix (the turn says why)."""
        key = (window, self.counter.ratio)
        if self._estimate is None or self._estimate[0] != key:
            try:
                plan = self.plan(window)
            except MemoryPolicyError as exc:
                messages = prefix_messages("full", self.system_instruction)
                plan = PrefixPlan("full", messages, messages_tokens(messages, self.counter.count),
                                  window, self.policy, False, str(exc))
            self._estimate = (key, plan)
        return self._estimate[1]

    async def create_base(self, model: LanguageModel, window: int) -> ModelSession:
        """The step base session: planned on ``window`` (known or assumed), checked against
        the session's exact window and usage, made again with a smaller prefix if that
        is needed. Raises :class:`MemoryPolicyError` if nothing fits."""
        guess = self.plan(window)
        base = await create_guarded(model, guess.messages, Purpose.STEP)
        plan = self.plan(base.context_window, {guess.level: base.context_usage})
        if plan.level != guess.level:
            await base.destroy()
            base = await create_guarded(model, plan.messages, Purpose.STEP)
        plan.policy.check_window(base.context_window, base.context_usage)
        if plan.level != "full" or plan.scaled:
            log.info("compact prefix for a %d-token window: %s", plan.window, plan.reason)
        self.current = plan
        return base
