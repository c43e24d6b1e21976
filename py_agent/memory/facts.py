"""Key facts: the extraction prompt, the parse of its reply, and their consolidation.

Facts are durable things the user said about themselves (a preference, a need,
their background, something open, something decided). They are extracted from
the turns a compaction folds away, under a JSON schema, and kept apart from the
summary so a small model sees them as a short list.

The extractor sees the known facts with short ids and answers with operations:
``add`` a new fact, ``update`` a known one (the user changed it or corrected
it: the new fact names the one it ``replaces``), or ``retract`` one (the user
says it no longer holds, or asks to forget it). The reply keeps the plain shape
``{"facts": [{"category", "text"}]}``: ``op`` defaults to ``add``, so an
extractor that knows nothing of operations still works, and obvious same-subject
conflicts are caught without the model (:mod:`py_agent.memory.fact_rules`). Every
removal comes back as a :class:`~py_agent.state.FactChange` with its reason.

The facts then have a token budget; :func:`over_budget` picks the ones the
summarizer should fold into the summary, lowest priority first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..boundary import loads_bounded
from ..budget import MemoryPolicy
from ..constraints import PLAIN_OBJECT, ConstraintLevel
from ..model import Message
from ..parsing import json_objects
from ..prompting import render_facts
from ..state import FACT_CATEGORIES, Fact, FactChange, Turn
from ..tokens import TokenCounter
from .fact_rules import lowest_first, same_subject
from .summary import TAG_PATTERN, render_turns_for_summary

FACT_OPS = ("add", "update", "retract")

FACTS_SYSTEM = """\
You keep an assistant's long-term memory of durable facts about the user. A fact is one short \
sentence in the third person. Categories: preference (likes, dislikes, diet, style), need \
(what they are trying to get done, what they require), background (who they are, their \
situation), follow-up (something promised, to remember, or still open), decision (something \
settled). Only include facts the user stated or clearly implied, not small talk and not the \
assistant's own claims. You see the facts already known, each with an id, and new turns. For \
each fact the turns bring: "add" it if it is new; "update" a known fact the user changed or \
corrected (write the new fact and put the known fact's id in "replaces"); "retract" a known \
fact the user says no longer holds or asks you to forget (its id in "replaces", the reason in \
"text"). Leave out known facts the turns do not change. Reply in JSON."""


def facts_messages() -> list[Message]:
    return [{"role": "system", "content": FACTS_SYSTEM}]


FACTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "category": {"type": "string", "enum": list(FACT_CATEGORIES)},
                    "text": {"type": "string"},
                    "op": {"type": "string", "enum": list(FACT_OPS)},
                    "replaces": {"type": "string"},
                },
                "required": ["category", "text"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["facts"],
    "additionalProperties": False,
}


def facts_constraint(level: ConstraintLevel) -> dict[str, Any] | None:
    """The extractor's response constraint at ``level`` of the ladder
    (:mod:`py_agent.constraints`): the fact schema, any JSON object, or None. The prompt
    spells out the reply's shape either way, and :func:`parse_fact_ops` reads it."""
    if level is ConstraintLevel.FULL:
        return FACTS_SCHEMA
    if level is ConstraintLevel.OBJECT:
        return dict(PLAIN_OBJECT)
    return None


def render_known(facts: list[Fact]) -> str:
    """The known facts as the extractor sees them: id, category, text."""
    return "\n".join(f"- {f.id} [{f.category}] {f.text}" for f in facts)


def facts_prompt(known: list[Fact], turns: list[Turn], policy: MemoryPolicy) -> str:
    known_text = render_known(known) or "(none yet)"
    return (f"Facts already known:\n{known_text}\n\n"
            f"<turns>\n{render_turns_for_summary(turns, policy.micro_compact_chars)}\n</turns>\n\n"
            'Reply with {"facts": [{"category": ..., "text": ..., "op": "add" | "update" | '
            '"retract", "replaces": id of a known fact (for update and retract)}]}; '
            'use {"facts": []} if the turns bring nothing new.')


@dataclass(frozen=True)
class FactOp:
    """One operation of the extractor's reply."""

    op: str
    category: str
    text: str
    replaces: str = ""


