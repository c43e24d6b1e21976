#!/usr/bin/env python3
"""Automatic recall on the recall set: what it brings into prompts, what it costs a turn.

    python bench/recall_auto.py                  # both halves, thresholds side by side
    python bench/recall_auto.py --turns 10000    # the time per turn at 10,000 turns too

Automatic recall (py_agent/turn/recalled.py) searches the archive with every message
and adds the best ``recall_k`` turns whose ``why.coverage`` reaches the policy's
``recall_min_coverage`` to the first prompt, within ``recall_max_tokens``. Two kinds of
message, over the set of ``tests/data/recall/`` (each sees only turns archived before it
and not its session's last 19, which its prompt holds):

- **questions** (the set's 100, asked from the user's side): the share whose evidence
  turn reaches the prompt ("evidence in prompt"), and the share of recalled turns that
  are evidence ("precision");
- **ordinary messages**: every user message of the archived sessions, asked at its own
  time (the set's 1,000 turns are a conversation like any): how often automatic recall
  adds anything, and how many tokens a message gets on average.

For each threshold, side by side in one run; the default was chosen on the tune half.
Time per message: the search, the filter and the rendering (``recall_for_message``'s
work, without a store: texts are in the index), median and p95 over the questions, at
the set's 1,000 turns and, with ``--turns``, more (its sessions copied, shifted back).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from recall_set import IN_PROMPT, load_set, replicate  # noqa: E402

from py_agent.budget import MemoryPolicy  # noqa: E402
from py_agent.recall import RecallIndex  # noqa: E402
from py_agent.tokens import TokenCounter  # noqa: E402
from py_agent.turn.recalled import render  # noqa: E402

DATA = ROOT / "tests" / "data" / "recall"
THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)


def build(sessions, titles) -> RecallIndex:
    index = RecallIndex()
    for session_id, turns in sessions.items():
        index.set_title(session_id, titles.get(session_id, ""))
        index.add_many(session_id, turns)
    return index


def automatic(index, query, *, asked_in, now, until, exclude, k, budget, threshold, counter,
              titles):
    """The turns automatic recall would add for ``query``, and the section's tokens."""
    hits = index.search(query, k=k, now=now, until=until, exclude=exclude)
    strong = [h for h in hits if h.why.coverage >= threshold]
    text, shown = render(strong, asked_in, titles.get, now, budget, counter.count)
    return shown, (counter.count(text) if text else 0)


def ordinary_messages(sessions):
    """Every archived user message, asked at its own time in its own session."""
    from datetime import datetime, timezone
    for session_id, turns in sessions.items():
        for position, turn in enumerate(turns):
            held = frozenset((session_id, t.id) for t in turns[max(0, position - IN_PROMPT):
                                                                position + 1])
            yield (turn.user, session_id,
                   datetime.fromtimestamp(turn.created_at / 1000, tz=timezone.utc),
                   turn.created_at - 1, held)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--turns", type=int, default=0,
                        help="also time a message at this many archived turns")
    args = parser.parse_args()
    sessions, titles, questions = load_set(args.data)
    policy, counter = MemoryPolicy(), TokenCounter()
    index = build(sessions, titles)
    print(f"{sum(map(len, sessions.values()))} turns, {len(questions)} questions; "
          f"recall_k {policy.recall_k}, recall_max_tokens {policy.recall_max_tokens}\n")
    print("| threshold | half | evidence in prompt | precision | ordinary messages with "
          "recall | tokens per ordinary message | tokens per question |")
    print("|---|---|---|---|---|---|---|")
    ordinary = list(ordinary_messages(sessions))
    for threshold in THRESHOLDS:
        options = dict(k=policy.recall_k, budget=policy.recall_max_tokens,
                       threshold=threshold, counter=counter, titles=titles)
        added, tokens = 0, 0
        for query, asked_in, now, until, held in ordinary:
            shown, cost = automatic(index, query, asked_in=asked_in, now=now, until=until,
                                    exclude=held, **options)
            added += bool(shown)
            tokens += cost
        for half in ("tune", "report"):
            chosen = [q for q in questions if q.half == half]
            found = shown_total = right = question_tokens = 0
            for q in chosen:
                shown, cost = automatic(index, q.query, asked_in=q.asked_in, now=q.asked_at,
                                        until=q.asked_ms, exclude=q.in_prompt, **options)
                keys = {(h.session_id, h.turn_id) for h in shown}
                found += bool(keys & set(q.evidence))
                right += len(keys & set(q.evidence))
                shown_total += len(keys)
                question_tokens += cost
            print(f"| {threshold:.1f} | {half} | {100 * found / len(chosen):.0f}% | "
                  f"{100 * right / max(1, shown_total):.0f}% | "
                  f"{100 * added / len(ordinary):.0f}% | {tokens / len(ordinary):.0f} | "
                  f"{question_tokens / len(chosen):.0f} |")
    print()
    for total in [sum(map(len, sessions.values()))] + ([args.turns] if args.turns else []):
        timed = build(replicate(sessions, total), titles) if total != len(ordinary) else index
        runs = []
        for q in questions:
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                automatic(timed, q.query, asked_in=q.asked_in, now=q.asked_at,
                          until=q.asked_ms, exclude=q.in_prompt, k=policy.recall_k,
                          budget=policy.recall_max_tokens,
                          threshold=policy.recall_min_coverage, counter=counter, titles=titles)
                best = min(best, (time.perf_counter() - started) * 1000)
            runs.append(best)
        runs.sort()
        print(f"time per message at {total:,} turns (CPython {sys.version.split()[0]}): "
              f"median {statistics.median(runs):.2f} ms, p95 {runs[int(0.95 * len(runs)) - 1]:.2f} ms")


if __name__ == "__main__":
    main()
