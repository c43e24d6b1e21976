"""The tools panel lists exactly the tools the agent worker has, with their signatures and
descriptions, and shows which ones the retriever offered the model for a turn.

The list of tools grows as the demo does, so nothing here names them: the expected list
is what the worker itself answers to a `tools` request.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, ask_worker, send

pytestmark = pytest.mark.e2e

# Notes the tools the worker says it offered; stops when a shared page is handed on
# (window.__e2eTeardown, tests/e2e/shared_chat.py).
WATCH_OFFERED = r"""() => {
  window.__offered = null;
  const worker = window.pyAgentWorker.worker;
  const listen = (event) => {
    const e = event.data && event.data.type === 'event' && event.data.event;
    if (e && e.type === 'tools_retrieved') window.__offered = e.data.tools.map((t) => t.name);
  };
  worker.addEventListener('message', listen);
  (window.__e2eTeardown = window.__e2eTeardown || []).push(
    () => worker.removeEventListener('message', listen));
}"""

PANEL_ITEMS = r"""items => items.map(li => ({
  name: li.dataset.toolName,
  signature: li.querySelector('.tool-signature').textContent,
  description: li.querySelector('.tool-description').textContent,
  pinned: li.dataset.pinned === 'true',
}))"""


def test_tools_panel_lists_every_tool_the_worker_has(shared_chat) -> None:
    page, _ = shared_chat.open()
    panel = page.get_by_test_id("tools-panel")
    expect(panel).to_have_attribute("data-state", "ready")

    tools = ask_worker(page, "tools")
    assert len(tools) >= 3   # the demo's calculator, units, dates… and whatever came since
    shown = page.eval_on_selector_all('[data-testid="tools-panel"] [data-tool-name]',
                                      PANEL_ITEMS)
    assert [t["name"] for t in shown] == [t["name"] for t in tools]
    for item, tool in zip(shown, tools):
        assert item["signature"] == tool["signature"], tool["name"]
        assert item["signature"].startswith(tool["name"] + "(")
        assert item["description"] == tool["description"] and item["description"], tool["name"]
        assert item["pinned"] == bool(tool["pinned"]), tool["name"]
    expect(page.get_by_test_id("tools-count")).to_have_text(f"({len(tools)})")
    expect(panel.locator("[data-tool-name]").first).to_be_visible()

    # A turn highlights the tools the retriever offered the model (the worker's
    # tools_retrieved event says which).
    page.evaluate(WATCH_OFFERED)
    send(page, "How many grams is 3 ounces?")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    offered = page.evaluate("window.__offered")
    highlighted = page.eval_on_selector_all(
        '[data-testid="tools-panel"] [data-offered="true"]',
        "items => items.map(li => li.dataset.toolName)")
    assert offered and sorted(highlighted) == sorted(offered)
