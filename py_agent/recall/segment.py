"""One session's part of the recall index: its turns and their postings.

The index keeps one segment per session: a session is saved, loaded and deleted as a
whole. A segment's saved form (:meth:`Segment.to_data`) is nearly its in-memory form,
so loading one is a JSON parse and little Python work. (Queries do not walk segments
one by one: the index merges the postings of the terms it is asked for.)

Postings are two parallel lists per term, the turns (local numbers, increasing) and
their counts packed 4 bits per field (user lowest, then answer, tools, names; a count
above 15 is kept as 15, where BM25 has long saturated), so a posting list can be
searched with :mod:`bisect`. Saved, the local numbers are written as gaps, which
compress better. A replaced or removed turn becomes a tombstone, skipped by searches
and dropped when the segment is compacted (on saving, or when a quarter of it is dead).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from typing import Any, Iterator

from .analysis import FIELDS, AnalyzedTurn, terms

SHIFTS = (0, 4, 8, 12)
MAX_COUNT = 15
MASK = 15
ROW = len(FIELDS) + 1  # a turn's lengths: one per field, then its figures


class Segment:
    """The turns of one session, with their postings (see the module docstring)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.title = ""
        self.title_terms: frozenset[str] = frozenset()
        self.turn_ids: list[int] = []
        self.times: list[float] = []
        # per local turn: its length in each field, then how many figures it holds
        self.lengths: list[list[int]] = []
        self.texts: list[str] = []
        self.postings: dict[str, list[list[int]]] = {}  # term -> [locals, packed counts]
        self.dead: set[int] = set()
        self.live: dict[int, int] = {}  # turn id -> local number

    # ------------------------------------------------------------------ updates

    def set_title(self, title: str) -> None:
        self.title = str(title or "")
        self.title_terms = frozenset(terms(self.title))

    def add(self, turn: AnalyzedTurn) -> tuple[list[int], list[int] | None]:
        """Append a turn (a turn of the same id becomes a tombstone); returns its field
        lengths and those of the turn it replaced, for the index's totals."""
        replaced = self.remove(turn.turn_id)
        local = len(self.turn_ids)
        self.turn_ids.append(turn.turn_id)
        self.times.append(turn.time)
        lengths = [turn.length(f) for f in FIELDS] + [turn.figures]
        self.lengths.append(lengths)
        self.texts.append(turn.text)
        self.live[turn.turn_id] = local
        packed: dict[str, int] = {}
        for shift, name in zip(SHIFTS, FIELDS):
            for term, count in turn.fields.get(name, {}).items():
                packed[term] = packed.get(term, 0) + (min(count, MAX_COUNT) << shift)
        postings = self.postings
        for term, value in packed.items():
            entry = postings.get(term)
            if entry is None:
                postings[term] = [[local], [value]]
            else:
                entry[0].append(local)
                entry[1].append(value)
        return lengths, replaced

    def remove(self, turn_id: int) -> list[int] | None:
        """Tombstone a turn; returns its field lengths, or None if it was not here."""
        local = self.live.pop(turn_id, None)
        if local is None:
            return None
        lengths = self.lengths[local]
        self.dead.add(local)
        if len(self.dead) * 4 > len(self.turn_ids):
            self.compact()
        return lengths

    def compact(self) -> None:
        """Drop tombstones, renumbering the live turns."""
        if not self.dead:
            return
        keep = [i for i in range(len(self.turn_ids)) if i not in self.dead]
        renumber = {old: new for new, old in enumerate(keep)}
        self.turn_ids = [self.turn_ids[i] for i in keep]
        self.times = [self.times[i] for i in keep]
        self.lengths = [self.lengths[i] for i in keep]
        self.texts = [self.texts[i] for i in keep]
        postings: dict[str, list[list[int]]] = {}
        for term, (locals_, counts) in self.postings.items():
            pairs = [(renumber[i], c) for i, c in zip(locals_, counts) if i in renumber]
            if pairs:
                postings[term] = [[i for i, _ in pairs], [c for _, c in pairs]]
        self.postings = postings
        self.dead = set()
        self.live = {turn_id: i for i, turn_id in enumerate(self.turn_ids)}

    # -------------------------------------------------------------------- reads

    def __len__(self) -> int:
        return len(self.live)

    def set_text(self, turn_id: int, text: str) -> bool:
        """Give an indexed turn its display text; False if the turn is not here."""
        local = self.live.get(turn_id)
        if local is None:
            return False
        self.texts[local] = text
        return True

    def count(self, term: str, local: int) -> int:
        """The packed counts of ``term`` in one turn (0 when absent)."""
        entry = self.postings.get(term)
        if entry is None:
            return 0
        locals_ = entry[0]
        i = bisect_left(locals_, local)
        return entry[1][i] if i < len(locals_) and locals_[i] == local else 0

    def analyzed(self) -> Iterator[AnalyzedTurn]:
        """The live turns as analyzed (slow: for tests and re-saving, not for search)."""
        fields: dict[int, dict[str, dict[str, int]]] = {i: {} for i in self.live.values()}
        for term, (locals_, counts) in self.postings.items():
            for local, value in zip(locals_, counts):
                if local in fields:
                    for shift, name in zip(SHIFTS, FIELDS):
                        count = value >> shift & MASK
                        if count:
                            fields[local].setdefault(name, {})[term] = count
        for turn_id, local in sorted(self.live.items()):
            yield AnalyzedTurn(self.session_id, turn_id, self.times[local], fields[local],
                               self.texts[local], self.lengths[local][-1])

    # ------------------------------------------------------------ saved form

    def to_data(self) -> dict[str, Any]:
        """The segment as JSON-ready data (tombstones dropped first), without the display
        texts: the archive has the turns (see :meth:`RecallIndex.hydrate`)."""
        self.compact()
        postings = {term: [[locals_[0], *(b - a for a, b in zip(locals_, locals_[1:]))], counts]
                    for term, (locals_, counts) in self.postings.items()}
        return {"title": self.title,
                "turns": [[t, w, *ls] for t, w, ls in zip(self.turn_ids, self.times, self.lengths)],
                "postings": postings}

    @classmethod
    def from_data(cls, session_id: str, data: dict[str, Any]) -> "Segment":
        """A segment from :meth:`to_data`'s output; ValueError if it is not one."""
        segment = cls(session_id)
        try:
            turns, postings = data["turns"], data["postings"]
            segment.turn_ids = [int(row[0]) for row in turns]
            segment.times = [float(row[1]) for row in turns]
            segment.lengths = [[int(x) for x in row[2:]] for row in turns]
            segment.texts = [""] * len(turns)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
            raise ValueError(f"not a recall segment: {error}") from None
        size = len(segment.turn_ids)
        if any(len(row) != ROW for row in segment.lengths):
            raise ValueError("not a recall segment: its parts disagree")
        if not isinstance(postings, dict):
            raise ValueError("not a recall segment: no postings")
        try:
            for term, entry in postings.items():
                gaps, counts = entry
                entry[0] = locals_ = list(accumulate(gaps))
                if (len(locals_) != len(counts) or not locals_ or locals_[0] < 0
                        or locals_[-1] >= size or min(gaps[1:], default=1) < 1):
                    raise ValueError(f"bad postings for {term!r}")
        except (TypeError, ValueError) as error:
            raise ValueError(f"not a recall segment: {error}") from None
        segment.postings = postings
        segment.set_title(str(data.get("title") or ""))
        segment.live = {turn_id: i for i, turn_id in enumerate(segment.turn_ids)}
        if len(segment.live) != size:
            raise ValueError("not a recall segment: a turn id appears twice")
        return segment
