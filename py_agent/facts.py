"""Key facts: the extraction prompt, the parse of its reply, and the merge into memory.

Facts are durable things the user said about themselves (a preference, a need,
their background, something open, something decided). They are extracted from
the turns a compaction folds away, under a JSON schema, and kept apart from the
summary so a small model sees them as a short list.
"""

from __future__ import annotations

import json

from ._compaction_prompts import TAG_PATTERN, render_turns_for_summary
from .memory import MemoryPolicy
from .model import Message
from .parsing import json_objects
from .prompting import render_facts
from .state import FACT_CATEGORIES, Fact, Turn

FACTS_SYSTEM = """\
You pick out durable facts about the user from conversation turns, for an assistant's long-term \
memory. A fact is one short sentence in the third person. Categories: preference (likes, \
dislikes, diet, style), need (what they are trying to get done), background (who they are, \
their situation), follow-up (something promised or still open), decision (something settled). \
Only include facts stated or clearly implied by the user, not small talk and not the \
assistant's own claims. Do not repeat facts that are already known. Reply in JSON."""


def facts_messages() -> list[Message]:
    return [{"role": "system", "content": FACTS_SYSTEM}]


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
            value = json.loads(stripped)
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
        if 3 <= len(fact_text) <= policy.fact_max_chars and not TAG_PATTERN.search(fact_text):
            facts.append(Fact(category=category, text=fact_text, turn_id=turn_id))
    return facts


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
