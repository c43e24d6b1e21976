"""Choosing the few tools that matter for a message, and saying why.

Three signals, fused:

- **BM25F** over each tool's fields: its name, keywords, description, the
  requests in its examples, and its parameters (names and descriptions), each
  field with its own weight (:class:`FieldWeights`).
- **Character n-grams** (cosine of tf-idf vectors), which still match when the
  words differ in form ("calculator" and "calculation", a typo, a British
  spelling) and offer candidates when no word matches at all.
- **Word vectors** (:mod:`.embeddings`, a small GloVe table shipped with the
  package): the cosine of the message's mean word vector with each tool's, which
  knows that "kg" and "pounds", or "jazz" and "songs", belong together.
- **Sentence vectors** (:mod:`.dense`), once the agent's embedder is ready and the
  tools' vectors are made (:meth:`ToolRetriever.use_vectors`): the cosine of the
  message's vector with each tool's document, plus ``example_weight`` times its best
  cosine with the tool's example requests, in place of the word vectors. It reads the
  user's languages and meaning rather than words; and a message closer to small talk
  (:mod:`.small_talk`) than to any tool is offered none, which is how chit-chat is told
  apart.

The fused score is a weighted sum of the three, BM25F and n-grams each divided by
its best score for the message, word vectors rescaled from the registry's mean (0)
to the best (1). A tool is a candidate when it matched a term, when its n-gram
similarity passes ``min_similarity``, or when it is among the ``meaning_candidates``
nearest by word vectors; when none of this happens for any tool, the tools most
similar by n-grams are offered. So a request that asks for something always gets
candidates, while chit-chat with no content words ("hi", "thanks!") gets none.

The offer is ``top_k`` tools, plus up to ``close_extra`` more whose score is within
``close_ratio`` of the best: when the ranking cannot tell several tools apart, the
model sees all of them rather than a random cut. The
previous turn's message and tools are a weaker second query, so "and in
Fahrenheit?" after a conversion still finds the converter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..tools import Tool
from ..embedding import VectorIndex as SentenceIndex
from .bm25 import FieldedBM25
from .embeddings import VectorIndex, WordVectors, default_vectors
from .ngrams import CharNgrams, closest_word
from .text import analyze, function_words, split_payload, tokenize, words

_NUMBER = re.compile(r"\d")

FIELDS = ("name", "keywords", "description", "examples", "params")
# A tool whose word-vector score is at least this share of the way from the registry's
# mean to the best shows "word vectors" among the signals that chose it.
MEANING_EVIDENCE = 0.5


@dataclass(frozen=True)
class FieldWeights:
    """How much a term found in each field counts (BM25F weights)."""

    name: float = 3.0
    keywords: float = 2.0
    description: float = 1.0
    examples: float = 1.0
    params: float = 1.0

    def as_dict(self) -> dict[str, float]:
        return {f: getattr(self, f) for f in FIELDS}


@dataclass(frozen=True)
class PreviousTurn:
    """The turn before this message: what the user said and the tools that ran."""

    message: str
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Why:
    """Why a tool was offered: the signals that chose it and what matched.

    ``terms`` maps a field ("name", "examples", ...) to the message's words found
    there; ``example`` is the tool's example request closest to the message;
    ``similar`` pairs a message word with the tool word it resembles (n-grams).
    """

    signals: tuple[str, ...] = ()
    terms: dict[str, list[str]] = field(default_factory=dict)
    example: str = ""
    similar: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"signals": list(self.signals), "terms": {k: list(v) for k, v in self.terms.items()},
                "example": self.example, "similar": [list(p) for p in self.similar]}


@dataclass(frozen=True)
class ScoredTool:
    """A tool and how well it matched the message (``pinned`` tools may score 0)."""

    tool: Tool
    score: float
    pinned: bool = False
    why: Why = field(default_factory=Why)


@dataclass
class _Signals:
    """One message's scores: lexical (BM25F) and n-gram similarity by tool index, what each
    query term contributed, and the fused scores of the candidates."""

    lexical: dict[int, float]
    similarity: dict[int, float]
    by_term: dict[str, dict[int, float]]
    best_lexical: float
    best_similarity: float
    ngram_weight: float
    meaning: dict[int, float] = field(default_factory=dict)
    meaning_weight: float = 0.0
    dense: bool = False
    small_talk: bool = False
    fused: dict[int, float] = field(default_factory=dict)

    def fuse(self, index: int, lexical: float) -> float:
        w, v = self.ngram_weight, self.meaning_weight
        return ((1 - w - v) * lexical / self.best_lexical
                + w * self.similarity.get(index, 0.0) / self.best_similarity
                + v * self.meaning.get(index, 0.0))


@dataclass(frozen=True)
class _Candidate:
    index: int
    score: float
    lexical: float
    similarity: float
    from_previous: float
    meaning: float = 0.0


class ToolRetriever:
    """Hybrid BM25F + character n-gram + word-vector retrieval over a tool registry.

    Args:
        tools: the registry; names must be unique.
        top_k: how many tools to offer (pinned tools come on top of these).
        weights: BM25F field weights.
        ngram_weight: the n-gram signal's share of the fused score.
        min_similarity: the n-gram cosine a tool needs to be offered without a
            matching term.
        previous_weight: how much the previous turn's message counts.
        previous_tool_bonus: added for each tool the previous turn used.
        function_word_weight: the weight of a function word ("how", "that") shared with a
            tool that also matched a content word.
        payload_weight: the weight of words in quotes or after a short lead-in.
        coverage_discount: what a word already matched by an offered tool still counts
            for the next pick.
        meaning_weight: the word-vector signal's share of the fused score (0: off).
        meaning_candidates: how many tools nearest by word vectors become candidates
            even without a matching term.
        close_extra: how many tools beyond ``top_k`` may be offered when close to the best.
        close_ratio: the share of the best score such an extra tool needs.
        vectors: the word-vector table (True: the shipped one; None or False: none).
        dense_weight: the sentence-vector signal's share of the fused score, once
            :meth:`use_vectors` gave the tools' vectors and a message comes with its own.
        dense_candidates: how many tools nearest by sentence vectors become candidates.
        dense_weight_unknown: the sentence-vector signal's share for a message none of
            whose words the tools have (another language, other words): between the two
            in proportion to the share of the message's words the tools know.
        example_weight: how much a tool's best example request counts beside its document.
        small_talk_at: a message at least this close (cosine) to a small-talk sentence,
            and closer to it than to any tool by ``small_talk_margin``, is offered no
            tool (1 or more: never), unless some tool matched its words with a BM25F
            score of ``small_talk_lexical`` or more (a request in a tool's own words).

    The defaults were tuned on the tune halves of tests/data's sets (bench/retrieval.py).
    """

    def __init__(self, tools: Iterable[Tool], *, top_k: int = 3, k1: float = 1.2,
                 b: float = 0.75, weights: FieldWeights | None = None,
                 ngram_weight: float = 0.3, min_similarity: float = 0.12,
                 previous_weight: float = 0.35, previous_tool_bonus: float = 0.25,
                 function_word_weight: float = 0.15, payload_weight: float = 0.3,
                 coverage_discount: float = 0.5, meaning_weight: float = 0.2,
                 meaning_candidates: int = 3,
                 close_extra: int = 2, close_ratio: float = 0.6,
                 vectors: WordVectors | None | bool = True, dense_weight: float = 0.2,
                 dense_candidates: int = 3, dense_weight_unknown: float = 0.6,
                 example_weight: float = 0.5,
                 small_talk_at: float = 0.6, small_talk_margin: float = 0.05,
                 small_talk_lexical: float = 5.0) -> None:
        self.tools = list(tools)
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        self.top_k = top_k
        self.weights = weights or FieldWeights()
        self.ngram_weight = ngram_weight
        self.min_similarity = min_similarity
        self.previous_weight = previous_weight
        self.previous_tool_bonus = previous_tool_bonus
        self.function_word_weight = function_word_weight
        self.payload_weight = payload_weight
        self.coverage_discount = coverage_discount
        self._by_name = {t.name: i for i, t in enumerate(self.tools)}
        self._fields = [_fields_of(t) for t in self.tools]
        self._example_terms = [[set(tokenize(e)) for e in t.examples] for t in self.tools]
        self._bm25 = FieldedBM25(self._fields, self.weights.as_dict(), k1=k1,
                                 b={"name": 0.3, "keywords": 0.3, "description": b,
                                    "examples": b, "params": b})
        self._words = [_weighted_words(t, self.weights) for t in self.tools]
        self._ngrams = CharNgrams(self._words)
        table = default_vectors() if vectors is True else (vectors or None)
        self.meaning_weight = meaning_weight if table is not None else 0.0
        self.meaning_candidates = meaning_candidates
        self.close_extra = close_extra
        self.close_ratio = close_ratio
        self._meaning = VectorIndex(table, self._words) if table is not None else None
        self._numeric = [i for i, t in enumerate(self.tools) if not t.pinned and any(
            p.schema.get("type") in ("number", "integer") for p in t.params)]
        self.dense_weight = dense_weight
        self.dense_candidates = dense_candidates
        self.dense_weight_unknown = dense_weight_unknown
        self.example_weight = example_weight
        self.small_talk_at = small_talk_at
        self.small_talk_margin = small_talk_margin
        self.small_talk_lexical = small_talk_lexical
        self._dense: SentenceIndex | None = None
        self._examples: SentenceIndex | None = None
        self._small_talk: SentenceIndex | None = None
        self.dense_space = ""

    def use_vectors(self, space: str, vectors: Sequence[Sequence[float]],
                    examples: Sequence[Sequence[Sequence[float]]] = (),
                    small_talk: Sequence[Sequence[float]] = ()) -> None:
        """The tools' sentence vectors from the embedding space ``space`` (:mod:`.dense`
        makes them): one per tool's document, in order; per tool, one per example
        request; and the small-talk sentences'. Messages given a vector of that space
        are then ranked with them."""
        if len(vectors) != len(self.tools) or (examples and len(examples) != len(self.tools)):
            raise ValueError(f"{len(vectors)} vectors for {len(self.tools)} tools")
        if not vectors:
            self._dense, self._examples, self._small_talk, self.dense_space = None, None, None, ""
            return
        dimension = len(vectors[0])
        documents, requests, chat = (SentenceIndex(dimension), SentenceIndex(dimension),
                                     SentenceIndex(dimension))
        for i, vector in enumerate(vectors):
            documents.add(i, vector)
        for i, tool_examples in enumerate(examples):
            for n, vector in enumerate(tool_examples):
                requests.add((i, n), vector)
        for n, vector in enumerate(small_talk):
            chat.add(n, vector)
        self._dense, self._examples = documents, requests if len(requests) else None
        self._small_talk, self.dense_space = chat if len(chat) else None, space

    def _dense_scores(self, vector: Sequence[float], documents: dict) -> dict[int, float]:
        """Each tool's cosine with the message (``documents``), plus ``example_weight``
        times its best example's (when positive)."""
        scores = dict(documents)
        if self._examples is not None and self.example_weight:
            best: dict[int, float] = {}
            for (i, _), cosine in self._examples.scores(vector).items():  # type: ignore[misc]
                if cosine > best.get(i, 0.0):
                    best[i] = cosine
            for i, cosine in best.items():
                scores[i] += self.example_weight * cosine
        return scores  # type: ignore[return-value]

    def small_talk(self, vector: Sequence[float], nearest_tool: float) -> bool:
        """True if ``vector`` reads as small talk rather than a request for a tool."""
        if self._small_talk is None or self.small_talk_at >= 1:
            return False
        chat = max(self._small_talk.scores(vector).values(), default=0.0)
        return chat >= self.small_talk_at and chat > nearest_tool + self.small_talk_margin

    def dense_ready(self, space: str) -> bool:
        """True if the tools' vectors of ``space`` are here."""
        return self._dense is not None and self.dense_space == space and bool(space)

    # ------------------------------------------------------------------ ranking

    def _signals(self, query: str, vector: Sequence[float] | None = None) -> "_Signals":
        """All signals and their fusion, by tool index, for one message (``vector``: its
        sentence vector, used in place of word vectors when the tools have theirs)."""
        request, payload = split_payload(query)
        terms = dict.fromkeys(tokenize(request), 1.0)
        for term in tokenize(payload):
            terms.setdefault(term, self.payload_weight)
        by_term = self._bm25.contributions(terms)
        lexical: dict[int, float] = {}
        for contributions in by_term.values():
            for index, value in contributions.items():
                lexical[index] = lexical.get(index, 0.0) + value
        if self.function_word_weight and lexical:
            # Phrasing ("how do I ...", "remember that ...") only breaks ties between tools
            # that matched a content word; it never makes a tool a candidate by itself.
            weak = dict.fromkeys(function_words(request), self.function_word_weight)
            for index, score in self._bm25.scores(weak).items():
                if index in lexical:
                    lexical[index] += score
        request_words = words(request)
        similarity = self._ngrams.scores(request_words)
        dense = vector is not None and self._dense is not None and bool(self.dense_weight)
        chat = False  # the message reads as small talk
        if dense:
            documents = self._dense.scores(vector)  # type: ignore[union-attr]
            nearest = max((s for i, s in documents.items() if not self.tools[i].pinned),  # type: ignore[index]
                          default=0.0)
            chat = (max(lexical.values(), default=0.0) < self.small_talk_lexical
                    and self.small_talk(vector, nearest))  # type: ignore[arg-type]
            meaning = _rescaled(self._dense_scores(vector, documents))  # type: ignore[arg-type]
            known = sum(1 for t in terms if self._bm25.knows(t)) / len(terms) if terms else 0.0
            meaning_weight = self.dense_weight + (
                self.dense_weight_unknown - self.dense_weight) * (1 - known)
            candidates = self.dense_candidates
        else:
            meaning = self._meaning_scores(request_words)
            meaning_weight, candidates = self.meaning_weight, self.meaning_candidates
        chosen = set(lexical) | {i for i, s in similarity.items() if s >= self.min_similarity}
        if meaning and candidates:
            chosen |= set(sorted(meaning, key=lambda i: -meaning[i])[:candidates])
        if not chosen:
            # Nothing matched a term: the request still gets the tools whose words look most
            # like its own, rather than none at all; failing that, a message with a number in
            # it gets the tools that take a number.
            floor = sorted(similarity.values(), reverse=True)[:self.top_k]
            chosen = {i for i, s in similarity.items() if floor and s >= floor[-1] and s > 0}
            if not chosen and _NUMBER.search(request):
                chosen = set(self._numeric[:self.top_k])
                lexical = dict.fromkeys(chosen, 0.0)
        signals = _Signals(lexical, similarity, by_term,
                           max(lexical.values(), default=0.0) or 1.0,
                           max(similarity.values(), default=0.0) or 1.0, self.ngram_weight,
                           meaning, meaning_weight, dense, chat)
        signals.fused = {i: signals.fuse(i, lexical.get(i, 0.0)) for i in chosen}
        return signals

    def _meaning_scores(self, query_words: list[str]) -> dict[int, float]:
        """Word-vector cosines rescaled per message: the mean tool 0, the best 1."""
        if self._meaning is None or not self.meaning_weight:
            return {}
        return _rescaled(self._meaning.scores(query_words))

    def _rank(self, query: str, previous: PreviousTurn | None,
              vector: Sequence[float] | None = None) -> tuple[list[_Candidate], "_Signals"]:
        now = self._signals(query, vector)
        earlier: dict[int, float] = {}
        if previous is not None and (self.previous_weight or self.previous_tool_bonus):
            if previous.message.strip() and self.previous_weight:
                before = self._signals(previous.message).fused
                earlier = {i: self.previous_weight * s for i, s in before.items()}
            for name in previous.tools:
                index = self._by_name.get(name)
                if index is not None:
                    earlier[index] = earlier.get(index, 0.0) + self.previous_tool_bonus
        ranked = [_Candidate(i, now.fused.get(i, 0.0) + earlier.get(i, 0.0),
                             now.lexical.get(i, 0.0), now.similarity.get(i, 0.0),
                             earlier.get(i, 0.0), now.meaning.get(i, 0.0))
                  for i in set(now.fused) | set(earlier)]
        ranked.sort(key=lambda c: (-c.score, c.index))
        return ranked, now

    def _cover(self, ranked: list[_Candidate], now: "_Signals", k: int) -> list[_Candidate]:
        """The best ``k`` by turns: after each pick, the words it already matched count for
        less, so a request with two intents ("convert 2 lb to grams and double it") is
        offered a tool for each rather than three for the first."""
        pool = list(ranked[:max(10, 4 * k)])  # lower ranks cannot catch up
        picked: list[_Candidate] = []
        covered: set[str] = set()
        while pool and len(picked) < k:
            if covered:
                def rescored(c: _Candidate) -> float:
                    overlap = sum(now.by_term[t].get(c.index, 0.0) for t in covered)
                    lexical = c.lexical - (1 - self.coverage_discount) * overlap
                    return now.fuse(c.index, lexical) + c.from_previous
                best = max(pool, key=lambda c: (rescored(c), -c.index))
            else:
                best = pool[0]
            pool.remove(best)
            picked.append(best)
            covered.update(t for t, docs in now.by_term.items() if best.index in docs)
        return picked

    def score(self, query: str, previous: PreviousTurn | None = None, *,
              vector: Sequence[float] | None = None) -> list[ScoredTool]:
        """Every tool with its fused score for ``query``, best first (unmatched ones last, 0)."""
        ranked, _ = self._rank(query, previous, vector)
        seen = {c.index for c in ranked}
        out = [ScoredTool(self.tools[c.index], round(c.score, 4), self.tools[c.index].pinned)
               for c in ranked]
        out += [ScoredTool(t, 0.0, t.pinned) for i, t in enumerate(self.tools) if i not in seen]
        return out

    def retrieve(self, query: str, k: int | None = None, *,
                 previous: PreviousTurn | None = None,
                 vector: Sequence[float] | None = None) -> list[ScoredTool]:
        """The top ``k`` candidates and up to ``close_extra`` more whose score is close to
        the best (see the module docstring), then every pinned tool.

        When the whole registry fits in ``k`` there is nothing to choose between,
        so every tool is offered, matching or not. ``vector``: the message's sentence
        vector, in the space of :meth:`use_vectors`' (None: word vectors, as before).
        """
        k = self.top_k if k is None else k
        ranked, now = self._rank(query, previous, vector)
        unpinned = [i for i, t in enumerate(self.tools) if not t.pinned]
        pinned = [i for i, t in enumerate(self.tools) if t.pinned]
        if now.small_talk:  # closer to small talk than to any tool: no tool offered
            unpinned = []
            ranked = [c for c in ranked if self.tools[c.index].pinned]
        if not unpinned:
            chosen = []
        elif len(unpinned) <= k:
            by_index = {c.index: c for c in ranked}
            order = sorted(unpinned, key=lambda i: (-(by_index[i].score if i in by_index else 0), i))
            chosen = [by_index.get(i, _Candidate(i, 0.0, 0.0, 0.0, 0.0)) for i in order]
        else:
            pool = [c for c in ranked if not self.tools[c.index].pinned]
            chosen = self._cover(pool, now, k + self.close_extra)
            if chosen:
                bar = self.close_ratio * chosen[0].score
                chosen = chosen[:k] + [c for c in chosen[k:] if c.score >= bar]
        by_index = {c.index: c for c in ranked}
        chosen += [by_index.get(i, _Candidate(i, 0.0, 0.0, 0.0, 0.0)) for i in pinned]
        query_pairs = analyze(query)
        has_number = bool(_NUMBER.search(query))
        query_words = words(query)
        return [ScoredTool(self.tools[c.index], round(c.score, 4), self.tools[c.index].pinned,
                           self._why(c, query_pairs, query_words, has_number, now.dense))
                for c in chosen]

    # ----------------------------------------------------------------- evidence

    def _why(self, c: _Candidate, query_pairs: Sequence[tuple[str, str]],
             query_words: Sequence[str], has_number: bool, dense: bool = False) -> Why:
        signals = []
        if c.lexical > 0:
            signals.append("bm25")
        if c.similarity >= self.min_similarity:
            signals.append("ngrams")
        if c.meaning >= MEANING_EVIDENCE:
            signals.append("sentence vectors" if dense else "word vectors")
        if c.from_previous > 0:
            signals.append("previous turn")
        if self.tools[c.index].pinned:
            signals.append("pinned")
        if not signals and c.index in self._numeric and has_number:
            signals.append("takes a number")
        fields = self._fields[c.index]
        terms: dict[str, list[str]] = {}
        matched: set[str] = set()
        for name in FIELDS:
            have = set(fields.get(name, ()))
            found = [w for t, w in query_pairs if t in have]
            if found:
                terms[name] = list(dict.fromkeys(w.lower() for w in found))
                matched.update(t for t, _ in query_pairs if t in have)
        query_terms = {t for t, _ in query_pairs}
        example = ""
        overlaps = [(len(query_terms & e), i) for i, e in enumerate(self._example_terms[c.index])]
        best = max(overlaps, default=(0, -1))
        if best[0]:
            example = self.tools[c.index].examples[best[1]]
        similar = []
        if "ngrams" in signals:
            unmatched = [w for w in query_words if not set(tokenize(w)) & matched]
            vocabulary = self._words[c.index].keys()
            for word in unmatched:
                other, score = closest_word(word, vocabulary)
                if score >= 0.5 and other != word:
                    similar.append((word, other))
        return Why(tuple(signals), terms, example, tuple(similar[:3]))


