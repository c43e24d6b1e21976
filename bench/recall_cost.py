"""What the recall index costs: build, save, load and query time, and its size.

Run by ``bench/recall.py`` in CPython, and (``--pyodide``) as a script in Pyodide under
Node.js, where it prints its measurements as one JSON line::

    python bench/recall_cost.py --data tests/data/recall --turns 1000,10000

Pure standard library and py_agent, so it runs unchanged in both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (str(ROOT), str(ROOT / "bench")):
    if path not in sys.path:
        sys.path.insert(0, path)

from recall_set import Question, archive_bytes, load_set, replicate  # noqa: E402

from py_agent.recall import RecallIndex, dump_session, load_session  # noqa: E402
from py_agent.recall.neighbors import default_neighbors  # noqa: E402
from py_agent.state import Turn  # noqa: E402


def reference_ms(clock=time.perf_counter) -> float:
    """A fixed pure-Python workload (a million dictionary updates), best of three: how
    fast this interpreter runs on this machine right now (about 80-100 ms for CPython
    3.11 on an idle desktop core), to read the other times against."""
    best = float("inf")
    for _ in range(3):
        table: dict[int, float] = {}
        started = clock()
        for i in range(1_000_000):
            table[i & 4095] = table.get(i & 4095, 0.0) + 1.5
        best = min(best, clock() - started)
    return 1000 * best


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(sessions: dict[str, list[Turn]], questions: list[Question], total: int,
            repeat: int = 3) -> dict[str, float]:
    """Build ``total`` turns from raw turns (the first call in a process starts with an
    empty stemming cache; copies of the set's sessions find their words cached, so the
    10,000-turn build is cheaper than a real archive's), save every session, load them
    into a fresh index, and time each question on it (the best of ``repeat`` runs each:
    the machine may be shared), in wall time and in the process's CPU time (which leaves
    out the waits for a CPU another process holds). Sizes: the saved blobs against the
    archive's JSON."""
    scaled = replicate(sessions, total)
    default_neighbors()  # the word tables load once per process, for build and load alike
    started, started_cpu = time.perf_counter(), time.process_time()
    index = RecallIndex()
    for session_id, turns in scaled.items():
        index.add_many(session_id, turns)
    build, build_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    started = time.perf_counter()
    blobs = {s: dump_session(index, s) for s in scaled}
    save = time.perf_counter() - started
    started, started_cpu = time.perf_counter(), time.process_time()
    loaded = RecallIndex()
    for session_id, blob in blobs.items():
        load_session(loaded, blob, session_id)
    load, load_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    latencies, cpu = [], []
    for q in questions:
        runs, cpu_runs = [], []
        for _ in range(repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            loaded.search(q.query, k=5, now=q.asked_at)
            runs.append(1000 * (time.perf_counter() - started))
            cpu_runs.append(1000 * (time.process_time() - started_cpu))
        latencies.append(min(runs))
        cpu.append(min(cpu_runs))
    archive = archive_bytes(scaled)
    size = sum(len(b) for b in blobs.values() if b)
    return {"turns": total, "sessions": len(scaled), "reference_ms": reference_ms(),
            "build_s": build, "build_cpu_s": build_cpu, "save_s": save,
            "load_cpu_s": load_cpu,
            "load_s": load, "p50_ms": statistics.median(latencies),
            "p95_ms": percentile(latencies, 0.95), "max_ms": max(latencies),
            "cpu_p50_ms": statistics.median(cpu), "cpu_p95_ms": percentile(cpu, 0.95),
            "reference_cpu_ms": reference_ms(time.process_time),
            "archive_bytes": archive, "index_bytes": size, "ratio": size / archive}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--turns", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sessions, _, questions = load_set(args.data)
    for total in (int(t) for t in args.turns.split(",")):
        print(json.dumps(measure(sessions, questions, total, args.repeat)), flush=True)


if __name__ == "__main__":
    main()
