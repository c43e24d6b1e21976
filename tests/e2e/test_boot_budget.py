"""The start-up budget, as the browser sees it (docs/startup.md#the-start-up-budget):
a boot from the memory snapshot imports nothing before "ready" that the snapshot does
not hold, in the agent's worker and in its tool worker, and the page fetches no script
before its UI is up that is not on the allow-list (tests/boot_budget.py).

Tests, not timings: each fails on a change that puts work on the boot path, with a
message that names what and says what to do. One boot of the app as users get it
(serve.py's snapshot, the tool worker) serves all three.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from serving.http_server import make_server
from tests.boot_budget import allowed, late_import_message, not_allowed_message

pytestmark = pytest.mark.e2e

BOOT_TIMEOUT_MS = 120_000

# Every boot message of the page's workers, as the page gets it.
WATCH_BOOT = """
(() => {
  const seen = window.__bootMessages = [];
  const Original = window.Worker;
  window.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        const data = event.data || {};
        if (data.type === 'boot' || data.type === 'tool-worker') seen.push(data);
      });
    }
  };
})();
"""


@pytest.fixture(scope="module")
def app_with_tool_worker():
    """The app as users get it: serve.py's boot snapshot and the tool worker."""
    server = make_server("127.0.0.1", 0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def booted(browser, browser_context_args, app_with_tool_worker):
    """A first visit, booted from the server's snapshot, once the tool worker is ready
    too: (page, boot messages, the page's script fetches before its UI was up)."""
    context = browser.new_context(**browser_context_args)
    page = context.new_page()
    page.add_init_script(script=WATCH_BOOT)
    page.goto(app_with_tool_worker + "/")
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                            timeout=BOOT_TIMEOUT_MS)
    expect(page.locator('[data-tool-worker-phase="ready"]')).to_have_count(
        1, timeout=BOOT_TIMEOUT_MS)
    messages = page.evaluate("window.__bootMessages")
    ui_up = float(page.get_by_test_id("status").get_attribute("data-ui-ms"))
    scripts = page.evaluate("""(uiUp) => performance.getEntriesByType('resource')
      .filter((entry) => entry.startTime < uiUp && /\\.m?js$/.test(new URL(entry.name).pathname))
      .map((entry) => entry.name)""", ui_up)
    yield page, messages, scripts
    context.close()


def ready_of(messages: list[dict], kind: str) -> dict:
    phases = {m["phase"]: m for m in messages if m["type"] == kind}
    assert "ready" in phases, f"no 'ready' from the {kind} worker: {list(phases)}"
    assert phases["pyodide-loaded"]["snapshot"] == "restored", \
        f"the {kind} worker did not restore the snapshot: {phases['pyodide-loaded']}"
    return phases["ready"]


@pytest.mark.parametrize("kind, worker", [("boot", "The agent's worker"),
                                          ("tool-worker", "The tool worker")])
def test_a_boot_from_the_snapshot_imports_nothing_it_does_not_hold(booted, kind, worker):
    _, messages, _ = booted
    ready = ready_of(messages, kind)
    assert "imported_after_restore" in ready, \
        f"{worker}'s 'ready' does not say what it imported after the restore: {ready}"
    late = ready["imported_after_restore"]
    assert late == [], late_import_message(worker, late)


def test_the_tool_worker_starts_after_the_agent_is_ready(booted):
    # "Ready" needs no tool worker: a second Pyodide booting beside the agent's took a
    # third of a two-core machine (docs/startup.md).
    _, messages, _ = booted
    agent_ready = ready_of(messages, "boot")
    tool_start = [m for m in messages if m["type"] == "tool-worker"][0]
    started_at = tool_start["at"] - tool_start["ms"]
    assert started_at >= agent_ready["at"] - 1, (agent_ready, tool_start)


def test_the_page_fetches_only_allowed_scripts_before_its_ui_is_up(booted, app_with_tool_worker):
    page, _, scripts = booted
    origin = app_with_tool_worker
    assert all(url.startswith(origin + "/") for url in scripts), scripts
    paths = [urlsplit(url).path.lstrip("/") for url in scripts]
    assert "llm_host.js" in paths, paths   # the page's own scripts are seen at all
    extra = [path for path in paths if not allowed(path)]
    assert not extra, not_allowed_message("The page as served", extra)
    # No in-page model is offered here: its JavaScript is not loaded at all.
    assert page.evaluate("typeof globalThis.pyAgentPageModels") == "undefined"
