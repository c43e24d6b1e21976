"""Static word vectors: a third signal that knows "kg" is near "pounds".

Character n-grams join words that share letters; BM25 joins words that share a stem.
Neither knows that "kg" and "pounds", or "jazz" and "songs", belong together.
A small table of GloVe vectors (see ``bench/make_word_vectors.py``: the 40,000 most
frequent words, 50 dimensions, int8, 2.3 MB, shipped with the wheel) does: a
text's vector is the weighted mean of its words' vectors, frequent words weighing
less (smooth inverse frequency, from each word's frequency rank), and a tool is scored
by the cosine of its vector with the message's.
"""

from __future__ import annotations

import math
import operator
import struct
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Iterable, Mapping, Sequence


def table() -> Traversable:
    """The shipped table, in the package's folder or in its wheel (the page's worker
    imports the wheel as a zip archive). Found when asked, never at import: a boot
    snapshot must hold no open archive."""
    return resources.files(__package__).joinpath("data", "glove50.bin")


def read_table(shipped: Traversable) -> bytearray:
    """A shipped table's bytes, read in pieces into one buffer. From a wheel imported as a
    zip, reading it whole would hold the compressed bytes and the inflated ones at once:
    in the page's worker that grew Pyodide's heap, and so its boot snapshot, by 7.7 MB."""
    data = bytearray()
    with shipped.open("rb") as file:
        while chunk := file.read(1 << 16):
            data += chunk
    return data

Vector = tuple[float, ...]
SMOOTHING = 1e-4


class WordVectors:
    """Look-ups in a table written by ``bench/make_word_vectors.py``."""

    def __init__(self, data: bytes | bytearray) -> None:
        if data[:4] != b"WVEC":
            raise ValueError("not a word-vector table")
        count, self.dims = struct.unpack_from("<II", data, 4)
        end = data.index(b"\0", 12)
        words = data[12:end].decode().split("\n")
        if len(words) != count:
            raise ValueError("word-vector table is truncated")
        self._rank = {w: i for i, w in enumerate(words)}
        self.words: tuple[str, ...] = tuple(words)  # by row, most frequent first
        self._rows = memoryview(data)[end + 1:].cast("b")
        if len(self._rows) != count * self.dims:
            raise ValueError("word-vector table is truncated")
        self.size = count

    def rank(self, word: str) -> int | None:
        return self._rank.get(word)

    def vector(self, word: str) -> list[int] | None:
        i = self._rank.get(word)
        if i is None:
            return None
        return list(self._rows[i * self.dims:(i + 1) * self.dims])

    def weight(self, word: str, smoothing: float = SMOOTHING) -> float:
        """Smooth inverse frequency: a / (a + p(word)), p from Zipf's law on the rank."""
        i = self._rank.get(word)
        if i is None:
            return 0.0
        p = 1.0 / ((i + 1) * math.log(self.size))
        return smoothing / (smoothing + p)

    def embed(self, words: Mapping[str, float] | Iterable[str]) -> Vector | None:
        """The unit-length weighted mean of the words' vectors (None when none is known)."""
        weighted = words if isinstance(words, Mapping) else dict.fromkeys(words, 1.0)
        total = [0.0] * self.dims
        found = False
        for word, weight in weighted.items():
            i = self._rank.get(word)
            if i is None or not weight:
                continue
            w = weight * self.weight(word)
            row = self._rows[i * self.dims:(i + 1) * self.dims]
            for d in range(self.dims):
                total[d] += w * row[d]
            found = True
        norm = math.sqrt(sum(x * x for x in total))
        if not found or not norm:
            return None
        return tuple(x / norm for x in total)


@lru_cache(maxsize=1)
def default_vectors() -> WordVectors | None:
    """The shipped table, or None when it is missing (the retriever then does without)."""
    try:
        return WordVectors(read_table(table()))
    except (OSError, ValueError):
        return None


class VectorIndex:
    """Cosine of each document's vector with a query's."""

    def __init__(self, vectors: WordVectors, docs: Sequence[Mapping[str, float]]) -> None:
        """``docs``: for each document, its words with a weight each (field weights)."""
        self.vectors = vectors
        self.docs = [vectors.embed(d) for d in docs]

    def scores(self, words: Iterable[str]) -> dict[int, float]:
        query = self.vectors.embed(list(words))
        if query is None:
            return {}
        return {index: _dot(query, doc) for index, doc in enumerate(self.docs) if doc is not None}


def _dot(a: Vector, b: Vector) -> float:
    return sum(map(operator.mul, a, b))


if hasattr(math, "sumprod"):  # Python 3.12+ (Pyodide): one C call
    _dot = math.sumprod  # type: ignore[assignment]  # noqa: F811

