"""The shared chat page (tests/e2e/shared_chat.py) hands each test a page that shows
nothing of the tests before: what a test leaves is cleaned up through the page, and a
page that cannot be cleaned, or that a failed test used, is replaced by a new one.

Each test here plays two tests in a row (``finish`` is what the fixture calls between
two tests).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.pages import chat, current_session

pytestmark = pytest.mark.e2e

WORD = "PAPAYA"

PUT_A_NOTE = """() => new Promise((resolve, reject) => {
  const open = indexedDB.open('py-agent');
  open.onsuccess = () => {
    const tx = open.result.transaction('kv', 'readwrite');
    tx.objectStore('kv').put({title: 'left behind'}, 'note:000009');
    tx.oncomplete = () => { open.result.close(); resolve(); };
    tx.onerror = () => reject(tx.error);
  };
  open.onerror = () => reject(open.error);
})"""


def test_the_next_test_sees_nothing_of_this_one_in_the_same_page(shared_chat,
                                                                   app_server: str) -> None:
    page, _ = shared_chat.open(latencyMs=50)
    chat(page, f"Remember the word {WORD}.")
    page.get_by_test_id("new-session-button").click()
    chat(page, f"A second chat about {WORD}.")
    page.evaluate(f"window.__leftBehind = {WORD!r}")
    shared_chat.add_init_script(f"window.__fromInit = {WORD!r};")
    page.get_by_test_id("memory-turns-box").locator("summary").click()
    page.get_by_test_id("chat-input").fill(f"{WORD} draft")
    sessions, boots = {current_session(page)}, shared_chat.boots

    shared_chat.finish(failed=False)
    page, _ = shared_chat.open()
    assert shared_chat.boots == boots   # the same page, cleaned through the page itself
    assert current_session(page) not in sessions
    assert WORD not in page.locator("body").inner_text()
    assert page.evaluate("[window.__leftBehind, window.__fromInit]") == [None, None]
    expect(page.get_by_test_id("memory-turns-box")).not_to_have_attribute("open", "")
    expect(page.get_by_test_id("chat-input")).to_have_value("")
    assert page.evaluate("__fakeLM.config.latencyMs") == 0   # the fake's defaults again
    page.goto(app_server + "/")   # and the earlier test's init scripts are gone too
    assert page.evaluate("window.__fromInit") is None


def test_a_page_that_cannot_be_cleaned_is_replaced(shared_chat) -> None:
    page, _ = shared_chat.open()
    page.evaluate(PUT_A_NOTE)   # a demo tool's record: nothing in the page deletes it
    boots = shared_chat.boots

    shared_chat.finish(failed=False)
    fresh, _ = shared_chat.open()
    assert shared_chat.boots == boots + 1 and fresh != page
    assert "'kv': 1" in shared_chat.reasons.pop()


def test_a_page_a_failed_test_used_is_replaced(shared_chat) -> None:
    page, _ = shared_chat.open()
    boots = shared_chat.boots

    shared_chat.finish(failed=True)
    fresh, _ = shared_chat.open()
    assert shared_chat.boots == boots + 1 and fresh != page
    assert shared_chat.reasons.pop() == "the test before failed"
