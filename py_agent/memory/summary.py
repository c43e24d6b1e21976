"""The summarizer's prompts and the check of its output.

The summary is recursive: the old summary and the turns being compacted go in,
an updated summary comes out, with a target length and a hint about how much
to condense based on how big the old summary already is. Output is validated
before it is trusted; an invalid summary is a failed compaction, and failed
compactions change nothing (the raw turns stay and are tried again later).
"""

from __future__ import annotations

import re

from ..boundary import loads_bounded
from ..budget import MemoryPolicy
from ..model import Message
from ..prompting import render_turn, shorten
from ..state import Fact, FactChange, Turn
from ..tokens import TokenCounter

SUMMARY_SYSTEM = """\
You keep the running summary of a conversation between a user and an on-device assistant. \
You receive the previous summary and the turns that happened after it, and you write one \
updated summary that replaces both. Keep, word for word where you can: the user's preferences, \
constraints, needs and background; decisions and their outcomes; names, numbers, dates and \
anything the user asked to remember; questions still open. Refer to the user in the third \
person. Give older, settled matters a sentence or two; give recent and unresolved matters more. \
When facts are handed over from the key-facts list, keep each of them with its names and \
numbers. When told that something no longer holds, do not state it as current. Write plain \
prose, no headings, lists, JSON or tags. Write only the summary."""

WRAPPER_TAGS = ("previous-summary", "turns", "turn", "focus", "keep", "outdated")
TAG_PATTERN = re.compile(r"</?\s*(" + "|".join(WRAPPER_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


class InvalidSummaryError(ValueError):
    """The summarizer's output cannot replace the turns; the message says why."""


def summary_messages() -> list[Message]:
    return [{"role": "system", "content": SUMMARY_SYSTEM}]


def length_hint(previous_tokens: int, target_tokens: int) -> str:
    """How much to condense the previous summary, from its size against the target."""
    if previous_tokens == 0:
        return "There is no previous summary yet: write the first one."
    ratio = previous_tokens / target_tokens
    if ratio < 0.6:
        return ("The previous summary is well under the target length: keep all of it, "
                "word for word, and add what the new turns bring.")
    if ratio < 0.85:
        return ("The previous summary is nearing the target length: lightly condense its "
                "oldest parts, keep the rest as it is, and add what the new turns bring.")
    return ("The previous summary is at the target length: condense its oldest, settled "
            "parts to a sentence or two each; keep recent and open matters in full.")


def render_turns_for_summary(turns: list[Turn], observation_chars: int) -> str:
    return "\n".join(f"[turn {t.id}]\n{render_turn(t, observation_chars=observation_chars)}"
                     for t in turns)


def summary_prompt(previous_summary: str, turns: list[Turn], policy: MemoryPolicy,
                   counter: TokenCounter, focus: str | None = None, *,
                   keep: list[Fact] = (), outdated: list[FactChange] = ()) -> str:
    """The prompt that asks for the updated summary.

    ``keep``: key facts over their budget, handed over to live in the summary.
    ``outdated``: facts just superseded or retracted, so the summary stops
    stating them as current.
    """
    target_words = int(policy.summary_target_tokens * 0.75)
    parts = [
        f"<previous-summary>\n{previous_summary or '(none)'}\n</previous-summary>",
        f"<turns>\n{render_turns_for_summary(turns, policy.micro_compact_chars * 2)}\n</turns>",
    ]
    if keep:
        listed = "\n".join(f"- {f.text}" for f in keep)
        parts.append("<keep>\nThese facts about the user move from the key-facts list into the "
                     f"summary; keep every one, with its names and numbers:\n{listed}\n</keep>")
    if outdated:
        listed = "\n".join(f"- {_outdated_line(c)}" for c in outdated)
        parts.append("<outdated>\nThese no longer hold; do not state them as current:\n"
                     f"{listed}\n</outdated>")
    parts.append(length_hint(counter.count(previous_summary), policy.summary_target_tokens))
    if focus:
        parts.append(f"<focus>Make sure the summary keeps: {focus}</focus>")
    parts.append(f"Write the updated summary in at most {target_words} words, as plain text "
                 "without any tags.")
    return "\n\n".join(parts)


def _outdated_line(change: FactChange) -> str:
    if change.replaced_by is not None:
        return f"{change.fact.text} (now: {change.replaced_by.text})"
    return f"{change.fact.text} (retracted: {change.reason})"


def validate_summary(text: str, policy: MemoryPolicy, counter: TokenCounter) -> str:
    """Clean the summarizer's output, or raise :class:`InvalidSummaryError`."""
    if not isinstance(text, str):
        raise InvalidSummaryError("the summary is not text")
    cleaned = _FENCE.sub("", text.strip()).strip()
    cleaned = re.sub(r"^(updated\s+)?summary\s*:\s*", "", cleaned, flags=re.IGNORECASE)
    if TAG_PATTERN.search(cleaned):
        raise InvalidSummaryError("the summary leaked wrapper tags from its prompt")
    if len(cleaned) < policy.min_summary_chars:
        raise InvalidSummaryError(f"the summary is too short ({len(cleaned)} characters, "
                                  f"at least {policy.min_summary_chars} needed)")
    if cleaned.startswith(("{", "[")):
        try:
            loads_bounded(cleaned)
        except ValueError:
            pass
        else:
            raise InvalidSummaryError("the summary is JSON, not prose")
    tokens = counter.count(cleaned)
    if tokens > policy.summary_max_tokens:
        raise InvalidSummaryError(f"the summary is too long ({tokens} tokens, "
                                  f"at most {policy.summary_max_tokens})")
    return cleaned


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MIN_FALLBACK_CHARS = 40


def fallback_summary(previous_summary: str, turns: list[Turn], keep: list[Fact],
                     policy: MemoryPolicy, counter: TokenCounter) -> str:
    """A summary made without the model, for when it fails or hangs.

    The previous summary, the facts handed over from the key facts, and the
    user's own words of each turn (cut to ``fallback_turn_chars``, answers and
    tool output dropped). It stays within ``summary_max_tokens``: first every
    turn's words are cut shorter, then the oldest sentences go (they are all
    in the archive).
    """
    previous = [s for s in _SENTENCE_END.split(previous_summary.strip()) if s]
    handed = [f"{f.text.rstrip('.')}." for f in keep]
    limit = policy.fallback_turn_chars

    def notes(limit: int) -> list[str]:
        return [f"In turn {t.id} the user said: {shorten(t.user, limit)}" for t in turns]

    def text(parts: list[str]) -> str:
        return " ".join(parts)

    current = notes(limit)
    while counter.count(text(previous + handed + current)) > policy.summary_max_tokens \
            and limit > MIN_FALLBACK_CHARS:
        limit = max(MIN_FALLBACK_CHARS, limit * 2 // 3)
        current = notes(limit)
    parts = previous + handed + current
    while len(parts) > 1 and counter.count(text(parts)) > policy.summary_max_tokens:
        parts.pop(0)
    return text(parts)
