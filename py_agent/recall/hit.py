"""What a recall search returns: an archived turn, its score, and why it was found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HitWhy:
    """The signals behind a hit, for the trace.

    ``terms`` maps a field ("user", "answer", "tools", "names") to the query's words
    found there; ``related`` pairs a query word with a related word the turn has (word
    vectors); ``context`` lists query words in the session's previous user message (the
    turn answers a follow-up about them), ``next_turn`` those in the next turn (which
    explains this one); ``coverage`` is the share of the query's weight (idf) the turn matched,
    0 to 1: a caller that adds hits unasked (automatic recall) can demand a minimum;
    ``time`` is the time phrase read from the query ("last week") and ``closeness``
    how well the turn's time fits it (1 inside the window); ``recency`` is how much
    the turn's age moved its score (a factor, 1 for none); ``speaker`` is who the
    query pointed at ("user" for "I said", "answer" for "you recommended");
    ``meaning`` is the cosine of the turn's sentence vector with the query's, when
    sentence vectors took part (0: they did not, or found the turn too far).
    """

    terms: dict[str, list[str]] = field(default_factory=dict)
    related: tuple[tuple[str, str], ...] = ()
    context: tuple[str, ...] = ()
    next_turn: tuple[str, ...] = ()
    coverage: float = 0.0
    time: str = ""
    closeness: float = 1.0
    recency: float = 1.0
    speaker: str = ""
    meaning: float = 0.0

    def signals(self) -> list[str]:
        """The names of the signals that contributed, in a fixed order."""
        out = [f for f in ("user", "answer", "tools", "names") if self.terms.get(f)]
        if self.related:
            out.append("related words")
        if self.context:
            out.append("previous message")
        if self.next_turn:
            out.append("next turn")
        if self.time:
            out.append("time")
        if self.recency != 1.0:
            out.append("recency")
        if self.speaker:
            out.append("speaker")
        if self.meaning:
            out.append("meaning")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"signals": self.signals(), "terms": {k: list(v) for k, v in self.terms.items()},
                "related": [list(p) for p in self.related], "context": list(self.context),
                "next_turn": list(self.next_turn), "coverage": round(self.coverage, 3),
                "time": self.time, "closeness": round(self.closeness, 3),
                "recency": round(self.recency, 3), "speaker": self.speaker,
                "meaning": round(self.meaning, 3)}


@dataclass(frozen=True)
class Hit:
    """One archived turn found by :meth:`RecallIndex.search`.

    ``turn_id`` is the turn's id in its session's transcript; ``text`` a display text
    of the turn (the user's words, the answer, tool results, cut to a few hundred
    characters), or "" for a turn of a session loaded from a saved index and not given
    its archived turns since (:meth:`RecallIndex.hydrate`; or render the archived turn
    with :func:`~py_agent.recall.analysis.display_text`); ``time`` its ``created_at`` in epoch milliseconds (0 when unknown);
    ``score`` orders hits of one search and means nothing across searches.
    """

    session_id: str
    turn_id: int
    text: str
    score: float
    time: float
    why: HitWhy = field(default_factory=HitWhy)

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "turn_id": self.turn_id, "text": self.text,
                "score": round(self.score, 4), "time": self.time, "why": self.why.to_dict()}
