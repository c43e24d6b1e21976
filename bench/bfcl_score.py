"""Scoring a BFCL case the way BFCL scores it, and the intervals around an accuracy.

- AST categories: the turn's calls, in BFCL's ``[{name: {arg: value}}]`` form, go to
  BFCL's ``ast_checker`` (parallel categories: order-free). No call at all fails.
- Irrelevance categories: a case passes when no call was made.
- Multi-turn: each turn's executed calls, reply by reply, go to BFCL's
  ``multi_turn_checker``, which replays them on fresh backends beside the expected calls
  and compares the backends' state and the results after every turn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.bfcl_data import Case, bfcl
from bench.bfcl_methods import Transcript, forget_run


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""


def score(case: Case, transcript: Transcript) -> Verdict:
    """Whether ``transcript`` answers ``case``, by BFCL's own checks."""
    b = bfcl()
    try:
        if case.kind == "irrelevance":
            calls = transcript.calls(0)
            return Verdict(not calls, f"made {len(calls)} call(s)" if calls else "")
        if case.kind == "ast":
            calls = transcript.calls(0)
            if not calls:
                return Verdict(False, "no call" + (f" ({transcript.error})"
                                                   if transcript.error else ""))
            result = b.ast.ast_checker(case.functions, calls, case.answer,
                                       b.enums.Language.PYTHON, case.category, "py-agent-bench")
            return Verdict(bool(result["valid"]), "; ".join(map(str, result.get("error", []))))
        return _multi_turn(case, transcript)
    finally:
        forget_run(transcript.run_name)


def _multi_turn(case: Case, transcript: Transcript) -> Verdict:
    b = bfcl()
    if len(transcript.turns) != len(case.answer):
        return Verdict(False, f"{len(transcript.turns)} turns run of {len(case.answer)}"
                       + (f" ({transcript.error})" if transcript.error else ""))
    decoded = [[step.executed for step in turn if step.executed] for turn in transcript.turns]
    entry = {k: v for k, v in case.entry.items() if k != "function"}
    result = b.multi_turn.multi_turn_checker(decoded, case.answer, entry, case.category,
                                             transcript.run_name)
    return Verdict(bool(result["valid"]), str(result.get("error_message", "")))


def wilson(passed: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval (95% by default) for ``passed`` of ``n``."""
    if n == 0:
        return (0.0, 1.0)
    p = passed / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))
