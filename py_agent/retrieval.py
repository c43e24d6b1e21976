"""Choosing the few tools that matter for a message: BM25 over tool text.

A small model does better with three relevant tools than with fifty. Each tool
becomes a bag of terms from its name (boosted: names are chosen with care), its
description and its parameter names; identifiers are split on camelCase and
snake_case, stop words dropped and words lightly stemmed, so "converting
reminders" meets ``convertUnits`` and ``set_reminder``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from .tokens import is_cjk
from .tools import Tool

STOP_WORDS = frozenset("""
a about above after again all also am an and any are as at be been being below between both
but by can could did do does doing done down during each else few for from further get gets
got had has have having he her here hers him his how i if in into is it its itself just let
me more most my no nor not now of off on once only or other our ours out over own please same
she should so some such than that the their them then there these they this those through
to too under until up very via was we were what when where which while who whom why will
with would you your yours hey hi thanks thank could want need like tell show give make
""".split())

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def stem(word: str) -> str:
    """A light suffix stripper: plural, -ing, -ed, -ly, -ies, doubled consonants.

    Deliberately conservative: it only needs to make inflections of one word
    meet, not to be a linguist.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    word = _american(word)
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ied", "y")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)] + replacement
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running → run, planned → plan
            elif suffix in ("ing", "ed") and base.endswith(("at", "iz", "bl", "ag", "ot")):
                base += "e"  # calculating → calculate, sized → size
            return _strip_e(base)
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return _strip_e(word[:-1])
    return _strip_e(word)


_BRITISH = ((re.compile(r"is(e|ed|es|ing|ation|ations)$"), r"iz\1"),
            (re.compile(r"tre(s?)$"), r"ter\1"),
            (re.compile(r"(?<=[^aeiou])our(s?|ed|ing)$"), r"or\1"))


def _american(word: str) -> str:
    """Fold common British spellings (summarise, litre, colour) onto American ones."""
    if len(word) < 5:
        return word
    for pattern, replacement in _BRITISH:
        word = pattern.sub(replacement, word)
    return word


def _strip_e(word: str) -> str:
    """Drop a final silent e so 'convert'/'converted' and 'rate'/'rated' agree."""
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def tokenize(text: str) -> list[str]:
    """Terms of ``text``: split identifiers, lowercase, drop stop words, stem.

    CJK runs have no spaces, so they become character unigrams and bigrams.
    """
    terms: list[str] = []
    for raw in _WORD.findall(_CAMEL.sub(" ", text)):
        if any(is_cjk(ch) for ch in raw):
            chars = [ch for ch in raw if is_cjk(ch)]
            terms.extend(chars)
            terms.extend(a + b for a, b in zip(chars, chars[1:]))
            rest = "".join(ch if not is_cjk(ch) else " " for ch in raw).split()
            terms.extend(stem(w.lower()) for w in rest if w.lower() not in STOP_WORDS)
            continue
        word = raw.lower()
        if word in STOP_WORDS or len(word) < 2 and not word.isdigit():
            continue
        terms.append(stem(word))
    return terms


@dataclass(frozen=True)
class ScoredTool:
    """A tool and how well it matched the message (``pinned`` tools may score 0)."""

    tool: Tool
    score: float
    pinned: bool = False


class ToolRetriever:
    """Okapi BM25 over a tool registry, with pinned tools always offered."""

    def __init__(self, tools: Iterable[Tool], *, top_k: int = 3, k1: float = 1.2,
                 b: float = 0.75, name_boost: int = 3) -> None:
        self.tools = list(tools)
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        self.top_k, self.k1, self.b, self.name_boost = top_k, k1, b, name_boost
        self._docs = [self._terms(t) for t in self.tools]
        self._lengths = [sum(d.values()) for d in self._docs]
        self._avg_length = (sum(self._lengths) / len(self._lengths)) if self._docs else 0.0
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(doc.keys())
        n = len(self._docs)
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def _terms(self, t: Tool) -> Counter[str]:
        terms: Counter[str] = Counter()
        for _ in range(self.name_boost):
            terms.update(tokenize(t.name))
        terms.update(tokenize(t.description))
        for p in t.params:
            terms.update(tokenize(p.name))
        return terms

    def score(self, query: str) -> list[ScoredTool]:
        """Every tool with its BM25 score for ``query``, best first."""
        query_terms = set(tokenize(query))
        scored = []
        for tool, doc, length in zip(self.tools, self._docs, self._lengths):
            total = 0.0
            norm = self.k1 * (1 - self.b + self.b * length / (self._avg_length or 1))
            for term in query_terms:
                tf = doc.get(term, 0)
                if tf:
                    total += self._idf[term] * tf * (self.k1 + 1) / (tf + norm)
            scored.append(ScoredTool(tool, round(total, 4), tool.pinned))
        return sorted(scored, key=lambda s: s.score, reverse=True)

    def retrieve(self, query: str, k: int | None = None) -> list[ScoredTool]:
        """The top ``k`` matching tools (score above zero), then every pinned tool.

        When the whole registry fits in ``k`` there is nothing to choose between,
        so every tool is offered, matching or not.
        """
        k = self.top_k if k is None else k
        ranked = self.score(query)
        unpinned = [s for s in ranked if not s.tool.pinned]
        if len(unpinned) <= k:
            return ranked
        chosen = [s for s in unpinned if s.score > 0][:k]
        chosen += [s for s in ranked if s.tool.pinned]
        return chosen
