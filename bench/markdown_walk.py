#!/usr/bin/env python3
"""Where should markdown-it's token stream be turned into DOM nodes: in JavaScript
(web/markdown.js) or in the page's MicroPython, through its FFI?

    python bench/markdown_walk.py [--size 40000] [--runs 9]

A page of the app's origin runs MicroPython (PyScript, as the chat does) and times, for a
``--size``-character answer (tests/e2e/long_answers.py), medians of ``--runs``:

  parse        markdown-it's parse alone (JavaScript; both designs pay it)
  js walk      web/markdown.js's build() of the parsed tokens, called once from Python
  mpy walk     the same walk written in MicroPython, token by token through the FFI

Not a test: numbers depend on the machine; the ratio is what to look at.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving.http_server import make_server  # noqa: E402
from serving.prepare import prepare  # noqa: E402
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.e2e.long_answers import long_answer, nested_list  # noqa: E402

PAGE = """<!doctype html><meta charset="utf-8"><title>walk</title><link rel="icon" href="data:,">
<script type="module">
  import * as markdown from '/markdown.js';
  import {hooks} from '%(core)s';
  hooks.worker.onBeforeRunAsync.clear();   // as index.html does: no eval under the CSP
  globalThis.walkBench = {markdown, parser: markdown.createParser()};
</script>
<script type="module" src="%(core)s"></script>
<div id="out"></div>
<script type="mpy" src="/bench/walk.py" config="/bench/walk.json"></script>
"""

# The MicroPython walk: what web/markdown.js's build() does, minus its rarer cases.
WALK_PY = '''
from pyscript import document, window

TAGS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li",
        "table", "thead", "tbody", "tr", "th", "td", "em", "strong", "s", "a")


def build(tokens, parent):
    stack = [parent]
    for token in tokens:
        nesting = token.nesting
        if nesting == -1:
            stack.pop()
            continue
        top = stack[-1]
        if token.block and not token.hidden and token.type != "inline" and top.lastChild:
            top.append("\\n")
        if nesting == 1:
            tag = token.tag
            if token.hidden or tag not in TAGS:
                stack.append(top)
                continue
            node = document.createElement(tag)
            top.appendChild(node)
            if tag == "a":
                node.setAttribute("href", token.attrGet("href"))
            elif tag == "ol" and token.attrGet("start"):
                node.setAttribute("start", token.attrGet("start"))
            stack.append(node)
            continue
        kind = token.type
        if kind == "inline":
            build(token.children, top)
        elif kind == "softbreak":
            top.append(document.createElement("br"))
            top.append("\\n")
        elif kind == "code_inline":
            code = document.createElement("code")
            code.textContent = token.content
            top.appendChild(code)
        elif kind in ("fence", "code_block"):
            pre = document.createElement("pre")
            code = document.createElement("code")
            code.textContent = token.content
            pre.appendChild(code)
            top.appendChild(pre)
        elif kind == "hr":
            top.appendChild(document.createElement("hr"))
        elif token.content:
            top.append(token.content)


def median(values):
    return sorted(values)[len(values) // 2]


bench = window.walkBench
out = document.getElementById("out")
text = str(window.walkText)
times = {"parse": [], "js": [], "mpy": []}
for _ in range(int(window.walkRuns)):
    started = window.performance.now()
    tokens = bench.parser.parse(text, window.Object.new())
    times["parse"].append(window.performance.now() - started)
    for name in ("js", "mpy"):
        tokens = bench.parser.parse(text, window.Object.new())
        fragment = document.createDocumentFragment()
        started = window.performance.now()
        if name == "js":
            bench.markdown.build(tokens, fragment)
        else:
            build(tokens, fragment)
        out.replaceChildren(fragment)
        times[name].append(window.performance.now() - started)
document.body.setAttribute("data-elements", str(out.getElementsByTagName("*").length))
for name in times:
    document.body.setAttribute("data-" + name, "%.1f" % median(times[name]))
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=40_000, help="answer size in characters")
    parser.add_argument("--runs", type=int, default=9, help="repetitions (median)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    manifest = prepare()
    with tempfile.TemporaryDirectory(prefix="py-agent-walk-") as folder:
        # The manifest's URLs are relative to the site's root; this page is under /bench/.
        Path(folder, "walk.html").write_text(PAGE % {"core": "/" + manifest["pyscript"]["core"]})
        Path(folder, "walk.py").write_text(WALK_PY)
        Path(folder, "walk.json").write_text(json.dumps(
            {"interpreter": "/" + manifest["micropython"]["module"]}))
        server = make_server("127.0.0.1", 0, mounts={"/bench/": Path(folder)}, quiet=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium_path(),
                                                     args=CHROMIUM_FLAGS)
                print(f"{args.size:,}-character answers, medians of {args.runs} runs (ms):")
                print(f"  {'answer':14}{'elements':>10}{'parse':>8}{'js walk':>9}"
                      f"{'mpy walk':>10}{'mpy / js':>10}")
                for name, text in (("sections", long_answer(args.size)),
                                   ("nested list", nested_list(args.size))):
                    page = browser.new_page()
                    page.add_init_script(f"window.walkText = {json.dumps(text)}; "
                                         f"window.walkRuns = {args.runs};")
                    page.goto(server.url + "/bench/walk.html")
                    page.wait_for_selector("body[data-mpy]", state="attached", timeout=120_000)
                    data = page.evaluate("({...document.body.dataset})")
                    page.close()
                    js, mpy = float(data["js"]), float(data["mpy"])
                    print(f"  {name:14}{data['elements']:>10}{data['parse']:>8}{js:>9.1f}"
                          f"{mpy:>10.1f}{mpy / js:>9.1f}x")
                browser.close()
        finally:
            server.shutdown()
            server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
