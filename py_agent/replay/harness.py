"""Replay a session's recorded compactions with today's prompts, against a chosen model.

    python -m py_agent.replay SESSION.jsonl --fixture responder.py:respond [--out report.md]
    python -m py_agent.replay SESSION.jsonl --base-url http://localhost:11434/v1 --model gemma3

``SESSION.jsonl`` is a session as the page's *Export* (or ``Agent.export_session``)
writes it: the state, every raw turn, and the compression log, whose records keep
each compaction's inputs as sent. Every recorded compaction is run again, in order,
with today's prompts, the policy it was recorded with, and the chosen model:
chained by default (each replayed compaction starts from the replayed summary and
facts before it, so drift over a long session shows), or ``--independent`` (each
from its recorded inputs). The report puts the recorded and the replayed memory
side by side: summaries, facts kept, lost, changed and new, lengths, timings, and,
with ``--probes``, how many planted facts each memory still holds.

``--probes FILE`` is JSON: a list of strings that should survive, or a planted-facts
set (``{"facts": [{"state": {"turn", "probe"}, "update": ..., "retract": ...}]}``),
whose probes are checked once their turn was compacted, with updates and
retractions applied. Probes match after lower-casing and dropping everything but
letters and digits, so "18,500" finds "18500".
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import time
from pathlib import Path

from ..budget import MemoryPolicy
from ..memory.facts import over_budget
from ..memory.steps import (base_prompts, bounded_call, extract_facts, outdated, settle_folds,
                           summarize)
from ..memory.summary import InvalidSummaryError, fallback_summary
from ..model import GEMINI_NANO_WINDOW, LanguageModel, ModelError, ModelSession, Purpose
from ..prompting import render_facts
from .report import Probe, ReplayedCompaction, ReplayReport, render_markdown
from ..state import CompressionRecord, Fact, now_ms
from ..tokens import TokenCounter
from ..transfer import SessionBundle, parse_session


def load_probes(path: str) -> list[Probe]:
    """Probes from a JSON list of strings or a planted-facts set (see the module doc)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [Probe(str(p), [(None, [str(p)])]) for p in data]
    probes = []
    for fact in data.get("facts", []):
        texts = [(fact["state"]["turn"], list(fact["state"]["probe"]))]
        if fact.get("update"):
            texts.append((fact["update"]["turn"], list(fact["update"]["probe"])))
        if fact.get("retract"):
            texts.append((fact["retract"]["turn"], None))
        probes.append(Probe(str(fact.get("id") or fact["state"]["probe"][0]), texts))
    return probes