def _category(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    name = value.strip().lower().replace("_", "-").replace(" ", "-")
    name = {"followup": "follow-up", "preferences": "preference", "needs": "need",
            "decisions": "decision"}.get(name, name)
    return name if name in FACT_CATEGORIES else None


def _entries(text: str) -> list[object]:
    stripped = text.strip() if isinstance(text, str) else ""
    if stripped.startswith("["):
        try:
            value = loads_bounded(stripped)
        except ValueError:
            return []
        return value if isinstance(value, list) else []
    for obj in json_objects(stripped):
        if isinstance(obj.get("facts"), list):
            return obj["facts"]
    return []


def parse_fact_ops(text: str, policy: MemoryPolicy) -> list[FactOp]:
    """Operations from the extractor's JSON; malformed entries are skipped, not fatal.

    Accepts ``{"facts": [...]}`` (also inside chatter or a fence) and a bare list.
    """
    ops = []
    for entry in _entries(text):
        if not isinstance(entry, dict):
            continue
        op = str(entry.get("op") or "add").strip().lower()
        op = {"remove": "retract", "delete": "retract", "forget": "retract",
              "replace": "update", "new": "add"}.get(op, op)
        replaces = entry.get("replaces")
        replaces = replaces.strip() if isinstance(replaces, str) else ""
        category = _category(entry.get("category"))
        fact_text = entry.get("text")
        fact_text = " ".join(fact_text.split()) if isinstance(fact_text, str) else ""
        if op not in FACT_OPS or TAG_PATTERN.search(fact_text) \
                or len(fact_text) > policy.fact_max_chars:
            continue
        if op == "retract":
            if replaces:
                ops.append(FactOp("retract", category or "", fact_text, replaces))
            continue
        if category is None or len(fact_text) < 3:
            continue
        ops.append(FactOp("update" if op == "update" and replaces else "add", category,
                          fact_text, replaces))
    return ops


@dataclass
class Consolidation:
    """The facts after applying an extraction, and what changed."""

    facts: list[Fact]
    added: list[Fact] = field(default_factory=list)
    changes: list[FactChange] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # operations that named no known fact


def consolidate(known: list[Fact], ops: list[FactOp], turn_id: int | None,
                new_id: Callable[[], str]) -> Consolidation:
    """Apply ``ops`` to ``known``: add, update (supersede) and retract, plus the
    obvious same-subject conflicts. A fact said again is not added twice; it only
    becomes recent again. The result lists facts oldest statement first."""
    result = Consolidation(facts=list(known))
    by_id = {f.id: f for f in known}

    def remove(fact: Fact) -> None:
        result.facts = [f for f in result.facts if f.id != fact.id]
        by_id.pop(fact.id, None)

    for op in ops:
        target = by_id.get(op.replaces) if op.replaces else None
        if op.op == "retract":
            if target is None:
                result.ignored.append(f"retract {op.replaces}: no such fact")
                continue
            remove(target)
            result.changes.append(FactChange("retracted", target, op.text or
                                             "the user said it no longer holds"))
            continue
        fresh = Fact(op.category, op.text, turn_id)
        same = next((f for f in result.facts if f.key() == fresh.key()), None)
        if same is not None:  # said again: keep it, now as recent
            result.facts = [f for f in result.facts if f.id != same.id]
            result.facts.append(replace(same, turn_id=turn_id if turn_id is not None
                                        else same.turn_id))
            by_id[same.id] = result.facts[-1]
            if target is not None and target.id != same.id:
                remove(target)
                result.changes.append(FactChange("superseded", target, "the user changed it",
                                                 replaced_by=same))
            continue
        fresh = replace(fresh, id=new_id())
        if op.op == "update" and target is None:
            result.ignored.append(f"update {op.replaces}: no such fact, added instead")
        if target is not None:
            remove(target)
            result.changes.append(FactChange("superseded", target, "the user changed or "
                                             "corrected it", replaced_by=fresh))
        for old in [f for f in result.facts if same_subject(f, fresh)]:
            remove(old)
            result.changes.append(FactChange("superseded", old, "a newer fact on the same "
                                             "subject contradicts it", replaced_by=fresh,
                                             by="rule"))
        result.facts.append(fresh)
        by_id[fresh.id] = fresh
        result.added.append(fresh)
    return result


def facts_tokens(facts: list[Fact], counter: TokenCounter) -> int:
    return counter.count(render_facts(facts))


def over_budget(facts: list[Fact], policy: MemoryPolicy, counter: TokenCounter) -> list[Fact]:
    """The facts to fold into the summary so the rest fits ``facts_max_tokens`` and
    ``max_facts``: lowest priority first (category, then age)."""
    if len(facts) <= policy.max_facts and facts_tokens(facts, counter) <= policy.facts_max_tokens:
        return []
    kept = list(facts)
    folded = []
    for fact in lowest_first(facts, policy.fact_priority):
        if len(kept) <= policy.max_facts and \
                facts_tokens(kept, counter) <= policy.facts_max_tokens:
            break
        kept.remove(fact)
        folded.append(fact)
    return folded

