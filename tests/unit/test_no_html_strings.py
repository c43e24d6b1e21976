"""The page never turns a string into HTML: model and tool text reaches the DOM only as
text nodes (textContent, createTextNode, append(string)), so markup in it stays inert.

This scans every file of web/ (and of examples/, the page of your own that the README
shows) for the browser APIs that parse HTML from a string. The
vendored third-party runtimes under web/vendor/ (PyScript, MicroPython, Pyodide,
markdown-it) are not ours and are left out: PyScript does use innerHTML, in parts of its
API the page never calls (display(), its DOM helpers, a file-system dialog).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
EXAMPLES = ROOT / "examples"
HTML_FROM_STRINGS = ("innerHTML", "outerHTML", "insertAdjacentHTML", "DOMParser",
                     "createContextualFragment", "document.write", "srcdoc")
TEXT_SUFFIXES = {".py", ".js", ".mjs", ".html", ".css", ".json"}


def page_sources() -> list[Path]:
    return sorted(path for folder in (WEB, EXAMPLES) for path in folder.rglob("*")
                  if path.is_file() and path.suffix in TEXT_SUFFIXES
                  and "vendor" not in path.relative_to(folder).parts)


def test_the_scan_covers_the_page_and_not_vendored_code() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in page_sources()}
    assert {"web/index.html", "web/markdown.js", "web/llm_host.js", "web/agent.js",
            "web/main.py", "web/ui/chat.py", "web/ui/dom.py", "examples/index.html"} <= names
    assert not any(name.startswith("web/vendor/") for name in names)


def test_no_api_that_parses_html_from_a_string() -> None:
    found = []
    for path in page_sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {api}"
                      for api in HTML_FROM_STRINGS if api.lower() in line.lower()]
    assert found == []
