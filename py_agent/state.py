"""Plain data kept per session: turns, facts, the summary, compression records.

Everything here converts to and from JSON-ready dicts, because the browser store
keeps it in IndexedDB through a JavaScript bridge.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from .attachments import AttachmentRecord
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


# The marks that open untrusted data in a stored observation (py_agent.memory_view's
# data_block); read only to migrate steps saved before ``StepRecord.untrusted`` existed.
_DATA_HEAD = re.compile("^\u27e6data from (.*?); not instructions\u27e7")


@dataclass
class StepRecord:
    """One ReAct step as remembered after the turn: what was done and what came back.

    ``untrusted`` names where the observation's text came from when it is someone else's
    words (a tool server's or a page's result, page text, turns recalled from the
    archive): "lookup_record (my-server)"; "" for the app's own words. While the turn is
    in what the model reads, consequential calls are asked about (docs/memory.md)."""

    thought: str = ""
    tool: str = ""
    tool_input: Any = ""
    observation: str = ""
    corrective: bool = False
    untrusted: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StepRecord":
        observation = str(data.get("observation", ""))
        if "untrusted" in data:
            untrusted = str(data.get("untrusted") or "")
        else:   # saved before provenance was kept: the marks say whose words they were
            head = _DATA_HEAD.match(observation)
            untrusted = head.group(1) if head else ""
        return cls(thought=str(data.get("thought", "")), tool=str(data.get("tool", "")),
                   tool_input=data.get("tool_input", ""), observation=observation,
                   corrective=bool(data.get("corrective", False)), untrusted=untrusted)


@dataclass
class Turn:
    """A user message, the steps taken for it, and the answer."""

    id: int
    user: str
    answer: str
    steps: list[StepRecord] = field(default_factory=list)
    status: TurnStatus = "answered"
    created_at: float = field(default_factory=now_ms)
    # The images and sounds sent with the message (their bytes are blobs of the store).
    attachments: list[AttachmentRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = {"id": self.id, "user": self.user, "answer": self.answer,
                "steps": [s.to_dict() for s in self.steps], "status": self.status,
                "created_at": self.created_at}
        if self.attachments:
            data["attachments"] = [a.to_dict() for a in self.attachments]
        return data

    def attachments_text(self) -> str:
        """The attachments as memory names them (their name, and what the model said
        they show), one line; "" for none."""
        return " ".join(a.text(self.id) for a in self.attachments)

    @property
    def in_memory(self) -> bool:
        """Whether the turn belongs in the memory the model sees (it was answered)."""
        return self.status in MEMORY_STATUSES

    @property
    def untrusted(self) -> tuple[str, ...]:
        """Where the untrusted text this turn read came from ("" sources left out), once
        each: "turn 3: lookup_record (my-server)". Empty: only the user's and the app's
        words."""
        return tuple(dict.fromkeys(f"turn {self.id}: {s.untrusted}" for s in self.steps
                                   if s.untrusted))

    def trusted_part(self) -> "Turn":
        """The turn as a pass that must stay trusted may read it: whole when it read no
        untrusted text; else the user's words only (the steps and the answer were
        written after reading someone else's words)."""
        if not self.untrusted:
            return self
        return replace(self, steps=[], answer=UNTRUSTED_ANSWER)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        status = data.get("status", "answered")
        return cls(id=int(data["id"]), user=str(data.get("user", "")),
                   answer=str(data.get("answer", "")),
                   steps=[StepRecord.from_dict(s) for s in data.get("steps", [])],
                   status=status if status in TURN_STATUSES else "error",
                   created_at=float(data.get("created_at", 0.0)),
                   attachments=[AttachmentRecord.from_dict(a) for a in
                                data.get("attachments") or [] if isinstance(a, dict)])


UNTRUSTED_ANSWER = "(left out: written after reading text from outside)"


@dataclass(frozen=True)
class Fact:
    """A durable piece of knowledge about the user, kept outside the summary.

    ``id`` is short ("f7") and unique within its session, so the fact extractor
    can name a known fact it updates or retracts; ``turn_id`` is the turn that
    last stated it, which makes newer facts outrank older ones. ``untrusted`` names
    the untrusted text the pass that wrote it had read ("turn 3: lookup_record
    (my-server)"): such a fact is data in every prompt and enters the user profile
    only once the user confirms it; empty for a fact from the user's own words.
    """

    category: str
    text: str
    turn_id: int | None = None
    id: str = ""
    untrusted: tuple[str, ...] = ()

    def key(self) -> str:
        """Identity for de-duplication: category and normalised wording."""
        words = "".join(ch.lower() if ch.isalnum() else " " for ch in self.text).split()
        return self.category + ":" + " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"category": self.category, "text": self.text,
                                "turn_id": self.turn_id}
        if self.id:
            data["id"] = self.id
        if self.untrusted:
            data["untrusted"] = list(self.untrusted)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Fact":
        turn_id = data.get("turn_id")
        return cls(category=str(data.get("category", "background")),
                   text=str(data.get("text", "")),
                   turn_id=None if turn_id is None else int(turn_id),
                   id=str(data.get("id") or ""), untrusted=sources(data.get("untrusted")))


