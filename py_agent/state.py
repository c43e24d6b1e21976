"""Plain data kept per session: turns, facts, the summary, compression records.

Everything here converts to and from JSON-ready dicts, because the browser store
keeps it in IndexedDB through a JavaScript bridge.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

FactCategory = Literal["preference", "need", "background", "follow-up", "decision"]
FACT_CATEGORIES: tuple[str, ...] = ("preference", "need", "background", "follow-up", "decision")

# answered, incomplete (hit the step cap): the user got an answer; these turns are the
# memory the model sees. error, stopped (the user pressed Stop), interrupted (the page
# or process went away mid-turn; also how a running turn is archived until it ends):
# kept in the transcript with the user's message, but not in memory.
TurnStatus = Literal["answered", "incomplete", "error", "stopped", "interrupted"]
TURN_STATUSES: tuple[str, ...] = ("answered", "incomplete", "error", "stopped", "interrupted")
MEMORY_STATUSES: frozenset[str] = frozenset({"answered", "incomplete"})


def now_ms() -> float:
    """Wall-clock milliseconds, the unit JavaScript dates use."""
    return time.time() * 1000.0


@dataclass
class StepRecord:
    """One ReAct step as remembered after the turn: what was done and what came back."""

    thought: str = ""
    tool: str = ""
    tool_input: Any = ""
    observation: str = ""
    corrective: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StepRecord":
        return cls(thought=str(data.get("thought", "")), tool=str(data.get("tool", "")),
                   tool_input=data.get("tool_input", ""),
                   observation=str(data.get("observation", "")),
                   corrective=bool(data.get("corrective", False)))


@dataclass
class Turn:
    """A user message, the steps taken for it, and the answer."""

    id: int
    user: str
    answer: str
    steps: list[StepRecord] = field(default_factory=list)
    status: TurnStatus = "answered"
    created_at: float = field(default_factory=now_ms)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "user": self.user, "answer": self.answer,
                "steps": [s.to_dict() for s in self.steps], "status": self.status,
                "created_at": self.created_at}

    @property
    def in_memory(self) -> bool:
        """Whether the turn belongs in the memory the model sees (it was answered)."""
        return self.status in MEMORY_STATUSES

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        status = data.get("status", "answered")
        return cls(id=int(data["id"]), user=str(data.get("user", "")),
                   answer=str(data.get("answer", "")),
                   steps=[StepRecord.from_dict(s) for s in data.get("steps", [])],
                   status=status if status in TURN_STATUSES else "error",
                   created_at=float(data.get("created_at", 0.0)))


@dataclass(frozen=True)
class Fact:
    """A durable piece of knowledge about the user, kept outside the summary."""

    category: str
    text: str
    turn_id: int | None = None

    def key(self) -> str:
        """Identity for de-duplication: category and normalised wording."""
        words = "".join(ch.lower() if ch.isalnum() else " " for ch in self.text).split()
        return self.category + ":" + " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "text": self.text, "turn_id": self.turn_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Fact":
        turn_id = data.get("turn_id")
        return cls(category=str(data.get("category", "background")),
                   text=str(data.get("text", "")),
                   turn_id=None if turn_id is None else int(turn_id))


@dataclass
class SessionState:
    """What the next prompt needs: summary, key facts, recent raw turns, counters.

    ``version`` counts the writes of this state to its store: a store refuses a
    write whose ``version`` is not the stored one (another tab or process wrote
    first: :class:`~py_agent.store.StateConflictError`) and bumps it on success.
    """

    session_id: str
    title: str = ""
    summary: str = ""
    facts: list[Fact] = field(default_factory=list)
    recent_turns: list[Turn] = field(default_factory=list)
    next_turn_id: int = 1
    compactions: int = 0
    failed_compactions: int = 0
    created_at: float = field(default_factory=now_ms)
    updated_at: float = field(default_factory=now_ms)
    version: int = 0

    def copy(self) -> "SessionState":
        """A copy whose lists can be changed without touching this one."""
        return replace(self, facts=list(self.facts), recent_turns=list(self.recent_turns))

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "title": self.title, "summary": self.summary,
                "facts": [f.to_dict() for f in self.facts],
                "recent_turns": [t.to_dict() for t in self.recent_turns],
                "next_turn_id": self.next_turn_id, "compactions": self.compactions,
                "failed_compactions": self.failed_compactions,
                "created_at": self.created_at, "updated_at": self.updated_at,
                "version": self.version}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SessionState":
        return cls(session_id=str(data["session_id"]), title=str(data.get("title", "")),
                   summary=str(data.get("summary", "")),
                   facts=[Fact.from_dict(f) for f in data.get("facts", [])],
                   recent_turns=[Turn.from_dict(t) for t in data.get("recent_turns", [])],
                   next_turn_id=int(data.get("next_turn_id", 1)),
                   compactions=int(data.get("compactions", 0)),
                   failed_compactions=int(data.get("failed_compactions", 0)),
                   created_at=float(data.get("created_at", 0.0)),
                   updated_at=float(data.get("updated_at", 0.0)),
                   version=int(data.get("version") or 0))


@dataclass
class CompressionRecord:
    """One compaction, logged with its input and output so it can be replayed."""

    session_id: str
    started_at: float
    duration_ms: float
    ok: bool
    turn_ids: list[int]
    previous_summary: str
    summary_prompt: str
    summary: str
    facts_added: list[Fact] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    model_calls: int = 0
    focus: str | None = None
    error: str | None = None
    trigger: Literal["auto", "manual", "tool"] = "auto"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["facts_added"] = [f.to_dict() for f in self.facts_added]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CompressionRecord":
        fields = dict(data)
        fields["facts_added"] = [Fact.from_dict(f) for f in data.get("facts_added", [])]
        return cls(**fields)


@dataclass(frozen=True)
class SessionInfo:
    """A row of the session list."""

    session_id: str
    title: str
    updated_at: float
    turns: int
