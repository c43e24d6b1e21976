"""Related words for query expansion: each common word's nearest words by GloVe.

"What was that book you recommended?" should find the turn about a *novel*. The tool
retriever compares whole texts by mean word vector; for thousands of archived turns
that is too slow in pure Python, so recall expands the *query* instead: each query word
brings its nearest neighbours (``data/neighbors.bin``, computed offline from the
package's word-vector table by ``bench/make_word_neighbors.py``) as extra terms of
lower weight. The table is read lazily, once, and its absence only turns expansion off.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable

from ..retrieval.embeddings import WordVectors, default_vectors, read_table


def table() -> Traversable:
    """The shipped table, in the package's folder or in its wheel (the page's worker
    imports the wheel as a zip archive). Found when asked, never at import: a boot
    snapshot must hold no open archive."""
    return resources.files(__package__).joinpath("data", "neighbors.bin")


class WordNeighbors:
    """Look-ups in a table written by ``bench/make_word_neighbors.py``."""

    def __init__(self, data: bytes | bytearray, vectors: WordVectors) -> None:
        if data[:4] != b"WNBR":
            raise ValueError("not a word-neighbour table")
        (count,) = struct.unpack_from("<I", data, 4)
        if count > len(vectors.words):
            raise ValueError("word-neighbour table does not match the word vectors")
        self._data = data
        self._vectors = vectors
        self._count = count
        offsets = []
        at = 8
        for _ in range(count):
            if at >= len(data):
                raise ValueError("word-neighbour table is truncated")
            offsets.append(at)
            at += 1 + 3 * data[at]
        if at != len(data):
            raise ValueError("word-neighbour table has trailing bytes")
        self._offsets = offsets

    def __call__(self, word: str) -> list[tuple[str, float]]:
        """``word``'s neighbours with their cosine, nearest first ([] if unknown)."""
        row = self._vectors.rank(word)
        if row is None or row >= self._count:
            return []
        at = self._offsets[row]
        out = []
        for i in range(self._data[at]):
            neighbour, cosine = struct.unpack_from("<HB", self._data, at + 1 + 3 * i)
            out.append((self._vectors.words[neighbour], cosine / 255))
        return out


@lru_cache(maxsize=1)
def default_neighbors() -> WordNeighbors | None:
    """The shipped table, or None when it (or the word vectors) is missing."""
    vectors = default_vectors()
    if vectors is None:
        return None
    try:
        return WordNeighbors(read_table(table()), vectors)
    except (OSError, ValueError):
        return None
