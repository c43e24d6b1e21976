"""The page never turns a string into HTML: model and tool text reaches the DOM only as
text nodes (textContent, createTextNode, append(string)), so markup in it stays inert.

This scans every file of web/ for the browser APIs that parse HTML from a string. The
vendored third-party runtimes under web/vendor/ (PyScript, MicroPython, Pyodide,
markdown-it) are not ours and are left out: PyScript does use innerHTML, in parts of its
API the page never calls (display(), its DOM helpers, a file-system dialog).
"""

from __future__ import annotations

from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "web"
HTML_FROM_STRINGS = ("innerHTML", "outerHTML", "insertAdjacentHTML", "DOMParser",
                     "createContextualFragment", "document.write", "srcdoc")
TEXT_SUFFIXES = {".py", ".js", ".mjs", ".html", ".css", ".json"}


def page_sources() -> list[Path]:
    return sorted(path for path in WEB.rglob("*")
                  if path.is_file() and path.suffix in TEXT_SUFFIXES
                  and "vendor" not in path.relative_to(WEB).parts)


def test_the_scan_covers_the_page_and_not_vendored_code() -> None:
    names = {path.relative_to(WEB).as_posix() for path in page_sources()}
    assert {"index.html", "markdown.js", "llm_host.js", "main.py", "ui/chat.py",
            "ui/dom.py"} <= names
    assert not any(name.startswith("vendor/") for name in names)


def test_no_api_that_parses_html_from_a_string() -> None:
    found = []
    for path in page_sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(WEB)}:{number}: {api}"
                      for api in HTML_FROM_STRINGS if api.lower() in line.lower()]
    assert found == []
