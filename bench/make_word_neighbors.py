#!/usr/bin/env python3
"""Build py_agent/recall/data/neighbors.bin: each common word's nearest words by GloVe.

Recall expands a query's words with their nearest neighbours ("book" → "novel", "gift" →
"present") so that a turn worded differently still matches. Finding neighbours at query
time would mean thousands of 50-dimension dot products in pure Python per word; this
script does it once, offline, with numpy, from the table the package already ships
(``py_agent/retrieval/data/glove50.bin``, see ``bench/make_word_vectors.py``):

    python bench/make_word_neighbors.py [--words 20000] [--neighbors 6] [--min-cosine 0.72]

For each of the ``--words`` most frequent words of the table, its ``--neighbors``
nearest among those same words with a cosine of at least ``--min-cosine``, skipping
inflections (a neighbour with the word's Snowball stem, or the stem of a nearer one:
recall stems words anyway). Needs numpy (not a project dependency) besides py-agent's
own requirements. Format
(little-endian): b"WNBR", u32 words, then per word (in the table's order) u8 n and n
times (u16 neighbour's row, u8 cosine × 255).
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from py_agent.retrieval import stem  # noqa: E402
TABLE = ROOT / "py_agent" / "retrieval" / "data" / "glove50.bin"
OUT = ROOT / "py_agent" / "recall" / "data" / "neighbors.bin"


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser()
    parser.add_argument("--words", type=int, default=20000)
    parser.add_argument("--neighbors", type=int, default=6)
    parser.add_argument("--min-cosine", type=float, default=0.72)
    args = parser.parse_args()
    data = TABLE.read_bytes()
    count, dims = struct.unpack_from("<II", data, 4)
    end = data.index(b"\0", 12)
    words = data[12:end].decode().split("\n")[:args.words]
    stems = [stem(w) for w in words]
    rows = np.frombuffer(data[end + 1:], dtype=np.int8).reshape(count, dims)[:args.words]
    vectors = rows.astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = bytearray(b"WNBR" + struct.pack("<I", len(vectors)))
    kept = 0
    for start in range(0, len(vectors), 1000):
        block = vectors[start:start + 1000] @ vectors.T
        for offset, cosines in enumerate(block):
            cosines[start + offset] = -1.0  # not its own neighbour
            wide = 6 * args.neighbors
            order = np.argpartition(-cosines, wide)[:wide]
            order = order[np.argsort(-cosines[order])]
            seen = {stems[start + offset]}
            chosen = []
            for j in order:
                if cosines[j] < args.min_cosine or len(chosen) == args.neighbors:
                    break
                if stems[j] not in seen:
                    seen.add(stems[j])
                    chosen.append((int(j), float(cosines[j])))
            out += struct.pack("<B", len(chosen))
            for j, cosine in chosen:
                out += struct.pack("<HB", j, round(cosine * 255))
            kept += len(chosen)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(bytes(out))
    print(f"{OUT}: {len(vectors)} words, {kept} neighbours, {len(out)} bytes")


if __name__ == "__main__":
    main()