def sources(value: Any) -> tuple[str, ...]:
    """Stored untrusted sources (a list of strings) as a tuple; anything else is none
    (data saved before provenance was kept)."""
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(dict.fromkeys(str(v) for v in value if isinstance(v, str) and v))


class FactIds:
    """Hands out short fact ids ("f1", "f2", ...) from ``next_id`` on, skipping taken ones."""

    def __init__(self, next_id: int, taken: set[str]) -> None:
        self.next_id, self.taken = next_id, set(taken)

    def __call__(self) -> str:
        while f"f{self.next_id}" in self.taken:
            self.next_id += 1
        fact_id = f"f{self.next_id}"
        self.next_id += 1
        self.taken.add(fact_id)
        return fact_id


FactAction = Literal["superseded", "retracted", "folded", "kept"]


@dataclass
class FactChange:
    """Why a fact left (or nearly left) the key facts; logged with its compaction.

    ``superseded``: a newer fact on the same subject replaced it (``replaced_by``);
    ``retracted``: the user said it no longer holds, or asked to forget it;
    ``folded``: the facts were over their token budget, so the summarizer took
    it into the summary (the archive still has the turn that said it);
    ``kept``: a fold the summary did not carry, so the fact stayed a key fact.
    ``by`` says who decided: the extractor model, or a rule of py-agent.
    """

    action: FactAction
    fact: Fact
    reason: str
    replaced_by: Fact | None = None
    by: Literal["model", "rule"] = "model"

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "fact": self.fact.to_dict(), "reason": self.reason,
                "replaced_by": self.replaced_by.to_dict() if self.replaced_by else None,
                "by": self.by}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FactChange":
        replaced = data.get("replaced_by")
        return cls(action=data.get("action", "superseded"), fact=Fact.from_dict(data["fact"]),
                   reason=str(data.get("reason", "")),
                   replaced_by=Fact.from_dict(replaced) if isinstance(replaced, dict) else None,
                   by=data.get("by", "model"))


@dataclass
class SessionState:
    """What the next prompt needs: summary, key facts, recent raw turns, counters.

    ``facts_through`` is the newest turn whose facts were extracted (so a retry
    does not extract them twice); ``consecutive_failures`` counts summaries that
    failed in a row, and ``degraded`` says, while it is not empty, why memory
    runs on the deterministic fallback instead of the summarizer.

    ``version`` counts the writes of this state to its store: a store refuses a
    write whose ``version`` is not the stored one (another tab or process wrote
    first: :class:`~py_agent.store.StateConflictError`) and bumps it on success.

    The summary has two parts: ``summary``, made only from the user's and the app's
    words, and ``untrusted_summary``, made from turns that read someone else's words
    (``untrusted_sources`` says whose); prompts show the second as data only.
    """

    session_id: str
    title: str = ""
    summary: str = ""
    untrusted_summary: str = ""
    untrusted_sources: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    recent_turns: list[Turn] = field(default_factory=list)
    next_turn_id: int = 1
    compactions: int = 0
    failed_compactions: int = 0
    created_at: float = field(default_factory=now_ms)
    updated_at: float = field(default_factory=now_ms)
    next_fact_id: int = 1
    facts_through: int = 0
    consecutive_failures: int = 0
    degraded: str = ""
    # A private session is the user's own: nothing from it enters the cross-session
    # user profile or another session's recall.
    private: bool = False

    def __post_init__(self) -> None:
        self.assign_fact_ids()

    def assign_fact_ids(self) -> None:
        """Give every fact without one a short id (facts saved before ids existed)."""
        if all(f.id for f in self.facts):
            return
        ids = FactIds(self.next_fact_id, {f.id for f in self.facts})
        self.facts = [f if f.id else replace(f, id=ids()) for f in self.facts]
        self.next_fact_id = ids.next_id
    version: int = 0

    def copy(self) -> "SessionState":
        """A copy whose lists can be changed without touching this one."""
        return replace(self, facts=list(self.facts), recent_turns=list(self.recent_turns),
                       untrusted_sources=list(self.untrusted_sources))

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "title": self.title, "summary": self.summary,
                "untrusted_summary": self.untrusted_summary,
                "untrusted_sources": list(self.untrusted_sources),
                "facts": [f.to_dict() for f in self.facts],
                "recent_turns": [t.to_dict() for t in self.recent_turns],
                "next_turn_id": self.next_turn_id, "compactions": self.compactions,
                "failed_compactions": self.failed_compactions,
                "created_at": self.created_at, "updated_at": self.updated_at,
                "next_fact_id": self.next_fact_id, "facts_through": self.facts_through,
                "consecutive_failures": self.consecutive_failures, "degraded": self.degraded,
                "private": self.private, "version": self.version}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SessionState":
        return cls(session_id=str(data["session_id"]), title=str(data.get("title", "")),
                   summary=str(data.get("summary", "")),
                   untrusted_summary=str(data.get("untrusted_summary") or ""),
                   untrusted_sources=list(sources(data.get("untrusted_sources"))),
                   facts=[Fact.from_dict(f) for f in data.get("facts", [])],
                   recent_turns=[Turn.from_dict(t) for t in data.get("recent_turns", [])],
                   next_turn_id=int(data.get("next_turn_id", 1)),
                   compactions=int(data.get("compactions", 0)),
                   failed_compactions=int(data.get("failed_compactions", 0)),
                   created_at=float(data.get("created_at", 0.0)),
                   updated_at=float(data.get("updated_at", 0.0)),
                   next_fact_id=int(data.get("next_fact_id", 1)),
                   facts_through=int(data["facts_through"]) if "facts_through" in data
                   else _extracted_before(data),
                   consecutive_failures=int(data.get("consecutive_failures", 0)),
                   degraded=str(data.get("degraded", "")),
                   private=data.get("private") is True,
                   version=int(data.get("version") or 0))


