"""The snippets and links of README.md and docs/*.md, read from the files themselves, so
that tests run what users read.

Conventions the docs follow (and tests/unit/test_docs.py checks):

- A fenced code block whose first line names a file (``# tea_tools.py`` in Python,
  ``<!-- my_site/index.html -->`` in HTML) is that file; the other files of its
  ``##`` section are written beside it when it runs.
- ``bash`` blocks are commands.
- A ``text`` block right after a Python block (nothing but blank lines between) is the
  output that block prints.
- A block right after the line ``<!-- not run: REASON -->`` is not run by the snippet
  test; the reason says why, or which test runs it instead.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(`{3,})(\w*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FILE_NAME = re.compile(r"^(?:#\s*(\S+\.py)|<!--\s*(\S+)\s*-->)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document."""

    document: Path
    line: int                 # of the opening fence, counting from 1
    language: str
    body: str
    section: str              # the enclosing ``##`` heading's text ("" before the first)
    not_run: str | None       # the reason given by a ``<!-- not run: ... -->`` line
    output: str | None = None  # the ``text`` block that follows a Python block

    @property
    def file_name(self) -> str | None:
        """The file this block is, if its first line names one."""
        first = self.body.splitlines()[0] if self.body.strip() else ""
        match = _FILE_NAME.match(first)
        return (match.group(1) or match.group(2)) if match else None

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Link:
    """A Markdown link or image target, outside code."""

    document: Path
    line: int
    target: str

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    text = _INLINE_CODE.sub(lambda m: m.group(2), heading).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


class Document:
    """A Markdown file of the repository, parsed into blocks, headings and links."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @cached_property
    def _parsed(self) -> tuple[list[Block], list[tuple[int, int, str]], list[Link]]:
        """Blocks; headings as (line, level, text); links. One pass over the lines."""
        blocks: list[Block] = []
        headings: list[tuple[int, int, str]] = []
        links: list[Link] = []
        lines = self.text.splitlines()
        section, previous, i = "", "", 0
        while i < len(lines):
            line = lines[i]
            fence = _FENCE.match(line)
            if fence:
                start, marker, language = i, fence.group(1), fence.group(2)
                i += 1
                while i < len(lines) and lines[i].rstrip() != marker:
                    i += 1
                if i == len(lines):
                    raise ValueError(f"{self.path.name}:{start + 1}: a code block is never closed")
                reason = _NOT_RUN.match(previous)
                body = "".join(text + "\n" for text in lines[start + 1:i])
                blocks.append(Block(self.path, start + 1, language, body, section,
                                    reason.group(1) if reason else None))
                previous = marker
                i += 1
                continue
            heading = _HEADING.match(line)
            if heading:
                level, title = len(heading.group(1)), heading.group(2)
                headings.append((i + 1, level, title))
                if level <= 2:
                    section = title if level == 2 else ""
            for match in _LINK.finditer(_INLINE_CODE.sub("", line)):
                links.append(Link(self.path, i + 1, match.group(1)))
            if line.strip():
                previous = line.strip()
            i += 1
        return _with_outputs(blocks, lines), headings, links

    def blocks(self, language: str | None = None) -> list[Block]:
        return [b for b in self._parsed[0] if language is None or b.language == language]

    def links(self) -> list[Link]:
        return self._parsed[2]

    def anchors(self) -> set[str]:
        """The anchors of the document's headings (GitHub numbers repeats: -1, -2...)."""
        seen: dict[str, int] = {}
        anchors = set()
        for _, _, title in self._parsed[1]:
            base = slug(title)
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
        return anchors

    def section(self, title: str) -> str:
        """The text of the ``## title`` section, up to the next heading of its level."""
        match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", self.text,
                          re.MULTILINE | re.DOTALL)
        if match is None:
            raise LookupError(f"{self.path.name} has no section '## {title}'")
        return match.group(1)

    def section_blocks(self, title: str) -> list[Block]:
        self.section(title)   # a LookupError names a missing section
        return [b for b in self.blocks() if b.section == title]

    def files(self, title: str) -> dict[str, str]:
        """File name -> content of each code block of the section that names its file."""
        return {b.file_name: b.body for b in self.section_blocks(title) if b.file_name}

    def commands(self, title: str) -> list[list[str]]:
        """The commands of the section's bash blocks, split as a shell would (no comments)."""
        return [shlex.split(line, comments=True)
                for block in self.section_blocks(title) if block.language == "bash"
                for line in block.body.splitlines() if shlex.split(line, comments=True)]

    def write_files(self, title: str, folder: Path) -> dict[str, Path]:
        """Write the section's files under ``folder``; name -> path."""
        written = {}
        for name, body in self.files(title).items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            written[name] = path
        return written


def _with_outputs(blocks: list[Block], lines: list[str]) -> list[Block]:
    """Attach each ``text`` block that follows a Python block to it as its output."""
    result: list[Block] = []
    for block in blocks:
        before = result[-1] if result else None
        if block.language == "text" and before is not None and before.language == "python" \
                and before.output is None and _only_blank_between(before, block, lines):
            result[-1] = Block(before.document, before.line, before.language, before.body,
                               before.section, before.not_run, block.body)
        result.append(block)
    return result


def _only_blank_between(first: Block, second: Block, lines: list[str]) -> bool:
    end = first.line + first.body.count("\n")   # index of the closing fence's line
    return all(not line.strip() for line in lines[end + 1:second.line - 1])


def documents() -> list[Document]:
    """README.md, then every Markdown file of docs/."""
    return [Document(README), *(Document(p) for p in sorted(DOCS.glob("*.md")))]


# The README's own sections, as the tests of "your own tool" and "your own page" use them.
_README = Document(README)


def section(title: str) -> str:
    return _README.section(title)


def files(title: str) -> dict[str, str]:
    return _README.files(title)


def commands(title: str) -> list[list[str]]:
    return _README.commands(title)


def write_files(title: str, folder: Path) -> dict[str, Path]:
    return _README.write_files(title, folder)
