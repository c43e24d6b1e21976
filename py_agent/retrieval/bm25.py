"""BM25F: Okapi BM25 over documents made of weighted fields.

Each field's term frequency is normalised by that field's length against its
average (so a tool with ten examples does not drown one with a long description),
weighted, summed, and saturated once (Robertson & Zaragoza's BM25F). An inverted
index keeps a query's cost proportional to the postings of its terms.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Mapping, Sequence

Document = Mapping[str, Sequence[str]]  # field name -> its terms


class FieldedBM25:
    """Scores documents for a bag of query terms; only documents sharing a term appear."""

    def __init__(self, docs: Sequence[Document], weights: Mapping[str, float], *,
                 k1: float = 1.2, b: Mapping[str, float] | float = 0.75) -> None:
        self.k1 = k1
        self.weights = dict(weights)
        b_of = (lambda f: b.get(f, 0.75)) if isinstance(b, Mapping) else (lambda f: float(b))
        lengths: dict[str, list[int]] = {f: [] for f in self.weights}
        for doc in docs:
            for name in self.weights:
                size = len(doc.get(name, ()))
                if size:
                    lengths[name].append(size)
        average = {f: (sum(v) / len(v) if v else 1.0) for f, v in lengths.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for index, doc in enumerate(docs):
            pseudo: Counter[str] = Counter()
            for name, weight in self.weights.items():
                terms = doc.get(name, ())
                if not terms or not weight:
                    continue
                norm = 1 - b_of(name) + b_of(name) * len(terms) / average[name]
                for term, tf in Counter(terms).items():
                    pseudo[term] += weight * tf / norm
            for term, tf in pseudo.items():
                self.postings.setdefault(term, []).append((index, tf))
        n = len(docs)
        self.idf = {term: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5))
                    for term, p in self.postings.items()}

    def scores(self, terms: Iterable[str] | Mapping[str, float]) -> dict[int, float]:
        """Document index -> BM25F score, for documents matching at least one term.

        ``terms`` may map each term to a weight (1 for a plain iterable).
        """
        k1 = self.k1
        weighted = terms if isinstance(terms, Mapping) else dict.fromkeys(terms, 1.0)
        out: dict[int, float] = {}
        for term, weight in weighted.items():
            postings = self.postings.get(term)
            if not postings or not weight:
                continue
            idf = self.idf[term] * weight
            for index, tf in postings:
                out[index] = out.get(index, 0.0) + idf * tf * (k1 + 1) / (tf + k1)
        return out

    def contributions(self, terms: Mapping[str, float]) -> dict[str, dict[int, float]]:
        """For each term, what it adds to each matching document's score."""
        k1 = self.k1
        out: dict[str, dict[int, float]] = {}
        for term, weight in terms.items():
            postings = self.postings.get(term)
            if postings and weight:
                idf = self.idf[term] * weight
                out[term] = {index: idf * tf * (k1 + 1) / (tf + k1) for index, tf in postings}
        return out

    def weight(self, term: str) -> float:
        """The idf of ``term`` (0 when no document has it)."""
        return self.idf.get(term, 0.0)

    def knows(self, term: str) -> bool:
        """True if some document has ``term``."""
        return term in self.postings
