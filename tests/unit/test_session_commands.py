"""``py-agent sessions``: list, show, export and delete the terminal's sessions, straight
from a SQLite file (py_agent/terminal/sessions.py), with clear errors for what is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from py_agent.terminal.commands import main
from py_agent.sqlite_store import SqliteStore
from py_agent.state import Fact, SessionState, Turn
from py_agent.transfer import parse_session
from tests.unit.support import run


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "sessions.db"
    store = SqliteStore(path)
    turns = [Turn(1, "I am vegetarian; plan a dinner", "Try a lentil curry."),
             Turn(2, "And dessert?", "", status="stopped")]
    state = SessionState("dinner", title="Plan a dinner", summary="The user plans a dinner.",
                         facts=[Fact("preference", "is vegetarian", 1, "f1")],
                         recent_turns=turns, next_turn_id=3)
    try:
        run(store.commit_turn(state, turns))
    finally:
        store.close()
    return path


def test_show_prints_summary_facts_and_the_transcript(db, capsys):
    assert main(["sessions", "--db", str(db), "show", "dinner"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("dinner: Plan a dinner\n")
    assert "\nSummary:\nThe user plans a dinner.\n" in shown
    assert "\nKey facts:\n- [preference] is vegetarian\n" in shown
    assert "#1 you: I am vegetarian; plan a dinner\n#1 agent: Try a lentil curry." in shown
    assert "#2 agent (stopped): " in shown


def test_export_writes_what_the_page_imports(db, tmp_path, capsys):
    assert main(["sessions", "export", "dinner", "--db", str(db)]) == 0
    bundle = parse_session(capsys.readouterr().out)
    assert bundle.session_id == "dinner" and bundle.state.summary == "The user plans a dinner."
    assert [t.user for t in bundle.turns] == ["I am vegetarian; plan a dinner", "And dessert?"]


def test_delete_removes_the_session_and_an_unknown_one_is_an_error(db, capsys):
    assert main(["sessions", "delete", "dinner", "--db", str(db)]) == 0
    assert main(["sessions", "list", "--db", str(db)]) == 0
    assert capsys.readouterr().out == ""
    for action in ("show", "export", "delete"):
        assert main(["sessions", action, "dinner", "--db", str(db)]) == 1
        assert "error: no session 'dinner'" in capsys.readouterr().err


def test_a_missing_database_is_said_and_not_created(tmp_path, capsys):
    missing = tmp_path / "nowhere.db"
    assert main(["sessions", "show", "x", "--db", str(missing)]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert not missing.exists()
