"""What a recall query asks: weighted terms, a time, a speaker.

"What did you recommend for my knee last week?" becomes the terms ``recommend``,
``knee`` (full weight); the time "last week" (:mod:`.dates`, its words removed from
the terms); and the speaker ``answer``, because the user asks what *you* said.
Words that only say "this is a question about the past" ("remember", "mention",
"talk", "discuss") keep a small weight: they rarely name what was said. Each content
word also brings its nearest words by meaning (:mod:`.neighbors`: "book" brings
"novel") as terms of lower weight, so a turn worded differently still matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from typing import Callable

from .analysis import terms
from .dates import TimeHint, read_time

Neighbours = Callable[[str], list[tuple[str, float]]]

# Query words about remembering rather than about the thing remembered.
META_WORDS = frozenset("""
remember recall remind mention mentioned talk talked talking discuss discussed say said
told ask asked chat conversation again earlier ago back time thing stuff something anything
know think thought wonder wondering idea
""".split())
META_TERMS = frozenset(t for w in META_WORDS for t in terms(w))
META_WEIGHT = 0.15

_USER_CUE = re.compile(
    r"\b(?:I|we)\s+(?:say|said|tell|told|mention(?:ed)?|ask(?:ed)?|wr[io]te|share[d]?|"
    r"explain(?:ed)?|describe[d]?|note[d]?|was|am|had|have|did|do|got|bought|booked|picked|"
    r"chose|decided|planned|use[d]?)\b|\bmy\b|\bI'(?:m|ve|d)\b", re.IGNORECASE)
_ANSWER_CUE = re.compile(
    r"\byou\s+(?:say|said|tell|told|mention(?:ed)?|suggest(?:ed)?|recommend(?:ed)?|"
    r"propose[d]?|give|gave|c[oa]me\s+up\s+with|f(?:i|ou)nd|calculate[d]?|look(?:ed)?\s+up|"
    r"wr[io]te|draft(?:ed)?|list(?:ed)?|explain(?:ed)?|advise[d]?|name[d]?|pick(?:ed)?|"
    r"cho(?:o)?se|figure[d]?|work(?:ed)?\s+out|convert(?:ed)?|compute[d]?|offer(?:ed)?)\b",
    re.IGNORECASE)

_FIGURE_CUE = re.compile(
    r"\bhow\s+(?:much|many|long|far|old|big|heavy|tall|often|early|late)\b|\bwhen\b|"
    r"\bwhat\s+(?:time|size|date|day|number|percent(?:age)?|dose|temperature|weight|"
    r"price|score|amount|total)\b|\b(?:cost|costs|price|pay|paid|spend|spent|budget)\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class QueryPlan:
    """A query read for the index: ``weights`` per term, the words each term came from
    (``words``), the ``time`` it points at, the ``speaker`` field to favour, and for
    each term added by meaning the query word and the related word (``related``);
    ``figures``: the query asks for a number ("how much", "when", "what time")."""

    weights: dict[str, float]
    words: dict[str, str] = field(default_factory=dict)
    time: TimeHint = field(default_factory=TimeHint)
    speaker: str = ""
    related: dict[str, tuple[str, str]] = field(default_factory=dict)
    figures: bool = False


def plan(query: str, now: datetime | float | None, *, neighbours: Neighbours | None = None,
         related_weight: float = 0.3, related_per_word: int = 3) -> QueryPlan:
    """Read ``query`` (see the module docstring); dates resolve against ``now``;
    ``neighbours`` gives a word's related words (None: no expansion)."""
    hint = read_time(query, now)
    text = hint.strip(query)
    weights: dict[str, float] = {}
    words: dict[str, str] = {}
    for raw in re.findall(r"\S+", text):
        for term in terms(raw):
            weight = META_WEIGHT if term in META_TERMS else 1.0
            weights[term] = max(weights.get(term, 0.0), weight)
            words.setdefault(term, raw.strip(".,;:!?\"'()[]").lower())
    related: dict[str, tuple[str, str]] = {}
    if neighbours is not None and related_weight > 0:
        for term, word in list(words.items()):
            if weights[term] < 1.0 or not word.isalpha():
                continue
            for other, cosine in neighbours(word)[:related_per_word]:
                for added in terms(other):
                    if added not in weights and added not in META_TERMS:
                        weights[added] = related_weight * cosine
                        related[added] = (word, other)
    speaker = ""
    if _ANSWER_CUE.search(query):
        speaker = "answer"
    elif _USER_CUE.search(query):
        speaker = "user"
    return QueryPlan(weights, words, hint, speaker, related, bool(_FIGURE_CUE.search(text)))
