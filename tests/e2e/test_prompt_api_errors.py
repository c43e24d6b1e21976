"""What the user sees when Chrome's Prompt API fails a turn, with the fake in its
spec-faithful Chrome configuration: the same outcomes tests/unit/test_rpc_errors.py
expects from py_agent for the same errors.

- a response constraint the browser refuses is its own error, never "model unavailable"
  (the step is asked again under a simpler one: tests/e2e/test_constraint_ladder.py);
- a session destroyed while it answers reads as a model that went away;
- a quota error that recovery cannot fix reads as "too long";
- a stream stopped by the user ends the turn as stopped.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, answer_to, chat, send, wait_until

pytestmark = pytest.mark.e2e

TOO_LONG = "too long for the on-device model's context window"
WENT_AWAY = "The on-device model is not available right now"


def failed_answer(page: Page, text: str):
    send(page, text)
    answer = answer_to(page, text)
    expect(answer).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    return answer


def test_a_session_destroyed_while_it_answers_reads_as_a_model_that_went_away(
        shared_chat) -> None:
    page, _ = shared_chat.open()
    page.evaluate("__fakeLM.setLatency(4000)")
    send(page, "Tell me something slowly.")
    session = wait_until(page, "__fakeLM.callsOf('promptStreaming').at(-1)?.sessionId",
                         timeout_ms=TURN_TIMEOUT_MS)
    # Chrome destroys a session when its model goes away; do that to the one answering.
    page.evaluate("""(id) => [...pyAgentLLM.sessions.values()]
        .find((e) => __fakeLM.idOf(e.session) === id).session.destroy()""", session)
    answer = answer_to(page, "Tell me something slowly.")
    expect(answer).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_contain_text(WENT_AWAY)
    expect(answer).to_have_attribute("data-error-kind", "ModelUnavailableError")
    page.evaluate("__fakeLM.setLatency(0)")
    assert chat(page, "Still there?") == "You said: Still there?"


def test_a_quota_error_recovers_once_then_reads_as_too_long(shared_chat) -> None:
    page, _ = shared_chat.open()
    quota = "{method: 'promptStreaming', requested: 9400, quota: 9216}"
    page.evaluate(f"__fakeLM.failNext('QuotaExceededError', {quota})")
    assert chat(page, "First try") == "You said: First try"   # a fresh clone answered
    page.evaluate(f"__fakeLM.failNext('QuotaExceededError', {quota}); "
                  f"__fakeLM.failNext('QuotaExceededError', {quota})")
    answer = failed_answer(page, "Second try")
    expect(answer.locator(".text")).to_contain_text(TOO_LONG)


def test_a_stopped_stream_ends_the_turn_as_stopped(shared_chat) -> None:
    page, _ = shared_chat.open(chunkDelayMs=400)
    send(page, "one two three four five six seven eight nine ten")
    wait_until(page, "__fakeLM.callsOf('promptStreaming').length > 0", timeout_ms=TURN_TIMEOUT_MS)
    page.get_by_test_id("stop-button").click()
    answer = page.locator(ASSISTANT).last
    expect(answer).to_have_attribute("data-state", "stopped", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_have_text("Stopped before answering.")
