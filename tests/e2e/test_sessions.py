"""The sessions sidebar end to end: titles, inline rename, delete with an inline
confirmation, keyboard use, and the last session reopening after a reload.

Real worker and IndexedDB, the fake LanguageModel (tests/e2e/pages.py has the helpers).
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (ASSISTANT, MESSAGES, SESSION_ROWS, TURN_TIMEOUT_MS, USER,
                             boot, chat, current_session, row, send, session_ids,
                             stored_sessions, texts, watch_from_parsing)

pytestmark = pytest.mark.e2e

USER_TEXT = USER + " .text"


def no_dialogs(listen) -> list[str]:
    """Collects any window.alert/confirm/prompt the page opens (there must be none);
    ``listen(event, handler)`` is the shared page's ``on``."""
    seen: list[str] = []

    def on_dialog(dialog) -> None:
        seen.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()
    listen("dialog", on_dialog)
    return seen


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def new_session(page: Page) -> str:
    before = current_session(page)
    page.get_by_test_id("new-session-button").click()
    expect(page.locator(MESSAGES)).to_have_count(0)
    session = current_session(page)
    assert session != before
    return session


# ------------------------------------------------------------------------------ tests

def test_title_shows_at_once_and_rename_persists(shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open()
    session = current_session(page)
    expect(row(page, session)).to_contain_text("New session")
    # Nothing saved yet: nothing to rename or delete.
    expect(row(page, session).get_by_test_id("rename-session")).to_have_count(0)

    # The title comes from the first message as soon as it is sent, before the answer.
    page.evaluate("__fakeLM.setLatency(1500)")
    send(page, "  Plan a   weekend trip to the mountains with my two kids and a dog  ")
    title = row(page, session).locator(".session-title")
    expect(title).to_have_text("Plan a weekend trip to the mountains with my two kids and…")
    assert page.locator(ASSISTANT).last.get_attribute("data-state") == "pending"
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    page.evaluate("__fakeLM.setLatency(0)")
    # The agent saved the same title.
    expect(row(page, session)).to_contain_text("1 turn")
    expect(title).to_have_text("Plan a weekend trip to the mountains with my two kids and…")

    # Rename: the button opens a field with the title; Escape cancels.
    row(page, session).get_by_test_id("rename-session").click()
    field = row(page, session).get_by_test_id("rename-field")
    expect(field).to_be_focused()
    expect(field).to_have_value("Plan a weekend trip to the mountains with my two kids and…")
    field.fill("Something else")
    field.press("Escape")
    expect(field).to_have_count(0)
    expect(title).to_have_text("Plan a weekend trip to the mountains with my two kids and…")
    expect(row(page, session).get_by_test_id("rename-session")).to_be_focused()

    # Enter saves, and the list shows it at once.
    page.keyboard.press("Enter")   # the focused rename button opens the field again
    field.fill("  Mountain   weekend  ")
    field.press("Enter")
    expect(field).to_have_count(0)
    expect(title).to_have_text("Mountain weekend")
    # F2 on a focused session renames it too; an empty title changes nothing.
    row(page, session).locator('[data-action="open"]').focus()
    page.keyboard.press("F2")
    expect(field).to_be_focused()
    field.fill("   ")
    field.press("Enter")
    expect(title).to_have_text("Mountain weekend")
    # Leaving the field (Tab) saves, as Enter does.
    page.keyboard.press("Enter")
    field.fill("Mountain weekend, with the dog")
    page.keyboard.press("Tab")
    expect(field).to_have_count(0)
    expect(title).to_have_text("Mountain weekend, with the dog")

    # Saved in the worker's storage: a reload shows the new title (and reopens it).
    wait_until(lambda: [s["title"] for s in stored_sessions(page)]
               == ["Mountain weekend, with the dog"])
    boot(page, app_server + "/")
    assert current_session(page) == session
    expect(row(page, session).locator(".session-title")).to_have_text(
        "Mountain weekend, with the dog")
    assert watch.problems == []


def test_delete_asks_inline_then_removes_from_list_and_storage(
        shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open()
    dialogs = no_dialogs(shared_chat.on)
    chat(page, "first session message")
    first = current_session(page)
    second = new_session(page)
    chat(page, "second session message")
    third = new_session(page)
    chat(page, "third session message")
    expect(page.locator(SESSION_ROWS)).to_have_count(3)
    assert session_ids(page) == [third, second, first]   # newest first

    # Delete a session that is not shown: an inline question, "No" keeps it.
    row(page, first).get_by_test_id("delete-session").click()
    confirm = row(page, first).locator(".delete-confirm")
    expect(confirm).to_contain_text("Delete “first session message”?")
    expect(row(page, first).get_by_test_id("cancel-delete")).to_be_focused()
    row(page, first).get_by_test_id("cancel-delete").click()
    expect(confirm).to_have_count(0)
    expect(page.locator(SESSION_ROWS)).to_have_count(3)
    # Escape cancels too.
    row(page, first).get_by_test_id("delete-session").click()
    page.keyboard.press("Escape")
    expect(confirm).to_have_count(0)
    expect(row(page, first).get_by_test_id("delete-session")).to_be_focused()

    # "Yes" deletes it; the shown session stays.
    row(page, first).get_by_test_id("delete-session").click()
    row(page, first).get_by_test_id("confirm-delete").click()
    expect(row(page, first)).to_have_count(0)
    expect(page.locator(SESSION_ROWS)).to_have_count(2)
    assert current_session(page) == third
    assert texts(page) == ["user: third session message",
                           "assistant: You said: third session message"]

    # Deleting the shown session opens the next one in the list.
    row(page, third).get_by_test_id("delete-session").click()
    row(page, third).get_by_test_id("confirm-delete").click()
    expect(row(page, third)).to_have_count(0)
    expect(page.locator(ASSISTANT)).to_have_count(1)
    assert current_session(page) == second
    assert texts(page)[0] == "user: second session message"
    expect(row(page, second).locator('[data-action="open"]')).to_be_focused()

    # Gone from storage too: the reload lists only the second session, and shows it.
    boot(page, app_server + "/")
    assert session_ids(page) == [second]
    assert current_session(page) == second
    assert [s["session_id"] for s in stored_sessions(page)] == [second]

    # Deleting the last session leaves a new, empty one (with the keyboard: Delete key).
    row(page, second).locator('[data-action="open"]').focus()
    page.keyboard.press("Delete")
    expect(row(page, second).get_by_test_id("cancel-delete")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(row(page, second).get_by_test_id("confirm-delete")).to_be_focused()
    page.keyboard.press("Enter")
    expect(row(page, second)).to_have_count(0)
    expect(page.locator(SESSION_ROWS)).to_have_count(1)
    assert current_session(page) not in (first, second, third)
    expect(page.locator(MESSAGES)).to_have_count(0)
    expect(page.get_by_test_id("memory-summary")).to_have_text("")
    assert stored_sessions(page) == []
    assert dialogs == []
    assert watch.problems == []


def test_keyboard_switching_and_the_last_session_reopens(shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open()
    chat(page, "alpha: the first conversation")
    alpha = current_session(page)
    beta = new_session(page)
    chat(page, "beta: the second conversation")
    assert session_ids(page) == [beta, alpha]

    # Up/Down move between sessions; Enter opens the focused one.
    row(page, beta).locator('[data-action="open"]').focus()
    page.keyboard.press("ArrowDown")
    expect(row(page, alpha).locator('[data-action="open"]')).to_be_focused()
    page.keyboard.press("ArrowDown")   # stays on the last one
    expect(row(page, alpha).locator('[data-action="open"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(USER_TEXT)).to_have_text("alpha: the first conversation")
    assert current_session(page) == alpha
    expect(row(page, alpha).locator('[data-action="open"]')).to_be_focused()
    page.keyboard.press("Home")
    expect(row(page, beta).locator('[data-action="open"]')).to_be_focused()

    # A reload reopens the session shown last (alpha), not the newest (beta); the
    # messages list says it is loading from its parsing until it shows that transcript.
    shared_chat.add_init_script(WATCH_MESSAGES)
    boot(page, app_server + "/")
    assert current_session(page) == alpha
    assert page.locator(USER_TEXT).all_text_contents() == ["alpha: the first conversation"]
    seen = page.evaluate("window.__messagesStates")
    assert seen[0] == {"when": "parsed", "loading": "true", "busy": "true", "users": 0}, seen
    shown = next(state for state in seen if state["loading"] == "false")
    assert shown["busy"] == "false" and shown["users"] == 1, seen
    assert session_ids(page) == [beta, alpha]
    # Once more after switching back.
    row(page, beta).locator('[data-action="open"]').click()
    expect(page.locator(USER_TEXT)).to_have_text("beta: the second conversation")
    boot(page, app_server + "/")
    assert current_session(page) == beta
    expect(page.locator(USER_TEXT)).to_have_text("beta: the second conversation")
    assert watch.problems == []


# Notes the messages list's loading state (and how many user messages it holds) when it
# is parsed and at every change of that state.
WATCH_MESSAGES = watch_from_parsing(
    '[data-testid="messages"]', ["data-loading", "aria-busy"],
    "window.__messagesStates = [];",
    """(list, at) => window.__messagesStates.push({
      when: at === null ? 'parsed' : 'changed', loading: list.getAttribute('data-loading'),
      busy: list.getAttribute('aria-busy'),
      users: list.querySelectorAll('[data-role="user"]').length})""")
