"""The memory policy and the arithmetic of the context budget.

Everything the model sees must fit its context window: the fixed prefix, the
memory (summary, key facts, recent raw turns, turns recalled from the archive) and
room for the turn's own work.
:class:`MemoryPolicy` holds every threshold; :class:`MemoryAccountant` decides how
much room the raw turns get, when they have outgrown it (compaction is triggered
by tokens, never by a count of turns), where the boundary between compacted and
kept turns falls, and how the memory is shown in a prompt (old observations
micro-compacted).

Plain data and arithmetic, read by every layer that sizes something (the prefix
plan, the base sessions, the turn, the memory engine, the results); it imports
nothing of theirs. :mod:`py_agent.memory` re-exports these names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

from .memory_view import (MemoryView, render_facts, render_turn,
                          render_untrusted_summary, state_reasons)
from .state import FACT_CATEGORIES, Fact, SessionState, Turn
from .tokens import TokenCounter

# The smallest sizes a scaled-down policy keeps (see MemoryPolicy.scaled).
MIN_RESERVED_TOKENS = 384
MIN_SUMMARY_TOKENS = 96
MIN_FACTS_TOKENS = 96
MIN_RECALL_TOKENS = 96
MIN_PROFILE_TOKENS = 64


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
        facts_max_tokens: the token budget of the key facts. Past it, the facts
            of lowest priority are folded into the summary by the summarizer (the
            archive keeps the turns that said them); none is dropped unseen.
        max_facts: at most this many key facts; more are folded the same way.
        fact_priority: categories from the most to the least worth keeping as key
            facts; recency counts too (see :func:`py_agent.memory.fact_rules.priority`).
        fact_max_chars: a longer extracted fact is discarded as not a fact.
        extract_facts: run structured key-fact extraction.
        facts_refresh_ratio: read the raw turns for facts once those not read yet
            fill this share of the turn budget, between compactions, so a fact the
            user changes or retracts is not shown as current for long (a turn that
            may change a known fact is read at once, whatever the ratio). A compaction
            reads them too when it must (its turns were not read yet). With the
            default ratios this is one read between two compactions, so memory costs
            two model calls per compaction, as before facts were refreshed.
        micro_compact_keep_turns: the newest turns whose observations stay whole in prompts.
        micro_compact_chars: older observations are cut to this many characters in prompts.
        summary_timeout_s: a summary call running longer is stopped (its session
            destroyed) and counts as a failure. Gemini Nano writes a few to about
            twenty tokens a second on-device; a summary of ``summary_target_tokens``
            (450) after reading a prompt of a few thousand tokens takes one to two
            minutes on a slow machine, so the default leaves it three.
        facts_timeout_s: the same for a fact extraction, whose reply is short
            (a few facts: 100-200 tokens).
        retry_backoff_s: after a failed summary the model is not asked again for
            this long, doubled after each further failure up to ``max_backoff_s``.
        fallback_after_failures: after this many failed summaries in a row, or
            while backing off with raw turns about to overflow their budget, the
            turns are compacted without the model: the user's own words, cut to
            ``fallback_turn_chars`` each, tool output dropped. The session is shown
            as degraded until a summary works again.
        max_prefix_ratio: the fixed prefix (system instruction and few-shot
            examples) may take at most this share of the window; past it a compact
            instruction with fewer examples is used.
        min_turns_ratio: the raw turns need at least this share of the window;
            when the prefix and memory sizes leave less, the prefix shrinks first,
            then the policy's token sizes scale down to the window.
        recall_max_tokens: room planned in every turn's first prompt for archived
            turns recalled for the message (automatic recall, under their own heading;
            0: none). Planned like the summary and the facts: the raw turns' budget is
            smaller by it, so recalled turns never crowd them out.
        recall_k: at most this many recalled turns per message.
        recall_min_coverage: a turn is recalled unasked only if it matches at least
            this share of the message's weight (its words by rarity; ``Hit.why.coverage``):
            a turn that shares only common words with the message stays out.

    The user profile (:mod:`py_agent.profile`, facts shared by every session):
        user_profile: keep lasting facts in the profile and show it in every session
            that is not private.
        profile_categories: the fact categories the profile keeps.
        profile_max_tokens: the share of the prompt the profile's facts may take;
            past it, the facts of lowest priority (``fact_priority``, then age) are left
            out of that prompt (they stay in the profile).
    """

    reserved_turn_tokens: int = 2048
    trigger_ratio: float = 0.7
    keep_recent_ratio: float = 0.3
    min_recent_turns: int = 2
    summary_target_tokens: int = 450
    summary_max_tokens: int = 900
    min_summary_chars: int = 30
    facts_max_tokens: int = 800
    max_facts: int = 60
    fact_priority: tuple[str, ...] = ("need", "preference", "background", "decision",
                                      "follow-up")
    fact_max_chars: int = 200
    extract_facts: bool = True
    facts_refresh_ratio: float = 0.25
    micro_compact_keep_turns: int = 2
    micro_compact_chars: int = 160
    summary_timeout_s: float = 180.0
    facts_timeout_s: float = 90.0
    retry_backoff_s: float = 60.0
    max_backoff_s: float = 900.0
    fallback_after_failures: int = 2
    fallback_turn_chars: int = 160
    max_prefix_ratio: float = 0.1
    min_turns_ratio: float = 0.25
    recall_max_tokens: int = 400
    recall_k: int = 3
    recall_min_coverage: float = 0.4
    # the user profile
    user_profile: bool = True
    profile_categories: tuple[str, ...] = ("preference", "need", "background")
    profile_max_tokens: int = 300

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
                     "facts_max_tokens", "max_facts", "fact_max_chars", "micro_compact_chars",
                     "profile_max_tokens",
                     "summary_timeout_s", "facts_timeout_s", "fallback_after_failures",
                     "fallback_turn_chars"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be positive")
        for name in ("min_recent_turns", "micro_compact_keep_turns", "min_summary_chars",
                     "retry_backoff_s", "max_backoff_s", "recall_max_tokens", "recall_k"):
            if not getattr(self, name) >= 0:
                problems.append(f"{name} must not be negative")
        for name in ("max_prefix_ratio", "min_turns_ratio", "facts_refresh_ratio"):
            if not 0 < getattr(self, name) < 1:
                problems.append(f"{name} must be in (0, 1)")
        if not 0 <= self.recall_min_coverage <= 1:
            problems.append("recall_min_coverage must be in [0, 1]")
        unknown = [c for c in self.fact_priority if c not in FACT_CATEGORIES]
        if unknown:
            problems.append(f"fact_priority names unknown categories {unknown}; "
                            f"known: {list(FACT_CATEGORIES)}")
        unknown = [c for c in self.profile_categories if c not in FACT_CATEGORIES]
        if unknown:
            problems.append(f"profile_categories names unknown categories {unknown}; "
                            f"known: {list(FACT_CATEGORIES)}")
        if self.summary_max_tokens < self.summary_target_tokens:
            problems.append("summary_max_tokens must be at least summary_target_tokens")
        if problems:
            raise MemoryPolicyError("invalid MemoryPolicy: " + "; ".join(problems))

    def scaled(self, factor: float) -> "MemoryPolicy":
        """This policy with its token sizes times ``factor`` (for a smaller window),
        never below the floors a working memory needs."""
        return replace(
            self,
            reserved_turn_tokens=max(MIN_RESERVED_TOKENS, int(self.reserved_turn_tokens * factor)),
            summary_target_tokens=max(MIN_SUMMARY_TOKENS, int(self.summary_target_tokens * factor)),
            summary_max_tokens=max(2 * MIN_SUMMARY_TOKENS, int(self.summary_max_tokens * factor)),
            facts_max_tokens=max(MIN_FACTS_TOKENS, int(self.facts_max_tokens * factor)),
            recall_max_tokens=max(min(MIN_RECALL_TOKENS, self.recall_max_tokens),
                                  int(self.recall_max_tokens * factor)),
            profile_max_tokens=max(MIN_PROFILE_TOKENS, int(self.profile_max_tokens * factor)))

    @property
    def recall_tokens(self) -> int:
        """The room planned for recalled turns (0 when automatic recall is off)."""
        return self.recall_max_tokens if self.recall_k > 0 else 0

    @property
    def planned_profile_tokens(self) -> int:
        """The tokens planned for the user profile in a prompt (0 when there is none)."""
        return self.profile_max_tokens if self.user_profile else 0

    def backoff_s(self, failures: int) -> float:
        """How long to wait before asking the model again after ``failures`` in a row."""
        if failures <= 0:
            return 0.0
        return min(self.max_backoff_s, self.retry_backoff_s * 2 ** (failures - 1))

    def to_dict(self) -> dict[str, Any]:
        """The policy as JSON-ready data, logged with each compaction for replay."""
        data = asdict(self)
        data["fact_priority"] = list(self.fact_priority)
        data["profile_categories"] = list(self.profile_categories)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MemoryPolicy":
        """A policy from :meth:`to_dict` output; unknown keys (from a newer py-agent) are
        ignored and missing ones take today's defaults."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for name in ("fact_priority", "profile_categories"):
            if name in known:
                known[name] = tuple(known[name])
        return cls(**known)

    def check_window(self, context_window: int, prefix_tokens: int) -> None:
        """Fail early, and clearly, when the model's window cannot hold this policy."""
        room = (context_window - prefix_tokens - self.reserved_turn_tokens
                - self.summary_max_tokens - self.recall_tokens)
        if room <= 0:
            raise MemoryPolicyError(
                f"the model's context window ({context_window} tokens) cannot hold the fixed "
                f"prefix ({prefix_tokens}), reserved_turn_tokens ({self.reserved_turn_tokens}), "
                f"summary_max_tokens ({self.summary_max_tokens}) and recall_max_tokens "
                f"({self.recall_tokens})")


