"""The model steps of one compaction, shared by the compactor and the replay harness.

Each step fills the :class:`CompressionRecord` with what it sent and what came
back (prompts, system prompts, replies, timings), then returns its result or
raises (:class:`~py_agent.model.ModelError` for the call,
:class:`~py_agent._compaction_prompts.InvalidSummaryError` for a summary that
cannot be used). How a call is made (clone, timeout, pre-emption) is the
caller's ``ask``.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from ._compaction_prompts import SUMMARY_SYSTEM, summary_prompt, validate_summary
from ._fact_rules import carried_by
from .facts import (FACTS_SCHEMA, FACTS_SYSTEM, Consolidation, consolidate, facts_prompt,
                    parse_fact_ops)
from .memory import MemoryPolicy
from .model import Purpose
from .state import CompressionRecord, Fact, FactChange, FactIds, Turn
from .tokens import TokenCounter

# ask(purpose, prompt, response schema or None, timeout in s) -> (reply, duration in ms)
Ask = Callable[[Purpose, str, "dict | None", float], Awaitable[tuple[str, float]]]


async def extract_facts(ask: Ask, record: CompressionRecord, known: list[Fact],
                        turns: list[Turn], policy: MemoryPolicy,
                        next_fact_id: int) -> tuple[Consolidation, int]:
    """Facts from ``turns``, consolidated with ``known``; returns them and the next
    free fact number."""
    record.facts_turn_ids = [t.id for t in turns]
    record.facts_prompt = facts_prompt(known, turns, policy)
    record.facts_system = FACTS_SYSTEM
    record.model_calls += 1
    record.facts_reply, record.facts_ms = await ask(Purpose.FACTS, record.facts_prompt,
                                                    FACTS_SCHEMA, policy.facts_timeout_s)
    ids = FactIds(next_fact_id, {f.id for f in known})
    result = consolidate(known, parse_fact_ops(record.facts_reply, policy), turns[-1].id, ids)
    record.facts_added = result.added
    return result, ids.next_id


async def summarize(ask: Ask, record: CompressionRecord, previous: str, turns: list[Turn],
                    policy: MemoryPolicy, counter: TokenCounter, focus: str | None, *,
                    keep: list[Fact], outdated: list[FactChange]) -> str:
    """The updated summary, validated."""
    record.summary_prompt = summary_prompt(previous, turns, policy, counter, focus, keep=keep,
                                           outdated=outdated)
    record.summary_system = SUMMARY_SYSTEM
    record.model_calls += 1
    record.summary_reply, record.summary_ms = await ask(Purpose.SUMMARY, record.summary_prompt,
                                                        None, policy.summary_timeout_s)
    return validate_summary(record.summary_reply, policy, counter)


def settle_folds(facts: list[Fact], folding: list[Fact],
                 summary: str) -> tuple[list[Fact], list[FactChange]]:
    """Remove from ``facts`` the folded ones ``summary`` carries; a fold it does not
    carry stays a key fact. Returns the facts and a change for each fold."""
    carried = [f for f in folding if carried_by(f, summary)]
    changes = [FactChange("folded", f, "the key facts were over their budget; this one, of "
                          "lowest priority, now lives in the summary", by="rule")
               for f in carried]
    changes += [FactChange("kept", f, "the summary did not carry it, so it stays a key fact",
                           by="rule") for f in folding if f not in carried]
    return [f for f in facts if f not in carried], changes


def outdated(changes: list[FactChange]) -> list[FactChange]:
    """The changes the summarizer must hear of: facts that no longer hold."""
    return [c for c in changes if c.action in ("superseded", "retracted")]
