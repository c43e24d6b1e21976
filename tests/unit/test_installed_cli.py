"""``pip install .`` as a user runs it on a fresh copy: a new virtual environment gets a
``py-agent`` command that chats through an OpenAI-compatible server over real HTTP (the
suite's fake one), keeps its sessions in SQLite and lists, shows, exports and deletes
them; ``pip install -e .`` gives the same command over the copy's sources.

Each install is a real pip install of the copy (build isolation included), into a
virtual environment made without pip of its own: the running pip installs into it with
``--python``, which saves the few seconds ensurepip takes and changes nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from py_agent.transfer import parse_session
from serving.wheel import project_files, project_metadata
from tests.fake_openai_server import FakeServer, agent_responder

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 600

# A tool module of the user's own, needing nothing but the installed py_agent.
CALCULATOR = '''
from py_agent import tool

OPERATIONS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


@tool
def calculate(expression: str) -> str:
    """Calculate an arithmetic expression of two numbers, such as 17 * 23."""
    left, operator, right = expression.split()
    return f"{expression} = {OPERATIONS[operator](int(left), int(right))}"
'''


def fresh_copy(target: Path) -> Path:
    """The files a clone holds that ``pip install .`` reads (pyproject.toml, the readme,
    py_agent/), and nothing built."""
    for path in project_files(project_metadata()):
        destination = target / path.relative_to(ROOT)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
    return target


def environment() -> dict[str, str]:
    """The user's environment without this test run's Python settings or API keys."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PY_AGENT_API_KEY",
                         "OPENAI_API_KEY")}


def install(tmp_path: Path, *options: str) -> Path:
    """A new virtual environment with the fresh copy pip-installed into it; its bin/."""
    source = fresh_copy(tmp_path / "py-agent")
    environment_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(environment_dir)
    bin_dir = environment_dir / ("Scripts" if os.name == "nt" else "bin")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install",
         "--quiet", "--disable-pip-version-check", *options, str(source)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=environment())
    assert result.returncode == 0, result.stdout + result.stderr
    return bin_dir


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("install"))


@pytest.fixture
def server():
    with FakeServer(agent_responder) as fake:
        yield fake


def run(command: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=environment(), timeout=120)


def test_pip_install_gives_a_py_agent_command_that_chats_through_a_server(installed, server,
                                                                          tmp_path):
    # From a folder outside the repository: only the installed py_agent can answer.
    where = run([str(installed / "python"), "-c", "import py_agent; print(py_agent.__file__)"],
                tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout
    tools = tmp_path / "my_tools.py"
    tools.write_text(CALCULATOR)
    db = tmp_path / "sessions.db"
    chat = run([str(installed / "py-agent"), "chat", "--base-url", server.url, "--model",
                "fake-model", "--tools", str(tools), "--session", "math", "--db", str(db)],
               tmp_path, stdin="What is 17 times 23?\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == "The answer is 17 * 23 = 391.\n"
    assert server.chat_requests()[1]["messages"][-1]["content"] == \
        "Observation from calculate: 17 * 23 = 391"

    listing = run([str(installed / "py-agent"), "sessions", "--db", str(db)], tmp_path)
    assert listing.returncode == 0 and listing.stdout.startswith("math\t"), listing
    assert "1 turns\tWhat is 17 times 23?" in listing.stdout
    shown = run([str(installed / "py-agent"), "sessions", "show", "math", "--db", str(db)],
                tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "#1 you: What is 17 times 23?\n#1 agent: The answer is 17 * 23 = 391." in shown.stdout
    exported = tmp_path / "math.jsonl"
    export = run([str(installed / "py-agent"), "sessions", "export", "math", "--out",
                  str(exported), "--db", str(db)], tmp_path)
    assert export.returncode == 0, export.stderr
    bundle = parse_session(exported.read_text())
    assert bundle.session_id == "math" and [t.answer for t in bundle.turns] == \
        ["The answer is 17 * 23 = 391."]
    # python -m py_agent is the same command.
    same = run([str(installed / "python"), "-m", "py_agent", "sessions", "--db", str(db)],
               tmp_path)
    assert same.stdout == listing.stdout
    deleted = run([str(installed / "py-agent"), "sessions", "delete", "math", "--db", str(db)],
                  tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    assert run([str(installed / "py-agent"), "sessions", "--db", str(db)], tmp_path).stdout == ""
    again = run([str(installed / "py-agent"), "sessions", "delete", "math", "--db", str(db)],
                tmp_path)
    assert again.returncode == 1 and "no session 'math'" in again.stderr


def test_the_installed_command_runs_replay(installed, tmp_path):
    result = run([str(installed / "py-agent"), "replay", "--help"], tmp_path)
    assert result.returncode == 0 and "--fixture" in result.stdout, result.stderr
    missing = run([str(installed / "py-agent"), "replay", str(tmp_path / "none.jsonl"),
                   "--fixture", "x.py:f"], tmp_path)
    assert missing.returncode != 0 and "none.jsonl" in missing.stderr


def test_pip_install_editable_gives_the_command_over_the_copy(tmp_path):
    bin_dir = install(tmp_path, "-e")
    where = run([str(bin_dir / "python"), "-c", "import py_agent; print(py_agent.__file__)"],
                tmp_path)
    assert Path(where.stdout.strip()) == tmp_path / "py-agent" / "py_agent" / "__init__.py"
    result = run([str(bin_dir / "py-agent"), "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: py-agent ") and "sessions" in result.stdout
