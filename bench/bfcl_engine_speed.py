#!/usr/bin/env python3
"""How many engine threads and server slots ``bench/bfcl.py --gguf`` should use: the same
native-tools requests (BFCL's tune half) through llama.cpp's server started three ways,
one after another in one run: one thread, every core, and every core with two slots
taking two requests at a time.

    python bench/bfcl_engine_speed.py --gguf PATH [--cases 6]

Prints, per set-up, the wall time for all requests, the ratio to one thread, and the
prompt and generated tokens a second the server reported. Run it on an idle machine: a
thread waiting for a busy core stalls the others, which is what the comparison is about.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bfcl import load  # noqa: E402
from bench.bfcl_data import load_cases, openai_tools  # noqa: E402
from bench.bfcl_methods import post_chat  # noqa: E402
from bench.llama_server import LlamaServer  # noqa: E402


def ask(url: str, case, max_tokens: int) -> dict:
    """One native-tools request; the server's timings."""
    body = {"model": "m", "messages": case.turns[0], "tools": openai_tools(case.functions),
            "max_tokens": max_tokens, "temperature": 0, "seed": 0}
    return post_chat(f"{url}/v1", body)["timings"]


def measure(gguf: Path, cases: list, threads: int, slots: int, max_tokens: int) -> dict:
    """All cases through one server; ``slots`` clients at a time."""
    server = LlamaServer(gguf, threads=threads, context=8192 * slots,
                         extra_args=["-np", str(slots)]).start()
    timings: list[dict] = [{} for _ in cases]
    try:
        def client(first: int) -> None:
            for i in range(first, len(cases), slots):
                timings[i] = ask(server.url, cases[i], max_tokens)

        started = time.perf_counter()
        clients = [threading.Thread(target=client, args=(k,)) for k in range(slots)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        seconds = time.perf_counter() - started
    finally:
        server.stop()
    return {"threads": threads, "slots": slots, "seconds": seconds,
            "prompt_tps": [t["prompt_per_second"] for t in timings],
            "gen_tps": [t["predicted_per_second"] for t in timings]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--category", default="simple_python")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    cases = load_cases(args.category, "tune", args.cases)
    print(f"{len(cases)} {args.category} cases, load average before {load()}")
    rows = [measure(args.gguf.resolve(), cases, threads, slots, args.max_tokens)
            for threads, slots in ((1, 1), (cores, 1), (cores, 2))]
    base = rows[0]["seconds"]
    print("| threads | slots | seconds | × one thread | prompt tok/s | generated tok/s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['threads']} | {r['slots']} | {r['seconds']:.1f} | "
              f"{base / r['seconds']:.2f} | {min(r['prompt_tps']):.0f}–{max(r['prompt_tps']):.0f}"
              f" | {min(r['gen_tps']):.0f}–{max(r['gen_tps']):.0f} |")
    print(f"load average after {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
