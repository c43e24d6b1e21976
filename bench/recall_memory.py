"""The "summary and facts only" baseline of bench/recall.py: is the evidence in today's memory?

Today (before recall) the model sees, per session, a running summary, key facts and the
recent raw turns. This plays each session of the set through the real ``Agent`` (its
memory engine, budget and compaction untouched) against a scripted model, and takes the
asking session's memory as it stands when each question is asked.

The script is generous to memory, so the baseline is an upper bound of what a real
summarizer would keep:

- the **agent** answers each message with the set's recorded answer, tool results
  appended (the replay has no tools), so recent turns hold everything the archive has;
- the **summarizer** is extractive: it keeps the previous summary and adds, per turn, the
  user's words and the answer's first words (up to 24 words each), and when over the
  target length it drops its oldest sentences. It cannot know which detail will be
  asked about later, as no summarizer can;
- the **fact extractor** keeps every sentence in which the user speaks of themselves
  ("I", "my", "we", "our"), up to 30 words, as a fact.

A question counts as answered from memory when one of its evidence turns (any one
fully answers) is still a recent turn of the asking session, or is from that session and
the question's expected answer is in the summary or the facts: at least 70% of the
expected answer's content words (stemmed, figures included). Evidence in another
session is never in memory: memory is per session.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import TYPE_CHECKING

from py_agent.recall.analysis import terms
from py_agent.state import Turn

if TYPE_CHECKING:
    from recall_set import Question

_USER = re.compile(r"^User: (.*)$", re.MULTILINE)
_SELF = re.compile(r"\b(?:I|I'm|I've|I'd|my|we|our|me)\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
WORDS_PER_PART = 24
SHARE = 0.7  # of the expected answer's content words


def _section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def _first_words(text: str, count: int) -> str:
    words = text.split()
    return " ".join(words[:count]) + ("…" if len(words) > count else "")


class Script:
    """The scripted model (see the module docstring) for one session."""

    def __init__(self, turns: list[Turn]) -> None:
        self.answers = {" ".join(t.user.split()): answer_text(t) for t in turns}

    def respond(self, call) -> str:
        purpose = getattr(call.purpose, "value", call.purpose)
        if purpose == "summary":
            return self.summary(call.input)
        if purpose == "facts":
            return self.facts(call.input)
        message = call.input.rpartition("\n\nUser: ")[2]
        answer = self.answers.get(" ".join(message.split()), "I see.")
        return json.dumps({"thought": "I can answer this directly.", "toolName": "none",
                           "toolInput": "", "finalAnswer": answer})

    def summary(self, prompt: str) -> str:
        previous = _section(prompt, "previous-summary").strip()
        sentences = [] if previous in ("", "(none)") else _SENTENCE.split(previous)
        turns = _section(prompt, "turns")
        for block in re.split(r"^\[turn \d+\]\n", turns, flags=re.MULTILINE):
            user = re.search(r"^User: (.*)$", block, re.MULTILINE)
            answer = re.search(r"^Assistant: (.*)$", block, re.MULTILINE)
            if user:
                sentences.append(f"The user said: {_first_words(user.group(1), WORDS_PER_PART)}.")
            if answer:
                sentences.append(f"The assistant said: "
                                 f"{_first_words(answer.group(1), WORDS_PER_PART)}.")
        keep = [line[2:] for line in _section(prompt, "keep").splitlines() if line.startswith("- ")]
        sentences += keep
        match = re.search(r"in at most (\d+) words", prompt)
        limit = int(match.group(1)) if match else 300
        while sentences and sum(len(s.split()) for s in sentences) > limit:
            sentences.pop(0)
        return " ".join(sentences) or "The conversation has just started."

    def facts(self, prompt: str) -> str:
        ops = []
        for user_text in _USER.findall(prompt.split("<turns>", 1)[-1]):
            for sentence in _SENTENCE.split(user_text):
                if _SELF.search(sentence):
                    ops.append({"category": "background",
                                "text": _first_words(sentence, 30)})
        return json.dumps({"facts": ops})


def answer_text(turn: Turn) -> str:
    results = [s.observation for s in turn.steps if s.tool and s.observation]
    return turn.answer + (" (" + "; ".join(results) + ")" if results else "")


def answer_found(expected: str, memory: set[str]) -> bool:
    """Whether enough of the expected answer's words are in the memory's terms."""
    wanted = set(terms(expected))
    return bool(wanted) and len(wanted & memory) >= SHARE * len(wanted)


async def _memories(session_id: str, turns: list[Turn], moments: list[float]
                    ) -> dict[float, tuple[str, set[int]]]:
    """For each moment (epoch ms): the memory text (summary and facts) and the ids (in
    the set) of the turns still raw, after the last turn archived before it."""
    from py_agent import Agent, InMemoryStore
    from py_agent.testing import FunctionModel

    script = Script(turns)
    model = FunctionModel(script.respond, context_window=9216)
    agent = Agent(model=model, store=InMemoryStore())
    out: dict[float, tuple[str, set[int]]] = {}
    pending = sorted(moments)
    played: list[Turn] = []

    async def snapshot(until: float) -> None:
        while pending and pending[0] < until:
            moment = pending.pop(0)
            if not played:
                out[moment] = ("", set())
                continue
            await agent.wait_idle()
            state = await agent.memory_state(session_id)
            text = state.summary + "\n" + "\n".join(f.text for f in state.facts)
            raw = {played[t.id - 1].id for t in state.recent_turns if 0 < t.id <= len(played)}
            out[moment] = (text, raw)

    try:
        for turn in turns:
            await snapshot(turn.created_at)
            await agent.run(turn.user, session_id=session_id)
            played.append(turn)
        await snapshot(math.inf)
    finally:
        await agent.close()
    return out


def memory_answers(sessions: dict[str, list[Turn]], questions: list["Question"]
                   ) -> dict[str, bool]:
    """Question id -> whether its evidence is in the asking session's memory."""
    by_session: dict[str, list["Question"]] = {}
    for question in questions:
        by_session.setdefault(question.asked_in, []).append(question)
    verdict: dict[str, bool] = {}
    for session_id, asked in by_session.items():
        turns = sessions.get(session_id, [])
        moments = [q.asked_ms for q in asked]
        memory = asyncio.run(_memories(session_id, turns, moments))
        for question, moment in zip(asked, moments):
            text, raw = memory[moment]
            have = set(terms(text))
            mine = [turn_id for s, turn_id in question.evidence if s == session_id]
            verdict[question.id] = bool(mine) and (
                any(turn_id in raw for turn_id in mine) or answer_found(question.answer, have))
    return verdict
