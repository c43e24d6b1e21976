"""Vectors kept small and searched fast in pure Python, the same code in every home.

A unit vector is kept as int8 (scaled so that its largest component is 127: 512 bytes
for 512 dimensions) plus its sign bits as one Python int. A search takes the rows nearest
to the query in Hamming distance over the sign bits (``(a ^ b).bit_count()``, one C call
each) and scores only those exactly (``math.sumprod`` over the int8 bytes): at 10,000
turns that is about 10 ms in the page's worker, where numpy cannot be had, against about
200 ms to score every row exactly; the shortlist loses at most 2 points of hit@5 on the
recall set (docs/recall.md).

A :class:`VectorIndex` holds the rows of one group (a session's turns, a tool list's
tools) by key; :func:`search` ranks the rows of several. :func:`dump_vectors` and
:func:`load_vectors` turn an index into bytes and back, with its embedding space's id:
a blob of another space is refused, so that the caller embeds again.
"""

from __future__ import annotations

import array
import heapq
import json
import math
import operator

from typing import Callable, Hashable, Iterable, Mapping, Sequence

MAGIC = b"PYAV1\n"
# Rows scored exactly per search, at least; more when k asks for more.
SHORTLIST = 200

if hasattr(math, "sumprod"):  # Python 3.12+ and Pyodide: one C call
    _dot = math.sumprod
else:  # pragma: no cover - Python 3.11
    def _dot(a, b):  # type: ignore[misc]
        return sum(map(operator.mul, a, b))


class VectorBlobError(ValueError):
    """A saved blob of vectors that cannot be used (damaged, or of another space)."""


def quantize(vector: Sequence[float]) -> tuple[bytes, int]:
    """A vector as int8 bytes (its largest component scaled to 127) and its sign bits."""
    top = max((abs(x) for x in vector), default=0.0) or 1.0
    scale = 127.0 / top
    values = [max(-127, min(127, round(x * scale))) for x in vector]
    bits = 0
    for i, x in enumerate(values):
        if x > 0:
            bits |= 1 << i
    return array.array("b", values).tobytes(), bits


def query_norm(q: bytes) -> float:
    """The length of an int8 row (1 for a zero row, so that a cosine stays defined)."""
    qv = memoryview(q).cast("b")
    return math.sqrt(_dot(qv, qv)) or 1.0


def _sign_bits(row: memoryview) -> int:
    bits = 0
    for i, x in enumerate(row):
        if x > 0:
            bits |= 1 << i
    return bits


class VectorIndex:
    """The int8 vectors of one group, by key (a turn id, a tool's index)."""

    def __init__(self, dimension: int) -> None:
        if dimension < 1:
            raise ValueError("dimension must be positive")
        self.dimension = dimension
        self._rows = bytearray()
        self._keys: list[Hashable | None] = []  # None: a removed row
        self._norms: list[float] = []
        self._codes: list[int] = []
        self._where: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._where

    def keys(self) -> list[Hashable]:
        return list(self._where)

    def add(self, key: Hashable, vector: Sequence[float]) -> None:
        """Keep ``vector`` (any length-``dimension`` vector; only its direction counts)
        under ``key``, replacing what the key had."""
        if len(vector) != self.dimension:
            raise ValueError(f"a vector of {len(vector)} values, not {self.dimension}")
        self.add_quantized(key, *quantize(vector))

    def add_quantized(self, key: Hashable, row: bytes, bits: int | None = None) -> None:
        if len(row) != self.dimension:
            raise ValueError(f"a row of {len(row)} bytes, not {self.dimension}")
        self.remove(key)
        values = memoryview(row).cast("b")
        self._where[key] = len(self._keys)
        self._keys.append(key)
        self._rows += row
        self._norms.append(math.sqrt(_dot(values, values)) or 1.0)
        self._codes.append(_sign_bits(values) if bits is None else bits)

    def remove(self, key: Hashable) -> bool:
        at = self._where.pop(key, None)
        if at is None:
            return False
        self._keys[at] = None
        if len(self._keys) > 64 and len(self._where) * 2 < len(self._keys):
            self._compact()
        return True

    def _compact(self) -> None:
        live = [(k, i) for i, k in enumerate(self._keys) if k is not None]
        dim, rows = self.dimension, self._rows
        self._rows = bytearray(b"".join(rows[i * dim:(i + 1) * dim] for _, i in live))
        self._norms = [self._norms[i] for _, i in live]
        self._codes = [self._codes[i] for _, i in live]
        self._keys = [k for k, _ in live]
        self._where = {k: n for n, (k, _) in enumerate(live)}

    def row(self, key: Hashable) -> bytes | None:
        """The int8 row kept for ``key`` (None if there is none)."""
        at = self._where.get(key)
        if at is None:
            return None
        return bytes(self._rows[at * self.dimension:(at + 1) * self.dimension])

    def items(self) -> Iterable[tuple[Hashable, bytes]]:
        for key, at in self._where.items():
            yield key, bytes(self._rows[at * self.dimension:(at + 1) * self.dimension])

    def scores(self, query: Sequence[float]) -> dict[Hashable, float]:
        """The cosine of every row with ``query`` (exact, for a few hundred rows)."""
        q, _ = quantize(query)
        return {self._keys[at]: score for score, at in self.exact(q, self._where.values())}

    def cosines(self, q: bytes, keys: Iterable[Hashable],
                norm: float | None = None) -> dict[Hashable, float]:
        """The cosine of the rows of ``keys`` with the int8 query ``q`` (``quantize``'s
        bytes; ``norm``: its :func:`query_norm`, if known), exactly; keys without a row are
        left out. For the few rows a search wants whatever their Hamming distance."""
        where = self._where
        rows = [where[key] for key in keys if key in where]
        return {self._keys[at]: score for score, at in self.exact(q, rows, norm)}

    def distances(self, bits: int, keep: Callable[[Hashable], bool] | None = None
                  ) -> list[tuple[int, int]]:
        """(Hamming distance to ``bits``, row) of every row whose key ``keep`` allows."""
        codes = self._codes
        return [((bits ^ codes[at]).bit_count(), at) for key, at in self._where.items()
                if keep is None or keep(key)]

    def exact(self, q: bytes, rows: Iterable[int],
              norm: float | None = None) -> list[tuple[float, int]]:
        """(cosine with the int8 query ``q``, row) for these rows. ``norm``: ``q``'s
        :func:`query_norm`, computed once by a caller that asks many groups."""
        qv = memoryview(q).cast("b")
        qn = norm if norm is not None else query_norm(q)
        dim, data, norms = self.dimension, memoryview(self._rows).cast("b"), self._norms
        return [(_dot(qv, data[at * dim:(at + 1) * dim]) / (qn * norms[at]), at) for at in rows]

    def key_at(self, row: int) -> Hashable:
        key = self._keys[row]
        if key is None:
            raise KeyError(row)
        return key


