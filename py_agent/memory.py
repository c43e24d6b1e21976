"""Memory policy and the arithmetic of the context budget.

Everything the model sees must fit its context window: the fixed prefix, the
memory (summary, key facts, recent raw turns) and room for the turn's own work.
This module decides how much room the raw turns get, when they have outgrown it
(compaction is triggered by tokens, never by a count of turns), where the
boundary between compacted and kept turns falls, and how the memory is shown in
a prompt (old observations micro-compacted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .prompting import MemoryView, render_facts, render_turn
from .state import Fact, SessionState, Turn
from .tokens import TokenCounter


class MemoryPolicyError(ValueError):
    """A MemoryPolicy whose numbers contradict each other or the model's window."""


@dataclass(frozen=True)
class MemoryPolicy:
    """Every memory threshold, with defaults sized for Gemini Nano's ~9,216-token window.

    Attributes:
        reserved_turn_tokens: room kept free for each turn's own work: the tool
            list, the new message, the steps with their observations, and the answer.
        trigger_ratio: compact once the recent raw turns use more than this
            fraction of the turn budget (the window less prefix, reserve, summary, facts).
        keep_recent_ratio: the recency budget, as a fraction of the turn budget:
            newest turns that fit in it stay raw after a compaction. Must be
            below ``trigger_ratio``, or a compaction would not free anything.
        min_recent_turns: raw turns always kept, whatever their size.
        summary_target_tokens: the length the running summary is asked to keep to.
        summary_max_tokens: a summary longer than this is rejected as invalid.
        min_summary_chars: a summary shorter than this is rejected as invalid.
        max_facts: key facts kept; the oldest are dropped past this.
        fact_max_chars: a longer extracted fact is discarded as not a fact.
        extract_facts: run structured key-fact extraction on compacted turns.
        micro_compact_keep_turns: the newest turns whose observations stay whole in prompts.
        micro_compact_chars: older observations are cut to this many characters in prompts.
    """

    reserved_turn_tokens: int = 2048
    trigger_ratio: float = 0.7
    keep_recent_ratio: float = 0.3
    min_recent_turns: int = 2
    summary_target_tokens: int = 450
    summary_max_tokens: int = 900
    min_summary_chars: int = 30
    max_facts: int = 30
    fact_max_chars: int = 200
    extract_facts: bool = True
    micro_compact_keep_turns: int = 2
    micro_compact_chars: int = 160

    def __post_init__(self) -> None:
        problems = []
        if not 0 < self.trigger_ratio <= 1:
            problems.append("trigger_ratio must be in (0, 1]")
        if not 0 <= self.keep_recent_ratio < 1:
            problems.append("keep_recent_ratio must be in [0, 1)")
        if self.keep_recent_ratio >= self.trigger_ratio:
            problems.append(f"keep_recent_ratio ({self.keep_recent_ratio}) must be below "
                            f"trigger_ratio ({self.trigger_ratio}): the kept budget must be "
                            "smaller than the trigger, or compaction never frees room")
        for name in ("reserved_turn_tokens", "summary_target_tokens", "summary_max_tokens",
                     "max_facts", "fact_max_chars", "micro_compact_chars"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive")
        for name in ("min_recent_turns", "micro_compact_keep_turns", "min_summary_chars"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative")
        if self.summary_max_tokens < self.summary_target_tokens:
            problems.append("summary_max_tokens must be at least summary_target_tokens")
        if problems:
            raise MemoryPolicyError("invalid MemoryPolicy: " + "; ".join(problems))

    @classmethod
    def for_window(cls, window: int, *, sized_for: int = 9216) -> "MemoryPolicy":
        """The defaults (sized for Gemini Nano's ``sized_for`` tokens), scaled down for a
        smaller window, so a 2,048- or 4,096-token local model still has room for turns;
        a larger window keeps them (its budgets grow with the window anyway)."""
        default = cls()
        if window >= sized_for:
            return default
        scale = window / sized_for
        return cls(reserved_turn_tokens=max(384, int(default.reserved_turn_tokens * scale)),
                   summary_target_tokens=max(96, int(default.summary_target_tokens * scale)),
                   summary_max_tokens=max(192, int(default.summary_max_tokens * scale)))

    def check_window(self, context_window: int, prefix_tokens: int) -> None:
        """Fail early, and clearly, when the model's window cannot hold this policy."""
        room = context_window - prefix_tokens - self.reserved_turn_tokens - self.summary_max_tokens
        if room <= 0:
            raise MemoryPolicyError(
                f"the model's context window ({context_window} tokens) cannot hold the fixed "
                f"prefix ({prefix_tokens}), reserved_turn_tokens ({self.reserved_turn_tokens}) "
                f"and summary_max_tokens ({self.summary_max_tokens})")


@dataclass
class Budget:
    """How the window is split for one session at one moment, in tokens."""

    context_window: int
    prefix: int
    reserved: int
    summary: int
    facts: int
    turns: int
    turn_budget: int
    trigger: int
    keep: int

    @property
    def due(self) -> bool:
        """True when the raw turns have outgrown the trigger."""
        return self.turns > self.trigger


@dataclass
class MemoryAccountant:
    """Counts a session's memory against the window, using a calibrated counter."""

    policy: MemoryPolicy
    counter: TokenCounter = field(default_factory=TokenCounter)

    def turn_tokens(self, turn: Turn, *, micro: bool = False) -> int:
        chars = self.policy.micro_compact_chars if micro else None
        return self.counter.count(render_turn(turn, observation_chars=chars)) + 4

    def _rendered(self, turns: list[Turn]) -> list[str]:
        """Turns as prompts show them: observations cut except in the newest few."""
        keep = self.policy.micro_compact_keep_turns
        return [render_turn(t, observation_chars=(self.policy.micro_compact_chars
                                                  if i < len(turns) - keep else None))
                for i, t in enumerate(turns)]

    def turns_tokens(self, turns: list[Turn]) -> int:
        return sum(self.counter.count(text) + 4 for text in self._rendered(turns))

    def budget(self, state: SessionState, context_window: int, prefix: int) -> Budget:
        summary = self.counter.count(state.summary)
        facts = self.counter.count(render_facts(state.facts))
        turn_budget = max(0, context_window - prefix - self.policy.reserved_turn_tokens
                          - summary - facts)
        return Budget(context_window=context_window, prefix=prefix,
                      reserved=self.policy.reserved_turn_tokens, summary=summary, facts=facts,
                      turns=self.turns_tokens(state.recent_turns), turn_budget=turn_budget,
                      trigger=int(turn_budget * self.policy.trigger_ratio),
                      keep=int(turn_budget * self.policy.keep_recent_ratio))

    def boundary(self, turns: list[Turn], keep_budget: int) -> int:
        """Index of the first turn to keep raw; turns before it get compacted.

        Walks back from the newest turn: the first ``min_recent_turns`` are always
        kept, further ones while they fit in ``keep_budget``.
        """
        used = 0
        index = len(turns)
        for i in range(len(turns) - 1, -1, -1):
            kept = len(turns) - i - 1
            # Kept turns are micro-compacted in prompts except the newest few.
            cost = self.turn_tokens(turns[i], micro=kept >= self.policy.micro_compact_keep_turns)
            if kept >= self.policy.min_recent_turns and used + cost > keep_budget:
                break
            used += cost
            index = i
        return index

    def view(self, state: SessionState, room: int) -> tuple[MemoryView, int]:
        """The memory as the next prompt shows it, within ``room`` tokens.

        Old observations are micro-compacted. If compaction is lagging (it runs
        in the background, or failed), the oldest raw turns are left out of this
        one prompt rather than overflow the window; they stay in the state and
        are compacted later. Returns the view and how many turns it left out.
        """
        rendered = self._rendered(state.recent_turns)
        fixed = self.counter.count(state.summary) + self.counter.count(render_facts(state.facts))
        costs = [self.counter.count(text) + 4 for text in rendered]
        dropped = 0
        while rendered and fixed + sum(costs) > room:
            rendered.pop(0)
            costs.pop(0)
            dropped += 1
        return MemoryView(summary=state.summary, facts=list(state.facts), turns=rendered), dropped


def merge_facts(existing: list[Fact], new: list[Fact], max_facts: int) -> tuple[list[Fact], list[Fact]]:
    """Add ``new`` facts not already known; keep at most ``max_facts``, newest winning.

    Returns the merged list and the facts that were actually added.
    """
    known = {f.key() for f in existing}
    added = []
    for fact in new:
        key = fact.key()
        if key not in known and fact.text.strip():
            known.add(key)
            added.append(fact)
    merged = existing + added
    return merged[-max_facts:], added
