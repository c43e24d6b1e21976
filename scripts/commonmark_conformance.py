#!/usr/bin/env python3
"""How much of the CommonMark spec the page's Markdown renderer gets right.

    python scripts/commonmark_conformance.py [--failures]

Renders the spec's 652 examples (tests/data/) in headless Chromium through web/markdown.js
and prints, per section, how many match the spec's HTML after normalisation: with
CommonMark's own settings ("spec") and with the chat's ("page": a newline is a line
break, bare URLs are links, only http(s)/mailto links). Examples of raw HTML and images,
which the page deliberately does not render, are counted apart. --failures lists the
rendered examples that do not match.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving.http_server import make_server  # noqa: E402
from serving.prepare import prepare  # noqa: E402
from tests.e2e import commonmark  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failures", action="store_true", help="list the mismatches")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    prepare()
    server = make_server("127.0.0.1", 0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"),
                                                 args=["--no-sandbox"])
            results = commonmark.run(browser.new_page(), server.url)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()

    rows = sorted(commonmark.table(results), key=lambda row: row["section"])
    print("| section | examples | raw HTML | images | rendered | spec match | page match |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    totals = {key: 0 for key in ("examples", "raw HTML", "image", "rendered", "spec_ok",
                                 "page_ok")}
    for row in rows:
        for key in totals:
            totals[key] += row.get(key, 0)
        print(_line(row["section"], row))
    print(_line("**all**", totals))
    if args.failures:
        for result in results:
            if result["kind"] == "rendered" and not result["spec_ok"]:
                print(f"\n#{result['example']} {result['section']}\n{result['markdown']!r}\n"
                      f"  spec: {result['expected']}\n  ours: {result['spec_html']}")
    return 0


def _line(name: str, row: dict) -> str:
    rendered = row.get("rendered", 0)

    def rate(key: str) -> str:
        if not rendered:
            return "-"
        return f"{row.get(key, 0)} ({100 * row.get(key, 0) / rendered:.0f}%)"

    return (f"| {name} | {row['examples']} | {row.get('raw HTML', 0)} | {row.get('image', 0)} "
            f"| {rendered} | {rate('spec_ok')} | {rate('page_ok')} |")


if __name__ == "__main__":
    sys.exit(main())
