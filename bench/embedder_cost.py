#!/usr/bin/env python3
"""What the sentence embedder costs per message in the page's worker: Pyodide under
Node.js, with the page's own code (worker/embedder/use_m3.js and its WebAssembly kernel
embed; py_agent.browser.embedder's tokenizer path; py_agent's pure-Python search).

    python bench/embedder_cost.py                 # 10,000 archived turns, 500 tools
    python bench/embedder_cost.py --turns 1000 --tools 100

Per message (everyday requests, each the best of ``--repeat`` runs): embed it, search
the turn vectors of the whole archive (``py_agent.embedding.vectors.search``: the
sign-bit shortlist, then exact int8 scores, and the exact cosines of 50 more turns, as
a search looks up its best lexical candidates), and rank the tools with their vectors
(``ToolRetriever.retrieve(vector=...)``: BM25F, n-grams and the sentence vectors,
small-talk gate included). Reports load times (weights, tokenizer), the time to embed
an archived turn, and p50 / p95 of embed alone and of embed + both searches. The
archive is the recall set's turns replicated; the tools are BFCL's live registry.
Needs ``python serve.py --prepare-only`` (node_modules) and the ``embed`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pyodide_node import run_in_pyodide

RUNNER = r"""
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
const [pyodideModule, root, site, pkg, args] = process.argv.slice(2);
globalThis.location = {href: `file://${root}/`};
const networkFetch = globalThis.fetch;
globalThis.fetch = async (url) => String(url).startsWith('file:')
  ? new Response(readFileSync(fileURLToPath(url))) : networkFetch(url);
