"""Compaction: fold old turns into the running summary and the key facts.

The summary is recursive: the old summary and the turns being compacted go in,
an updated summary comes out, with a target length and a hint about how much
to condense based on how big the old summary already is. Output is validated
before it is trusted; an invalid summary is a failed compaction, and failed
compactions change nothing (the raw turns stay and are tried again later).
Key facts are extracted apart, under a JSON schema, and merged without duplicates.
"""

from __future__ import annotations

import re

from ._boundary import loads_bounded
from .memory import MemoryPolicy
from .model import Message
from .parsing import json_objects
from .prompting import render_facts, render_turn
from .state import FACT_CATEGORIES, Fact, Turn
from .tokens import TokenCounter

SUMMARY_SYSTEM = """\
You keep the running summary of a conversation between a user and an on-device assistant. \
You receive the previous summary and the turns that happened after it, and you write one \
updated summary that replaces both. Keep, word for word where you can: the user's preferences, \
constraints, needs and background; decisions and their outcomes; names, numbers, dates and \
anything the user asked to remember; questions still open. Refer to the user in the third \
person. Give older, settled matters a sentence or two; give recent and unresolved matters more. \
Write plain prose, no headings, lists, JSON or tags. Write only the summary."""

FACTS_SYSTEM = """\
You pick out durable facts about the user from conversation turns, for an assistant's long-term \
memory. A fact is one short sentence in the third person. Categories: preference (likes, \
dislikes, diet, style), need (what they are trying to get done), background (who they are, \
their situation), follow-up (something promised or still open), decision (something settled). \
Only include facts stated or clearly implied by the user, not small talk and not the \
assistant's own claims. Do not repeat facts that are already known. Reply in JSON."""

WRAPPER_TAGS = ("previous-summary", "turns", "turn", "focus")
_TAG = re.compile(r"</?\s*(" + "|".join(WRAPPER_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


class InvalidSummaryError(ValueError):
    """The summarizer's output cannot replace the turns; the message says why."""


def summary_messages() -> list[Message]:
    return [{"role": "system", "content": SUMMARY_SYSTEM}]


def facts_messages() -> list[Message]:
    return [{"role": "system", "content": FACTS_SYSTEM}]


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
                   counter: TokenCounter, focus: str | None = None) -> str:
    """The prompt that asks for the updated summary."""
    target_words = int(policy.summary_target_tokens * 0.75)
    parts = [
        f"<previous-summary>\n{previous_summary or '(none)'}\n</previous-summary>",
        f"<turns>\n{render_turns_for_summary(turns, policy.micro_compact_chars * 2)}\n</turns>",
        length_hint(counter.count(previous_summary), policy.summary_target_tokens),
    ]
    if focus:
        parts.append(f"<focus>Make sure the summary keeps: {focus}</focus>")
    parts.append(f"Write the updated summary in at most {target_words} words, as plain text "
                 "without any tags.")
    return "\n\n".join(parts)


def validate_summary(text: str, policy: MemoryPolicy, counter: TokenCounter) -> str:
    """Clean the summarizer's output, or raise :class:`InvalidSummaryError`."""
    if not isinstance(text, str):
        raise InvalidSummaryError("the summary is not text")
    cleaned = _FENCE.sub("", text.strip()).strip()
    cleaned = re.sub(r"^(updated\s+)?summary\s*:\s*", "", cleaned, flags=re.IGNORECASE)
    if _TAG.search(cleaned):
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


FACTS_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "category": {"type": "string", "enum": list(FACT_CATEGORIES)},
                    "text": {"type": "string"},
                },
                "required": ["category", "text"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["facts"],
    "additionalProperties": False,
}


def facts_prompt(known: list[Fact], turns: list[Turn], policy: MemoryPolicy) -> str:
    known_text = render_facts(known) or "(none yet)"
    return (f"Facts already known:\n{known_text}\n\n"
            f"<turns>\n{render_turns_for_summary(turns, policy.micro_compact_chars)}\n</turns>\n\n"
            'Reply with {"facts": [{"category": ..., "text": ...}]} listing only new facts; '
            'use {"facts": []} if there are none.')


def _category(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    name = value.strip().lower().replace("_", "-").replace(" ", "-")
    name = {"followup": "follow-up", "preferences": "preference", "needs": "need",
            "decisions": "decision"}.get(name, name)
    return name if name in FACT_CATEGORIES else None


def parse_facts(text: str, policy: MemoryPolicy, turn_id: int | None) -> list[Fact]:
    """Facts from the extractor's JSON; malformed entries are skipped, not fatal."""
    entries: list[object] = []
    stripped = text.strip() if isinstance(text, str) else ""
    if stripped.startswith("["):
        try:
            value = loads_bounded(stripped)
            entries = value if isinstance(value, list) else []
        except ValueError:
            entries = []
    else:
        for obj in json_objects(stripped):
            if isinstance(obj.get("facts"), list):
                entries = obj["facts"]
                break
    facts = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        category = _category(entry.get("category"))
        fact_text = entry.get("text")
        if category is None or not isinstance(fact_text, str):
            continue
        fact_text = " ".join(fact_text.split())
        if 3 <= len(fact_text) <= policy.fact_max_chars and not _TAG.search(fact_text):
            facts.append(Fact(category=category, text=fact_text, turn_id=turn_id))
    return facts

