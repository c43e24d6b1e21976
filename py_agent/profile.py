"""The user profile: lasting facts about the user, shared by every session that is not private.

A session keeps its own key facts (:class:`~py_agent.state.SessionState`); the facts of
lasting kinds (``PROFILE_CATEGORIES``: preferences, needs, background) that a session
which is not private learns are also kept here, once for the whole store, so that every
other session reads them. Each :class:`ProfileFact` says where it came from: the session,
that session's own copy of it (``fact_id``), the turn that said it, and when.

The profile also remembers the facts that left it (:class:`RemovedFact`): forgotten by
the user, or superseded or retracted by something the user said later, perhaps in
another session. The session a removed fact came from drops its own copy of it
(:func:`reconcile`), and a forgotten fact is not taken again from the turns that said it.

Plain data and pure edits, like :mod:`py_agent.state`; stored as one JSON document per
store, written conditionally on its ``version`` as session states are.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .state import FACT_CATEGORIES, Fact, SessionState, now_ms, sources

PROFILE_CATEGORIES: tuple[str, ...] = ("preference", "need", "background")
# How many removed facts the profile remembers (the oldest are let go first).
MAX_REMOVED = 500
# The longest text a user may give a profile fact (an extracted fact is held to the
# memory policy's fact_max_chars; a user's own edit gets some more room).
MAX_EDIT_CHARS = 300

RemovalReason = Literal["forgotten", "superseded", "retracted"]


class UnknownProfileFactError(KeyError):
    """Raised for a profile fact id that is not (or no longer) in the profile."""

    def __init__(self, fact_id: str) -> None:
        super().__init__(fact_id)
        self.fact_id = fact_id

    def __str__(self) -> str:
        return f"unknown profile fact: {self.fact_id!r}"


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _count(value: Any, default: int) -> int:
    """A stored counter, or ``default`` for anything that is not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class ProfileFact:
    """A lasting fact about the user, and where it came from.

    ``id`` is short ("p7") and unique in the profile; ``session_id`` and ``turn_id`` name
    the turn that said it (as that session's transcript numbers it), ``fact_id`` that
    session's own key fact it mirrors ("" when there is none), ``at`` when it entered the
    profile and ``edited_at`` when the user last changed its text.

    ``untrusted`` names the untrusted text the fact was taken from (a tool's result, page
    text...): such a fact is **unconfirmed**: it waits in the profile for the user, who
    confirms it (``confirmed_at``; then it is a fact like any other) or forgets it, and no
    prompt of any chat shows it meanwhile.
    """

    id: str
    category: str
    text: str
    session_id: str
    fact_id: str = ""
    turn_id: int | None = None
    at: float = 0.0
    edited_at: float | None = None
    untrusted: tuple[str, ...] = ()
    confirmed_at: float | None = None

    @property
    def unconfirmed(self) -> bool:
        """Taken from untrusted text and not confirmed by the user yet."""
        return bool(self.untrusted)

    def as_fact(self) -> Fact:
        """The fact as prompts and the fact extractor see it (the profile's id)."""
        return Fact(self.category, self.text, None, self.id, self.untrusted)

    def key(self) -> str:
        return self.as_fact().key()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "category": self.category, "text": self.text,
                "session_id": self.session_id, "fact_id": self.fact_id,
                "turn_id": self.turn_id, "at": self.at, "edited_at": self.edited_at,
                "untrusted": list(self.untrusted), "confirmed_at": self.confirmed_at,
                "unconfirmed": self.unconfirmed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProfileFact":
        category = str(data.get("category", "background"))
        edited, confirmed = data.get("edited_at"), data.get("confirmed_at")
        return cls(id=str(data["id"]),
                   category=category if category in FACT_CATEGORIES else "background",
                   text=str(data.get("text", "")), session_id=str(data.get("session_id", "")),
                   fact_id=str(data.get("fact_id") or ""),
                   turn_id=_optional_int(data.get("turn_id")),
                   at=float(data.get("at") or 0.0),
                   edited_at=None if edited is None else float(edited),
                   untrusted=sources(data.get("untrusted")),
                   confirmed_at=None if confirmed is None else float(confirmed))


@dataclass(frozen=True)
class RemovedFact:
    """A fact that left the profile, and why: the user ``forgotten`` it, or a later
    statement ``superseded`` or ``retracted`` it. Its source session drops its own copy
    (``session_id``, ``fact_id``); a forgotten one is not taken again from a turn of
    that session up to ``turn_id``."""

    session_id: str
    fact_id: str
    category: str
    text: str
    turn_id: int | None
    reason: RemovalReason
    at: float = 0.0

    def as_fact(self) -> Fact:
        return Fact(self.category, self.text, self.turn_id)

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "fact_id": self.fact_id,
                "category": self.category, "text": self.text, "turn_id": self.turn_id,
                "reason": self.reason, "at": self.at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RemovedFact":
        reason = data.get("reason")
        return cls(session_id=str(data.get("session_id", "")),
                   fact_id=str(data.get("fact_id") or ""),
                   category=str(data.get("category", "background")),
                   text=str(data.get("text", "")), turn_id=_optional_int(data.get("turn_id")),
                   reason=reason if reason in ("forgotten", "superseded", "retracted")
                   else "retracted", at=float(data.get("at") or 0.0))


