"""The start-up budget's allow-list: every script the page may load before its UI is up
(PyScript's own files aside), and why "ready" or the first paint needs it
(docs/startup.md#the-start-up-budget).

Two tests hold the page to it: ``tests/unit/test_boot_budget.py`` reads the HTML of each
home (``serve.py``'s page, the static build's, the extension's side panel) and follows
the static imports of what it loads before PyScript, and ``tests/e2e/test_boot_budget.py``
asks the browser which scripts the page really fetched before its UI was up. A script
that is not here fails both, with the message below: load it on first use or after
ready, or, if ready needs it, add it here with the reason and run ``bench/boot.py``
before and after.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"

# Site-relative path -> why the page loads it before its UI is up.
ALLOWED = {
    "worker/agent_worker.js": "the agent's worker, which the page's first script starts "
                              "so that its boot overlaps everything else",
    "worker/boot_snapshot.js": "the worker's boot snapshot: restore it, or say why not",
    "worker/python_runtime.js": "the worker's Pyodide start and wheels",
    "worker/snapshot_store.js": "where the browser keeps its boot snapshot (Cache Storage)",
    "worker/site.js": "where the site is, for the worker's URLs",
    "llm_host.js": "the LLM host: it answers the agent worker's Prompt API calls, and must "
                   "listen before the worker's first one",
    "page_tools.js": "the page's WebMCP tools: it follows navigator.modelContext from the "
                     "start, so that no tool the page registers early is missed",
    "replies.js": "the reply table page_tools.js and the UI's link to the worker share",
    "markdown.js": "the UI renders answers with it (ui.json's js_modules: PyScript loads "
                   "it before main.py runs)",
    "vendor/markdown-it-15.0.3/markdown-it.esm.min.mjs": "markdown.js's parser",
    "offline.js": "a static build's: it registers the service worker (after the load "
                  "event) that keeps the site for offline use",
}
# The side panel runs each inline script of the page as a file of its own
# (serving/extension_build.py): those are the page's scripts, moved.
MOVED_INLINE = re.compile(r"^sidepanel-\d+\.js$")
# PyScript and MicroPython themselves: the UI's runtime, not the page's.
PYSCRIPT = ("vendor/pyscript-", "vendor/micropython-")
PYSCRIPT_CORE = re.compile(r"vendor/pyscript-[^/]+/core\.js$")

ADVICE = ("Scripts that load before the page's UI is up compete with the agent's worker "
          "for the CPU until it is ready. Load each on first use (a dynamic import() "
          "where it is needed) or after ready; if ready truly needs one, add it to "
          "ALLOWED in tests/boot_budget.py with the reason, and run bench/boot.py before "
          "and after (docs/startup.md#the-start-up-budget).")

_NEW_WORKER = re.compile(r"""new\s+Worker\(\s*[`'"]([^`'"$?]+)""")
_STATIC_IMPORT = re.compile(
    r"""^\s*(?:import\s*['"]([^'"]+)['"]|(?:import|export)\b[^'";()]*?\bfrom\s*['"]([^'"]+)['"])""",
    re.MULTILINE)


def allowed(path: str) -> bool:
    return path in ALLOWED or path.startswith(PYSCRIPT) or bool(MOVED_INLINE.match(path))


def not_allowed_message(where: str, paths: list[str]) -> str:
    return (f"{where} loads {', '.join(sorted(paths))} before the page's UI is up, and "
            f"{'it is' if len(paths) == 1 else 'they are'} not on the start-up allow-list. "
            + ADVICE)


def late_import_message(worker: str, modules: list[str]) -> str:
    """Why modules a boot imported between the snapshot's restore and "ready" fail the
    budget, and what to do about them."""
    return (f"{worker} imported {', '.join(modules)} between the boot snapshot's restore "
            f"and 'ready', and the snapshot does not hold "
            f"{'it' if len(modules) == 1 else 'them'}: every boot reads and compiles "
            f"{'it' if len(modules) == 1 else 'them'} again before the page can be used. "
            "Import each where it is used, after ready (on first use); or, if ready needs "
            "one, let the snapshot hold it: import it from the entry module "
            "(py_agent/browser/main.py, or tool_worker.py for the tool worker) or in "
            "preload() (py_agent/browser/snapshot.py) (docs/startup.md#the-start-up-budget).")


def static_imports(source: str) -> list[str]:
    """The module specifiers a JavaScript module imports statically (not import())."""
    return [bare or named for bare, named in _STATIC_IMPORT.findall(source)]


def resolve(specifier: str, importer: str) -> str | None:
    """A relative specifier as a site-relative path (None for a bare or absolute one)."""
    if not specifier.startswith(("./", "../")):
        return None
    parts: list[str] = []
    for part in (PurePosixPath(importer).parent / specifier).parts:
        if part == "..":
            parts = parts[:-1]
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def with_imports(paths: list[str], read) -> list[str]:
    """``paths`` and every module they import statically, transitively; ``read(path)``
    gives a site-relative file's text (None when it is not there)."""
    seen: list[str] = []
    todo = list(paths)
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.append(path)
        if path.startswith(PYSCRIPT):
            continue   # PyScript's own graph is PyScript's
        source = read(path)
        for specifier in static_imports(source or ""):
            target = resolve(specifier, path)
            if target is not None:
                todo.append(target)
    return seen


class _BeforePyScript(HTMLParser):
    """The scripts of a page, in document order, up to PyScript's own module script:
    ``loads`` the files (``<script src>``, ``<link rel=modulepreload>``) and ``inline``
    the inline scripts' texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loads: list[str] = []
        self.inline: list[str] = []
        self.reached = False
        self._in_script = False
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if self.reached:
            return
        attributes = dict(attrs)
        if tag == "script":
            src = attributes.get("src")
            if src and PYSCRIPT_CORE.search(src):
                self.reached = True
            elif src:
                self.loads.append(src)
            else:
                self._in_script, self._text = True, []
        elif tag == "link" and (attributes.get("rel") or "").lower() == "modulepreload":
            self.loads.append(attributes.get("href") or "")

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script:
            self._in_script = False
            self.inline.append("".join(self._text))


def page_scripts(html: str, read) -> list[str]:
    """Every file a page loads before PyScript (site-relative; the page at the root),
    with what those files and its inline scripts import statically, the module workers
    its inline scripts start (the agent's) with their static imports, and the UI's
    js_modules (ui.json), which PyScript loads before main.py runs."""
    parser = _BeforePyScript()
    parser.feed(html)
    parser.close()
    if not parser.reached:
        raise AssertionError("the page has no PyScript module script (vendor/pyscript-*/core.js)")
    files = [resolve(src if src.startswith(".") else "./" + src, "index.html") or src
             for src in parser.loads]
    for text in parser.inline:
        files += [t for s in static_imports(text) if (t := resolve(s, "index.html"))]
        files += [resolve("./" + url, "index.html") for url in _NEW_WORKER.findall(text)]
    config = json.loads(read("ui.json") or "{}")
    for modules in (config.get("js_modules") or {}).values():
        files += [resolve(p, "ui.json") or p for p in modules]
    return with_imports(files, read)


def read_web(path: str) -> str | None:
    """A file of the site as served (web/ at its root, worker/ under worker/), or None."""
    file = ROOT / path if path.startswith("worker/") else WEB / path
    return file.read_text(encoding="utf-8") if file.is_file() else None
