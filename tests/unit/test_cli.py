"""``python -m py_agent chat`` as a user runs it: a subprocess, piped stdin, the fake
OpenAI-compatible server on localhost, sessions in a SQLite file."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from py_agent.terminal.chat import Terminal, answer_preview
from py_agent.terminal.cli import default_db_path
from py_agent.terminal.tool_files import ToolFileError, load_tool_files
from py_agent.openai_compat import StreamChunk
from py_agent.sqlite_store import SqliteStore
from tests.fake_openai_server import Fail, FakeServer, agent_responder
from tests.unit.support import run

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = "from demo_tools import calculate\n"


@pytest.fixture
def server():
    with FakeServer(agent_responder) as fake:
        yield fake


@pytest.fixture
def tools_file(tmp_path) -> Path:
    path = tmp_path / "my_tools.py"
    path.write_text(CALCULATOR)
    return path


def chat(url: str, lines: str, *args: str, env: dict | None = None, timeout: float = 60):
    command = [sys.executable, "-m", "py_agent", "chat", "--base-url", url,
               "--model", "fake-model", "--timeout", "5", *args]
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PY_AGENT_API_KEY", "OPENAI_API_KEY")}
    # Never the user's own database: a chat without --db writes to the XDG data folder.
    environment["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="py-agent-cli-test-")
    environment.update(env or {})
    return subprocess.run(command, input=lines, capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=timeout)


def archive(db: Path, session: str) -> list:
    store = SqliteStore(db)
    try:
        return run(store.read_archive(session))
    finally:
        store.close()


def test_piped_question_is_answered_through_the_calculator_and_remembered(server, tools_file,
                                                                            tmp_path):
    db = tmp_path / "sessions.db"
    first = chat(server.url, "What is 17 times 23?\n", "--tools", str(tools_file),
                 "--session", "math", "--db", str(db))
    assert first.returncode == 0, first.stderr
    assert first.stdout == "The answer is 17 * 23 = 391.\n"
    assert first.stderr == ""  # piped: no banner, no prompts
    bodies = server.chat_requests()
    step = bodies[0]["response_format"]["json_schema"]["schema"]  # one branch per tool
    assert "calculate" in {b["properties"]["toolName"]["const"] for b in step["anyOf"]}
    assert bodies[1]["messages"][-1]["content"] == "Observation from calculate: 17 * 23 = 391"

    second = chat(server.url, "What did I ask before?\n", "--tools", str(tools_file),
                  "--session", "math", "--db", str(db))
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Earlier you asked: What is 17 times 23?\n"
    # The memory went in as its own message after the prefix; the prompt is only the
    # tools and the message, so the next turn's request starts with this one's messages.
    messages = server.chat_requests()[2]["messages"]
    memory = messages[-2]["content"]
    assert memory.startswith("Memory:") and "User: What is 17 times 23?" in memory
    assert "391" in memory
    assert messages[-1]["content"].startswith("Tools for this request:")
    assert [t.user for t in archive(db, "math")] == ["What is 17 times 23?",
                                                     "What did I ask before?"]


def test_an_unreachable_server_loses_no_turn_and_the_next_run_works(tools_file, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url, db = f"http://127.0.0.1:{port}/v1", tmp_path / "s.db"
    down = chat(url, "What is 2 plus 2?\n", "--tools", str(tools_file), "--session", "s",
                "--db", str(db))
    assert down.returncode == 1 and down.stdout == ""
    assert f"Nothing is listening at {url}: is the model server running?" in down.stderr
    assert "saved as failed" in down.stderr
    with FakeServer(agent_responder, port=port):
        up = chat(url, "What is 2 plus 2?\n", "--tools", str(tools_file), "--session", "s",
                  "--db", str(db))
    assert up.returncode == 0 and up.stdout == "The answer is 2 + 2 = 4.\n"
    assert [(t.status, t.user) for t in archive(db, "s")] == [
        ("error", "What is 2 plus 2?"), ("answered", "What is 2 plus 2?")]


def test_a_server_error_is_explained_and_the_following_line_still_runs(server, tmp_path):
    server.push(Fail(500, "CUDA out of memory", type="server_error"))
    result = chat(server.url, "first line\nsecond line\n", "--session", "e",
                  "--db", str(tmp_path / "s.db"))
    assert result.returncode == 1
    assert "failed (500)" in result.stderr and "CUDA out of memory" in result.stderr
    assert result.stdout == "You said: second line\n"
    assert [t.status for t in archive(tmp_path / "s.db", "e")] == ["error", "answered"]


def test_trace_goes_to_stderr_and_answers_to_stdout(server, tools_file, tmp_path):
    result = chat(server.url, "What is 6 times 7?\n", "--tools", str(tools_file), "--trace",
                  "--db", str(tmp_path / "s.db"))
    assert result.stdout == "The answer is 6 * 7 = 42.\n"
    assert "· action: calculate({\"expression\": \"6 * 7\"})" in result.stderr
    assert "· observation: 6 * 7 = 42" in result.stderr
    assert "context 4096 tokens" in result.stderr  # the banner says which model answers


def test_compactions_show_in_the_trace(server, tmp_path):
    lines = "".join(f"Message {i}: " + "a fairly long sentence about the trip " * 12 + "\n"
                    for i in range(8))
    result = chat(server.url, lines, "--trace", "--context-window", "2600", "--session", "c",
                  "--db", str(tmp_path / "s.db"))
    assert result.returncode == 0, result.stderr
    assert "· compacting turns [1" in result.stderr
    assert "· memory compacted:" in result.stderr
    store = SqliteStore(tmp_path / "s.db")
    assert run(store.compressions("c")) and run(store.load("c")).summary
    store.close()


def test_the_api_key_comes_from_the_environment_and_is_never_printed(tmp_path):
    with FakeServer(agent_responder, api_key="s3cret-key") as server:
        ok = chat(server.url, "hi\n", "--db", str(tmp_path / "s.db"), "--trace",
                  env={"PY_AGENT_API_KEY": "s3cret-key"})
        assert ok.returncode == 0 and ok.stdout == "You said: hi\n"
        assert server.requests[-1]["headers"]["authorization"] == "Bearer s3cret-key"
        wrong = chat(server.url, "hi\n", "--db", str(tmp_path / "s.db"), "--trace",
                     env={"OPENAI_API_KEY": "wrong-key-123"})
    assert wrong.returncode == 1 and "PY_AGENT_API_KEY" in wrong.stderr
    for output in (ok.stdout, ok.stderr, wrong.stdout, wrong.stderr):
        assert "s3cret-key" not in output and "wrong-key-123" not in output


def test_sessions_live_in_the_xdg_data_folder_by_default(server, tmp_path):
    result = chat(server.url, "hello\n", "--session", "x",
                  env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert result.returncode == 0
    assert [t.user for t in archive(tmp_path / "data" / "py-agent" / "sessions.db", "x")] == \
        ["hello"]
    listing = subprocess.run([sys.executable, "-m", "py_agent", "sessions"], cwd=ROOT,
                             capture_output=True, text=True,
                             env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")})
    assert listing.stdout.startswith("x\t") and "1 turns\thello" in listing.stdout


def test_default_db_path_honours_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_path() == tmp_path / "py-agent" / "sessions.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_db_path() == Path.home() / ".local" / "share" / "py-agent" / "sessions.db"


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ("x = 1\n", "defines no tools"),
    ("raise RuntimeError('broken on purpose')\n", "RuntimeError: broken on purpose"),
])
def test_bad_tool_files_are_refused_clearly(tmp_path, content, message):
    path = tmp_path / "tools.py"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ToolFileError, match=message):
        load_tool_files([str(path)])
    result = chat("http://127.0.0.1:9/v1", "hi\n", "--tools", str(path))
    assert result.returncode == 2 and message in result.stderr


def test_tool_files_give_their_module_level_tools_once(tmp_path):
    (tmp_path / "a.py").write_text(CALCULATOR + "from demo_tools import convert_units\n")
    (tmp_path / "b.py").write_text(CALCULATOR)
    (tmp_path / "c.py").write_text("from py_agent import tool\n@tool\ndef calculate(x: str) -> str:\n"
                                   "    '''Another calculate.'''\n    return x\n")
    names = [t.name for t in load_tool_files([str(tmp_path / "a.py"), str(tmp_path / "b.py")])]
    assert names == ["calculate", "convert_units"]
    with pytest.raises(ToolFileError, match="already has a tool of that name"):
        load_tool_files([str(tmp_path / "a.py"), str(tmp_path / "c.py")])



def test_the_demo_tool_package_keeps_its_notes_in_the_chat_database(tmp_path):
    """--tools takes the page's modules, package folders too; make_tools(context) gets
    the SQLite database's key-value store, so a note outlives the process."""
    package = Path(__file__).resolve().parents[2] / "demo_tools"
    db = tmp_path / "chat.db"
    for text, expected in (("buy oat milk", "saved"), (None, "oat milk")):
        store = SqliteStore(db)
        try:
            tools = {t.name: t for t in load_tool_files([str(package)], store.key_value_store())}
            result = run(tools["add_note"](text) if text else tools["search_notes"]("milk"))
        finally:
            store.close()
        assert expected in result.lower()