const {loadUseM3} = await import(`${root}/worker/embedder/use_m3.js`);
const started = performance.now();
const model = await loadUseM3({weights: {url: `file://${pkg}/resources/weights.npz`}});
const weightsMs = performance.now() - started;
const {loadPyodide} = await import(pyodideModule);
const pyodide = await loadPyodide({stdout: (line) => console.log(line)});
pyodide.mountNodeFS('/repo', root);
pyodide.mountNodeFS('/site', site);
pyodide.mountNodeFS('/pkg', pkg);
pyodide.registerJsModule('use_m3_js', {encode: (ids) => model.encode(ids), weightsMs});
pyodide.globals.set('ARGS', args);
await pyodide.runPythonAsync(`
import sys
sys.path[:0] = ['/repo', '/repo/bench', '/site']
import embedder_cost
turns, tools, repeat = (int(x) for x in ARGS.split())
await embedder_cost.inside(turns, tools, repeat)
`);
"""


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def inside(turns: int, tools: int, repeat: int) -> None:
    """The measurement, in Pyodide."""
    import random
    import time
    import use_m3_js  # type: ignore[import-not-found]
    from py_agent.browser.embedder import PageUseM3, import_tokenizer
    from py_agent.embedding import VectorIndex
    from py_agent.embedding.vectors import cosines, search
    from py_agent.recall.vectors import turn_document
    from py_agent.retrieval import ToolRetriever
    from py_agent.retrieval.dense import tool_document
    from py_agent.retrieval.small_talk import SMALL_TALK
    from recall_set import load_set, replicate
    from tests.unit import retrieval_sets as sets

    began = time.perf_counter()
    source = open("/pkg/pure_tokenizer.py").read()   # the package's, as the page serves it
    tokenizer = import_tokenizer(source).UsePureTokenizer("/pkg/resources/sp.model")
    tokenizer_ms = (time.perf_counter() - began) * 1000
    model = PageUseM3(tokenizer, use_m3_js.encode)

    sessions, _, _ = load_set(Path("/repo/tests/data/recall"))
    unique = [t for ts in sessions.values() for t in ts]
    began = time.perf_counter()
    made = await model.embed([turn_document(t) for t in unique])
    turn_ms = (time.perf_counter() - began) * 1000 / len(unique)
    vectors = {(s, t.id): v for (s, t), v in zip(
        [(s, t) for s, ts in sessions.items() for t in ts], made)}
    groups: dict[str, VectorIndex] = {}
    n = 0
    for session_id, ts in replicate(sessions, turns).items():
        group = groups.setdefault(session_id, VectorIndex(512))
        base = session_id.split("~")[0]
        for turn in ts:
            group.add(turn.id, vectors[(base, turn.id)])
            n += 1
    registry = sets.bfcl_set("live").tools[:tools]
    retriever = ToolRetriever(registry)
    docs = await model.embed([tool_document(t) for t in registry])
    examples = [await model.embed(list(t.examples)) for t in registry]
    chat = await model.embed(list(SMALL_TALK))
    retriever.use_vectors("use-m3", docs, examples, chat)
    messages = [q.text for q in sets.everyday_set().queries[:80]]
    # The search also looks up the cosines of the best lexical candidates it lacks
    # (RecallSettings.dense_lexical, 50): 50 turns spread over the archive here.
    every_turn = [(s, t) for s, group in groups.items() for t in group.keys()]
    candidates = [random.Random(n).sample(every_turn, 50) for n in range(len(messages))]
    embed_times, total_times, turn_times, lexical_times, added_times = [], [], [], [], []
    lookup_times = []
    for message, picked in zip(messages, candidates):
        best = {"embed": 1e9, "turns": 1e9, "lookup": 1e9, "dense": 1e9, "lexical": 1e9,
                "total": 1e9}
        for _ in range(repeat):
            start = time.perf_counter()
            [vector] = await model.embed([message])
            embedded = time.perf_counter()
            search(list(groups.items()), vector, 50)
            nearest = time.perf_counter()
            cosines(groups, vector, picked)
            searched = time.perf_counter()
            retriever.retrieve(message, vector=vector)
            done = time.perf_counter()
            retriever.retrieve(message)                  # today's: lexical signals alone
            lexical = time.perf_counter() - done
            for key, value in (("embed", embedded - start), ("turns", searched - embedded),
                               ("lookup", searched - nearest),
                               ("dense", done - searched), ("lexical", lexical),
                               ("total", done - start)):
                best[key] = min(best[key], value * 1000)
        embed_times.append(best["embed"])
        total_times.append(best["total"])
        turn_times.append(best["turns"])
        lexical_times.append(best["lexical"])
        lookup_times.append(best["lookup"])
        # what the embedder adds to a message: embedding, the turn search, and the tool
        # ranking's extra time over the lexical one
        added_times.append(best["embed"] + best["turns"] + max(0.0, best["dense"] - best["lexical"]))
    print(json.dumps({
        "runtime": f"Pyodide {sys.version.split()[0]} (Node.js)", "turns": n,
        "tools": len(registry), "weights_load_ms": round(use_m3_js.weightsMs),
        "tokenizer_load_ms": round(tokenizer_ms), "embed_turn_ms": round(turn_ms, 2),
        "embed_p50_ms": round(percentile(embed_times, 0.5), 2),
        "embed_p95_ms": round(percentile(embed_times, 0.95), 2),
        "turn_search_p50_ms": round(percentile(turn_times, 0.5), 2),
        "turn_search_p95_ms": round(percentile(turn_times, 0.95), 2),
        "lookup_p50_ms": round(percentile(lookup_times, 0.5), 2),
        "lookup_p95_ms": round(percentile(lookup_times, 0.95), 2),
        "tools_lexical_p50_ms": round(percentile(lexical_times, 0.5), 2),
        "tools_lexical_p95_ms": round(percentile(lexical_times, 0.95), 2),
        "added_p50_ms": round(percentile(added_times, 0.5), 2),
        "added_p95_ms": round(percentile(added_times, 0.95), 2),
        "total_p50_ms": round(percentile(total_times, 0.5), 2),
        "total_p95_ms": round(percentile(total_times, 0.95), 2)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from py_agent.embedding.use_m3 import resources
    results = run_in_pyodide(RUNNER, [str(resources().parent),
                                      f"{args.turns} {args.tools} {args.repeat}"], timeout_s=3600)
    for r in results:
        print(json.dumps(r))
        print("\n| runtime | archived turns | tools | weights load (ms) "
              "| tokenizer load (ms) | embed a turn (ms) | embed p50 / p95 | turn search "
              "p50 / p95 | of it, 50 cosines looked up p50 / p95 | tools, lexical alone p50 / p95 | added by the embedder p50 / p95 "
              "| embed + turn search + tools p50 / p95 |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        print(f"| {r['runtime']} | {r['turns']:,} | {r['tools']} | {r['weights_load_ms']} "
              f"| {r['tokenizer_load_ms']} | {r['embed_turn_ms']} | {r['embed_p50_ms']} / "
              f"{r['embed_p95_ms']} | {r['turn_search_p50_ms']} / {r['turn_search_p95_ms']} "
              f"| {r['lookup_p50_ms']} / {r['lookup_p95_ms']} "
              f"| {r['tools_lexical_p50_ms']} / {r['tools_lexical_p95_ms']} | "
              f"{r['added_p50_ms']} / {r['added_p95_ms']} | {r['total_p50_ms']} / "
              f"{r['total_p95_ms']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
