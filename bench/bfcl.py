#!/usr/bin/env python3
"""py-agent on the Berkeley Function Calling Leaderboard (BFCL v4), against the same
model's native tool calling and plain prompting, on one OpenAI-compatible server.

    python bench/bfcl.py --gguf PATH --json OUT          # starts llama.cpp's server, stops it after
    python bench/bfcl.py --model-url http://127.0.0.1:8080/v1 --model NAME   # a server you run
    python bench/bfcl.py --gguf PATH --categories simple_python,irrelevance --limit 5 --half tune

Every case goes through the three methods back to back (``bench/bfcl_methods.py``): the
whole agent (retriever, memory, loop, constraints), chat completions with ``tools``, and
BFCL's prompt. BFCL's own checker scores each (``bench/bfcl_score.py``). Cases are split
into a tune half and a report half by a hash of their id; by default the report half, at
most 50 cases a category (20 for ``multi_turn_base``), the first by the same hash.

``--gguf`` builds llama.cpp's server once if it is not cached (``bench/llama_server.py``)
and runs it on this machine's CPU. The table prints accuracy, a Wilson 95% interval and
the median seconds per case for each method; ``--json`` writes the same, and
``--log`` every case's replies and verdicts (JSON Lines). ``overall`` is the mean of the
categories' accuracies, each category counting once, as BFCL averages its groups.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bfcl_data import (CATEGORIES, DEFAULT_CATEGORIES, MULTI_TURN_CATEGORIES,  # noqa: E402
                             BfclUnavailableError, Case, load_cases)
from bench.bfcl_methods import METHODS, Sampling, Transcript  # noqa: E402
from bench.bfcl_score import Verdict, score, wilson  # noqa: E402
from bench.llama_server import (LLAMA_CPP_PYTHON, WITHOUT_AMX, EngineError,  # noqa: E402
                                LlamaServer, build_variant)

DEFAULT_LIMIT = 50
MULTI_TURN_LIMIT = 20


def default_limit(category: str) -> int:
    return MULTI_TURN_LIMIT if category in MULTI_TURN_CATEGORIES else DEFAULT_LIMIT


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_category(category: str, cases: list[Case], methods: list, log_file) -> dict:
    """Every case through every method; the category's row."""
    outcomes: dict[str, list[tuple[Verdict, float]]] = {m.name: [] for m in methods}
    for index, case in enumerate(cases, 1):
        for method in methods:
            transcript: Transcript = method.run(case)
            verdict = score(case, transcript)
            outcomes[method.name].append((verdict, transcript.seconds))
            if log_file is not None:
                log_file.write(json.dumps({
                    "case": case.id, "method": method.name, "passed": verdict.passed,
                    "reason": verdict.reason[:500], "seconds": round(transcript.seconds, 2),
                    "error": transcript.error,
                    "turns": [[{"raw": s.raw[:2000], "calls": s.calls, "executed": s.executed}
                               for s in turn] for turn in transcript.turns],
                    "trace": transcript.trace},
                    ensure_ascii=False, default=str) + "\n")
                log_file.flush()
        marks = " ".join(f"{m.name}={'✓' if outcomes[m.name][-1][0].passed else '·'}"
                         for m in methods)
        print(f"  {category} {index}/{len(cases)} {case.id}: {marks}", flush=True)
    row: dict = {"n": len(cases), "ci95": {}, "median_s": {}}
    for name, results in outcomes.items():
        passed = sum(v.passed for v, _ in results)
        row[name] = round(passed / len(results), 4) if results else 0.0
        row["ci95"][name] = [round(x, 4) for x in wilson(passed, len(results))]
        row["median_s"][name] = round(statistics.median(s for _, s in results), 2) \
            if results else 0.0
    return row


