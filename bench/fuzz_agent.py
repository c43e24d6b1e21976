"""Fuzz the agent: 10,000 seeded cases of hostile model output, misbehaving models, tools
and storage, stops and two writers per session (see tests/unit/fuzz_agent.py).

Prints the counts that must all be 0 (escapes, hangs, unreadable sessions, lost and
duplicated turns), how the turns ended, and the runtime. Exits 1 if any count is not 0.
Not a test: the suite runs a few hundred of these cases (tests/unit/test_fuzz.py).

    python bench/fuzz_agent.py [--cases 10000] [--first-seed 0]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.unit.fuzz_agent import run_cases  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # the agent logs every contained failure
    seeds = range(args.first_seed, args.first_seed + args.cases)
    report = run_cases(seeds)
    rows = [("cases", report.cases), ("turns", report.turns),
            ("escapes", report.escapes), ("hangs", report.hangs),
            ("unreadable sessions", report.unreadable), ("lost turns", report.lost),
            ("duplicate turn ids", report.duplicates),
            ("unindexed turns", report.unindexed)]
    print(f"seeds {seeds.start}..{seeds.stop - 1}, run {time.strftime('%Y-%m-%d %H:%M')}")
    for name, value in rows:
        print(f"  {name:<22}{value:>8}")
    print("  turns ended as:      " + ", ".join(f"{k} {v}" for k, v in
                                               sorted(report.statuses.items())))
    print("  stores:              " + ", ".join(f"{k} {v}" for k, v in
                                               sorted(report.stores.items())))
    print(f"  runtime               {report.seconds:.1f} s "
          f"({1000 * report.seconds / max(1, report.cases):.1f} ms per case)")
    for failure in report.failures:
        print("  FAIL " + failure)
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main())