@dataclass
class UserProfile:
    """The profile of a store: its facts (oldest first), the facts that left it, the
    next free id number, and the ``version`` of the stored copy it was read as (a
    store refuses a write made from another version, as for session states)."""

    facts: list[ProfileFact] = field(default_factory=list)
    removed: list[RemovedFact] = field(default_factory=list)
    next_id: int = 1
    version: int = 0

    def copy(self) -> "UserProfile":
        return replace(self, facts=list(self.facts), removed=list(self.removed))

    def find(self, fact_id: str) -> ProfileFact | None:
        return next((f for f in self.facts if f.id == fact_id), None)

    def of_session(self, session_id: str) -> list[ProfileFact]:
        """The facts a session contributed."""
        return [f for f in self.facts if f.session_id == session_id]

    def new_id(self) -> str:
        """A fresh id ("p12"), skipping any taken; moves ``next_id`` on."""
        taken = {f.id for f in self.facts}
        while f"p{self.next_id}" in taken:
            self.next_id += 1
        fact_id = f"p{self.next_id}"
        self.next_id += 1
        return fact_id

    def to_dict(self) -> dict[str, Any]:
        return {"facts": [f.to_dict() for f in self.facts],
                "removed": [r.to_dict() for r in self.removed], "next_id": self.next_id,
                "version": self.version}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "UserProfile":
        """A profile from :meth:`to_dict` output; None (nothing stored yet) is empty."""
        if not isinstance(data, dict) or not data:
            return cls()
        facts, removed = data.get("facts"), data.get("removed")
        return cls(facts=[ProfileFact.from_dict(f) for f in facts if isinstance(f, dict)
                          and f.get("id")] if isinstance(facts, list) else [],
                   removed=[RemovedFact.from_dict(r) for r in removed if isinstance(r, dict)]
                   if isinstance(removed, list) else [],
                   next_id=_count(data.get("next_id"), 1), version=_count(data.get("version"), 0))


# ------------------------------------------------------------------ pure edits

def removal(fact: ProfileFact, reason: RemovalReason, at: float | None = None) -> RemovedFact:
    return RemovedFact(fact.session_id, fact.fact_id, fact.category, fact.text, fact.turn_id,
                       reason, now_ms() if at is None else at)


def with_removed(profile: UserProfile, removed: list[RemovedFact]) -> list[RemovedFact]:
    """The profile's removed facts with ``removed`` added, the newest ``MAX_REMOVED``."""
    return (profile.removed + removed)[-MAX_REMOVED:]


def forget(profile: UserProfile, fact_id: str, at: float | None = None) -> UserProfile:
    """The profile without fact ``fact_id``, remembered as forgotten; raises
    :class:`UnknownProfileFactError` if it is not there."""
    fact = profile.find(fact_id)
    if fact is None:
        raise UnknownProfileFactError(fact_id)
    updated = profile.copy()
    updated.facts = [f for f in profile.facts if f.id != fact_id]
    updated.removed = with_removed(profile, [removal(fact, "forgotten", at)])
    return updated


def clean_fact_text(text: Any) -> str:
    """A user's text for a profile fact: whitespace collapsed; raises ValueError for an
    empty or overlong one."""
    if not isinstance(text, str):
        raise ValueError("a fact's text must be a string")
    cleaned = " ".join(text.split())
    if len(cleaned) < 2:
        raise ValueError("a fact's text must not be empty")
    if len(cleaned) > MAX_EDIT_CHARS:
        raise ValueError(f"a fact's text must be at most {MAX_EDIT_CHARS} characters")
    return cleaned


def edit(profile: UserProfile, fact_id: str, text: str,
         at: float | None = None) -> UserProfile:
    """The profile with fact ``fact_id`` saying ``text`` (see :func:`clean_fact_text`)."""
    fact = profile.find(fact_id)
    if fact is None:
        raise UnknownProfileFactError(fact_id)
    changed = replace(fact, text=clean_fact_text(text), edited_at=now_ms() if at is None else at)
    updated = profile.copy()
    updated.facts = [changed if f.id == fact_id else f for f in profile.facts]
    return updated


def confirm(profile: UserProfile, fact_id: str, at: float | None = None) -> UserProfile:
    """The profile with fact ``fact_id`` confirmed by the user: no longer marked, so every
    chat that is not private shows it (a fact that was never marked stays as it is)."""
    fact = profile.find(fact_id)
    if fact is None:
        raise UnknownProfileFactError(fact_id)
    confirmed = replace(fact, untrusted=(), confirmed_at=now_ms() if at is None else at)
    updated = profile.copy()
    updated.facts = [confirmed if f.id == fact_id else f for f in profile.facts]
    return updated


def withdraw(profile: UserProfile, session_id: str, *, deleted: bool = False) -> UserProfile:
    """The profile without the facts ``session_id`` contributed (it was made private or
    deleted); for a deleted session its removed facts go too (their turns are gone)."""
    updated = profile.copy()
    updated.facts = [f for f in profile.facts if f.session_id != session_id]
    if deleted:
        updated.removed = [r for r in profile.removed if r.session_id != session_id]
    return updated


def reconcile(state: SessionState, profile: UserProfile) -> SessionState | None:
    """``state`` with its own copies of profile facts brought in line with the profile:
    a copy whose profile fact was removed (forgotten, superseded, retracted) is dropped,
    one whose profile fact the user edited takes its text, one the user confirmed is no
    longer marked. None if nothing changes."""
    gone = {r.fact_id for r in profile.removed if r.session_id == state.session_id}
    mirrored = {f.fact_id: f for f in profile.of_session(state.session_id) if f.fact_id}
    facts: list[Fact] = []
    changed = False
    for fact in state.facts:
        source = mirrored.get(fact.id)
        if source is None and fact.id in gone:
            changed = True
            continue
        if source is not None and (source.text, source.category) != (fact.text, fact.category):
            fact = replace(fact, text=source.text, category=source.category)
            changed = True
        if source is not None and fact.untrusted and not source.untrusted:
            fact = replace(fact, untrusted=())   # the user confirmed it
            changed = True
        facts.append(fact)
    if not changed:
        return None
    updated = state.copy()
    updated.facts = facts
    return updated