def table(report: dict, names: list[str]) -> str:
    lines = [f"{'category':<20}{'n':>4}  " + "  ".join(f"{n:<28}" for n in names)]
    for category, row in report["categories"].items():
        cells = [f"{row[n]:6.1%} [{row['ci95'][n][0]:5.1%}, {row['ci95'][n][1]:5.1%}] "
                 f"{row['median_s'][n]:5.1f}s" for n in names]
        lines.append(f"{category:<20}{row['n']:>4}  " + "  ".join(f"{c:<28}" for c in cells))
    lines.append(f"{'overall':<24}  " + "  ".join(f"{report['overall'][n]:6.1%}"
                                                   + " " * 22 for n in names))
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--gguf", type=Path, help="a GGUF file: start llama.cpp's server on it")
    where.add_argument("--model-url", help="an OpenAI-compatible API base (…/v1) you run")
    parser.add_argument("--model", help="the model name the server knows (with --model-url)")
    parser.add_argument("--categories", default=",".join(DEFAULT_CATEGORIES),
                        help=f"comma-separated, of: {', '.join(CATEGORIES)}")
    parser.add_argument("--limit", type=int, default=None,
                        help=f"cases per category (default {DEFAULT_LIMIT}, "
                             f"{MULTI_TURN_LIMIT} for multi-turn)")
    parser.add_argument("--half", choices=["tune", "report"], default="report")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"comma-separated, of: {', '.join(METHODS)}")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--log", type=Path, help="write every case's replies here (JSON Lines)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="engine threads (--gguf; default: every core. On a busy machine "
                             "pass 1: a thread waiting for a busy core stalls the others)")
    parser.add_argument("--context", type=int, default=8192, help="engine context (--gguf)")
    parser.add_argument("--max-tokens", type=int, default=256,
                        help="the longest reply any method may get")
    args = parser.parse_args(argv)
    if args.model_url and not args.model:
        parser.error("--model-url needs --model")
    args.categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    unknown = [c for c in args.categories if c not in CATEGORIES]
    if unknown:
        parser.error(f"unknown categories: {', '.join(unknown)}")
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if any(m not in METHODS for m in args.methods):
        parser.error(f"--methods takes {', '.join(METHODS)}")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    return args


def run(args: argparse.Namespace, url: str, model: str, engine: str) -> dict:
    sampling = Sampling(max_tokens=args.max_tokens)
    methods = [METHODS[name](url, model, sampling) for name in args.methods]
    report: dict = {"model": model, "engine": engine, "half": args.half, "categories": {},
                    "overall": {}, "load_before": load()}
    started = time.time()
    log_file = args.log.open("w") if args.log else None
    try:
        for category in args.categories:
            cases = load_cases(category, args.half, args.limit or default_limit(category))
            print(f"{category}: {len(cases)} cases", flush=True)
            report["categories"][category] = run_category(category, cases, methods, log_file)
    finally:
        if log_file is not None:
            log_file.close()
    rows = report["categories"].values()
    report["overall"] = {m.name: round(statistics.mean(r[m.name] for r in rows), 4)
                         for m in methods} if rows else {}
    report["seconds"] = round(time.time() - started, 1)
    report["load_after"] = load()
    return report


def stop_on_term(*_) -> None:
    raise SystemExit(143)  # so that `finally` stops the engine on a plain kill too


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server = None
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop_on_term)
    try:
        if args.gguf:
            server = LlamaServer(args.gguf.resolve(), threads=args.threads,
                                 context=args.context).start()
            url, model = server.url + "/v1", args.gguf.stem
            cpu = "CPU without AMX" if build_variant() == WITHOUT_AMX else "CPU"
            engine = (f"llama.cpp llama-server (from llama-cpp-python {LLAMA_CPP_PYTHON}'s "
                      f"sources), {cpu}, {args.threads} threads, context {args.context}")
        else:
            url, model, engine = args.model_url, args.model, f"server at {args.model_url}"
        report = run(args, url, model, engine)
    except (BfclUnavailableError, EngineError) as exc:
        print(f"bench/bfcl.py: {exc}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    print(table(report, args.methods))
    print(f"{report['seconds']:.0f} s; load average before {report['load_before']}, "
          f"after {report['load_after']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
