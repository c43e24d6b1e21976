"""What a replay reports: recorded and replayed memory side by side, as data and Markdown.

The replay harness (:mod:`py_agent.replay`) fills these types; this module only
holds them and renders them, so it never needs the harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..memory.fact_rules import carried_by
from ..state import CompressionRecord, Fact
from ..tokens import TokenCounter


@dataclass
class Probe:
    """Something the memory should hold once turn ``turn`` is compacted (None: always)."""

    name: str
    texts: list[tuple[int | None, list[str] | None]]  # (from turn, probes; None = retracted)

    def wanted(self, through_turn: int) -> list[str] | None:
        current = None
        for turn, probes in self.texts:
            if turn is None or turn <= through_turn:
                current = probes
        return current


@dataclass
class ReplayedCompaction:
    """One recorded compaction and its replay."""

    recorded: CompressionRecord
    replayed: CompressionRecord
    recorded_facts: list[Fact]
    replayed_facts: list[Fact]
    recorded_memory: str = ""
    replayed_memory: str = ""
    probes_recorded: tuple[int, int, list[str]] = (0, 0, [])
    probes_replayed: tuple[int, int, list[str]] = (0, 0, [])

    def fact_diff(self) -> dict[str, list[Any]]:
        """Facts kept (same wording), changed (same category, mostly the same words),
        lost (only recorded) and new (only replayed)."""
        old = {f.key(): f for f in self.recorded_facts}
        new = {f.key(): f for f in self.replayed_facts}
        kept = [old[k] for k in old if k in new]
        only_old = [f for k, f in old.items() if k not in new]
        only_new = [f for k, f in new.items() if k not in old]
        changed = []
        for fact in list(only_old):
            twin = next((n for n in only_new if n.category == fact.category
                         and carried_by(fact, n.text)), None)
            if twin is not None:
                changed.append((fact, twin))
                only_old.remove(fact)
                only_new.remove(twin)
        return {"kept": kept, "changed": changed, "lost": only_old, "new": only_new}


@dataclass
class ReplayReport:
    source: str
    model: str
    chained: bool
    steps: list[ReplayedCompaction] = field(default_factory=list)
    seconds: float = 0.0



_COUNTER = TokenCounter()


def _tokens(text: str) -> int:
    return _COUNTER.count(text)


def _span(ids: list[int]) -> str:
    if not ids:
        return "no turns"
    return f"turn {ids[0]}" if len(ids) == 1 else f"turns {ids[0]}–{ids[-1]}"


def _held(result: tuple[int, int, list[str]]) -> str:
    held, due, _ = result
    return f"{held}/{due}" if due else "–"


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def _outcome(step: ReplayedCompaction, replayed: bool) -> str:
    record = step.replayed if replayed else step.recorded
    if record.fallback:
        return "fallback (no model summary)"
    return "ok" if record.ok else f"failed: {record.error}"


def render_step(number: int, step: ReplayedCompaction) -> list[str]:
    old, new = step.recorded, step.replayed
    diff = step.fact_diff()
    if old.kind == "facts":
        title = f"## {number}. Facts refresh · {_span(old.facts_turn_ids)} read"
    else:
        title = f"## {number}. Compaction · {_span(old.turn_ids)} · {old.trigger}"
    lines = [title, "",
             "| | recorded | replayed |", "|---|---|---|",
             f"| outcome | {_outcome(step, False)} | {_outcome(step, True)} |",
             f"| summary | {_tokens(old.summary)} tokens | {_tokens(new.summary)} tokens |",
             f"| key facts after | {len(step.recorded_facts)} | {len(step.replayed_facts)} |",
             f"| planted facts held | {_held(step.probes_recorded)} | "
             f"{_held(step.probes_replayed)} |",
             f"| model calls | {old.model_calls} | {new.model_calls} |",
             f"| time | {_seconds(old.duration_ms)} | {_seconds(new.duration_ms)} |", "",
             f"Facts: {len(diff['kept'])} kept, {len(diff['changed'])} changed, "
             f"{len(diff['lost'])} lost, {len(diff['new'])} new."]
    lines += [f"- changed: “{a.text}” → “{b.text}”" for a, b in diff["changed"]]
    lines += [f"- lost: [{f.category}] {f.text}" for f in diff["lost"]]
    lines += [f"- new: [{f.category}] {f.text}" for f in diff["new"]]
    removed = [c for c in new.fact_changes if c.action != "kept"]
    lines += [f"- replay {c.action}: {c.fact.text}"
              + (f" → {c.replaced_by.text}" if c.replaced_by else "") + f" ({c.reason})"
              for c in removed]
    missing_old, missing_new = step.probes_recorded[2], step.probes_replayed[2]
    if missing_old or missing_new:
        lines.append(f"\nPlanted facts missing: recorded {', '.join(missing_old) or 'none'}; "
                     f"replayed {', '.join(missing_new) or 'none'}.")
    lines += ["", "<details><summary>Summaries</summary>", "",
              f"**Recorded** ({len(old.summary.split())} words): {old.summary or '(none)'}", "",
              f"**Replayed** ({len(new.summary.split())} words): {new.summary or '(none)'}", "",
              "</details>", ""]
    return lines


def render_markdown(report: ReplayReport) -> str:
    steps = report.steps
    mode = "chained" if report.chained else "independent (each from its recorded inputs)"
    lines = [f"# Replay of {report.source or 'a session'}", "",
             f"Model: {report.model}; {len(steps)} recorded passes (compactions and facts "
             f"refreshes), {mode}; "
             f"{report.seconds:.1f} s.", ""]
    if steps:
        last = steps[-1]
        compactions = [s for s in steps if s.recorded.kind == "compaction"]
        worked = (sum(s.recorded.ok and not s.recorded.fallback for s in compactions),
                  sum(s.replayed.ok and not s.replayed.fallback for s in compactions))
        calls = (sum(s.recorded.model_calls for s in steps),
                 sum(s.replayed.model_calls for s in steps))
        lines += ["## Totals", "", "| | recorded | replayed |", "|---|---|---|",
                  f"| compactions summarized by the model | {worked[0]}/{len(compactions)} | "
                  f"{worked[1]}/{len(compactions)} |",
                  f"| final summary | {_tokens(last.recorded.summary)} tokens | "
                  f"{_tokens(last.replayed.summary)} tokens |",
                  f"| final key facts | {len(last.recorded_facts)} | "
                  f"{len(last.replayed_facts)} |",
                  f"| planted facts held at the end | {_held(last.probes_recorded)} | "
                  f"{_held(last.probes_replayed)} |",
                  f"| model calls | {calls[0]} | {calls[1]} |",
                  f"| time in compaction | "
                  f"{_seconds(sum(s.recorded.duration_ms for s in steps))} | "
                  f"{_seconds(sum(s.replayed.duration_ms for s in steps))} |", ""]
    for number, step in enumerate(steps, 1):
        lines += render_step(number, step)
    return "\n".join(lines)
