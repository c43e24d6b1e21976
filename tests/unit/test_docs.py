"""README.md and docs/*.md say what the code does: their links resolve, their Python
snippets run and print what the docs show, and their commands use options that exist.

The conventions the docs follow are in tests/readme.py. A snippet that talks to a model
server at the Ollama address the docs use gets the suite's fake OpenAI-compatible server
at that address instead (tests/fake_openai_server.py, with its scripted agent replies).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests import readme
from tests.fake_openai_server import FakeServer, agent_responder

DOCUMENTS = readme.documents()
SNIPPETS = [b for d in DOCUMENTS for b in d.blocks("python")]
RUN = [b for b in SNIPPETS if b.not_run is None]
SNIPPET_TIMEOUT_S = 120

# What the docs' snippets call "a model server", and the model they ask it for.
MODEL_SERVER_URL = "http://localhost:11434/v1"
MODEL_SERVER_MODELS = ("gemma3:4b",)


def test_the_docs_are_found():
    names = {d.path.relative_to(readme.ROOT).as_posix() for d in DOCUMENTS}
    assert {"README.md", "docs/README.md", "docs/tools.md", "docs/python.md"} <= names
    assert len(RUN) >= 8, [b.where for b in RUN]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.path.name if
                         d.path.parent == readme.ROOT else f"docs/{d.path.name}")
def test_every_relative_link_resolves(document: readme.Document):
    broken = []
    for link in document.links():
        if re.match(r"^[a-z][a-z0-9+.-]*:", link.target):   # http:, https:, mailto:
            continue
        path_part, _, anchor = link.target.partition("#")
        target = (document.path.parent / path_part).resolve() if path_part else document.path
        if not target.is_relative_to(readme.ROOT):
            broken.append(f"{link.where}: {link.target} leaves the repository")
        elif not target.exists():
            broken.append(f"{link.where}: {link.target}: no such file")
        elif anchor and target.suffix == ".md" and \
                anchor not in readme.Document(target).anchors():
            broken.append(f"{link.where}: {link.target}: no heading with that anchor")
        elif anchor and target.suffix != ".md":
            broken.append(f"{link.where}: {link.target}: an anchor into a non-Markdown file")
    assert broken == []


def test_the_index_lists_every_doc_and_the_readme_links_the_index():
    index = readme.Document(readme.DOCS / "README.md")
    listed = {(readme.DOCS / link.target.partition("#")[0]).resolve()
              for link in index.links() if not link.target.startswith("#")}
    pages = {p.resolve() for p in readme.DOCS.glob("*.md")} - {index.path.resolve()}
    assert pages - listed == set()
    readme_targets = {link.target for link in readme.Document(readme.README).links()}
    assert "docs/README.md" in readme_targets


def test_the_readme_stays_short():
    # A newcomer's page: the two commands, the demo, a tool, a page, the extension, three
    # kinds of model, Python, tests. Explanations and tables belong in docs/ (it was 964
    # lines once).
    assert len(readme.README.read_text(encoding="utf-8").splitlines()) <= 385


def test_a_snippet_that_is_not_run_says_why():
    for block in SNIPPETS:
        if block.not_run is not None:
            assert len(block.not_run.split()) >= 5, f"{block.where}: give a reason"


def test_the_link_and_anchor_rules_catch_mistakes(tmp_path):
    # The checker itself: GitHub's anchors, and links in code are not links.
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## What `@tool` reads\n\n## Storage, export and import\n\n"
                    "## Repeat\n\n## Repeat\n\n"
                    "See [x](other.md#a) and `[not](a link)`.\n\n```python\n[no](link)\n```\n")
    document = readme.Document(page)
    assert document.anchors() == {"title", "what-tool-reads", "storage-export-and-import",
                                  "repeat", "repeat-1"}
    assert [link.target for link in document.links()] == ["other.md#a"]


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.where)
def test_python_snippet_runs(block: readme.Block, tmp_path: Path):
    document = readme.Document(block.document)
    document.write_files(block.section, tmp_path)
    script = tmp_path / (block.file_name or "snippet.py")
    body = block.body
    server = None
    if MODEL_SERVER_URL in body:
        server = FakeServer(agent_responder, models=MODEL_SERVER_MODELS)
        body = body.replace(MODEL_SERVER_URL, server.url)
    script.write_text(body, encoding="utf-8")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=SNIPPET_TIMEOUT_S)
    finally:
        if server is not None:
            server.close()
    assert done.returncode == 0, f"{block.where} failed:\n{done.stderr[-3000:]}"
    if server is not None:
        assert server.chat_requests(), f"{block.where} never reached the model server"
    if block.output is not None:
        assert _lines(done.stdout) == _lines(block.output), block.where


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


# ------------------------------------------------------------------- commands

def _command_lines() -> list[tuple[str, list[str]]]:
    """(where, argv) of every command in a bash block or in inline code, env vars dropped."""
    found = []
    for document in DOCUMENTS:
        for block in document.blocks("bash"):
            for line in block.body.replace("\\\n", " ").splitlines():
                found.append((block.where, line))
        for number, line in enumerate(document.text.splitlines(), 1):
            for match in re.finditer(r"`([^`]*python[^`]*)`", line):
                found.append((f"{document.path.relative_to(readme.ROOT)}:{number}",
                              match.group(1)))
    commands = []
    for where, line in found:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words.pop(0)
        commands.append((where, words))
    return commands


# The programs whose options the docs name, and how to ask each for its options.
PROGRAMS = {
    ("serve.py",): ["serve.py", "--help"],
    ("run_tests.py",): ["run_tests.py", "--help"],
    ("-m", "py_agent", "chat"): ["-m", "py_agent", "chat", "--help"],
    ("-m", "py_agent", "sessions"): ["-m", "py_agent", "sessions", "--help"],
    ("-m", "py_agent.replay"): ["-m", "py_agent.replay", "--help"],
    ("-m", "py_agent", "replay"): ["-m", "py_agent", "replay", "--help"],
}


def _as_python(words: list[str]) -> list[str]:
    """``py-agent X ...`` (the installed command) as ``python -m py_agent X ...``."""
    return ["python", "-m", "py_agent", *words[1:]] if words[:1] == ["py-agent"] else words


# Docs whose option tables (rows starting with an option in code) describe one program.
OPTION_TABLES = {"docs/terminal.md": ("-m", "py_agent", "chat"),
                 "docs/serving.md": ("serve.py",)}


def _option_table_rows() -> list[tuple[str, list[str]]]:
    """(where, argv) for each option-table row, as if the row's options were typed."""
    rows = []
    for name, program in OPTION_TABLES.items():
        document = readme.Document(readme.ROOT / name)
        for number, line in enumerate(document.text.splitlines(), 1):
            if line.startswith("| `--"):
                first_cell = line.split("|")[1]
                options = [o.split()[0] for o in re.findall(r"`(--[^`]+)`", first_cell)]
                rows.append((f"{name}:{number}", ["python", *program, *options]))
    return rows


def _program(words: list[str]) -> tuple[str, ...] | None:
    if not words or not re.search(r"(^|/)python3?$", words[0]):
        return None
    for key in PROGRAMS:
        if tuple(words[1:1 + len(key)]) == key:
            return key
    return None


def test_commands_in_the_docs_use_options_that_exist():
    helps: dict[tuple[str, ...], str] = {}
    unknown = []
    checked = 0
    for where, words in [*_command_lines(), *_option_table_rows()]:
        words = _as_python(words)
        program = _program(words)
        if program is None:
            continue
        if program not in helps:
            done = subprocess.run([sys.executable, *PROGRAMS[program]], cwd=readme.ROOT,
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            helps[program] = done.stdout
        options = words[1 + len(program):]
        if "--" in options:
            options = options[:options.index("--")]
        for option in options:
            name = option.strip("[]").split("=")[0]
            if name.startswith("--"):
                checked += 1
                if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", helps[program]):
                    unknown.append(f"{where}: {' '.join(words[:1 + len(program)])} {name}")
    assert checked >= 20
    assert unknown == []
