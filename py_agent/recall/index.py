"""The recall index: every archived turn of every session, searchable, updated a turn at a time.

Scoring, for one query (:mod:`.query`):

1. **BM25F** over four fields of each turn (:mod:`.analysis`): the user's words, the
   answer's, the tools', and the names and numbers, each with its weight and length
   normalisation. Field lengths and document frequencies change as turns come and go,
   so postings keep raw counts and the normalisation is applied at query time (cached
   per turn while the average lengths stay within a few percent). Query words bring
   their nearest words by meaning at a lower weight (:mod:`.neighbors`).
2. **Conversation**: a turn's context is the session's previous user message (a fifth
   field, read at query time from that turn's postings: "yes, go on" answers what was
   asked before), and a turn gets a share of the next turn's score (the next turn often
   explains it: "is gochujang hot?" after the recipe). A session's title counts a
   little for its turns.
3. **Speaker**: "what did *you* recommend" weighs the answer field up, "what did *I* say"
   the user's.
4. **Details**: recall asks for names and figures, so turns rich in them get a bonus
   (in figures when the query asks "how much" or "when").
5. **Time**: a window read from the query ("last week", resolved against ``now``) scales
   each turn's score by its closeness to the window: a soft filter, so a turn a day
   outside still ranks above an unrelated one inside.
6. **Recency**: newer candidates get a small bonus, so of two turns saying nearly the
   same thing (a fact that changed) the newest ranks first; "originally", "at first"
   turn this around, "lately", "these days" make it stronger.

A query with no content word but a time ("what did we talk about yesterday?") ranks the
turns of that window, newest first.

The index is one :class:`~.segment.Segment` per session; :mod:`.storage` saves and loads
a session's segment as a compressed blob, so a store keeps it beside the archive and it
follows its session (export, import, deletion), while a session whose blob is missing or
stale is simply re-indexed from its archived turns.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Container, Iterable, Mapping

from ..state import Turn
from .analysis import FIELDS, AnalyzedTurn, analyze_turn, display_text
from .hit import Hit, HitWhy
from .neighbors import default_neighbors
from .query import Neighbours, QueryPlan, plan
from .segment import MASK, SHIFTS, Segment

# Averages may drift this much before the cached per-turn normalisation is recomputed.
_DRIFT = 0.05
# A query term found in more turns than this (and than a sixteenth of them) only adds to
# turns that rarer terms found: walking its postings would cost more than it tells.
_COMMON = 400
# Candidates enough that a term in more turns than them only adds to them.
_ENOUGH = 100
# The merged postings of this many terms are kept (the oldest asked is dropped first).
_MERGED_TERMS = 4096
# A search key is (segment number << _LOCAL_BITS) | the turn's local number.
_LOCAL_BITS = 24
_LOCAL_MASK = (1 << _LOCAL_BITS) - 1
# Recency compares a candidate's time with those of this many strongest candidates.
_RECENCY_POOL = 50
# A turn with this many names and figures gets the whole detail bonus.
_DETAILS = 4

# Turn keys ``(session_id, turn_id)`` in, their cosines with the query out (turns
# without a vector left out): how a search asks for the meaning of its own candidates.
DenseLookup = Callable[[list[tuple[str, int]]], Mapping[tuple[str, int], float]]


@dataclass(frozen=True)
class RecallSettings:
    """The index's knobs; the defaults were tuned on the tune half of the recall set
    (``bench/recall.py``).

    ``weights`` and ``b``: BM25F field weights and length normalisation, in the order of
    :data:`~.analysis.FIELDS` (user, answer, tools, names). ``context_weight``: the
    weight of the previous user message of the session, a field every turn has at query
    time (in a conversation "yes" or "go on then" is about what was asked just before,
    and the answer to it is where the detail is). ``speaker_boost``: the factor
    on the field a query points at. ``time_floor``: what a turn far outside the query's
    time window keeps of its score. ``recency``: the largest bonus (a share of the score)
    for being the newest candidate; ``recency_preferred`` when the query asks for the
    newest or oldest explicitly: a small factor, it decides between near-ties, such as
    two statements of a fact that changed. ``related_weight``: the weight of a word related by
    meaning to a query word (times their cosine; 0: no expansion), ``related_per_word``
    how many each query word brings. ``lead_weight``: the share of a matching turn's
    score its session's previous turn gets (a turn explained by the next one: "is
    gochujang hot?" after the recipe that uses it; the other way round, a follow-up
    such as "go on then", is the ``context`` field's job).
    ``title_weight``: the weight of query words found in a session's title, added to
    that session's matching turns. ``detail_weight``: the largest bonus (a share of the
    score) for a turn rich in names and figures, since recall asks for details;
    ``figure_weight`` the same for a turn rich in figures when the query asks for a
    number ("how much", "when", "what time").
    ``text_chars``: the length of a hit's display text.
    ``dense_weight``: the weight of the sentence-vector signal, when a search is given
    its turns' cosines with the query (:mod:`.vectors`): the lexical score is divided by
    the search's best, the cosine rescaled from ``dense_floor`` (0) to the best cosine
    given (1), and the two added; time, recency and details then apply to the sum.
    ``dense_weight_unmatched``: the weight when the best lexical hit matched none of the
    query's words (a paraphrase): between the two in proportion to that hit's coverage.
    ``dense_lexical``: how many of the best lexical candidates have their own cosine
    looked up when the search can (``dense_lookup``), so that a turn's meaning counts
    whether or not it was among the nearest turns given: without it, the nearest got a
    bonus the others lacked, which on LoCoMo cost 3 points of hit@5 (docs/recall.md).
    """

    weights: tuple[float, float, float, float] = (1.0, 0.7, 0.4, 0.3)
    b: tuple[float, float, float, float] = (0.6, 0.75, 0.75, 0.3)
    context_weight: float = 0.15
    k1: float = 0.9
    speaker_boost: float = 1.6
    time_floor: float = 0.25
    recency: float = 0.15
    recency_preferred: float = 0.3
    related_weight: float = 0.3
    related_per_word: int = 3
    lead_weight: float = 0.3
    title_weight: float = 0.5
    detail_weight: float = 0.3
    figure_weight: float = 0.3
    text_chars: int = 600
    dense_weight: float = 0.5
    dense_weight_unmatched: float = 2.0
    dense_floor: float | None = 0.0
    dense_lexical: int = 50


class RecallIndex:
    """Archived turns of many sessions, searchable with :meth:`search`.

    Keyed by ``(session_id, turn_id)``: adding a turn whose key is present replaces it
    (the archive replaces a turn's "interrupted" placeholder by its final copy).
    """

    def __init__(self, settings: RecallSettings | None = None, *,
                 neighbours: Neighbours | None | bool = True) -> None:
        """``neighbours``: related words for query expansion (True: the shipped table,
        None or False: none)."""
        self.settings = settings or RecallSettings()
        self._neighbours = default_neighbors() if neighbours is True else (neighbours or None)
        self._segments: dict[str, Segment] = {}
        self._numbers: dict[str, int] = {}
        self._by_number: dict[int, Segment] = {}
        self._next_number = 0
        self._totals = [0] * len(FIELDS)
        self._count = 0
        # Search key -> 1 / (1 - b + b * length / average) per field, for the averages in
        # _norm_averages (all recomputed when they drift).
        self._norms: dict[int, tuple[float, ...]] = {}
        self._norm_averages: tuple[float, ...] = ()
        # Term -> {search key: packed counts} over every segment (tombstones included),
        # made when a query first asks for the term, kept up to date as turns are added,
        # dropped when any turn is removed: a query walks one dict per term, not one
        # posting list per session.
        self._merged: dict[str, dict[int, int]] = {}

    # ---------------------------------------------------------------- updates

    def add(self, session_id: str, turn: Turn) -> None:
        """Index (or re-index) one archived turn."""
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.add_analyzed(analyze_turn(session_id, turn, text_chars=self.settings.text_chars))

    def add_many(self, session_id: str, turns: Iterable[Turn]) -> int:
        count = 0
        for turn in turns:
            self.add(session_id, turn)
            count += 1
        return count

    def add_analyzed(self, turn: AnalyzedTurn) -> None:
        """Index a turn analyzed by :func:`~.analysis.analyze_turn`."""
        segment = self._segment(turn.session_id)
        lengths, replaced = segment.add(turn)
        self._account(lengths, +1)
        if replaced is not None:
            self._account(replaced, -1)
            self._forget_counts()  # the segment may have been compacted
        elif self._merged:
            merged = self._merged
            local = len(segment.turn_ids) - 1
            key = self._numbers[turn.session_id] << _LOCAL_BITS | local
            for term in {t for counts in turn.fields.values() for t in counts}:
                if term in merged:
                    merged[term][key] = segment.count(term, local)

    def _segment(self, session_id: str) -> Segment:
        segment = self._segments.get(session_id)
        if segment is None:
            segment = self._attach(Segment(session_id))
        return segment

    def _attach(self, segment: Segment) -> Segment:
        number = self._next_number
        self._next_number += 1
        self._segments[segment.session_id] = segment
        self._numbers[segment.session_id] = number
        self._by_number[number] = segment
        return segment

    def _account(self, lengths: list[int], sign: int) -> None:
        for i in range(len(FIELDS)):
            self._totals[i] += sign * lengths[i]
        self._count += sign

    def hydrate(self, session_id: str, turns: Iterable[Turn]) -> int:
        """Give a session's indexed turns their display texts from its archived turns
        (a session loaded from a saved blob has none: the blob leaves the text to the
        archive). No analysis: cheap. Returns how many turns got one."""
        segment = self._segments.get(session_id)
        if segment is None:
            return 0
        chars = self.settings.text_chars
        return sum(segment.set_text(int(t.id), display_text(t, chars)) for t in turns)

    def set_title(self, session_id: str, title: str) -> None:
        """A session's title (as the session list shows it): its words count a little
        for every turn of the session. Kept with the session's saved index."""
        self._segment(session_id).set_title(title)

    def remove_turn(self, session_id: str, turn_id: int) -> bool:
        """Forget one turn; False if it was not indexed."""
        segment = self._segments.get(session_id)
        if segment is None:
            return False
        self._forget_counts()  # compaction may renumber the segment's turns
        lengths = segment.remove(int(turn_id))
        if lengths is None:
            return False
        self._account(lengths, -1)
        if not len(segment):
            self._detach(session_id)
        return True

    def remove_session(self, session_id: str) -> int:
        """Forget every turn of a session; returns how many there were (0 if unknown)."""
        segment = self._segments.get(session_id)
        if segment is None:
            return 0
        count = len(segment)
        for turn_id, local in segment.live.items():
            self._account(segment.lengths[local], -1)
        self._detach(session_id)
        return count

    def _detach(self, session_id: str) -> None:
        del self._segments[session_id]
        number = self._numbers.pop(session_id)
        del self._by_number[number]
        self._forget_counts()

    def _forget_counts(self) -> None:
        """Drop the merged postings and normalisations (after a removal or compaction)."""
        self._merged.clear()
        self._norms.clear()

    def segment_data(self, session_id: str) -> dict[str, Any] | None:
        """A session's segment as JSON-ready data (see :mod:`.storage`), or None."""
        segment = self._segments.get(session_id)
        if segment is None:
            return None
        self._forget_counts()  # saving compacts, which renumbers
        return segment.to_data()

    def put_segment(self, session_id: str, data: dict[str, Any]) -> int:
        """Replace a session's turns by a saved segment; returns how many turns it has.
        ValueError (and nothing changed) when ``data`` is not a segment."""
        segment = Segment.from_data(session_id, data)
        self.remove_session(session_id)
        if not len(segment):
            return 0
        self._attach(segment)
        for local in segment.live.values():
            self._account(segment.lengths[local], +1)
        self._merged.clear()
        return len(segment)

    # ------------------------------------------------------------------ reads

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        segment = self._segments.get(key[0])
        return segment is not None and key[1] in segment.live

    def sessions(self) -> set[str]:
        """The sessions with at least one indexed turn."""
        return set(self._segments)

    def turn_ids(self, session_id: str) -> list[int]:
        segment = self._segments.get(session_id)
        return sorted(segment.live) if segment else []

    def analyzed(self, session_id: str) -> list[AnalyzedTurn]:
        """A session's indexed turns as analyzed, oldest id first (for tests)."""
        segment = self._segments.get(session_id)
        return list(segment.analyzed()) if segment else []

    # ----------------------------------------------------------------- search

    def search(self, query: str, *, sessions: Iterable[str] | None = None,
               k: int = 5, now: datetime | float | None = None,
               exclude: Container[tuple[str, int]] = (),
               until: float | None = None,
               dense: Mapping[tuple[str, int], float] | None = None,
               dense_lookup: DenseLookup | None = None) -> list[Hit]:
        """The ``k`` archived turns that best answer ``query``, best first.

        ``sessions``: only turns of these sessions (None: all); ``now``: the moment the
        query is asked, for "yesterday" and "last week" (an aware datetime, whose time
        zone sets where days begin, or epoch milliseconds taken as UTC; default: the
        clock); ``exclude``: ``(session_id, turn_id)`` keys to leave out (the turns
        already in the prompt); ``until``: leave out turns created after this moment
        (epoch ms: a search as of a past moment); ``dense``: the cosines of turns
        nearest to the query by sentence vectors, ``(session_id, turn_id)`` -> cosine,
        fused with the lexical score (``dense_weight``; they may add turns no word
        matched). ``dense_lookup``: the cosines of other turns on request, asked for
        the best ``dense_lexical`` lexical candidates that ``dense`` lacks. A query with
        no searchable word, no time and no ``dense`` gives no hits.
        """
        if not isinstance(query, str):
            raise TypeError("query must be a string")
        if not query.strip():
            raise ValueError("empty recall query")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError("k must be a positive integer")
        if isinstance(sessions, str):
            raise TypeError("sessions must be a collection of session ids, not one string")
        wanted = plan(query, now, neighbours=self._neighbours,
                      related_weight=self.settings.related_weight,
                      related_per_word=self.settings.related_per_word)
        if sessions is None:
            segments = list(self._segments.values())
        else:
            segments = [self._segments[s] for s in set(sessions) if s in self._segments]
        if not segments:
            return []
        base = self._lexical(wanted, segments)
        if not base and wanted.time.window:
            base = self._window_only(wanted, segments)
        near: dict[int, float] = {}
        if dense and self.settings.dense_weight > 0:
            near = self._dense_keys(dense, segments)
            if dense_lookup is not None:
                near.update(self._looked_up(base, near, dense_lookup))
            base = self._fused(base, near, self._coverage(wanted, base, exclude, until))
        if exclude or until is not None:
            base = {key: score for key, score in base.items()
                    if self._keep(key, exclude, until)}
        if not base:
            return []
        return self._finish(wanted, base, k, near)

    def _dense_keys(self, dense: Mapping[tuple[str, int], float],
                    segments: list[Segment]) -> dict[int, float]:
        """The given cosines by search key, for live turns of the searched sessions."""
        allowed = {s.session_id for s in segments}
        out: dict[int, float] = {}
        for (session_id, turn_id), cosine in dense.items():
            if session_id not in allowed:
                continue
            segment = self._segments[session_id]
            local = segment.live.get(turn_id)
            if local is not None:
                out[self._numbers[session_id] << _LOCAL_BITS | local] = cosine
        return out

    def _looked_up(self, base: dict[int, float], near: dict[int, float],
                   lookup: DenseLookup) -> dict[int, float]:
        """The cosines of the best lexical candidates that ``near`` lacks, by search key."""
        best = heapq.nlargest(self.settings.dense_lexical, base, key=base.__getitem__)
        keys: dict[tuple[str, int], int] = {}
        for key in best:
            if key not in near:
                segment, local = self._locate(key)
                keys[segment.session_id, segment.turn_ids[local]] = key
        if not keys:
            return {}
        return {keys[found]: cosine for found, cosine in lookup(list(keys)).items()
                if found in keys}

    def _coverage(self, wanted: QueryPlan, base: dict[int, float],
                  exclude: Container[tuple[str, int]], until: float | None) -> float:
        """How much of the query the best lexical hit matched (0 to 1; 0 with none)."""
        settings = self.settings
        if settings.dense_weight_unmatched == settings.dense_weight:
            return 1.0  # (not needed)
        if exclude or until is not None:
            base = {key: score for key, score in base.items() if self._keep(key, exclude, until)}
        if not base:
            return 0.0
        [best] = self._finish(wanted, base, 1)
        return best.why.coverage

    def _fused(self, base: dict[int, float], near: dict[int, float],
               coverage: float = 1.0) -> dict[int, float]:
        """Lexical scores over their best, plus the weighted, rescaled cosines."""
        if not near:
            return base
        best_lexical = max(base.values(), default=0.0) or 1.0
        floor = self.settings.dense_floor
        if floor is None:  # the pool's own spread: the farthest candidate given is 0
            floor = min(near.values())
        top = max(near.values())
        span = top - floor
        settings = self.settings
        weight = settings.dense_weight + (
            settings.dense_weight_unmatched - settings.dense_weight) * (1 - coverage)
        out = {key: score / best_lexical for key, score in base.items()}
        if span <= 0:
            return out
        for key, cosine in near.items():
            if cosine > floor:
                out[key] = out.get(key, 0.0) + weight * (cosine - floor) / span
        return out

    def _locate(self, key: int) -> tuple[Segment, int]:
        return self._by_number[key >> _LOCAL_BITS], key & _LOCAL_MASK

    def _keep(self, key: int, exclude: Container[tuple[str, int]], until: float | None) -> bool:
        segment, local = self._locate(key)
        if until is not None and segment.times[local] > until:
            return False
        return (segment.session_id, segment.turn_ids[local]) not in exclude

    def _field_weights(self, wanted: QueryPlan) -> list[float]:
        weights = list(self.settings.weights)
        if wanted.speaker:
            i = FIELDS.index(wanted.speaker)
            weights[i] *= self.settings.speaker_boost
            if wanted.speaker == "answer":  # what the assistant found includes its tools
                weights[2] *= self.settings.speaker_boost
        return weights

    def _norm(self, key: int) -> tuple[float, ...]:
        """A turn's 1 / (1 - b + b * length / average) per field, cached."""
        segment = self._by_number[key >> _LOCAL_BITS]
        row = segment.lengths[key & _LOCAL_MASK]
        averages = self._norm_averages
        b = self.settings.b
        norm = tuple(1.0 / (1 - b[i] + b[i] * row[i] / averages[i]) for i in range(len(FIELDS)))
        self._norms[key] = norm
        return norm

    def _refresh_averages(self) -> None:
        n = max(1, self._count)
        averages = tuple(max(1.0, t / n) for t in self._totals)
        old = self._norm_averages
        if not old or any(abs(a - o) > _DRIFT * o for a, o in zip(averages, old)):
            self._norm_averages = averages
            self._norms.clear()

    def _postings(self, term: str) -> dict[int, int]:
        """Every turn with ``term`` (search key -> packed counts), merged and cached."""
        merged = self._merged.get(term)
        if merged is None:
            merged = {}
            for number, segment in self._by_number.items():
                entry = segment.postings.get(term)
                if entry:
                    high = number << _LOCAL_BITS
                    merged.update(zip([high | local for local in entry[0]], entry[1]))
            if len(self._merged) >= _MERGED_TERMS:
                self._merged.pop(next(iter(self._merged)))
            self._merged[term] = merged
        return merged

    def _idf(self, term: str) -> float:
        """A term's idf over the whole index (a word no turn has weighs the most)."""
        df = len(self._postings(term))
        return math.log(1 + (self._count - df + 0.5) / (df + 0.5))

    def _lexical(self, wanted: QueryPlan, segments: list[Segment]) -> dict[int, float]:
        """BM25F score per matching turn. Terms are taken rarest first; a common one
        (see ``_COMMON``) only adds to turns already found, unless none were."""
        self._refresh_averages()
        wu, wa, wt, wn = self._field_weights(wanted)
        wc = self.settings.context_weight
        k1 = self.settings.k1
        k1_1 = k1 + 1
        n = self._count
        common = max(_COMMON, n // 16)
        allowed = None if len(segments) == len(self._segments) else {
            self._numbers[segment.session_id] for segment in segments}
        dead = {self._numbers[s.session_id] << _LOCAL_BITS | local
                for s in self._segments.values() for local in s.dead}
        last = {number: len(segment.turn_ids) - 1 for number, segment in self._by_number.items()}
        found = sorted(((len(p), term, weight, p) for term, weight in wanted.weights.items()
                        if (p := self._postings(term))), key=lambda item: item[0])
        norms, norm_of = self._norms, self._norm
        scores: dict[int, float] = {}
        context: dict[int, float] = {}  # what the context field added: not passed back
        for count, term, weight, postings in found:
            if count > common and weight < 0.5:
                continue  # a common related word, or a word about remembering: noise
            idf = math.log(1 + (n - count + 0.5) / (count + 0.5)) * weight
            # A common term only adds to turns rarer ones found (looked up one by one
            # when they are fewer than its postings); so does, once rarer terms found
            # enough turns, a term in more turns than they found.
            only_known = bool(scores) and (count > common or (
                len(scores) >= _ENOUGH and count > len(scores)))
            if only_known and len(scores) * 2 < count:
                pairs = [(key, packed) for key in scores if (packed := postings.get(key))]
            else:
                pairs = postings.items()  # type: ignore[assignment]
            for key, packed in pairs:
                if (allowed is not None and key >> _LOCAL_BITS not in allowed) or (
                        dead and key in dead):
                    continue
                nu, na, nt, nn = norms.get(key) or norm_of(key)
                user = packed & 15
                if user and wc and (key & _LOCAL_MASK) < last[key >> _LOCAL_BITS] and (
                        not only_known or key + 1 in scores) and key + 1 not in dead:
                    # This turn's user message is the next turn's context.
                    tf = wc * user * nu
                    part = idf * tf * k1_1 / (tf + k1)
                    context[key + 1] = context.get(key + 1, 0.0) + part
                    scores[key + 1] = scores.get(key + 1, 0.0) + part
                if only_known and key not in scores:
                    continue
                tf = (wu * user * nu + wa * (packed >> 4 & 15) * na
                      + wt * (packed >> 8 & 15) * nt + wn * (packed >> 12) * nn)
                scores[key] = scores.get(key, 0.0) + idf * tf * k1_1 / (tf + k1)
        return self._titles(wanted, self._lead_share(scores, context), segments)

    def _lead_share(self, scores: dict[int, float], context: dict[int, float]
                    ) -> dict[int, float]:
        """Each matching turn passes ``lead_weight`` of its own score (what its own words
        matched, not its context, which is the previous turn's words) to the previous
        turn of its session; turns under a fifth of the best pass nothing (too little
        to matter)."""
        lead = self.settings.lead_weight
        if not scores or lead <= 0:
            return scores
        floor = 0.2 * max(scores.values())
        out = dict(scores)
        by_number = self._by_number
        for key, score in scores.items():
            own = score - context.get(key, 0.0)
            if own < floor:
                continue
            local = key & _LOCAL_MASK
            if local > 0 and local - 1 not in by_number[key >> _LOCAL_BITS].dead:
                out[key - 1] = out.get(key - 1, 0.0) + lead * own
        return out

    def _titles(self, wanted: QueryPlan, scores: dict[int, float],
                segments: list[Segment]) -> dict[int, float]:
        """Query words in a session's title add to that session's matching turns."""
        weight = self.settings.title_weight
        if weight <= 0 or not scores:
            return scores
        bonus: dict[int, float] = {}
        for segment in segments:
            found = [t for t in segment.title_terms if t in wanted.weights]
            if found:
                number = self._numbers[segment.session_id]
                bonus[number] = weight * sum(self._idf(t) * wanted.weights[t]
                                             for t in found)
        if bonus:
            for key in scores:
                extra = bonus.get(key >> _LOCAL_BITS)
                if extra:
                    scores[key] += extra
        return scores

    def _window_only(self, wanted: QueryPlan, segments: list[Segment]) -> dict[int, float]:
        hint = wanted.time
        out: dict[int, float] = {}
        for segment in segments:
            high = self._numbers[segment.session_id] << _LOCAL_BITS
            for local in segment.live.values():
                if hint.closeness(segment.times[local]) >= 0.999:
                    out[high | local] = 1.0
        return out

    def _finish(self, wanted: QueryPlan, base: dict[int, float], k: int,
                near: Mapping[int, float] | None = None) -> list[Hit]:
        """Time and recency on top of the lexical scores, then the best ``k``.

        Both only scale a score, by at most ``1 + bonus``, so candidates are taken by
        falling lexical score and the walk stops when even that factor could not lift
        the next one into the best ``k``."""
        settings = self.settings
        hint = wanted.time
        order = sorted(base, key=base.__getitem__, reverse=True)
        # Recency is relative to the span of the strongest candidates' times.
        by_number = self._by_number
        lead_times = [by_number[key >> _LOCAL_BITS].times[key & _LOCAL_MASK]
                      for key in order[:_RECENCY_POOL]]
        oldest, newest = min(lead_times), max(lead_times)
        span = newest - oldest
        bonus = settings.recency_preferred if hint.prefer else settings.recency
        if not wanted.weights and hint.window:
            bonus = settings.recency_preferred  # "what did we talk about yesterday?"
        window = hint.window
        floor = settings.time_floor
        detail_weight = settings.detail_weight
        # Turns rich in names and figures; in figures when the query asks "how much".
        detail_column = -1 if wanted.figures else FIELDS.index("names")
        if wanted.figures:
            detail_weight = settings.figure_weight
        best: list[tuple[float, float, int, float, float]] = []  # min-heap of the best
        for key in order:
            score = base[key]
            if len(best) == k and score * (1 + bonus) * (1 + detail_weight) < best[0][0]:
                break
            segment = by_number[key >> _LOCAL_BITS]
            local = key & _LOCAL_MASK
            when = segment.times[local]
            closeness = hint.closeness(when) if window else 1.0
            age = min(1.0, max(0.0, (when - oldest) / span)) if span > 0 else 1.0
            if hint.prefer == "oldest":
                age = 1.0 - age
            recency = 1.0 + bonus * age
            row = segment.lengths[local]
            detail = 1.0 + detail_weight * min(1.0, row[detail_column] / _DETAILS)
            final = score * (floor + (1 - floor) * closeness) * recency * detail
            item = (final, when, key, closeness, recency)
            if len(best) < k:
                heapq.heappush(best, item)
            elif item > best[0]:
                heapq.heapreplace(best, item)
        best.sort(reverse=True)
        idf = {term: self._idf(term) * weight for term, weight in wanted.weights.items()}
        near = near or {}
        return [self._hit(key, final, closeness, recency, wanted, idf, near.get(key, 0.0))
                for final, _, key, closeness, recency in best]

    def _hit(self, key: int, score: float, closeness: float, recency: float,
             wanted: QueryPlan, idf: dict[str, float], cosine: float = 0.0) -> Hit:
        segment, local = self._locate(key)
        by_field: dict[str, list[str]] = {}
        related: list[tuple[str, str]] = []
        context: list[str] = []
        following: list[str] = []
        covered = 0.0
        before = local - 1 if local > 0 and local - 1 not in segment.dead else None
        after = local + 1 if local + 1 < len(segment.turn_ids) and \
            local + 1 not in segment.dead else None
        for term in wanted.weights:
            word = wanted.words.get(term, term)
            if term not in wanted.related:
                if before is not None and segment.count(term, before) & MASK:
                    context.append(word)
                if after is not None and segment.count(term, after):
                    following.append(word)
            packed = segment.count(term, local)
            if not packed:
                continue
            if term in wanted.related:
                related.append(wanted.related[term])
                continue
            covered += idf[term]
            for shift, name in zip(SHIFTS, FIELDS):
                if packed >> shift & MASK:
                    by_field.setdefault(name, []).append(word)
        total = sum(v for t, v in idf.items() if t not in wanted.related)
        why = HitWhy(terms=by_field, related=tuple(related), context=tuple(context),
                     next_turn=tuple(following),
                     coverage=covered / total if total else 0.0,
                     time=wanted.time.label, closeness=closeness, recency=recency,
                     speaker=wanted.speaker, meaning=cosine)
        return Hit(segment.session_id, segment.turn_ids[local], segment.texts[local], score,
                   segment.times[local], why)
