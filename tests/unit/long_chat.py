"""A long, varied conversation against FunctionModel, measured turn by turn.

Shared by the long-conversation test and ``bench/long_conversation.py``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from py_agent import Agent, InMemoryStore, tool
from py_agent.model import Purpose
from py_agent.testing import FunctionModel, PromptCall, context_text, step_json, user_message

from tests.unit.support import facts_reply, make_responder, summarizer_reply

TOPICS = ["a trip to Lisbon", "my garden", "a birthday party", "learning Spanish", "a new laptop",
          "training for a 10k run", "the family budget", "a book club", "moving flat", "a dinner"]


@tool
def search_notes(query: str) -> str:
    """Search the user's saved notes for a phrase."""
    rng = random.Random(query)
    return " ".join(f"note{rng.randint(1, 999)}: {query} details" for _ in range(rng.randint(3, 25)))


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def agent_step(call: PromptCall) -> str:
    message = user_message(call)
    if message is None:  # a delta: answer from the observation
        return step_json(thought="I have what I need.",
                         answer="Here is what I found. " + call.input[:120])
    if "search my notes" in message:
        return step_json(thought="Search the notes.", tool="search_notes",
                         tool_input=message.split("search my notes for")[-1].strip(" ?."))
    length = len(message.split())
    return step_json(thought="Answer directly.",
                     answer=f"About {message[:40]}: here is a reply of moderate length "
                            + "with some helpful detail " * (length % 7 + 1))


def user_turn(rng: random.Random, i: int) -> str:
    topic = rng.choice(TOPICS)
    if i == 0:
        return "Hi! I'm vegetarian and I live in Oslo. Please keep that in mind."
    if i % 9 == 4:
        return f"Could you search my notes for {topic}?"
    filler = " ".join(rng.choice(["really", "also", "maybe", "next", "week", "plan", "budget",
                                  "ideas", "time", "friends", "cost", "list", "options"])
                      for _ in range(rng.randint(5, 70)))
    return f"Turn {i}: about {topic}, {filler}."


# Event-loop iterations between two turns, standing in for the user reading.
PAUSE_STEPS = 30


@dataclass
class LongChatReport:
    """``tokens_per_turn``: tokens the turn's step prompts carried. ``critical_tokens``:
    tokens the model read before it could answer (step prompts, plus appends made after
    the turn started and before its first step prompt, such as a memory session built
    on the spot). ``total_tokens``: every token the model read while the turn ran,
    appends and compaction included."""

    turns: int
    window: int
    memory_sessions: int = 0
    max_fill: float = 0.0
    tokens_per_turn: dict[int, int] = field(default_factory=dict)
    critical_tokens: dict[int, int] = field(default_factory=dict)
    total_tokens: dict[int, int] = field(default_factory=dict)
    appended_tokens: int = 0
    memory_stats: str = ""
    compactions: int = 0
    compaction_calls: int = 0
    archived: int = 0
    quota_errors: int = 0
    overflow_events: int = 0
    final_prompt: str = ""
    failed: int = 0


async def long_chat(turns: int = 320, window: int = 9216, seed: int = 7,
                    memory_sessions: int = 4) -> LongChatReport:
    """The same seeded chat; ``memory_sessions=0`` is the agent without memory sessions."""
    rng = random.Random(seed)
    model = FunctionModel(make_responder(agent_step, summarizer_reply, facts_reply),
                          context_window=window)
    store = InMemoryStore()
    agent = Agent(model=model, store=store, tools=[search_notes, word_count],
                  memory_sessions=memory_sessions)
    report = LongChatReport(turns=turns, window=window, memory_sessions=memory_sessions)
    for i in range(turns):
        before, appended = len(model.calls), len(model.appends)
        message = user_turn(rng, i) if i < turns - 1 else "Suggest a recipe for tonight."
        result = await agent.run(message, session_id="long")
        assert result.status == "answered", result
        # The user reads the answer meanwhile (the same pause in both modes): the
        # finished turn is appended then, and background compaction goes on.
        for _ in range(PAUSE_STEPS):
            await asyncio.sleep(0)
        await agent.memory_sessions.wait_idle()
        calls, appends = model.calls[before:], model.appends[appended:]
        steps = [c for c in calls if c.purpose is Purpose.STEP]
        report.tokens_per_turn[i + 1] = sum(c.input_tokens for c in steps)
        first = steps[0].seq
        report.critical_tokens[i + 1] = report.tokens_per_turn[i + 1] + sum(
            a.input_tokens for a in appends if a.seq < first)
        report.total_tokens[i + 1] = (sum(c.input_tokens for c in calls)
                                      + sum(a.input_tokens for a in appends))
        report.appended_tokens += sum(a.input_tokens for a in appends)
        for c in [*calls, *appends]:
            report.max_fill = max(report.max_fill, (c.usage_before + c.input_tokens) / window)
        if i == turns - 1:
            report.final_prompt = context_text(steps[0])
        await asyncio.sleep(0)  # the page's event loop runs between turns
    await agent.wait_idle()
    state = await agent.memory_state("long")
    report.compactions = state.compactions
    report.failed = state.failed_compactions
    report.compaction_calls = agent.model_calls["summary"] + agent.model_calls["facts"]
    report.archived = len(await store.read_archive("long"))
    report.memory_stats = str(agent.memory_sessions.stats)
    report.quota_errors = model.quota_errors
    report.overflow_events = model.overflow_events
    for c in model.calls:
        report.max_fill = max(report.max_fill, (c.usage_before + c.input_tokens) / window)
    return report
