"""The archive-recall evaluation set (tests/data/recall) is well-formed.

A recall benchmark is only as honest as its labels: an evidence id that points at the
wrong turn, a question "asked" before its evidence was said, or evidence still sitting
in the prompt would all inflate or deflate the numbers silently. These checks pin the
set's contract - the one its README states - so an edit to the sources that breaks it
fails here rather than in a bench report.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import pytest

SET_DIR = Path(__file__).resolve().parents[1] / "data" / "recall"
MIN_GAP_TURNS = 20          # evidence in the asking session is at least this many turns back
KINDS = {"exact_detail", "recommendation", "cross_session", "changed_fact",
         "relative_date", "paraphrase", "entity", "number"}


def _load(name: str) -> list[dict]:
    with open(SET_DIR / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _when(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def turns() -> list[dict]:
    return _load("sessions.jsonl")


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return _load("questions.jsonl")


@pytest.fixture(scope="module")
def by_id(turns) -> dict[tuple[str, int], dict]:
    return {(t["session_id"], t["turn_id"]): t for t in turns}


def test_turns_have_the_documented_fields(turns):
    for turn in turns:
        where = f"{turn.get('session_id')}:{turn.get('turn_id')}"
        assert set(turn) <= {"session_id", "session_title", "turn_id", "time", "user",
                             "answer", "steps"}, where
        assert turn["user"].strip() and turn["answer"].strip(), where
        assert isinstance(turn["turn_id"], int), where
        _when(turn["time"])
        for step in turn.get("steps", []):
            assert set(step) == {"tool", "input", "observation"}, where
            assert all(isinstance(v, str) and v for v in step.values()), where


def test_turn_ids_count_up_and_times_are_ordered_within_a_session(turns):
    sessions: dict[str, list[dict]] = {}
    for turn in turns:
        sessions.setdefault(turn["session_id"], []).append(turn)
    for session_id, rows in sessions.items():
        assert [r["turn_id"] for r in rows] == list(range(1, len(rows) + 1)), session_id
        times = [_when(r["time"]) for r in rows]
        assert all(a < b for a, b in zip(times, times[1:])), session_id
        assert len({r["session_title"] for r in rows}) == 1, session_id


def test_every_evidence_and_distractor_id_exists(questions, by_id):
    for q in questions:
        assert q["evidence"], q["id"]
        for ref in q["evidence"] + q["distractors"]:
            assert (ref["session_id"], ref["turn_id"]) in by_id, (q["id"], ref)
        evidence = {(r["session_id"], r["turn_id"]) for r in q["evidence"]}
        distractors = {(r["session_id"], r["turn_id"]) for r in q["distractors"]}
        assert not evidence & distractors, q["id"]


def test_questions_have_the_documented_fields(questions, by_id):
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids))
    sessions = {key[0] for key in by_id}
    for q in questions:
        assert q["kind"] in KINDS, q["id"]
        assert q["half"] in {"tune", "report"}, q["id"]
        assert q["session_id"] in sessions, q["id"]
        assert q["query"].strip() and q["answer"].strip(), q["id"]
        assert ("window" in q) == (q["kind"] == "relative_date"), q["id"]


def test_questions_are_asked_after_their_evidence(questions, by_id):
    for q in questions:
        asked = _when(q["asked_at"])
        for ref in q["evidence"] + q["distractors"]:
            assert _when(by_id[(ref["session_id"], ref["turn_id"])]["time"]) < asked, \
                (q["id"], ref)


def test_after_turn_matches_the_time_the_question_is_asked(questions, turns):
    for q in questions:
        asked = _when(q["asked_at"])
        earlier = [t for t in turns if t["session_id"] == q["session_id"]
                   and _when(t["time"]) < asked]
        assert q["after_turn"] == len(earlier), q["id"]


def test_evidence_has_left_the_prompt(questions):
    """Same-session evidence is at least MIN_GAP_TURNS turns back; else another session."""
    for q in questions:
        for ref in q["evidence"]:
            if ref["session_id"] == q["session_id"]:
                assert q["after_turn"] + 1 - ref["turn_id"] >= MIN_GAP_TURNS, (q["id"], ref)
        crossing = any(r["session_id"] != q["session_id"] for r in q["evidence"])
        assert q["cross_session"] == crossing, q["id"]
        if q["kind"] == "cross_session":
            assert all(r["session_id"] != q["session_id"] for r in q["evidence"]), q["id"]


def test_changed_facts_point_at_the_newest_statement(questions, by_id):
    changed = [q for q in questions if q["kind"] == "changed_fact"]
    assert changed
    for q in changed:
        assert q["distractors"], f"{q['id']}: a changed fact lists its superseded turn"
        newest = max(_when(by_id[(r["session_id"], r["turn_id"])]["time"])
                     for r in q["evidence"])
        for ref in q["distractors"]:
            assert _when(by_id[(ref["session_id"], ref["turn_id"])]["time"]) < newest, \
                (q["id"], ref)


def test_relative_dates_resolve_to_the_evidence(questions, by_id):
    for q in (q for q in questions if q["kind"] == "relative_date"):
        start = date.fromisoformat(q["window"]["start"])
        end = date.fromisoformat(q["window"]["end"])
        assert start <= end < _when(q["asked_at"]).date(), q["id"]
        days = [_when(by_id[(r["session_id"], r["turn_id"])]["time"]).date()
                for r in q["evidence"]]
        assert all(start <= day <= end for day in days), q["id"]


def test_halves_are_balanced_overall_and_per_kind(questions):
    halves = Counter(q["half"] for q in questions)
    assert abs(halves["tune"] - halves["report"]) <= 1
    for kind in KINDS:
        per_kind = Counter(q["half"] for q in questions if q["kind"] == kind)
        assert abs(per_kind["tune"] - per_kind["report"]) <= 1, kind


def _readme_counts() -> tuple[dict[str, int], dict[str, tuple[int, int, int, int]]]:
    text = (SET_DIR / "README.md").read_text(encoding="utf-8")
    totals = {key: int(value.replace(",", "")) for key, value in
              re.findall(r"^- (sessions|turns|turns with tool steps|questions): ([\d,]+)$",
                         text, re.M)}
    table = {}
    for kind, *numbers in re.findall(
            r"^\| (\w+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M):
        table[kind] = tuple(int(n) for n in numbers)
    return totals, table


def test_counts_are_as_the_readme_states(turns, questions):
    totals, table = _readme_counts()
    assert totals == {"sessions": len({t["session_id"] for t in turns}), "turns": len(turns),
                      "turns with tool steps": sum(1 for t in turns if t.get("steps")),
                      "questions": len(questions)}
    actual = {}
    for kind in KINDS:
        rows = [q for q in questions if q["kind"] == kind]
        actual[kind] = (len(rows), sum(q["half"] == "tune" for q in rows),
                        sum(q["half"] == "report" for q in rows),
                        sum(q["cross_session"] for q in rows))
    actual["total"] = (len(questions), sum(q["half"] == "tune" for q in questions),
                       sum(q["half"] == "report" for q in questions),
                       sum(q["cross_session"] for q in questions))
    assert table == actual


def test_the_generator_reproduces_the_committed_files(tmp_path):
    """The jsonl files are build output: editing them by hand (or an unseeded generator)
    would make them drift from the sources the README describes."""
    spec = importlib.util.spec_from_file_location("recall_make_set", SET_DIR / "make_set.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    built_turns, built_questions = module.build(SET_DIR / "src")
    module.write(built_turns, built_questions, tmp_path)
    for name in ("sessions.jsonl", "questions.jsonl"):
        assert (tmp_path / name).read_bytes() == (SET_DIR / name).read_bytes(), name
