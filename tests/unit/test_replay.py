"""The replay harness re-runs a recorded 300-turn session's compactions."""

import json
import subprocess
import sys
from pathlib import Path

from py_agent.model import Purpose
from py_agent.replay import load_probes, replay
from py_agent.testing import FunctionModel
from py_agent.transfer import parse_session
from tests.planted_chat import Script, load
from tests.unit.support import run

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "recorded_session_300.jsonl"
PLANTED = ROOT / "tests" / "data" / "planted_facts.json"


def bundle():
    return parse_session(RECORDED.read_text(encoding="utf-8"))


def test_the_recorded_session_holds_what_replay_needs():
    recorded = bundle()
    assert len(recorded.turns) == 300 and len(recorded.compressions) >= 10
    kinds = {r.kind for r in recorded.compressions}
    assert kinds == {"compaction", "facts"}
    for record in recorded.compressions:
        assert record.policy and record.facts_prompt or record.summary_prompt
        assert record.summary_system or record.kind == "facts"


def test_replaying_with_the_same_model_keeps_every_planted_fact():
    probes = load_probes(str(PLANTED))
    model = FunctionModel(Script(load()).respond)
    report = run(replay(bundle(), model, probes=probes, model_name="scripted"))
    recorded = bundle().compressions
    assert len(report.steps) == len(recorded)
    assert all(s.replayed.ok for s in report.steps)
    # Every compaction ran again with today's prompts: one summary per compaction.
    assert len(model.calls_for(Purpose.SUMMARY)) >= sum(r.kind == "compaction" for r in recorded)
    last = report.steps[-1]
    held, due, missing = last.probes_replayed
    assert due >= 30 and held == due and not missing
    assert last.probes_recorded[0] == last.probes_recorded[1]
    diff = last.fact_diff()
    assert len(diff["kept"]) >= 30 and not diff["lost"]


def test_a_worse_model_shows_up_as_lost_facts_and_planted_facts_missing():
    def forgetful(call):
        if call.purpose is Purpose.FACTS:
            return json.dumps({"facts": []})
        if call.purpose is Purpose.SUMMARY:
            return "The user chatted about many everyday things with the assistant."
        return ""

    report = run(replay(bundle(), FunctionModel(forgetful), probes=load_probes(str(PLANTED))))
    last = report.steps[-1]
    assert last.probes_replayed[0] < last.probes_recorded[0]
    assert last.fact_diff()["lost"] and not last.replayed_facts


def test_independent_replay_starts_each_compaction_from_its_recorded_inputs():
    report = run(replay(bundle(), FunctionModel(Script(load()).respond), chained=False))
    for step in report.steps:
        assert step.replayed.previous_summary == step.recorded.previous_summary
        assert step.replayed.facts_before == step.recorded.facts_before


def test_the_command_line_writes_a_side_by_side_report(tmp_path):
    out = tmp_path / "report.md"
    done = subprocess.run(
        [sys.executable, "-m", "py_agent.replay", str(RECORDED), "--fixture",
         str(ROOT / "tests" / "planted_chat.py") + ":respond", "--probes", str(PLANTED),
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "compactions replayed" in done.stderr
    text = out.read_text()
    assert text.startswith("# Replay of") and "## Totals" in text
    assert "| planted facts held at the end |" in text and "**Replayed**" in text
    bad = subprocess.run([sys.executable, "-m", "py_agent.replay", str(tmp_path / "nope.jsonl"),
                          "--fixture", "x.py:y"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and "nope.jsonl" in bad.stderr
