"""What a turn, a compaction and a memory inspection return to the caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .budget import Budget
from .state import CompressionRecord, Fact, StepRecord, Turn

StepKind = Literal["tool", "answer", "corrective", "repeat", "compact", "error"]
RunStatus = Literal["answered", "incomplete", "error", "stopped"]


@dataclass
class StepTrace:
    """One iteration of the loop, with timings, as the live trace shows it."""

    index: int
    kind: StepKind
    thought: str = ""
    tool: str = ""
    tool_input: Any = ""
    observation: str = ""
    ok: bool = True
    model_ms: float = 0.0
    tool_ms: float = 0.0
    raw: str = ""
    constraint: str = ""  # the response-constraint level the reply was asked under
    approval: str = ""    # a consequential call: "once", "chat" or "deny" (py_agent.turn.approval)
    untrusted: str = ""   # whose words the observation is, when not the app's (StepRecord)

    @property
    def corrective(self) -> bool:
        return self.kind in ("corrective", "repeat")

    def record(self) -> StepRecord:
        return StepRecord(thought=self.thought, tool=self.tool, tool_input=self.tool_input,
                          observation=self.observation, corrective=self.corrective,
                          untrusted=self.untrusted)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "kind": self.kind, "thought": self.thought,
                "tool": self.tool, "tool_input": self.tool_input,
                "observation": self.observation, "ok": self.ok,
                "model_ms": round(self.model_ms, 1), "tool_ms": round(self.tool_ms, 1),
                "constraint": self.constraint, "approval": self.approval,
                "untrusted": self.untrusted}


@dataclass
class RunResult:
    """The outcome of ``Agent.run``: the answer first, then how it was reached."""

    answer: str
    steps: list[StepTrace]
    session_id: str
    turn_id: int
    status: RunStatus = "answered"
    error: str | None = None
    tools_offered: list[tuple[str, float]] = field(default_factory=list)
    prompt_tokens: int = 0
    saved: bool = False
    compaction_scheduled: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "answered"

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "steps": [s.to_dict() for s in self.steps],
                "session_id": self.session_id, "turn_id": self.turn_id, "status": self.status,
                "error": self.error, "tools_offered": [list(t) for t in self.tools_offered],
                "prompt_tokens": self.prompt_tokens, "saved": self.saved,
                "compaction_scheduled": self.compaction_scheduled}


@dataclass
class MemoryState:
    """What the next prompt of a session will carry, and how it sits in the window."""

    session_id: str
    title: str
    summary: str
    facts: list[Fact]
    recent_turns: list[Turn]
    budget: Budget | None
    compactions: int
    failed_compactions: int
    unsaved_turns: int
    compacting: bool
    detached: bool = False
    budget_estimated: bool = False  # no model session yet: prefix and window are estimates
    degraded: str = ""  # why memory runs on the fallback without the summarizer, if it does
    consecutive_failures: int = 0
    prefix: dict[str, Any] | None = None  # the prefix level in use and why (py_agent.prefix)
    # The turns recalled from the archive into the last prompt (Hit.to_dict() and the
    # session's title), kept in memory only: empty after a restart until the next turn.
    recalled: list[dict[str, Any]] = field(default_factory=list)
    # The user profile's facts the next prompt shows (py_agent.profile; ids "p…"), and
    # whether the session is private (then it neither shows nor adds to the profile).
    profile: list[Fact] = field(default_factory=list)
    private: bool = False
    # The summary's marked part: made from turns that read someone else's words (whose:
    # ``untrusted_sources``), shown to the model only as data (docs/memory.md).
    untrusted_summary: str = ""
    untrusted_sources: list[str] = field(default_factory=list)

    def facts_by_category(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for fact in self.facts:
            grouped.setdefault(fact.category, []).append(fact.text)
        return grouped

    def to_dict(self) -> dict[str, Any]:
        budget = (None if self.budget is None
                  else {**vars(self.budget), "estimated": self.budget_estimated})
        return {"session_id": self.session_id, "title": self.title, "summary": self.summary,
                "facts": [f.to_dict() for f in self.facts],
                "recent_turns": [t.to_dict() for t in self.recent_turns], "budget": budget,
                "compactions": self.compactions, "failed_compactions": self.failed_compactions,
                "unsaved_turns": self.unsaved_turns, "compacting": self.compacting,
                "detached": self.detached, "degraded": self.degraded,
                "consecutive_failures": self.consecutive_failures, "prefix": self.prefix,
                "recalled": list(self.recalled),
                "profile": [f.to_dict() for f in self.profile], "private": self.private,
                "untrusted_summary": self.untrusted_summary,
                "untrusted_sources": list(self.untrusted_sources)}


@dataclass
class CompactionReport:
    """What a compaction did; ``ok`` is False when it changed nothing."""

    ok: bool
    compacted_turns: int
    tokens_before: int = 0
    tokens_after: int = 0
    error: str | None = None
    record: CompressionRecord | None = None
