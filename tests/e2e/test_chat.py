"""The chat page end to end: boot, turns with live traces, memory, sessions, errors.

The app as serve.py serves it, with the fake LanguageModel installed before the page
loads (except where the real headless Chromium, which has no Gemini Nano, is the point).
Tests of a first visit, of what the page reads at boot and of the browser's own state get
a browser profile of their own (``page``); the others share one booted page, each in a new
chat checked to show nothing of the tests before (``shared_chat``, tests/e2e/shared_chat.py).
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (ASSISTANT, BOOT_TIMEOUT_MS, MESSAGES, TURN_TIMEOUT_MS, USER, Watch,
                             boot, chat, compact, current_session, failed_turn, open_chat, send,
                             step_responder, texts, wait_until)

pytestmark = pytest.mark.e2e

# Steps for "calculate (1200/8)+45": first a reply that is not JSON (a corrective step),
# then the calculator, then (once the test releases it) the answer from the observation.
TOOL_RESPONDER = step_responder(setup="let steps = 0;", body=r"""
    steps += 1;
    if (steps === 1) return 'Let me think about that.';
    if (text.includes('(1200/8)+45 = 195')) {
      await new Promise((resolve) => { window.__releaseAnswer = resolve; });
      return step({thought: 'The calculator says 195.', finalAnswer: 'The total is 195.'});
    }
    return step({thought: 'I should use the calculator.', toolName: 'calculate',
                 toolInput: {expression: '(1200/8)+45'}});""")

# Default replies, except for memory: the summarizer lists what the user said (after a
# "Summary:" label, which the agent strips), and fact extraction finds one preference.
# (The fake's default summary echoes the prompt's tail, which can include the prompt's
# wrapper tags; the agent rightly rejects such a summary.)
MEMORY_RESPONDER = r"""(input, ctx) => {
  const schema = ctx.responseConstraint;
  if (schema && schema.properties && schema.properties.facts) {
    return JSON.stringify({facts: [{category: 'preference', text: 'The user is vegetarian.'}]});
  }
  if (!schema && String(input).includes('<turns>')) {
    const said = [...String(input).matchAll(/^User: (.*)$/gm)].map((m) => m[1]);
    return 'Summary: Earlier the user said: ' + said.join(' / ');
  }
  return window.__fakeLM.defaultResponder(input, ctx);
}"""

# The reference design's IndexedDB layout, as an older version of the app left it.
LEGACY_DB_SCRIPT = r"""
(() => {
  if (location.pathname !== '/') return;
  const request = indexedDB.open('AgentMemoryDB', 1);
  request.onupgradeneeded = () => {
    const store = request.result.createObjectStore('conversations', {keyPath: 'sessionId'});
    store.put({sessionId: 'legacy-1', history: ['User: I am vegetarian\nAssistant: Noted!'],
               summary: 'The user is vegetarian.'});
  };
  request.onsuccess = () => request.result.close();
})();
"""


def compact_into_summary(page: Page) -> None:
    compact(page)
    expect(page.get_by_test_id("memory-summary")).not_to_have_text("", timeout=TURN_TIMEOUT_MS)


# ------------------------------------------------------------------------------ tests

def test_boot_then_chat(page: Page, app_server: str, install_fake_lm) -> None:
    install_fake_lm(page)
    watch = Watch(page)
    page.goto(app_server + "/")
    # The message box takes text while the agent starts (test_boot_snapshot.py checks
    # that a message sent then waits for it).
    expect(page.get_by_test_id("chat-input")).to_be_editable()
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-state", "ready", timeout=BOOT_TIMEOUT_MS)
    expect(status).to_contain_text("Ready")
    expect(page.get_by_test_id("chat-input")).to_be_enabled()
    expect(page.get_by_test_id("stop-button")).to_be_disabled()
    expect(page.get_by_test_id("model-guide")).to_be_hidden()
    # An empty chat says what the agent can do, as text (screen readers read it too).
    hint = page.get_by_test_id("chat-hint")
    expect(hint).to_be_visible()
    for words in ("notes", "to-do", "recipes", "convert units", "dates", "calculate"):
        expect(hint).to_contain_text(words)

    # Enter sends.
    page.get_by_test_id("chat-input").fill("Hello, agent!")
    page.get_by_test_id("chat-input").press("Enter")
    answer = page.locator(ASSISTANT)
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    assert texts(page) == ["user: Hello, agent!", "assistant: You said: Hello, agent!"]
    expect(hint).to_be_hidden()
    expect(page.get_by_test_id("chat-input")).to_have_value("")
    expect(status).to_have_attribute("data-state", "ready")
    expect(status).to_contain_text("Answered in")
    expect(page.get_by_test_id("stop-button")).to_be_disabled()
    expect(answer).to_have_attribute("data-saved", "true")
    # The session now has a title in the list, and memory shows the turn.
    current = page.get_by_test_id("session-list").locator('[aria-current="true"]')
    expect(current).to_contain_text("Hello, agent!")
    expect(current).to_contain_text("1 turn")
    expect(page.get_by_test_id("memory-info")).to_contain_text("1 recent turn")
    expect(page.get_by_test_id("memory-summary")).to_have_text("")

    # Model and user text is shown as text, never parsed as HTML.
    markup = '<b>bold</b> & <img src="/x.png" onerror="window.__pwned = 1">'
    chat(page, markup)
    expect(page.locator(USER).last.locator(".text")).to_have_text(markup)
    expect(page.locator(ASSISTANT).last.locator(".text")).to_have_text("You said: " + markup)
    assert page.locator("[data-testid=messages] b, [data-testid=messages] img").count() == 0
    assert page.evaluate("window.__pwned") is None

    # The answer streams in word by word before the turn ends.
    page.evaluate("__fakeLM.setChunkDelay(150)")
    send(page, "Stream this answer to me slowly, word by word, please.")
    streaming = page.locator(ASSISTANT).last
    expect(streaming.locator(".text")).to_contain_text("You said: Stream")
    assert streaming.get_attribute("data-state") == "pending"
    expect(streaming).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(streaming.locator(".text")).to_have_text(
        "You said: Stream this answer to me slowly, word by word, please.")
    assert watch.problems == []


def test_tool_call_shows_a_live_trace(shared_chat) -> None:
    # The first reply is not a step at all, which Chrome's constrained decoding could not
    # produce: the fake lets it through (replyCheck off) to show the corrective step.
    page, watch = shared_chat.open(responderSource=TOOL_RESPONDER, replyCheck="off")
    send(page, "Please calculate (1200/8)+45")
    message = page.locator(ASSISTANT).last
    steps = message.get_by_test_id("trace-step")

    # While the model still works on the answer, the steps so far are on the page.
    tool_step = steps.filter(has_text="calculate")
    expect(tool_step).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    expect(tool_step).to_have_attribute("data-tool", "calculate")
    expect(tool_step.locator('[data-part="observation"]')).to_have_text("(1200/8)+45 = 195")
    expect(tool_step.locator('[data-part="action"]')).to_contain_text('"(1200/8)+45"')
    expect(tool_step.locator('[data-part="thought"]')).to_have_text("I should use the calculator.")
    expect(tool_step).to_have_attribute("data-kind", "tool")
    expect(steps.first).to_have_attribute("data-kind", "corrective")
    expect(steps.first.locator('[data-part="observation"]')).to_contain_text("not a usable step")
    expect(message).to_have_attribute("data-state", "pending")
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "busy")
    expect(page.get_by_test_id("stop-button")).to_be_enabled()
    expect(page.get_by_test_id("send-button")).to_be_disabled()

    wait_until(page, "typeof window.__releaseAnswer === 'function'")
    page.evaluate("window.__releaseAnswer()")
    expect(message).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(message.locator(".text")).to_have_text("The total is 195.")
    expect(steps).to_have_count(3)
    expect(steps.nth(2)).to_have_attribute("data-kind", "answer")
    # Timings from the run's result, and a one-line summary of the trace.
    expect(tool_step.locator(".step-timing")).to_contain_text("model")
    expect(tool_step.locator(".step-timing")).to_contain_text("tool")
    expect(message.locator(".trace-summary")).to_have_text("3 steps · calculate · 1 corrected")
    assert watch.problems == []


def test_compaction_persists_and_no_request_leaves_localhost(shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open(responderSource=MEMORY_RESPONDER)
    chat(page, "I am vegetarian and I cook for two people most evenings.")
    chat(page, "Suggest a quick dinner idea for tonight, please.")
    chat(page, "And what would be a good dessert after that?")
    summary = page.get_by_test_id("memory-summary")
    expect(summary).to_have_text("")

    compact_into_summary(page)
    summary_text = summary.text_content()
    assert len(summary_text) >= 30
    assert not summary_text.lower().startswith("summary:")
    facts = page.get_by_test_id("memory-facts").locator("li")
    expect(facts).to_have_count(1)
    expect(facts).to_contain_text("The user is vegetarian.")
    expect(facts).to_have_attribute("data-category", "preference")
    expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-compactions", "1")
    expect(page.get_by_test_id("memory-info")).to_contain_text("1 compaction")
    expect(page.get_by_test_id("status")).to_contain_text("Compacted 1 turn")
    # The oldest turn now lives in the summary; the newest two stay word for word.
    answers = page.locator(ASSISTANT)
    expect(answers.nth(0)).to_have_attribute("data-compacted", "true")
    expect(answers.nth(1)).to_have_attribute("data-compacted", "false")
    expect(answers.nth(2)).to_have_attribute("data-compacted", "false")

    # Persisted: a fresh worker reads it back from IndexedDB.
    session = current_session(page)
    boot(page, app_server + "/")
    assert current_session(page) == session
    expect(summary).to_have_text(summary_text)
    expect(facts).to_contain_text("The user is vegetarian.")
    expect(page.locator(MESSAGES)).to_have_count(6)
    expect(page.locator(ASSISTANT).nth(0)).to_have_attribute("data-compacted", "true")

    # The whole chat (boots, turns, compaction, reload) stayed on this server, and the
    # recorder did see the worker's own traffic.
    origin = app_server.rstrip("/")
    strays = [url for url in watch.requests
              if not (url == origin or url.startswith(origin + "/"))]
    assert strays == []
    assert watch.problems == []
    assert any(url.endswith("/worker/agent_worker.js") for url in watch.requests)
    assert any(url.endswith("/pyodide.asm.wasm") for url in watch.requests)


def test_reload_reopens_the_session(shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open()
    chat(page, "My name is Ada.")
    chat(page, "I live in Lisbon.")
    session = current_session(page)
    assert session.startswith("s-")
    before = texts(page)

    boot(page, app_server + "/")
    assert current_session(page) == session
    expect(page.locator(MESSAGES)).to_have_count(4)
    assert texts(page) == before
    expect(page.get_by_test_id("memory-info")).to_contain_text("2 recent turns")
    # The conversation goes on where it was.
    chat(page, "Where do I live?")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-turn-id", "3")
    prompt = page.evaluate("__fakeLM.callsOf('promptStreaming').at(-1).context")
    assert "Lisbon" in prompt and "Ada" in prompt
    assert watch.problems == []


def test_two_sessions_stay_separate(shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open(responderSource=MEMORY_RESPONDER)
    chat(page, "alpha one: I like mountains.")
    chat(page, "alpha two: and long walks.")
    chat(page, "alpha three: and hot tea.")
    compact_into_summary(page)
    session_a = current_session(page)
    summary_a = page.get_by_test_id("memory-summary").text_content()
    assert summary_a == "Earlier the user said: alpha one: I like mountains."
    expect(page.get_by_test_id("memory-facts").locator("li")).to_have_count(1)

    page.get_by_test_id("new-session-button").click()
    expect(page.locator(MESSAGES)).to_have_count(0)
    expect(page.get_by_test_id("chat-hint")).to_be_visible()
    expect(page.get_by_test_id("memory-summary")).to_have_text("")
    expect(page.get_by_test_id("memory-facts").locator("li")).to_have_count(0)
    session_b = current_session(page)
    assert session_b != session_a
    chat(page, "beta one: what do you know about me?")
    assert texts(page) == ["user: beta one: what do you know about me?",
                           "assistant: You said: beta one: what do you know about me?"]
    expect(page.get_by_test_id("memory-summary")).to_have_text("")
    # The model saw nothing of session A either.
    prompt = page.evaluate("__fakeLM.callsOf('promptStreaming').at(-1).context")
    assert "beta one" in prompt and "alpha" not in prompt and "mountains" not in prompt

    items = page.get_by_test_id("session-list").locator("[data-session-id]")
    expect(items).to_have_count(2)
    expect(items.first).to_have_attribute("data-session-id", session_b)   # newest first
    page.get_by_test_id("session-list").locator(f'[data-session-id="{session_a}"]').click()
    expect(page.locator(MESSAGES)).to_have_count(6)
    assert all("alpha" in text for text in texts(page))
    expect(page.get_by_test_id("memory-summary")).to_have_text(summary_a)
    expect(page.get_by_test_id("memory-facts").locator("li")).to_have_count(1)
    assert current_session(page) == session_a

    page.get_by_test_id("session-list").locator(f'[data-session-id="{session_b}"]').click()
    expect(page.locator(MESSAGES)).to_have_count(2)
    assert not any("alpha" in text for text in texts(page))
    expect(page.get_by_test_id("memory-summary")).to_have_text("")
    expect(page.get_by_test_id("memory-facts").locator("li")).to_have_count(0)

    # After a reload the last session shown (B) is shown again, A still in the list.
    boot(page, app_server + "/")
    assert current_session(page) == session_b
    expect(page.locator(MESSAGES)).to_have_count(2)
    expect(items).to_have_count(2)
    assert watch.problems == []


def test_stop_ends_a_turn_and_the_chat_goes_on(shared_chat) -> None:
    page, watch = shared_chat.open()
    page.evaluate("__fakeLM.setLatency(5000)")
    send(page, "Take your time with this one.")
    stop = page.get_by_test_id("stop-button")
    expect(stop).to_be_enabled()
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "busy")
    # Wait until the model call is under way, then stop it.
    wait_until(page, "__fakeLM.callsOf('promptStreaming').length > 0",
               timeout_ms=TURN_TIMEOUT_MS)
    started = time.monotonic()
    stop.click()
    message = page.locator(ASSISTANT).last
    expect(message).to_have_attribute("data-state", "stopped", timeout=2_000)
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready", timeout=2_000)
    assert time.monotonic() - started < 2.5
    expect(message.locator(".text")).to_have_text("Stopped before answering.")
    expect(stop).to_be_disabled()
    expect(page.get_by_test_id("chat-input")).to_be_editable()

    page.evaluate("__fakeLM.setLatency(0)")
    chat(page, "Are you still there?")
    expect(page.locator(ASSISTANT).last.locator(".text")).to_have_text(
        "You said: Are you still there?")
    assert watch.problems == []


GUIDE_TEXT = ["Chrome 138", "chrome://flags/#prompt-api-for-gemini-nano",
              "chrome://flags/#optimization-guide-on-device-model",
              "Enabled BypassPerfRequirement", "chrome://on-device-internals",
              "chrome://components", "Optimization Guide On Device Model", "22 GB"]


def check_model_guide(page: Page) -> None:
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-model", "unavailable")
    expect(status).to_contain_text("not available")
    guide = page.get_by_test_id("model-guide")
    expect(guide).to_be_visible()
    for text in GUIDE_TEXT:
        expect(guide).to_contain_text(text)
    expect(page.get_by_test_id("chat-input")).to_be_disabled()
    expect(page.get_by_test_id("chat-input")).to_have_attribute("placeholder",
                                                                re.compile("not available"))
    expect(page.get_by_test_id("send-button")).to_be_disabled()
    # The rest of the page still works: the (new, empty) session is listed.
    expect(page.get_by_test_id("session-list").locator('[aria-current="true"]')).to_have_count(1)


def test_model_unavailable_shows_the_guide(page: Page, app_server: str, install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page, availability="unavailable")
    boot(page, app_server + "/", wait_for_chat=False)
    check_model_guide(page)
    expect(page.get_by_test_id("status")).to_contain_text("unavailable on this device")
    assert watch.problems == []


def test_real_headless_chromium_shows_the_guide(page: Page, app_server: str) -> None:
    # Headless Chromium has no Gemini Nano: depending on the build it lacks LanguageModel
    # altogether or reports it 'unavailable'. Either way: the guide, and no crash.
    watch = Watch(page)
    boot(page, app_server + "/", wait_for_chat=False)
    check_model_guide(page)
    if page.evaluate("typeof LanguageModel") == "undefined":
        expect(page.get_by_test_id("status")).to_contain_text("no Prompt API")
    assert watch.problems == []


def test_browser_without_prompt_api_shows_the_guide(page: Page, app_server: str,
                                                    install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page)
    page.add_init_script(script="window.__fakeLM.uninstall();")
    boot(page, app_server + "/", wait_for_chat=False)
    assert page.evaluate("typeof LanguageModel") == "undefined"
    check_model_guide(page)
    expect(page.get_by_test_id("status")).to_contain_text("no Prompt API")
    assert watch.problems == []


def test_model_downloads_on_first_use(page: Page, app_server: str, install_fake_lm) -> None:
    watch = open_chat(page, app_server, install_fake_lm, availability="downloadable",
                      downloadSteps=5, downloadStepMs=300)
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("will download on first use")
    expect(page.get_by_test_id("model-guide")).to_be_hidden()
    send(page, "Hello while you download")
    expect(status).to_contain_text("Downloading the on-device model", timeout=TURN_TIMEOUT_MS)
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    expect(status).to_have_attribute("data-model", "available")
    expect(status).not_to_contain_text("download")
    assert watch.problems == []


def test_errors_show_on_the_page(shared_chat) -> None:
    page, _ = shared_chat.open()
    status = page.get_by_test_id("status")

    # A turn the model fails: an error message, and a Retry button on it
    # (tests/e2e/test_chat_rendering.py covers Retry in depth).
    message = failed_turn(page, "Will this work?")
    expect(status).to_have_attribute("data-state", "ready")
    message.get_by_test_id("retry-button").click()
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)

    # A Python exception in the worker after boot (here: a page message Pyodide cannot
    # convert) reaches the page as a readable error with its traceback.
    page.evaluate("pyAgentWorker.worker.postMessage(new Map([[[1, 2], 'x']]))")
    expect(status).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    expect(status).to_contain_text("Error in message:")
    expect(status).to_contain_text("Cannot use key of type Array")
    details = page.get_by_test_id("error-details")
    expect(details).to_be_visible()
    details.locator("summary").click()
    expect(page.get_by_test_id("boot-error")).to_contain_text("Traceback (most recent call last)")
    expect(page.get_by_test_id("boot-error")).to_be_visible()
    # The agent itself is fine: the next turn works and clears the error.
    chat(page, "Still there?")
    expect(status).to_have_attribute("data-state", "ready")
    expect(details).to_be_hidden()
    shared_chat.discard("a worker error's traceback in the page")


def test_legacy_sessions_are_migrated(page: Page, app_server: str, install_fake_lm) -> None:
    page.add_init_script(script=LEGACY_DB_SCRIPT)
    watch = open_chat(page, app_server, install_fake_lm)
    # With no session remembered in this browser, the newest saved one opens: the
    # migrated one.
    legacy = page.get_by_test_id("session-list").locator('[data-session-id="legacy-1"]')
    expect(legacy).to_contain_text("I am vegetarian")
    expect(legacy).to_have_attribute("aria-current", "true")
    expect(page.get_by_test_id("session-list").locator("[data-session-id]")).to_have_count(1)
    expect(page.get_by_test_id("memory-summary")).to_have_text("The user is vegetarian.")
    expect(page.locator(MESSAGES)).to_have_count(2)
    assert texts(page) == ["user: I am vegetarian", "assistant: Noted!"]
    # The migrated session carries on.
    chat(page, "What should I eat tonight?")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-turn-id", "2")
    prompt = page.evaluate("__fakeLM.callsOf('promptStreaming').at(-1).context")
    assert "The user is vegetarian." in prompt
    assert watch.problems == []
