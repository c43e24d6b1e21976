"""Benchmark: does memory keep what a user planted over 500 turns, and only what holds?

The conversation is ``tests/data/planted_facts.json`` (52 facts, 14 updates, 6
retractions, 430 filler turns, written from the user's side without seeing the
code), played against the scripted model of ``tests/planted_chat.py`` (a lossy but
honest summarizer, an extractor that reports what the turns say). Each scenario runs
today's code and a baseline checkout (by default py-agent before issue 10: facts
merged first-in-first-out up to ``max_facts``, no timeouts, no prefix compression),
side by side in one run, each in its own process.

Measures, on the first prompt of the last turn: current planted facts present
(probes matched after lower-casing and keeping only letters and digits); stale
facts shown as current (an old value or a retracted fact in the key facts);
context overflows; compaction model calls per 100 turns; step prompt tokens per
turn; and, with a summarizer that never answers, whether waiting for compaction
returned and whether the fact of turn 1 is still there.

    python bench/memory_fidelity.py [--baseline REF] [--scenarios nano,4096,2048,hang]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# py-agent before issue 10 (the commit this work started from).
BASELINE = "158f516"

SCENARIOS = {
    "nano": ("500 turns, 9,216-token window (Gemini Nano)", ["--window", "9216"]),
    "4096": ("500 turns, 4,096-token window", ["--window", "4096"]),
    "2048": ("500 turns, 2,048-token window", ["--window", "2048"]),
    "hang": ("150 turns, a summarizer that never answers",
             ["--turns", "150", "--hang-summary", "--idle-wait", "0.2"]),
}

ROWS = [
    ("turns answered", lambda m: f"{m['answered']}/{m['turns']}"),
    ("current planted facts in the last prompt", lambda m: f"{m['present']}/{m['current']}"),
    ("stale facts shown as current (key facts)",
     lambda m: f"{m['stale_in_facts']}/{m['stale_total']}"),
    ("context overflows", lambda m: str(m["overflows"])),
    ("compaction calls per 100 turns", lambda m: f"{m['compaction_calls_per_100']:.1f}"),
    ("step prompt tokens per turn (mean / max)",
     lambda m: f"{m['prompt_tokens_mean']:.0f} / {m['prompt_tokens_max']}"),
    ("compactions (failed)", lambda m: f"{m['compactions']} ({m['failed_compactions']})"),
    ("waits for compaction that did not return", lambda m: str(m["wait_idle_timeouts"])),
    ("turn-1 fact in the last prompt", lambda m: "yes" if m["turn_1_fact_in_last_prompt"]
     else "no"),
]


def baseline_tree(ref: str, into: Path) -> Path:
    """A checkout of ``ref`` with today's scripted conversation and data beside it."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "tests" / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests" / "planted_chat.py", into / "tests" / "planted_chat.py")
    shutil.copy(ROOT / "tests" / "data" / "planted_facts.json",
                into / "tests" / "data" / "planted_facts.json")
    return into


def measure(tree: Path, extra: list[str]) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(tree / "tests" / "planted_chat.py"), "--json",
                           *extra], cwd=tree, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="git ref of the baseline")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--json", help="also write every measure to this file")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = baseline_tree(args.baseline, Path(tmp))
        for name in args.scenarios.split(","):
            title, extra = SCENARIOS[name]
            new, new_s = measure(ROOT, extra)
            old, old_s = measure(old_tree, extra)
            results[name] = {"today": new, "baseline": old}
            print(f"\n### {title}\n")
            print(f"| | today | baseline ({args.baseline}) |\n|---|---|---|")
            for label, show in ROWS:
                print(f"| {label} | {show(new)} | {show(old)} |")
            print(f"| bench wall time | {new_s:.1f} s | {old_s:.1f} s |")
            if new["missing"] or new["stale"]:
                print(f"\ntoday: missing {new['missing']}, stale {new['stale']}")
            print(f"baseline: missing {old['missing']}, stale {old['stale']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
