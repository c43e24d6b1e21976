#!/usr/bin/env python3
"""Tool retrieval, ours against baselines, side by side in one run.

    python bench/retrieval.py                 # report halves, Markdown table
    python bench/retrieval.py --half tune     # the halves we tuned on
    python bench/retrieval.py --half all --sets corpus,everyday

For every set (see tests/unit/retrieval_sets.py) and method: recall@1/3/5 and MRR of
the full ranking, recall of the offer (what the model is shown) and its mean size, the
share of tool-needing messages that got an empty offer, the share of chit-chat that got
a non-empty one, and the mean time per message. Then latency at 60 and 1,000 tools.

Methods:
- ``ours``: :class:`py_agent.retrieval.ToolRetriever` (BM25F + character n-grams +
  static word vectors, follow-ups from the previous turn; 3 tools offered, up to 2 more
  when their score is close to the best).
- ``ours-lexical``: the same without word vectors, always at most 3 offered (before).
- ``ours+dense``: ``ours`` with the agent's embedder ready (USE multilingual v3, the
  ``embed`` extra): sentence vectors of the message and of each tool's document in place
  of the word vectors (and each tool's best example request), and no tool offered to a
  message closer to small talk than to any tool.
- ``bm25-okapi``, ``bm25-okapi+snowball``: rank_bm25's BM25Okapi over the same text
  (name, keywords, description, examples, parameter names and descriptions), words
  lowercased and split on non-alphanumerics, with or without Snowball stems.
- ``substring``: the placeholder ranking of the reference design (query words longer
  than three letters found as substrings of name + description).

Baselines see the same tool text but not the previous turn. Needs ``rank_bm25`` (a
test dependency).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import snowballstemmer  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402

from py_agent.retrieval import ToolRetriever  # noqa: E402
from py_agent.retrieval.dense import tool_document  # noqa: E402
from py_agent.tools import Tool  # noqa: E402
from tests.unit import retrieval_sets as sets  # noqa: E402
from tests.unit.retrieval_sets import Query, RetrievalSet  # noqa: E402

OFFER_K = 3


class Ranker(Protocol):
    def rank(self, query: Query) -> list[str]:
        """Tool names with a positive score, best first."""

    def offer(self, query: Query) -> list[str]:
        """What the model would be shown (at most OFFER_K tools, maybe none)."""


class Ours:
    def __init__(self, tools: list[Tool], **settings: Any) -> None:
        self.retriever = ToolRetriever(tools, top_k=OFFER_K, **settings)

    def rank(self, query: Query) -> list[str]:
        return [s.tool.name for s in self.retriever.score(query.text, query.previous) if s.score > 0]

    def offer(self, query: Query) -> list[str]:
        return [s.tool.name for s in self.retriever.retrieve(query.text, previous=query.previous)]


_VECTORS: dict[str, list[float]] = {}


def embedded(texts: list[str]) -> list[list[float]]:
    """USE-m3's vectors of ``texts`` (CPython, numpy), kept for the run."""
    from py_agent.embedding.use_m3 import load_use_m3_now
    missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    if missing:
        _VECTORS.update(zip(missing, load_use_m3_now().embed_now(missing)))
    return [_VECTORS[t] for t in texts]


class OursDense(Ours):
    """Ours once the embedder is ready: the tools' vectors made, each message embedded."""

    def __init__(self, tools: list[Tool], **settings: Any) -> None:
        super().__init__(tools, **settings)
        from py_agent.embedding.use_m3 import SPACE
        from py_agent.retrieval.small_talk import SMALL_TALK
        self.retriever.use_vectors(SPACE, embedded([tool_document(t) for t in tools]),
                                   [embedded(list(t.examples)) for t in tools],
                                   embedded(list(SMALL_TALK)))

    def rank(self, query: Query) -> list[str]:
        [vector] = embedded([query.text])
        return [s.tool.name for s in self.retriever.score(query.text, query.previous,
                                                          vector=vector) if s.score > 0]

    def offer(self, query: Query) -> list[str]:
        [vector] = embedded([query.text])
        return [s.tool.name for s in self.retriever.retrieve(query.text, previous=query.previous,
                                                             vector=vector)]


def tool_text(t: Tool) -> str:
    parts = [t.name, " ".join(t.keywords), t.description, " ".join(t.examples)]
    parts += [f"{p.name} {p.description}" for p in t.params]
    return " ".join(parts)


_STEMMER = snowballstemmer.stemmer("english")


class Okapi:
    def __init__(self, tools: list[Tool], stem: bool) -> None:
        self.names = [t.name for t in tools]
        self.stem = stem
        self.bm25 = BM25Okapi([self.words(tool_text(t)) or ["_"] for t in tools])

    def words(self, text: str) -> list[str]:
        found = re.findall(r"[a-z0-9]+", text.lower())
        return _STEMMER.stemWords(found) if self.stem else found

    def rank(self, query: Query) -> list[str]:
        scores = self.bm25.get_scores(self.words(query.text))
        order = sorted(range(len(self.names)), key=lambda i: -scores[i])
        return [self.names[i] for i in order if scores[i] > 0]

    def offer(self, query: Query) -> list[str]:
        return self.rank(query)[:OFFER_K]


class Substring:
    def __init__(self, tools: list[Tool]) -> None:
        self.docs = [(t.name, (t.name + " " + t.description).lower()) for t in tools]

    def rank(self, query: Query) -> list[str]:
        tokens = [w for w in re.split(r"\W+", query.text.lower()) if len(w) > 3]
        scored = [(sum(1 for w in tokens if w in text), name) for name, text in self.docs]
        ranked = sorted(scored, key=lambda pair: -pair[0])
        return [name for score, name in ranked if score > 0]

    def offer(self, query: Query) -> list[str]:
        return self.rank(query)[:OFFER_K]


