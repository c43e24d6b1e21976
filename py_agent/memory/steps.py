"""The model steps of one compaction, shared by the memory passes and the replay harness.

Each step fills the :class:`CompressionRecord` with what it sent and what came
back (prompts, system prompts, replies, timings), then returns its result or
raises (:class:`~py_agent.model.ModelError` for the call,
:class:`~py_agent.memory.summary.InvalidSummaryError` for a summary that
cannot be used). How a call is made (clone, timeout, pre-emption) is the
caller's ``ask``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from ..budget import MemoryPolicy
from ..constraints import Announce, ModelConstraints
from ..model import (DESTROY_TIMEOUT_S, Message, ModelError, ModelSession, Purpose,
                     destroy_quietly, for_conversation)
from ..state import CompressionRecord, Fact, FactChange, FactIds, Turn
from ..tokens import TokenCounter
from .fact_rules import carried_by
from .facts import (FACTS_SYSTEM, Consolidation, consolidate, facts_constraint, facts_messages,
                    facts_prompt, parse_fact_ops)
from .summary import SUMMARY_SYSTEM, summary_messages, summary_prompt, validate_summary

# ask(purpose, prompt, response schema or None, timeout in s) -> (reply, duration in ms)
Ask = Callable[[Purpose, str, "dict | None", float], Awaitable[tuple[str, float]]]
log = logging.getLogger("py_agent")


def base_prompts() -> dict[Purpose, list[Message]]:
    """The initial prompts of the summarizer's and the fact extractor's base sessions."""
    return {Purpose.SUMMARY: summary_messages(), Purpose.FACTS: facts_messages()}


class CompactionTimeoutError(ModelError):
    """A compaction's model call took longer than its timeout and was stopped."""


class CompactionPreemptedError(ModelError):
    """A compaction's model call was stopped because new turns needed the room at once;
    not a failure of the model."""


async def bounded_call(base: Callable[[], Awaitable[ModelSession]], purpose: Purpose,
                       text: str, schema: dict | None, timeout: float,
                       stop: asyncio.Event | None = None, *,
                       conversation_id: str = "") -> tuple[str, float]:
    """One model call on a fresh clone of ``base()``, stopped after ``timeout`` seconds
    or when ``stop`` is set; the clone is destroyed either way (which is how the
    Prompt API aborts a call). The clone is tagged with ``conversation_id``, the chat
    the pass works for, so what it streams is that chat's, whatever turn runs
    meanwhile. Returns the reply and its duration in ms."""
    clock = time.perf_counter()
    session: ModelSession | None = None

    async def call() -> str:
        nonlocal session
        session = for_conversation(await (await base()).clone(), conversation_id)
        return await session.prompt(text, response_constraint=schema, purpose=purpose)

    task = asyncio.ensure_future(call())
    stopped = asyncio.ensure_future((stop or asyncio.Event()).wait())
    try:
        await asyncio.wait({task, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result(), (time.perf_counter() - clock) * 1000
        task.cancel()
        await asyncio.wait({task}, timeout=DESTROY_TIMEOUT_S)
        if stopped.done():
            raise CompactionPreemptedError(f"the {purpose.value} call was stopped: new turns "
                                           "needed the room at once")
        raise CompactionTimeoutError(f"the {purpose.value} call took longer than {timeout:g} s "
                                     "and was stopped")
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
        if session is not None:
            await destroy_quietly(session, f"a {purpose.value} session")


async def extract_facts(ask: Ask, record: CompressionRecord, known: list[Fact],
                        turns: list[Turn], policy: MemoryPolicy, next_fact_id: int, *,
                        constraints: ModelConstraints | None = None,
                        announce: Announce | None = None) -> tuple[Consolidation, int]:
    """Facts from ``turns``, consolidated with ``known``; returns them and the next
    free fact number. The reply is asked under the richest constraint the model takes
    (``constraints``: what it accepted so far; a model that refuses one is asked again
    one level down, and ``announce`` hears of a lasting change)."""
    record.facts_turn_ids = [t.id for t in turns]
    record.facts_prompt = facts_prompt(known, turns, policy)
    record.facts_system = FACTS_SYSTEM

    async def call(schema: dict | None) -> tuple[str, float]:
        record.model_calls += 1
        return await ask(Purpose.FACTS, record.facts_prompt, schema, policy.facts_timeout_s)

    (record.facts_reply, record.facts_ms), _ = await (constraints or ModelConstraints()).ask(
        Purpose.FACTS, facts_constraint, call, announce)
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
