"""Character n-grams: a second signal that survives vocabulary mismatch.

Words that share most of their letters meet even when no stemmer joins them
("calculator"/"calculation", "colour"/"color", "bday"/"birthday", typos such as
"convrt"). Each document is a tf-idf vector of the 3- and 4-grams of its words
(padded, so word starts and ends count); a query is scored by cosine similarity
through an inverted index.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Mapping, Sequence

SIZES = (3, 4)
COMMON = 0.2


def grams(word: str, sizes: Sequence[int] = SIZES) -> list[str]:
    """The padded character n-grams of one word: "tea" → "<te", "tea", "ea>", "<tea", ..."""
    padded = f"<{word}>"
    return [padded[i:i + n] for n in sizes for i in range(len(padded) - n + 1)]


class CharNgrams:
    """Cosine similarity of character n-gram tf-idf vectors."""

    def __init__(self, docs: Sequence[Mapping[str, float]], *,
                 sizes: Sequence[int] = SIZES) -> None:
        """``docs``: for each document, its words with a weight each (field weights)."""
        self.sizes = tuple(sizes)
        counts: list[Counter[str]] = []
        df: Counter[str] = Counter()
        for words in docs:
            bag: Counter[str] = Counter()
            for word, weight in words.items():
                for gram in grams(word, self.sizes):
                    bag[gram] += weight
            counts.append(bag)
            df.update(bag.keys())
        n = self.documents = len(docs)
        self.idf = {g: math.log((n + 1) / (f + 0.5)) for g, f in df.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for index, bag in enumerate(counts):
            vector = {g: (1 + math.log(c)) * self.idf[g] for g, c in bag.items() if c > 0}
            norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
            for gram, value in vector.items():
                self.postings.setdefault(gram, []).append((index, value / norm))

    def query_vector(self, words: Iterable[str]) -> dict[str, float]:
        bag: Counter[str] = Counter()
        for word in words:
            bag.update(grams(word, self.sizes))
        vector = {g: (1 + math.log(c)) * self.idf[g] for g, c in bag.items() if g in self.idf}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {g: v / norm for g, v in vector.items()}

    def scores(self, words: Iterable[str]) -> dict[int, float]:
        """Document index -> cosine similarity in [0, 1], for documents sharing a gram.

        Grams found in more than ``COMMON`` of the documents ("ing", "<th") are skipped:
        they weigh little and cost the most.
        """
        out: dict[int, float] = {}
        limit = max(8, int(self.documents * COMMON))
        for gram, q in self.query_vector(words).items():
            postings = self.postings[gram]
            if len(postings) > limit:
                continue
            for index, d in postings:
                out[index] = out.get(index, 0.0) + q * d
        return out


def closest_word(word: str, candidates: Iterable[str]) -> tuple[str, float]:
    """The candidate sharing the most n-grams with ``word`` (Dice coefficient), for traces."""
    mine = set(grams(word))
    best, best_score = "", 0.0
    for other in candidates:
        theirs = set(grams(other))
        score = 2 * len(mine & theirs) / (len(mine) + len(theirs) or 1)
        if score > best_score:
            best, best_score = other, score
    return best, best_score
