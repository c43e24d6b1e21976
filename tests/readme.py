"""The README's snippets, read from README.md itself so that tests run what users read.

A section's fenced code blocks whose first line names a file (``# tea_tools.py`` in
Python, ``<!-- my_site/index.html -->`` in HTML) are files; ``bash`` blocks are commands.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_FILE_NAME = re.compile(r"^(?:#\s*(\S+\.py)|<!--\s*(\S+)\s*-->)\s*$")


def section(title: str) -> str:
    """The text of the ``## title`` section, up to the next heading of its level."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text,
                      re.MULTILINE | re.DOTALL)
    if match is None:
        raise LookupError(f"README.md has no section '## {title}'")
    return match.group(1)


def files(title: str) -> dict[str, str]:
    """File name -> content of each code block of the section that names its file."""
    found = {}
    for _, body in _BLOCK.findall(section(title)):
        first = _FILE_NAME.match(body.splitlines()[0]) if body.strip() else None
        if first:
            found[first.group(1) or first.group(2)] = body
    return found


def commands(title: str) -> list[list[str]]:
    """The commands of the section's bash blocks, split as a shell would (no comments)."""
    return [shlex.split(line, comments=True)
            for language, body in _BLOCK.findall(section(title)) if language == "bash"
            for line in body.splitlines() if shlex.split(line, comments=True)]


def write_files(title: str, folder: Path) -> dict[str, Path]:
    """Write the section's files under ``folder``; name -> path."""
    written = {}
    for name, body in files(title).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        written[name] = path
    return written
