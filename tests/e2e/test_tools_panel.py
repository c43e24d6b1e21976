"""The tools panel lists exactly the tools the agent worker has, with their signatures and
descriptions, and shows which ones the retriever offered the model for a turn.

The list of tools grows as the demo does, so nothing here names them: the expected list
is what the worker itself answers to a `tools` request.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

BOOT_TIMEOUT_MS = 90_000
TURN_TIMEOUT_MS = 20_000
ASSISTANT = '[data-testid="message"][data-role="assistant"]'

# Ask the worker directly, as the page does, and wait for the reply with that id (the
# page's own handler ignores replies it did not ask for).
ASK_WORKER = r"""() => new Promise((resolve, reject) => {
  const worker = window.pyAgentWorker.worker;
  const id = 'e2e-tools';
  const onMessage = (event) => {
    const data = event.data;
    if (!data || data.type !== 'reply' || data.id !== id) return;
    worker.removeEventListener('message', onMessage);
    data.ok ? resolve(data.value) : reject(new Error(JSON.stringify(data.error)));
  };
  worker.addEventListener('message', onMessage);
  worker.postMessage({type: 'tools', id});
})"""

WATCH_OFFERED = r"""() => {
  window.__offered = null;
  window.pyAgentWorker.worker.addEventListener('message', (event) => {
    const e = event.data && event.data.type === 'event' && event.data.event;
    if (e && e.type === 'tools_retrieved') window.__offered = e.data.tools.map((t) => t.name);
  });
}"""

PANEL_ITEMS = r"""items => items.map(li => ({
  name: li.dataset.toolName,
  signature: li.querySelector('.tool-signature').textContent,
  description: li.querySelector('.tool-description').textContent,
  pinned: li.dataset.pinned === 'true',
}))"""


def test_tools_panel_lists_every_tool_the_worker_has(page: Page, app_server: str,
                                                     install_fake_lm) -> None:
    install_fake_lm(page)
    page.goto(app_server + "/")
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                            timeout=BOOT_TIMEOUT_MS)
    panel = page.get_by_test_id("tools-panel")
    expect(panel).to_have_attribute("data-state", "ready")

    tools = page.evaluate(ASK_WORKER)
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
    page.get_by_test_id("chat-input").fill("How many grams is 3 ounces?")
    page.get_by_test_id("send-button").click()
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    offered = page.evaluate("window.__offered")
    highlighted = page.eval_on_selector_all(
        '[data-testid="tools-panel"] [data-offered="true"]',
        "items => items.map(li => li.dataset.toolName)")
    assert offered and sorted(highlighted) == sorted(offered)
