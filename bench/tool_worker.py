#!/usr/bin/env python3
"""Tool worker benchmark: what running sync tools in a second worker costs in the page.

    python bench/tool_worker.py [--calls N] [--rounds R]

In headless Chromium with the fake LanguageModel (as in the e2e tests), the app is
booted twice, side by side: with the tool worker (the default) and with
``?tool_worker=off`` (sync tools inline in the agent's worker, where a hung one
cannot be stopped). Each time it times:

  ready        navigation to the agent saying ready
  first call   a calculate turn sent the moment the page is ready (with the tool
               worker, it waits for that worker to boot)
  tool_ms      the tool call's time as the agent measures it (the observation event's
               duration_ms: for the tool worker, a round trip of two postMessages),
               median of N calls
  turn         a whole calculate turn (two fake model steps and the tool), median of N

Rounds alternate which side goes first; the table holds medians over rounds. Not a
test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
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
from tests.e2e.pages import ask_worker, install_fake_lm_scripts, tool_call_responder  # noqa: E402

RESPONDER = tool_call_responder(r"""[
    [/^Calculate (.+)$/i, (m) => ['calculate', {expression: m[1]}]],
]""")
TIMEOUT_MS = 120_000


def turn(page, text: str) -> float:
    """Send ``text``; seconds until its answer is in."""
    before = page.locator('[data-role="assistant"]').count()
    started = time.perf_counter()
    page.get_by_test_id("chat-input").fill(text)
    page.get_by_test_id("send-button").click()
    # A locator's wait, not wait_for_function: that evals its predicate in the page,
    # which the page's CSP forbids.
    page.locator('[data-role="assistant"]').nth(before).locator(
        'xpath=self::*[@data-state="answered" or @data-state="error" or '
        '@data-state="incomplete"]').wait_for(timeout=TIMEOUT_MS)
    return time.perf_counter() - started


def measure(browser, base: str, query: str, calls: int) -> dict:
    context = browser.new_context()
    page = context.new_page()
    install_fake_lm_scripts(page, {"responderSource": RESPONDER})
    started = time.perf_counter()
    page.goto(f"{base}/{query}")
    page.get_by_test_id("chat-input").wait_for(state="visible", timeout=TIMEOUT_MS)
    page.locator('[data-testid="status"][data-state="ready"]').wait_for(timeout=TIMEOUT_MS)
    ready = time.perf_counter() - started
    page.evaluate("""() => { window.toolMs = [];
      window.pyAgentWorker.worker.addEventListener('message', (m) => {
        const e = m.data && m.data.type === 'event' && m.data.event;
        if (e && e.type === 'observation' && e.data.tool === 'calculate') {
          window.toolMs.push(e.data.duration_ms);
        }
      }); }""")
    first = turn(page, "Calculate 17*23")
    turns = [turn(page, f"Calculate {n}*{n + 1}") for n in range(calls)]
    session = page.evaluate("localStorage.getItem('py-agent.session')")
    stored = ask_worker(page, "transcript", session_id=session)
    tool_ms = page.evaluate("window.toolMs")[1:]   # the first call's includes the boot wait
    answers_ok = all("calculate ->" in t["answer"] for t in stored)
    context.close()
    return {"ready": ready, "first": first, "tool_ms": statistics.median(tool_ms),
            "turn": statistics.median(turns), "ok": answers_ok}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    prepare()
    server = make_server("127.0.0.1", 0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
            # Both orders, so that neither side gets the warmer browser; medians.
            runs: dict[str, list[dict]] = {"tool worker": [], "inline": []}
            for order in range(args.rounds):
                sides = [("tool worker", ""), ("inline", "?tool_worker=off")]
                for name, query in (sides if order % 2 == 0 else sides[::-1]):
                    runs[name].append(measure(browser, server.url, query, args.calls))
            results = {name: {key: (all(r[key] for r in rs) if key == "ok" else
                                    statistics.median(r[key] for r in rs))
                              for key in rs[0]} for name, rs in runs.items()}
            browser.close()
    finally:
        server.shutdown()
    print(f"{'':<14}{'ready s':>9}{'first call s':>14}{'tool_ms':>9}{'turn s':>8}  answers")
    for name, r in results.items():
        print(f"{name:<14}{r['ready']:>9.2f}{r['first']:>14.2f}{r['tool_ms']:>9.1f}"
              f"{r['turn']:>8.3f}  {'ok' if r['ok'] else 'WRONG'}")
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
