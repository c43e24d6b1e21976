"""Benchmark: a long conversation against FunctionModel with Gemini Nano's window.

Prints, for one run: the largest prompt as a fraction of the window, prompt
tokens sent per turn at turns 10, 100 and 300, compactions, model calls that
compaction cost per 100 turns, and wall time per turn. Not a test: the numbers
are for the project's notes and for comparing changes side by side.

    python bench/long_conversation.py [--turns 320] [--window 9216]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.unit.long_chat import long_chat  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=320)
    parser.add_argument("--window", type=int, default=9216)
    args = parser.parse_args()
    started = time.perf_counter()
    report = asyncio.run(long_chat(turns=args.turns, window=args.window))
    elapsed = time.perf_counter() - started
    print(f"turns: {report.turns}, window: {report.window} tokens")
    print(f"largest prompt (session fill when prompted): {report.max_fill:.1%} of the window")
    for turn in (10, 100, 300):
        if turn in report.tokens_per_turn:
            print(f"prompt tokens sent in turn {turn}: {report.tokens_per_turn[turn]}")
    print(f"compactions: {report.compactions} ({report.failed} failed)")
    print(f"compaction model calls per 100 turns: {report.compaction_calls * 100 / report.turns:.1f}")
    print(f"archived turns: {report.archived}; quota errors: {report.quota_errors}; "
          f"overflow evictions: {report.overflow_events}")
    print(f"CPython time per turn: {elapsed / report.turns * 1000:.1f} ms")


if __name__ == "__main__":
    main()
