"""The memory as a prompt shows it: a past turn, key facts, the user profile, and
:class:`MemoryView`, what of a session's memory goes into a prompt.

Plain text from plain data (:mod:`py_agent.state`), beneath the tools and the retriever,
so that the context budget (:mod:`py_agent.budget`) can count what it renders without
importing the rest of the prompt text (:mod:`py_agent.prompting`, which re-exports these
names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from .state import Fact, Turn

NONE_TOOL = "none"   # a step's tool name for "no tool": the answer (prompting's step schema)


def shorten(text: str, limit: int) -> str:
    """Shorten for a prompt only (the archive keeps the full text)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 12)].rstrip() + " … [trimmed]"


def format_tool_input(tool_input: Any) -> str:
    return tool_input if isinstance(tool_input, str) else json.dumps(tool_input, ensure_ascii=False)


def render_turn(turn: Turn, *, observation_chars: int | None = None) -> str:
    """A past turn as prompt text; ``observation_chars`` micro-compacts its observations."""
    lines = [f"User: {turn.user}"]
    if turn.attachments:
        lines.append(f"  Attached: {turn.attachments_text()}")
    for step in turn.steps:
        if step.corrective or not step.tool or step.tool == NONE_TOOL:
            continue
        observation = step.observation
        if observation_chars is not None:
            observation = shorten(observation, observation_chars)
        lines.append(f"  Action: {step.tool}({format_tool_input(step.tool_input)}) → {observation}")
    lines.append(f"Assistant: {turn.answer}")
    return "\n".join(lines)


def render_facts(facts: Iterable[Fact]) -> str:
    return "\n".join(f"- [{f.category}] {f.text}" for f in facts)


PROFILE_HEADING = "About the user, remembered across chats:"


def render_profile(facts: Iterable[Fact]) -> str:
    """The user profile's facts as a prompt shows them (py_agent.profile)."""
    lines = render_facts(facts)
    return f"{PROFILE_HEADING}\n{lines}" if lines else ""


@dataclass
class MemoryView:
    """What of the memory goes into a prompt, already micro-compacted. ``profile``: the
    user profile's facts this session shows (shared by every session, first: they
    change least)."""

    summary: str = ""
    facts: list[Fact] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    profile: list[Fact] = field(default_factory=list)

    def render(self) -> str:
        parts = []
        if self.profile:
            parts.append(render_profile(self.profile))
        if self.summary:
            parts.append(f"Summary of the earlier conversation:\n{self.summary}")
        if self.facts:
            parts.append(f"Key facts:\n{render_facts(self.facts)}")
        if self.turns:
            parts.append("Recent turns:\n" + "\n".join(self.turns))
        return ("Memory:\n" + "\n\n".join(parts)) if parts else ""
