#!/usr/bin/env python3
"""What the extension's page reader (extension/page_reader.js) costs, against another
version of it, side by side in one browser.

    python bench/page_reader.py [--runs N] [--against REV]

Each of tests/e2e's fixture pages (the 5 MB page, the long article, the laptops table,
the hidden-text pages) is opened in a tab of headless Chromium (the system one, as in
the e2e tests) at 1280x720; this checkout's reader and the one of git revision
``--against`` (default: main) are injected into fresh loads of it in turn, and
``extract()`` is timed by the reader itself (its ``ms``), without Readability, which both
versions share and which the 5 MB page skips anyway. Reported per page: the median of
``--runs`` runs of each, their ratio, and what each left out.

Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.e2e.extension_app import FixtureServer  # noqa: E402

PAGES = ("huge.html", "article.html", "laptops.html", "injected.html", "unseen.html")


def reader_of(revision: str) -> str:
    return subprocess.run(["git", "show", f"{revision}:extension/page_reader.js"], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout


def extract(page, url: str, source: str) -> dict:
    page.goto(url)
    page.add_script_tag(content=source)
    return page.evaluate("""() => { const r = pyAgentPageReader.extract();
        return {ms: r.ms, chars: r.chars, dropped: r.hiddenDropped}; }""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", default="main", help="the git revision to compare with")
    args = parser.parse_args()
    readers = {"this": (ROOT / "extension" / "page_reader.js").read_text(),
               args.against: reader_of(args.against)}
    fixtures = FixtureServer()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(),
                                                 headless=True, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            print(f"| page | this (ms) | {args.against} (ms) | ratio | left out: this | "
                  f"left out: {args.against} |")
            print("|---|---|---|---|---|---|")
            for name in PAGES:
                url = f"{fixtures.url}/{name}"
                times: dict[str, list[float]] = {key: [] for key in readers}
                dropped: dict[str, int] = {}
                for _ in range(args.runs):
                    for key, source in readers.items():   # alternated, run by run
                        result = extract(page, url, source)
                        times[key].append(result["ms"])
                        dropped[key] = sum((result["dropped"] or {}).values())
                ours, theirs = (statistics.median(times[key]) for key in readers)
                print(f"| {name} | {ours:,.0f} | {theirs:,.0f} | {ours / max(theirs, 1):.2f} | "
                      f"{dropped['this']} | {dropped[args.against]} |")
            browser.close()
    finally:
        fixtures.close()


if __name__ == "__main__":
    main()
