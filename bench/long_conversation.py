"""Benchmark: a long conversation against FunctionModel with Gemini Nano's window.

Runs the same seeded chat twice in one process, with memory sessions (each chat
keeps a model session that has read the memory; a turn prompts only tools and
message) and without them (every turn's first prompt carries the whole memory, as
before), and prints side by side, at turns 10, 100 and 300:

- critical-path tokens: what the model reads before it can answer (the turn's
  step prompts, plus any append made before its first step, such as a memory
  session built on the spot after a reload);
- total tokens: everything the model reads during the turn, appends of finished
  turns, background rebuilds and compaction calls included, as the mean over the
  ten turns ending there (compaction makes single turns spiky) and over the run;

plus the largest session fill, overflows, compactions and wall time per turn. Not
a test: the numbers are for the project's notes and for comparing changes.

    python bench/long_conversation.py [--turns 320] [--window 9216]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.unit.long_chat import LongChatReport, long_chat  # noqa: E402


def _around(values: dict[int, int], turn: int, width: int = 10) -> float:
    return statistics.mean(values[t] for t in range(max(1, turn - width + 1), turn + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=320)
    parser.add_argument("--window", type=int, default=9216)
    args = parser.parse_args()
    reports: dict[str, tuple[LongChatReport, float]] = {}
    for name, live in (("today (no memory session)", 0), ("memory sessions", 4)):
        started = time.perf_counter()
        report = asyncio.run(long_chat(turns=args.turns, window=args.window,
                                       memory_sessions=live))
        reports[name] = (report, time.perf_counter() - started)
    (old, old_s), (new, new_s) = reports.values()
    print(f"turns: {args.turns}, window: {args.window} tokens; same seeded chat, one run\n")
    print(f"{'':34}{'today':>10}{'memory session':>16}{'ratio':>8}")
    rows = []
    for turn in (10, 100, 300):
        if turn not in old.critical_tokens:
            continue
        rows.append((f"critical-path tokens, turn {turn}", old.critical_tokens[turn],
                     new.critical_tokens[turn]))
        rows.append((f"total tokens/turn, turns {max(1, turn - 9)}-{turn}",
                     _around(old.total_tokens, turn), _around(new.total_tokens, turn)))
    rows.append(("critical-path tokens, mean of run", statistics.mean(old.critical_tokens.values()),
                 statistics.mean(new.critical_tokens.values())))
    rows.append(("total tokens/turn, mean of run", statistics.mean(old.total_tokens.values()),
                 statistics.mean(new.total_tokens.values())))
    for label, a, b in rows:
        print(f"{label:34}{a:>10.0f}{b:>16.0f}{b / a:>8.2f}")
    print()
    for name, (r, seconds) in reports.items():
        print(f"{name}: largest fill {r.max_fill:.1%}; quota errors {r.quota_errors}; overflow "
              f"evictions {r.overflow_events}; compactions {r.compactions} ({r.failed} failed); "
              f"compaction calls/100 turns {r.compaction_calls * 100 / r.turns:.1f}; appended "
              f"{r.appended_tokens} tokens; archived {r.archived}; "
              f"{seconds / r.turns * 1000:.1f} ms/turn in CPython")
    print(f"memory sessions: {new.memory_stats}")


if __name__ == "__main__":
    main()
