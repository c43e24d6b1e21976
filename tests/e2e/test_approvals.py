"""Approval questions end to end: several chats can wait for the user's approval at once,
every question is shown with its chat, and each answer reaches the question it answers.

The page's own chat runs one turn at a time, in the chat it shows; a turn of another chat
is started the way any other client of the agent worker starts one (a ``run`` request,
as ``web/agent.js`` or a second view would send). The scripted fake model calls the
demo's ``delete_note``, a consequential tool, for "delete my note ...". Questions of
one page boot are shared with the other tests (``shared_chat``).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (MESSAGES, TURN_TIMEOUT_MS, answer_to, chat, current_session, row,
                             send, start_worker_request, tool_call_responder)

pytestmark = pytest.mark.e2e

RULES = r"""[[/delete my note (.+)$/i, (m) => ['delete_note', {note: m[1]}]]]"""
RESPONDER = tool_call_responder(RULES)
QUESTION = '[data-testid="approval-question"]'
DENIED = ("delete_note -> The user denied this call of delete_note; it did not run. Do not "
          "try it again in this turn: answer the user, or ask what they want instead.")
RAN = "delete_note -> There are no notes to delete."   # it ran: there are none


def run_elsewhere(page: Page, session_id: str, text: str, name: str) -> None:
    """Start a turn of chat ``session_id`` as another client of the agent worker would;
    its reply (the turn's result) is kept as the promise ``window[name]``."""
    start_worker_request(page, name, "run", session_id=session_id, text=text)


def two_chats(page: Page) -> tuple[str, str]:
    """A saved chat with one turn (the other chat), then a new chat, shown: their ids."""
    other = current_session(page)
    assert chat(page, "Hello from the other chat") == "You said: Hello from the other chat"
    expect(row(page, other)).to_contain_text("Hello from the other chat")
    page.get_by_test_id("new-session-button").click()
    expect(page.locator(MESSAGES)).to_have_count(0)
    shown = current_session(page)
    assert shown != other
    return other, shown


def question_of(page: Page, session_id: str):
    return page.locator(f'{QUESTION}[data-session="{session_id}"]')


def test_two_chats_wait_at_once_and_each_answer_reaches_its_own_chat(shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    other, shown = two_chats(page)
    box = page.get_by_test_id("approval")

    # The other chat asks first; then the chat shown asks too.
    run_elsewhere(page, other, "Please delete my note bread", "__otherRun")
    expect(box).to_contain_text('"bread"', timeout=TURN_TIMEOUT_MS)
    send(page, "Please delete my note milk")
    expect(box).to_contain_text('"milk"', timeout=TURN_TIMEOUT_MS)
    # Both are there: the second question did not take the first one's place (before, it
    # did, and the other chat waited for an answer that could no longer be given).
    expect(box).to_contain_text('"bread"')

    questions = page.locator(QUESTION)
    expect(questions).to_have_count(2)
    theirs, mine = question_of(page, other), question_of(page, shown)
    ids = [theirs.get_attribute("data-question"), mine.get_attribute("data-question")]
    assert all(ids) and ids[0] != ids[1]
    # Each with its chat, as the sessions list names it, and what it would run.
    expect(theirs.get_by_test_id("approval-chat")).to_contain_text("Hello from the other chat")
    expect(theirs.get_by_test_id("approval-chat")).to_contain_text("another chat")
    expect(mine.get_by_test_id("approval-chat")).to_contain_text("Please delete my note milk")
    expect(mine.get_by_test_id("approval-chat")).to_contain_text("this chat")
    for question, note in ((theirs, "bread"), (mine, "milk")):
        expect(question.get_by_test_id("approval-what")).to_have_text(
            "The agent wants to run delete_note, which can change things for you.")
        expect(question.get_by_test_id("approval-arguments")).to_have_text('{"note": "%s"}' % note)
        expect(question).to_have_attribute("data-tool", "delete_note")
    # The newest question has the focus, on its first button.
    expect(mine.get_by_test_id("approve-once")).to_be_focused()

    # Deny the other chat's call: its turn goes on and ends; this chat's question stays.
    theirs.get_by_test_id("approve-deny").click()
    expect(theirs).to_have_count(0)
    result = page.evaluate("window.__otherRun")
    assert (result["session_id"], result["status"], result["answer"]) == (other, "answered", DENIED)
    assert [step["approval"] for step in result["steps"]] == ["deny", ""]
    expect(mine).to_be_visible()
    answer = answer_to(page, "Please delete my note milk")
    expect(answer).not_to_have_attribute("data-state", "answered")

    # Allow this chat's call, from the keyboard: it runs.
    mine.get_by_test_id("approve-once").focus()
    page.keyboard.press("Enter")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_have_text(RAN)
    expect(answer.get_by_test_id("step-approval")).to_have_text("You allowed this call.")
    expect(questions).to_have_count(0)
    expect(box).to_be_hidden()
    assert watch.problems == []


def test_stop_withdraws_only_its_own_question_and_typing_keeps_the_focus(shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    other, shown = two_chats(page)
    box = page.get_by_test_id("approval")
    send(page, "Please delete my note milk")
    mine = question_of(page, shown)
    expect(mine).to_be_visible(timeout=TURN_TIMEOUT_MS)
    expect(mine.get_by_test_id("approve-once")).to_be_focused()

    # The user writes their next message meanwhile; another chat's question arrives and
    # shows, without taking the focus from what is being typed.
    field = page.get_by_test_id("chat-input")
    field.click()
    page.keyboard.type("Next, I")
    run_elsewhere(page, other, "Please delete my note bread", "__otherRun")
    theirs = question_of(page, other)
    expect(theirs).to_be_visible(timeout=TURN_TIMEOUT_MS)
    expect(field).to_be_focused()
    page.keyboard.type(" want")
    expect(field).to_have_value("Next, I want")

    # Stop ends this chat's turn: its question is withdrawn, the other chat's stays.
    page.get_by_test_id("stop-button").click()
    answer = answer_to(page, "Please delete my note milk")
    expect(answer).to_have_attribute("data-state", "stopped", timeout=TURN_TIMEOUT_MS)
    expect(mine).to_have_count(0)
    expect(theirs).to_be_visible()
    expect(page.locator(QUESTION)).to_have_count(1)

    # ...and is still answered on its own.
    theirs.get_by_test_id("approve-once").click()
    result = page.evaluate("window.__otherRun")
    assert (result["session_id"], result["status"], result["answer"]) == (other, "answered", RAN)
    assert [step["approval"] for step in result["steps"]] == ["once", ""]
    expect(box).to_be_hidden()
    field.fill("")
    assert watch.problems == []