def normalise(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def retained(probes: list[Probe], memory: str, through_turn: int) -> tuple[int, int, list[str]]:
    """How many probes due by ``through_turn`` ``memory`` holds: (held, due, missing names)."""
    haystack = normalise(memory)
    held, due, missing = 0, 0, []
    for probe in probes:
        wanted = probe.wanted(through_turn)
        if not wanted:
            continue
        due += 1
        if any(normalise(w) in haystack for w in wanted):
            held += 1
        else:
            missing.append(probe.name)
    return held, due, missing


class _Caller:
    """Model calls for the replay: a clone of a prefilled base per call, bounded by the
    recorded policy's timeout, as the memory passes make them."""

    def __init__(self, model: LanguageModel) -> None:
        self.model = model
        self.bases: dict[Purpose, ModelSession] = {}

    async def _base(self, purpose: Purpose) -> ModelSession:
        if purpose not in self.bases:
            prompts = base_prompts()[purpose]
            self.bases[purpose] = await self.model.create(initial_prompts=prompts,
                                                          purpose=purpose)
        return self.bases[purpose]

    async def __call__(self, purpose: Purpose, text: str, schema: dict | None,
                       timeout: float) -> tuple[str, float]:
        return await bounded_call(lambda: self._base(purpose), purpose, text, schema, timeout)

    async def close(self) -> None:
        for base in self.bases.values():
            await base.destroy()


def _recorded_facts_after(record: CompressionRecord, before: list[Fact]) -> list[Fact]:
    """The facts a recorded compaction left (records before fact ids: before + added)."""
    known = record.facts_before if record.facts_before or record.policy else before
    gone = {c.fact.key() for c in record.fact_changes
            if c.action in ("superseded", "retracted", "folded")}
    kept = [f for f in known if f.key() not in gone]
    seen = {f.key() for f in kept}
    return kept + [f for f in record.facts_added if f.key() not in seen]


async def replay(bundle: SessionBundle, model: LanguageModel, *, chained: bool = True,
                 probes: list[Probe] = (), model_name: str = "",
                 source: str = "") -> ReplayReport:
    """Re-run every compaction of ``bundle`` with today's prompts (see the module doc)."""
    report = ReplayReport(source=source, model=model_name or type(model).__name__,
                          chained=chained)
    started = time.perf_counter()
    turns = {t.id: t for t in bundle.turns}
    counter = TokenCounter()
    ask = _Caller(model)
    summary, facts, next_id = "", [], 1
    old_summary, old_facts = "", []
    pending: list = []  # facts outdated since the last replayed summary
    through = 0
    try:
        for rec in bundle.compressions:
            policy = MemoryPolicy.from_dict(rec.policy) if rec.policy else MemoryPolicy()
            chosen = [turns[i] for i in rec.turn_ids if i in turns]
            # Records of py-agent before facts refreshes read the compacted turns.
            read = rec.facts_turn_ids if rec.policy else rec.turn_ids
            fact_turns = [turns[i] for i in read if i in turns]
            previous = summary if chained else rec.previous_summary
            known = facts if chained else list(rec.facts_before)
            new = CompressionRecord(session_id=rec.session_id, started_at=now_ms(),
                                    duration_ms=0, ok=False, turn_ids=rec.turn_ids,
                                    previous_summary=previous, summary_prompt="", summary="",
                                    focus=rec.focus, trigger=rec.trigger, facts_before=known,
                                    policy=policy.to_dict())
            clock = time.perf_counter()
            new_facts, changes = list(known), []
            if policy.extract_facts and fact_turns:
                try:
                    result, next_id = await extract_facts(ask, new, known, fact_turns, policy,
                                                          max(next_id, _next_number(known)))
                    new_facts, changes = result.facts, list(result.changes)
                except ModelError as exc:
                    new.facts_error = f"{type(exc).__name__}: {exc}"
            folding = over_budget(new_facts, policy, counter)
            new.folded, new.kind = folding, rec.kind
            pending += outdated(changes)
            if rec.kind == "facts" and not folding:  # a refresh that needed no summary
                new.summary, new.ok = previous, new.facts_error is None
            else:
                try:
                    new.summary = await summarize(ask, new, previous, chosen, policy, counter,
                                                  rec.focus, keep=folding, outdated=pending)
                    new.ok, pending = True, []
                except (ModelError, InvalidSummaryError) as exc:
                    new.error = f"{type(exc).__name__}: {exc}"
                    new.summary = (previous if rec.kind == "facts" else
                                   fallback_summary(previous, chosen, folding, policy, counter))
                    new.fallback = rec.kind != "facts"
            if new.ok or new.fallback:
                new_facts, settled = settle_folds(new_facts, folding, new.summary)
            else:
                settled = []
            new.fact_changes = changes + settled
            new.duration_ms = (time.perf_counter() - clock) * 1000
            recorded_after = _recorded_facts_after(rec, old_facts)
            if rec.ok:
                old_summary, old_facts = rec.summary, recorded_after
            if rec.ok or not chained:
                summary, facts = new.summary, new_facts
            step = ReplayedCompaction(rec, new, recorded_after if rec.ok else old_facts,
                                      new_facts)
            step.recorded_memory = old_summary + "\n" + render_facts(step.recorded_facts)
            step.replayed_memory = new.summary + "\n" + render_facts(new_facts)
            # Planted facts are due once their turn was compacted or read for facts.
            through = max([through, *rec.turn_ids, *rec.facts_turn_ids])
            step.probes_recorded = retained(probes, step.recorded_memory, through)
            step.probes_replayed = retained(probes, step.replayed_memory, through)
            report.steps.append(step)
    finally:
        await ask.close()
    report.seconds = time.perf_counter() - started
    return report


def _next_number(facts: list[Fact]) -> int:
    numbers = [int(f.id[1:]) for f in facts if f.id[1:].isdigit()]
    return max(numbers, default=0) + 1


def _load_fixture(spec: str):
    """``path/to/file.py:function`` or ``package.module:function``: a responder for
    :class:`~py_agent.testing.FunctionModel`."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise SystemExit(f"--fixture {spec!r}: expected FILE.py:FUNCTION or MODULE:FUNCTION")
    if where.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location("py_agent_replay_fixture", where)
        if module_spec is None or module_spec.loader is None:
            raise SystemExit(f"--fixture {spec!r}: cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    try:
        return getattr(module, name)
    except AttributeError:
        raise SystemExit(f"--fixture {spec!r}: {where} has no {name!r}") from None


def _model_from(args: argparse.Namespace) -> tuple[LanguageModel, str]:
    if args.fixture:
        from ..testing import FunctionModel
        return FunctionModel(_load_fixture(args.fixture), context_window=args.window), \
            f"fixture {args.fixture}"
    from ..openai_compat import OpenAIModel
    from ..openai_compat.environment import api_key_from_environment
    model = OpenAIModel(args.base_url, args.model, api_key=api_key_from_environment(),
                        context_window=args.window if args.window_given else None,
                        stream=False)
    return model, f"{args.model} at {args.base_url}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m py_agent.replay",
                                     description="Replay recorded compactions with today's "
                                                 "prompts and write a side-by-side report.")
    parser.add_argument("bundle", help="a session exported as JSON Lines")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--fixture", help="FILE.py:FUNCTION answering each prompt "
                                          "(a FunctionModel responder)")
    source.add_argument("--base-url", help="an OpenAI-compatible server, e.g. "
                                           "http://localhost:11434/v1")
    parser.add_argument("--model", help="the server's model name (with --base-url)")
    parser.add_argument("--window", type=int, default=None,
                        help=f"the model's context window (default: {GEMINI_NANO_WINDOW}, "
                             "or the server's)")
    parser.add_argument("--independent", action="store_true",
                        help="replay each compaction from its recorded inputs, not chained")
    parser.add_argument("--probes", help="JSON: strings, or a planted-facts set")
    parser.add_argument("--out", help="write the Markdown report here (default: stdout)")
    args = parser.parse_args(argv)
    if args.base_url and not args.model:
        parser.error("--base-url needs --model")
    args.window_given = args.window is not None
    args.window = args.window or GEMINI_NANO_WINDOW
    try:
        bundle = parse_session(Path(args.bundle).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: {args.bundle}: {exc}", file=sys.stderr)
        return 1
    probes = load_probes(args.probes) if args.probes else []
    model, name = _model_from(args)
    report = asyncio.run(replay(bundle, model, chained=not args.independent, probes=probes,
                                model_name=name, source=args.bundle))
    text = render_markdown(report)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"{len(report.steps)} compactions replayed in {report.seconds:.1f} s; "
              f"report in {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0

