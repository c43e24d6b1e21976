"""A sync tool that loops forever in pure Python costs its timeout and one turn in the page.

Pyodide cannot interrupt a tool running in the agent's worker, so sync tools run in a
tool worker that the agent's worker terminates and restarts past the deadline
(py_agent.browser.tool_worker). The tool module here is a user's, served as
``serve.py --tools`` serves it; the model is the fake, everything else is real.
"""

from __future__ import annotations

import threading
import time

import pytest
from playwright.sync_api import Page, expect

from serving.http_server import make_server
from tests.e2e.pages import (ASSISTANT, TURN_TIMEOUT_MS, Watch, boot, chat, send,
                             tool_call_responder)

pytestmark = pytest.mark.e2e

# A tool with a bug users write: a negative count never reaches zero. It says which
# worker ran it (the tool worker is named "py-agent tools").
SPIN_TOOLS = '''
from py_agent import tool


@tool
def spin_wheel(turns: int) -> str:
    """Spin the prize wheel a number of turns and say where it stops.

    Examples:
        spin the prize wheel 3 turns
    """
    import js  # the worker's global scope

    left = turns
    while left != 0:
        left -= 1
    return f"the wheel stopped after {turns} turns (ran in {js.name})"
'''

RESPONDER = tool_call_responder(r"""[
    [/^Spin the prize wheel (-?\d+) turns$/i, (m) => ['spin_wheel', {turns: Number(m[1])}]],
]""")
TOOL_TIMEOUT_S = 2


@pytest.fixture(scope="module")
def spin_server(app_server: str, tmp_path_factory):
    """The app with the demo's tools and spin_tools.py (app_server prepared the runtime)."""
    folder = tmp_path_factory.mktemp("spin")
    (folder / "spin_tools.py").write_text(SPIN_TOOLS)
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, tools=[folder / "spin_tools.py"])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()


def test_a_hung_sync_tool_costs_its_timeout_and_one_turn(page: Page, spin_server: str,
                                                         install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page, responderSource=RESPONDER)
    boot(page, f"{spin_server}/?tool_timeout={TOOL_TIMEOUT_S}")

    # A call that ends runs in the tool worker (the first one waits for it to boot).
    assert chat(page, "Spin the prize wheel 3 turns") == (
        "spin_wheel -> the wheel stopped after 3 turns (ran in py-agent tools)")

    started = time.monotonic()
    hung = chat(page, "Spin the prize wheel -1 turns")
    took = time.monotonic() - started
    assert hung == f"spin_wheel -> Error: spin_wheel did not finish within {TOOL_TIMEOUT_S} s."
    assert TOOL_TIMEOUT_S <= took < TOOL_TIMEOUT_S + 6

    # The agent goes on: a plain turn at once, the tool again in a fresh tool worker.
    assert chat(page, "Hello again") == "You said: Hello again"
    assert chat(page, "Spin the prize wheel 5 turns") == (
        "spin_wheel -> the wheel stopped after 5 turns (ran in py-agent tools)")
    assert watch.problems == []

    # Both tool workers, the first and the one started after the hang, restored the
    # agent's boot snapshot (serve.py made it for these tool modules).
    started = page.locator('[data-tool-worker-phase="pyodide-loaded"]')
    expect(started).to_have_count(2)
    for index in range(2):
        expect(started.nth(index)).to_have_attribute("data-snapshot", "restored")
    assert page.locator('[data-tool-worker-phase="ready"]').count() == 2


def test_stop_during_a_hung_sync_tool_ends_the_turn_and_the_next_works(
        page: Page, spin_server: str, install_fake_lm) -> None:
    install_fake_lm(page, responderSource=RESPONDER)
    boot(page, f"{spin_server}/?tool_timeout=120")
    assert "ran in py-agent tools" in chat(page, "Spin the prize wheel 2 turns")

    send(page, "Spin the prize wheel -5 turns")
    stopped = page.locator(ASSISTANT).nth(1)
    expect(stopped.get_by_test_id("trace-step").first).to_have_attribute(
        "data-tool", "spin_wheel", timeout=TURN_TIMEOUT_MS)
    started = time.monotonic()
    page.get_by_test_id("stop-button").click()
    expect(stopped).to_have_attribute("data-state", "stopped", timeout=5_000)
    assert time.monotonic() - started < 5
    assert chat(page, "Spin the prize wheel 4 turns") == (
        "spin_wheel -> the wheel stopped after 4 turns (ran in py-agent tools)")