def _rescaled(raw: dict[int, float]) -> dict[int, float]:
    """Cosines rescaled per message: the registry's mean 0, the best 1 (above the mean
    only)."""
    if not raw:
        return {}
    mean = sum(raw.values()) / len(raw)
    span = max(raw.values()) - mean
    if span <= 0:
        return {}
    return {i: (s - mean) / span for i, s in raw.items() if s > mean}


def _fields_of(t: Tool) -> dict[str, list[str]]:
    def terms(text: str) -> list[str]:
        return tokenize(text) + function_words(text)
    params = []
    for p in t.params:
        params += tokenize(p.name) + terms(p.description)
    return {"name": tokenize(t.name), "keywords": tokenize(" ; ".join(t.keywords)),
            "description": terms(t.description),
            "examples": [term for e in t.examples for term in terms(e)],
            "params": params}


def _weighted_words(t: Tool, weights: FieldWeights) -> dict[str, float]:
    """A tool's words with the weight of the best field each appears in."""
    out: dict[str, float] = {}
    texts = [(t.name, weights.name), (" ".join(t.keywords), weights.keywords),
             (t.description, weights.description), (" ".join(t.examples), weights.examples),
             (" ".join(p.name for p in t.params), weights.params)]
    for text, weight in texts:
        for word in words(text):
            out[word] = out.get(word, 0.0) + weight
    return out