# ------------------------------------------------------------- live answers

@pytest.mark.parametrize("text,expected", [
    ('{"thought": "x", "toolName": "none", "toolInput": "", "finalAnswer": "Hel', "Hel"),
    ('{"toolName": "none", "finalAnswer": "a \\"quote\\" and \\u00e9', 'a "quote" and é'),
    ('{"toolName": "none", "finalAnswer": "cut \\u00', "cut "),
    ('{"toolName": "none", "finalAnswer": "back\\', "back"),
    ('{"toolName": "calculate", "toolInput": "1+1", "finalAnswer": "no', None),
    ('{"thought": "still thinking', None),
])
def test_answer_preview_reads_a_streaming_step(text, expected):
    assert answer_preview(text) == expected


class TtyBuffer(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_shows_the_answer_as_it_streams_and_finishes_it_once():
    out = TtyBuffer()
    ui = Terminal(trace=False, out=out, err=io.StringIO())
    step = json.dumps({"thought": "t", "toolName": "none", "toolInput": "",
                       "finalAnswer": "Rome is the capital."})
    for end in range(1, len(step) + 1, 7):
        ui.on_chunk(StreamChunk("step", "", step[:end], "r1"))
    ui.on_chunk(StreamChunk("summary", "", "ignored", "r2"))
    shown = out.getvalue()
    assert shown and "Rome is the capital.".startswith(shown)

    class Result:
        status, answer = "answered", "Rome is the capital."

    ui.answer(Result())
    assert out.getvalue() == "Rome is the capital.\n"
