"""Tools from outside the agent, in the page: the page's own tools (web/page_tools.js),
the page's WebMCP tools (document.modelContext, in Chromium with WebMCP enabled), and
tool servers (MCP over Streamable HTTP: the reference server from npm and a Python one
of tests/mcp_servers.py), with the user's approval before consequential calls.

One page boot serves the whole module (each boot costs seconds): tests start a new
chat instead. The scripted fake model calls the tools the retriever offered it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path
from tests.e2e.pages import (ASSISTANT, BOOT_TIMEOUT_MS, TURN_TIMEOUT_MS, ask_worker, boot,
                             chat, install_fake_lm_scripts, tool_call_responder, wait_until)

pytestmark = pytest.mark.e2e

RULES = r"""[
    [/title of this page/i, () => ['page_title', {}]],
    [/shout (\w+)/i, (m) => ['shout', {word: m[1]}]],
]"""


@pytest.fixture(scope="module")
def webmcp_browser(playwright) -> Browser:
    """Chromium with WebMCP (document.modelContext) enabled, for this module only."""
    browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True,
                                         args=[*CHROMIUM_FLAGS, "--enable-features=WebMCP"])
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def app(webmcp_browser: Browser, app_server: str) -> Page:
    """The app, booted once, with the fake model scripted by RULES."""
    context = webmcp_browser.new_context()
    page = context.new_page()
    install_fake_lm_scripts(page, {"responderSource": tool_call_responder(RULES)})
    boot(page, app_server + "/")
    yield page
    context.close()


def new_chat(page: Page) -> None:
    page.get_by_test_id("new-session-button").click()
    expect(page.locator(ASSISTANT)).to_have_count(0)


def tool_names(page: Page) -> list[str]:
    return [t["name"] for t in ask_worker(page, "tools")]


def test_page_tools_are_offered_called_and_withdrawn(app: Page) -> None:
    new_chat(app)
    app.evaluate("""() => {
      window.__unregisterTitle = window.pyAgentPageTools.register({
        name: 'page_title', description: 'The title of this web page, as the tab shows it.',
        annotations: {readOnlyHint: true},
        execute: async () => ({content: [{type: 'text', text: 'Title: ' + document.title}]})});
    }""")
    wait_until(app, "document.querySelector('[data-tool-name=\"page_title\"]')",
               timeout_ms=TURN_TIMEOUT_MS)
    assert "page_title" in tool_names(app)
    answer = chat(app, "What is the title of this page?")
    assert answer == "page_title -> Title: py-agent"

    app.evaluate("window.__unregisterTitle()")
    wait_until(app, "!document.querySelector('[data-tool-name=\"page_title\"]')",
               timeout_ms=TURN_TIMEOUT_MS)
    assert "page_title" not in tool_names(app)