# Our retriever as it was before the word vectors and the adaptive offer (issue 9's
# first version), for before/after in one run.
LEXICAL_ONLY = {"meaning_weight": 0.0, "meaning_candidates": 0, "close_extra": 0}

METHODS: dict[str, Callable[[list[Tool]], Ranker]] = {
    "ours": Ours,
    "ours-lexical": lambda tools: Ours(tools, **LEXICAL_ONLY),
    "ours+dense": OursDense,
    "bm25-okapi": lambda tools: Okapi(tools, stem=False),
    "bm25-okapi+snowball": lambda tools: Okapi(tools, stem=True),
    "substring": Substring,
}


@dataclass
class Row:
    set: str
    method: str
    n: int
    r1: float
    r3: float
    r5: float
    mrr: float
    offered: float
    offer_size: float
    empty: float
    chitchat_offered: float | None
    ms: float


def evaluate(data: RetrievalSet, queries: list[Query], method: str) -> Row:
    ranker = METHODS[method](data.tools)
    requests = [q for q in queries if q.expected]
    chitchat = [q for q in queries if not q.expected]
    hits = {1: 0, 3: 0, 5: 0}
    reciprocal = offered = empty = size = 0.0
    started = time.perf_counter()
    for q in requests:
        ranking = ranker.rank(q)
        position = next((i for i in range(len(ranking)) if q.hit(ranking[:i + 1])), None)
        for k in hits:
            hits[k] += position is not None and position < k
        reciprocal += 0 if position is None else 1 / (position + 1)
        offer = ranker.offer(q)
        offered += q.hit(offer)
        size += len(offer)
        empty += not offer
    chit_offered = sum(bool(ranker.offer(q)) for q in chitchat)
    elapsed = time.perf_counter() - started
    n = len(requests) or 1
    calls = 2 * len(requests) + len(chitchat) or 1
    return Row(data.name, method, len(requests), hits[1] / n, hits[3] / n, hits[5] / n,
               reciprocal / n, offered / n, size / n, empty / n,
               chit_offered / len(chitchat) if chitchat else None, elapsed / calls * 1000)


def latency(tools: list[Tool], queries: list[Query], method: str, rounds: int) -> tuple[float, float]:
    """(mean, p95) milliseconds for one ranked offer, over ``queries`` repeated ``rounds`` times."""
    ranker = METHODS[method](tools)
    times = []
    for _ in range(rounds):
        for q in queries:
            started = time.perf_counter()
            ranker.offer(q)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.fmean(times), times[int(len(times) * 0.95)]


def thousand_tools() -> tuple[list[Tool], list[Query]]:
    """1,000 real tools: BFCL's live and synthetic registries pooled."""
    live, synthetic = sets.bfcl_set("live"), sets.bfcl_set("synthetic")
    seen: set[str] = set()
    tools = []
    for t in live.tools + synthetic.tools:
        if t.name not in seen:
            seen.add(t.name)
            tools.append(t)
    return tools[:1000], live.queries[:200] + synthetic.queries[:100]


def percent(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["tune", "report", "all"], default="report")
    parser.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--only-latency", action="store_true")
    args = parser.parse_args(argv)
    split = None if args.half == "all" else args.half
    wanted = {s for s in args.sets.split(",") if s}
    methods = [m for m in args.methods.split(",") if m]

    if not args.only_latency:
        quality(split, wanted, methods, args.half)
    if not args.no_latency:
        latencies(methods)
    return 0


def quality(split: str | None, wanted: set[str], methods: list[str], half: str) -> None:
    print(f"Retrieval quality ({half} halves; the demo set has no halves and is shown whole)\n")
    print("| set | n | method | R@1 | R@3 | R@5 | MRR | offer recall | tools offered | empty offers "
          "| chit-chat offered | ms/msg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for data in sets.all_sets():
        if wanted and data.name not in wanted:
            continue
        halved = any(q.split != "report" for q in data.queries)
        queries = data.half(split) if halved else data.queries
        for method in methods:
            row = evaluate(data, queries, method)
            print(f"| {row.set} ({len(data.tools)} tools) | {row.n} | {row.method} | "
                  f"{percent(row.r1)} | {percent(row.r3)} | {percent(row.r5)} | "
                  f"{row.mrr:.3f} | {percent(row.offered)} | {row.offer_size:.2f} | {percent(row.empty)} | "
                  f"{percent(row.chitchat_offered)} | {row.ms:.2f} |")


def latencies(methods: list[str]) -> None:
    corpus = sets.corpus_set()
    big_tools, big_queries = thousand_tools()
    print("\nLatency per message (ranking and building the offer; CPython "
          f"{sys.version.split()[0]})\n")
    print("| method | 60 tools mean | 60 tools p95 | 1,000 tools mean | 1,000 tools p95 |")
    print("|---|---|---|---|---|")
    for method in methods:
        small = latency(corpus.tools, corpus.queries, method, rounds=5)
        large = latency(big_tools, big_queries, method, rounds=1)
        print(f"| {method} | {small[0]:.2f} ms | {small[1]:.2f} ms | {large[0]:.2f} ms | "
              f"{large[1]:.2f} ms |")
    started = time.perf_counter()
    ToolRetriever(big_tools)
    print(f"\nBuilding our index for 1,000 tools: {(time.perf_counter() - started) * 1000:.0f} ms "
          "(once, when the agent starts).")


if __name__ == "__main__":
    sys.exit(main())