# While the model rests, compact without it once the raw turns fill this share of
# their budget: past it the next prompt could not carry them all.
FALLBACK_FILL = 0.9


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
    recall: int = 0  # planned for turns recalled from the archive into the first prompt
    profile: int = 0  # the user profile's facts shown (py_agent.profile)

    @property
    def due(self) -> bool:
        """True when the raw turns have outgrown the trigger."""
        return self.turns > self.trigger

    def pressing(self, need: int | None = None) -> bool:
        """With ``need`` more tokens (the next message and its tools; a tenth of the turn
        budget when unknown) the next prompt could not carry every raw turn."""
        if need is None:
            need = int(self.turn_budget * (1 - FALLBACK_FILL))
        return self.turns + need > self.turn_budget


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

    def budget(self, state: SessionState, context_window: int, prefix: int,
               profile: Sequence[Fact] = ()) -> Budget:
        """The split of the window for ``state``, whose prompts also show the user
        profile's facts ``profile``."""
        summary = self.summary_tokens(state)
        facts = self.counter.count(render_facts(state.facts))
        recall = self.policy.recall_tokens
        shared = self.profile_tokens(profile)
        turn_budget = max(0, context_window - prefix - self.policy.reserved_turn_tokens
                          - summary - facts - recall - shared)
        return Budget(context_window=context_window, prefix=prefix,
                      reserved=self.policy.reserved_turn_tokens, summary=summary, facts=facts,
                      turns=self.turns_tokens(state.recent_turns), turn_budget=turn_budget,
                      trigger=int(turn_budget * self.policy.trigger_ratio),
                      keep=int(turn_budget * self.policy.keep_recent_ratio), recall=recall,
                      profile=shared)

    def summary_tokens(self, state: SessionState) -> int:
        """What both parts of the summary take in a prompt (the marked one with its
        marks)."""
        marked = render_untrusted_summary(state.untrusted_summary, state.untrusted_sources)
        return self.counter.count(state.summary) + (self.counter.count(marked) if marked else 0)

    def profile_tokens(self, profile: Sequence[Fact]) -> int:
        """What the user profile's facts ``profile`` take in a prompt."""
        return self.counter.count(MemoryView(profile=list(profile)).render()) if profile else 0

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

    def oldest_within(self, turns: list[Turn], room: int) -> list[Turn]:
        """The oldest turns that fit ``room`` tokens together (at least one)."""
        chosen: list[Turn] = []
        used = 0
        for turn in turns:
            cost = self.turn_tokens(turn)
            if chosen and used + cost > room:
                break
            chosen.append(turn)
            used += cost
        return chosen

    def view(self, state: SessionState, room: int,
             profile: Sequence[Fact] = ()) -> tuple[MemoryView, int]:
        """The memory as the next prompt shows it, within ``room`` tokens, with the user
        profile's facts ``profile`` (already chosen within their budget).

        Old observations are micro-compacted. If compaction is lagging (it runs
        in the background, or failed), the oldest raw turns are left out of this
        one prompt rather than overflow the window; they stay in the state and
        are compacted later. Returns the view and how many turns it left out.
        """
        rendered = self._rendered(state.recent_turns)
        fixed = (self.summary_tokens(state) + self.counter.count(render_facts(state.facts))
                 + self.profile_tokens(profile))
        costs = [self.counter.count(text) + 4 for text in rendered]
        dropped = 0
        while rendered and fixed + sum(costs) > room:
            rendered.pop(0)
            costs.pop(0)
            dropped += 1
        return MemoryView(summary=state.summary, facts=list(state.facts), turns=rendered,
                          profile=list(profile), untrusted_summary=state.untrusted_summary,
                          untrusted_sources=list(state.untrusted_sources),
                          untrusted=state_reasons(state, state.recent_turns[dropped:])
                          + [r for f in profile for r in _profile_reasons(f)]), dropped



def _profile_reasons(fact: Fact) -> list[str]:
    """A profile fact a prompt shows is the user's (confirmed); one still marked would
    be data, and says so."""
    return [f"profile fact {fact.id} (from {', '.join(fact.untrusted)})"] if fact.untrusted else []