def search(groups: Iterable[tuple[Hashable, VectorIndex]], query: Sequence[float], k: int, *,
           allow: Callable[[Hashable, Hashable], bool] | None = None,
           shortlist: int = SHORTLIST) -> list[tuple[float, Hashable, Hashable]]:
    """The ``k`` rows of ``groups`` nearest to ``query``: (cosine, group, key), best
    first. ``allow(group, key)`` leaves rows out; only the ``shortlist`` rows nearest in
    Hamming distance are scored exactly."""
    q, bits = quantize(query)
    pool: list[tuple[int, int, int]] = []  # (distance, group number, row)
    indexes: list[tuple[Hashable, VectorIndex]] = []
    for group, index in groups:
        number = len(indexes)
        indexes.append((group, index))
        keep = None if allow is None else (lambda key, g=group: allow(g, key))
        pool += [(d, number, at) for d, at in index.distances(bits, keep)]
    limit = max(shortlist, 4 * k)
    if len(pool) > limit:
        pool = heapq.nsmallest(limit, pool)
    rows: dict[int, list[int]] = {}
    for _, number, at in pool:
        rows.setdefault(number, []).append(at)
    scored = []
    norm = query_norm(q)
    for number, ats in rows.items():
        group, index = indexes[number]
        scored += [(score, group, index.key_at(at)) for score, at in index.exact(q, ats, norm)]
    return heapq.nlargest(k, scored, key=lambda item: item[0])


def cosines(groups: Mapping[Hashable, VectorIndex], query: Sequence[float],
            keys: Iterable[tuple[Hashable, Hashable]]) -> dict[tuple[Hashable, Hashable], float]:
    """The exact cosines of these ``(group, key)`` rows with ``query`` (rows that the
    groups lack are left out): the rows a search wants whatever their Hamming distance,
    such as the best lexical candidates of a recall."""
    by_group: dict[Hashable, list[Hashable]] = {}
    for group, key in keys:
        by_group.setdefault(group, []).append(key)
    q, _ = quantize(query)
    norm = query_norm(q)
    out: dict[tuple[Hashable, Hashable], float] = {}
    for group, wanted in by_group.items():
        index = groups.get(group)
        if index is not None:
            found = index.cosines(q, wanted, norm)
            out.update(((group, key), score) for key, score in found.items())
    return out


def dump_vectors(index: VectorIndex, space: str) -> bytes:
    """``index`` as bytes (integer keys only: turn ids), with the space it was made in."""
    keys = index.keys()
    if not all(isinstance(k, int) for k in keys):
        raise TypeError("only integer keys can be saved")
    header = json.dumps({"space": space, "dimension": index.dimension, "keys": keys})
    rows = b"".join(index.row(k) or b"" for k in keys)
    return MAGIC + header.encode() + b"\n" + rows


def load_vectors(blob: bytes, space: str) -> VectorIndex:
    """The index saved in ``blob``; :class:`VectorBlobError` if it is damaged or of a
    space other than ``space`` (its vectors must be made again)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)) or bytes(blob[:len(MAGIC)]) != MAGIC:
        raise VectorBlobError("not a blob of vectors")
    blob = bytes(blob)
    end = blob.find(b"\n", len(MAGIC))
    try:
        header = json.loads(blob[len(MAGIC):end])
        saved_space, dimension, keys = header["space"], int(header["dimension"]), header["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise VectorBlobError(f"a damaged header: {exc}") from None
    if saved_space != space:
        raise VectorBlobError(f"made in {saved_space!r}, not {space!r}")
    rows = blob[end + 1:]
    if end < 0 or len(rows) != dimension * len(keys) or not all(isinstance(k, int) for k in keys):
        raise VectorBlobError("a truncated blob")
    index = VectorIndex(dimension)
    for n, key in enumerate(keys):
        index.add_quantized(key, rows[n * dimension:(n + 1) * dimension])
    return index


