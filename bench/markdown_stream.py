#!/usr/bin/env python3
"""Streaming benchmark: what does rendering a long answer as Markdown cost the page,
next to showing the same text as plain text?

    python bench/markdown_stream.py [--size 40000] [--chunk 16] [--runs 3]

The real page (serve.py's app, PyScript UI, agent worker) with the tests' fake
LanguageModel, whose promptStreaming sends the agent's answer step in ``--chunk``-character
chunks as fast as the page takes them. Each answer is streamed twice per run, side by
side:

  markdown   the page as shipped: the preview re-rendered while it streams, then the
             final render;
  plain      the same page with web/markdown.js swapped (by request interception) for a
             module that only sets textContent: what showing the text costs at all.

Two answers of ``--size`` characters (tests/e2e/long_answers.py): a sectioned one
(headings, paragraphs, nested lists, code, tables, quotes) and one nested list that never
closes (the worst case for incremental rendering). Page busy time is Chromium's own
TaskDuration (main-thread task time, from the DevTools protocol) from Send until the answer
is final; the longest task says how long the page froze at worst. Not a test: the numbers
depend on the machine and its load; the ratio is what to look at.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving.http_server import make_server  # noqa: E402
from serving.prepare import prepare  # noqa: E402
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.e2e.long_answers import long_answer, nested_list  # noqa: E402
from tests.e2e.pages import install_fake_lm_scripts, step_responder  # noqa: E402

TIMEOUT_MS = 600_000

# What the page would cost if answers were plain text: the renderer's exports, textContent.
PLAIN_MODULE = """
export function render(text, parent) { parent.textContent = text; }
export function preview(text, parent) { parent.textContent = text; }
"""

LONGEST_TASK = """() => {
  window.__longest = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__longest = Math.max(window.__longest, entry.duration);
  }).observe({type: 'longtask'});
}"""


def open_page(browser, base: str, answer: str, plain: bool, chunk: int):
    page = browser.new_page()
    responder = step_responder(
        "return step({thought: 'Answering.', finalAnswer: %s});" % json.dumps(answer))
    config = {"responderSource": responder, "chunkSize": chunk, "chunkDelayMs": 0,
              "contextWindow": 1_000_000}
    install_fake_lm_scripts(page, config)
    if plain:
        page.route("**/markdown.js", lambda route: route.fulfill(
            status=200, body=PLAIN_MODULE, content_type="application/javascript"))
    page.goto(base + "/")
    page.wait_for_selector('[data-testid="chat-input"]:not([disabled])', timeout=120_000)
    return page


def stream_once(browser, base: str, answer: str, plain: bool, chunk: int) -> dict:
    """Busy ms, wall ms and the longest task of one streamed answer."""
    page = open_page(browser, base, answer, plain, chunk)
    try:
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.evaluate(LONGEST_TASK)

        def busy() -> float:
            metrics = cdp.send("Performance.getMetrics")["metrics"]
            return next(m["value"] for m in metrics if m["name"] == "TaskDuration") * 1000

        before, started = busy(), time.monotonic()
        page.get_by_test_id("chat-input").fill("Tell me everything.")
        page.get_by_test_id("send-button").click()
        page.wait_for_selector('[data-role="assistant"][data-state="answered"]',
                               timeout=TIMEOUT_MS, state="attached")
        result = {"busy": busy() - before, "wall": (time.monotonic() - started) * 1000,
                  "longest": page.evaluate("window.__longest")}
        shown = page.locator('[data-role="assistant"] .text').text_content()
        if len(shown) < len(answer) // 2:
            raise RuntimeError("the answer did not arrive whole")
        return result
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=40_000, help="answer size in characters")
    parser.add_argument("--chunk", type=int, default=16, help="characters per streamed chunk")
    parser.add_argument("--runs", type=int, default=3, help="repetitions (default 3)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    prepare()
    answers = {"sections": long_answer(args.size), "nested list": nested_list(args.size)}
    samples: dict[tuple[str, str], list[dict]] = {}
    server = make_server("127.0.0.1", 0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.monotonic()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), headless=True,
                args=CHROMIUM_FLAGS)
            for run in range(args.runs):
                for name, answer in answers.items():
                    # Alternate which goes first, so drift in machine load favours neither.
                    modes = ("markdown", "plain") if run % 2 == 0 else ("plain", "markdown")
                    for mode in modes:
                        result = stream_once(browser, server.url, answer, mode == "plain",
                                             args.chunk)
                        samples.setdefault((name, mode), []).append(result)
                        print(f"[bench] run {run + 1} {name:12} {mode:9} busy "
                              f"{result['busy']:8.0f} ms  wall {result['wall']:8.0f} ms  "
                              f"longest task {result['longest']:5.0f} ms", flush=True)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()

    def med(name: str, mode: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[(name, mode)])

    print(f"\nMedians of {args.runs} run(s); {args.size:,} characters in {args.chunk}-character "
          "chunks; page busy ms (longest task ms):")
    print(f"  {'answer':14}{'markdown':>18}{'plain':>18}{'markdown / plain':>20}")
    for name in answers:
        cells = [f"{med(name, m, 'busy'):8.0f} ({med(name, m, 'longest'):4.0f})"
                 for m in ("markdown", "plain")]
        ratio = med(name, "markdown", "busy") / med(name, "plain", "busy")
        print(f"  {name:14}{cells[0]:>18}{cells[1]:>18}{ratio:>19.2f}x")
    print(f"\n[bench] done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