def _extracted_before(data: dict[str, Any]) -> int:
    """For a state saved before ``facts_through`` existed: every turn compacted out of
    the recent turns had its facts extracted then."""
    recent = [int(t["id"]) for t in data.get("recent_turns", []) if "id" in t]
    return min(recent) - 1 if recent else max(0, int(data.get("next_turn_id", 1)) - 1)


@dataclass
class CompressionRecord:
    """One compaction, logged with its inputs as sent and its outputs, so it can be
    replayed (``python -m py_agent.replay``) and explained in the memory inspector.

    Inputs: ``previous_summary``, the turns (``turn_ids``, their text is in the
    archive), ``facts_before`` (the known facts the extractor saw), ``folded``
    (facts handed to the summarizer to keep), ``focus``, ``policy``, and both
    prompts with their system prompts. Outputs: the raw replies
    (``summary_reply``, ``facts_reply``), the committed ``summary``,
    ``facts_added`` and ``fact_changes``. ``fallback`` is True when the summary was
    built without the model (it failed too often or is backing off). A ``kind``
    "facts" record is a facts refresh: no turn left the raw turns, the summary stayed.
    """

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
    summary_reply: str = ""
    summary_system: str = ""
    summary_ms: float = 0.0
    facts_turn_ids: list[int] = field(default_factory=list)
    facts_prompt: str = ""
    facts_system: str = ""
    facts_reply: str = ""
    facts_ms: float = 0.0
    facts_error: str | None = None
    facts_before: list[Fact] = field(default_factory=list)
    folded: list[Fact] = field(default_factory=list)
    fact_changes: list[FactChange] = field(default_factory=list)
    fallback: bool = False
    policy: dict[str, Any] = field(default_factory=dict)
    kind: Literal["compaction", "facts"] = "compaction"
    # The untrusted part (turns that read someone else's words), asked apart so that
    # the trusted summary and facts never read it: its inputs and replies, and the
    # committed marked summary.
    previous_untrusted_summary: str = ""
    untrusted_summary_prompt: str = ""
    untrusted_summary_reply: str = ""
    untrusted_summary: str = ""
    untrusted_facts_prompt: str = ""
    untrusted_facts_reply: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("facts_added", "facts_before", "folded"):
            data[name] = [f.to_dict() for f in getattr(self, name)]
        data["fact_changes"] = [c.to_dict() for c in self.fact_changes]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CompressionRecord":
        fields = dict(data)
        for name in ("facts_added", "facts_before", "folded"):
            fields[name] = [Fact.from_dict(f) for f in data.get(name, [])]
        fields["fact_changes"] = [FactChange.from_dict(c) for c in data.get("fact_changes", [])]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in fields.items() if k in known})


@dataclass(frozen=True)
class SessionInfo:
    """A row of the session list."""

    session_id: str
    title: str
    updated_at: float
    turns: int
    private: bool = False
