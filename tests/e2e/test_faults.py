"""Faults in the page lose nothing: reloads mid-turn and mid-compaction, stopped turns, two
tabs on one session, hostile model output, a gigantic calculation, a hung model call.

The app as serve.py serves it, with the fake LanguageModel scripting the model; the
worker, Pyodide, the agent and IndexedDB are real.
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (ASSISTANT, TURN_TIMEOUT_MS, USER, Watch, ask_worker, boot, chat,
                             open_chat, reload, send, step_responder, wait_until)

pytestmark = pytest.mark.e2e

INTERRUPTED_NOTE = "This turn did not finish"


def stored_turns(page: Page, session_id: str) -> list[dict]:
    return ask_worker(page, "transcript", session_id=session_id)


def assert_no_lost_or_duplicated_turns(turns: list[dict], users: list[str]) -> None:
    assert [t["user"] for t in turns] == users
    assert len({t["id"] for t in turns}) == len(turns)


# ------------------------------------------------------------------ reloads and Stop

# Every step answers, but a message that asks for it "slowly" takes a minute (until the
# test has reloaded the tab), so that Stop and a reload land in the middle of the turn.
SLOW_WHEN_ASKED = step_responder(r"""
    if (text.includes('slowly') && !sessionStorage.getItem('reloaded')) {
      await new Promise((resolve) => setTimeout(resolve, 60000));
    }
    const users = [...text.matchAll(/^User: (.*)$/gm)];
    return step({finalAnswer: 'You said: ' + (users.length ? users[users.length - 1][1] : text)});""")


def test_stopped_and_reloaded_turns_keep_the_message_and_the_next_turn_works(
        shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=SLOW_WHEN_ASKED)
    chat(page, "First, a normal question.")

    # A stopped turn.
    send(page, "Answer this slowly, please.")
    wait_until(page, "__fakeLM.callsOf('promptStreaming').length >= 2")
    page.get_by_test_id("stop-button").click()
    stopped = page.locator(ASSISTANT).nth(1)
    expect(stopped).to_have_attribute("data-state", "stopped", timeout=5_000)
    expect(stopped.get_by_test_id("retry-button")).to_be_visible()

    # A turn cut off by a reload while the model is streaming.
    expect(page.get_by_test_id("send-button")).to_be_enabled()
    send(page, "Now reply slowly, I will reload.")
    wait_until(page, "__fakeLM.callsOf('promptStreaming').length >= 3")
    session_id = page.evaluate("localStorage.getItem('py-agent.session')")
    page.evaluate("sessionStorage.setItem('reloaded', '1')")
    reload(page)

    users = ["First, a normal question.", "Answer this slowly, please.",
             "Now reply slowly, I will reload."]
    expect(page.locator(USER)).to_have_count(3)
    assert page.locator(USER + " .text").all_text_contents() == users
    states = [page.locator(ASSISTANT).nth(i).get_attribute("data-state") for i in range(3)]
    assert states == ["answered", "stopped", "interrupted"]
    expect(page.locator(ASSISTANT).nth(1).locator(".text")).to_have_text(
        "Stopped before answering.")
    expect(page.locator(ASSISTANT).nth(2).locator(".text")).to_contain_text(INTERRUPTED_NOTE)
    expect(page.locator(ASSISTANT).nth(2).get_by_test_id("retry-button")).to_be_visible()

    turns = stored_turns(page, session_id)
    assert_no_lost_or_duplicated_turns(turns, users)
    assert [t["status"] for t in turns] == ["answered", "stopped", "interrupted"]
    memory = ask_worker(page, "memory", session_id=session_id)
    assert [t["user"] for t in memory["recent_turns"]] == users[:1]  # only answered turns

    # The next turn works, under a new id; Retry sends the interrupted message again.
    chat(page, "Are you there?")
    page.locator(ASSISTANT).nth(2).get_by_test_id("retry-button").click()
    expect(page.locator(ASSISTANT)).to_have_count(5)
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    turns = stored_turns(page, session_id)
    assert_no_lost_or_duplicated_turns(turns, users + ["Are you there?", users[2]])
    assert watch.problems == []


# A summarizer that takes 60 s the first time (so a reload lands in it), then answers.
SLOW_SUMMARY = r"""(input, ctx) => {
  const schema = ctx.responseConstraint;
  if (!schema && String(input).includes('<turns>')) {
    const said = [...String(input).matchAll(/^User: (.*)$/gm)].map((m) => m[1]);
    const summary = 'Summary: Earlier the user said: ' + said.join(' / ');
    if (sessionStorage.getItem('reloaded')) return summary;
    window.__summaryStarted = true;
    return new Promise((resolve) => setTimeout(() => resolve(summary), 60000));
  }
  if (schema && schema.properties && schema.properties.facts) {
    return JSON.stringify({facts: []});
  }
  return window.__fakeLM.defaultResponder(input, ctx);
}"""


def test_a_reload_during_a_compaction_leaves_no_half_written_state(shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=SLOW_SUMMARY)
    users = [f"Note number {i}: the parcel goes to the blue house." for i in range(4)]
    for text in users:
        chat(page, text)
    session_id = page.evaluate("localStorage.getItem('py-agent.session')")
    page.get_by_test_id("compact-button").click()
    wait_until(page, "window.__summaryStarted === true", TURN_TIMEOUT_MS)
    page.evaluate("sessionStorage.setItem('reloaded', '1')")
    reload(page)

    memory = ask_worker(page, "memory", session_id=session_id)
    assert memory["summary"] == "" and memory["compactions"] == 0
    assert [t["user"] for t in memory["recent_turns"]] == users
    assert memory["compressions"] == []   # nothing of the cut-off compaction was written
    assert_no_lost_or_duplicated_turns(stored_turns(page, session_id), users)
    expect(page.locator(USER)).to_have_count(4)

    # Compaction works after the reload, and the chat goes on.
    page.get_by_test_id("compact-button").click()
    expect(page.get_by_test_id("memory-summary")).to_contain_text("blue house",
                                                                  timeout=TURN_TIMEOUT_MS)
    memory = ask_worker(page, "memory", session_id=session_id)
    compacted = {i for r in memory["compressions"] if r["ok"] for i in r["turn_ids"]}
    assert compacted and compacted | {t["id"] for t in memory["recent_turns"]} == {1, 2, 3, 4}
    chat(page, "And one more thing.")
    assert watch.problems == []


# ------------------------------------------------------------------ two tabs

# Long answers (~600 tokens) so that memory compacts within a few turns of each tab.
LONG_ANSWERS = r"""(() => {
  const filler = (what) => ('Here is a long answer about ' + what + '. ').repeat(40);
  return (input, ctx) => {
    const text = String(input), schema = ctx.responseConstraint;
    if (schema && schema.properties && schema.properties.facts) return '{"facts": []}';
    if (!schema && text.includes('<turns>')) {
      const said = [...text.matchAll(/^User: (.*)$/gm)].map((m) => m[1]);
      return 'Summary: The user said, in order: ' + said.join(' / ');
    }
    if (!(schema && schema.properties && schema.properties.toolName)) {
      return window.__fakeLM.defaultResponder(input, ctx);
    }
    const users = [...text.matchAll(/^User: (.*)$/gm)];
    const message = users.length ? users[users.length - 1][1] : text;
    return JSON.stringify({thought: '', toolName: 'none', toolInput: '',
                           finalAnswer: message + ' — ' + filler(message)});
  };
})()"""


def test_two_tabs_alternating_on_one_session_lose_and_duplicate_nothing(
        shared_chat, app_server: str, install_fake_lm) -> None:
    tab_a, watch = shared_chat.open(responderSource=LONG_ANSWERS)
    chat(tab_a, "Message A0 from the first tab.")
    session_id = tab_a.evaluate("localStorage.getItem('py-agent.session')")
    tab_b = tab_a.context.new_page()
    install_fake_lm(tab_b, responderSource=LONG_ANSWERS)
    boot(tab_b, app_server + "/")   # reopens the session shown last: the same one
    expect(tab_b.locator(ASSISTANT)).to_have_count(1)

    users = ["Message A0 from the first tab."]
    for i in range(5):
        for name, tab, other in (("B", tab_b, tab_a), ("A", tab_a, tab_b)):
            if name == "A" and i == 0:
                continue
            users.append(f"Message {name}{i} from the {'second' if name == 'B' else 'first'} tab.")
            # Counted against the total, not the tab's count before sending: a tab may be
            # re-rendering the session another tab just saved at that moment.
            send(tab, users[-1])
            expect(tab.locator(ASSISTANT)).to_have_count(len(users), timeout=TURN_TIMEOUT_MS)
            expect(tab.locator(ASSISTANT).last).to_have_attribute(
                "data-state", "answered", timeout=TURN_TIMEOUT_MS)
            # The other tab hears of the saved turn and shows it.
            expect(other.locator(ASSISTANT)).to_have_count(len(users), timeout=TURN_TIMEOUT_MS)
    # Compaction may still be running in a tab: wait until neither compacts.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = [ask_worker(tab, "memory", session_id=session_id) for tab in (tab_a, tab_b)]
        if not any(s["compacting"] for s in states):
            break
        time.sleep(0.5)

    for tab in (tab_a, tab_b):
        turns = stored_turns(tab, session_id)
        assert_no_lost_or_duplicated_turns(turns, users)
        assert all(t["status"] == "answered" for t in turns)
        memory = ask_worker(tab, "memory", session_id=session_id)
        compacted = {i for r in memory["compressions"] if r["ok"] for i in r["turn_ids"]}
        raw = [t["id"] for t in memory["recent_turns"]]
        assert len(raw) == len(set(raw)) and not compacted & set(raw)
        assert compacted | set(raw) == {t["id"] for t in turns}, "a turn is in no memory"
    assert memory["compactions"] >= 1  # the memory really was rewritten meanwhile
    reload(tab_a)
    assert tab_a.locator(USER + " .text").all_text_contents() == users
    assert watch.problems == []


# ------------------------------------------------------------------ hostile output

# A step whose toolInput nests 20,000 arrays deep (about 40,000 tokens: the fake model
# gets a window big enough to write it at every step of the turn).
DEEP = 20_000
DEEP_REPLY = "'{\"toolInput\": ' + '['.repeat(%(deep)d) + ']'.repeat(%(deep)d) + '}'"
HOSTILE = step_responder(body=r"""
    const users = [...text.matchAll(/^User: (.*)$/gm)];
    const message = users.length ? users[users.length - 1][1] : '';
    if (text.startsWith('Observation from calculate:')) {
      return step({finalAnswer: 'The calculator said: ' + text.slice(27).trim()});
    }
    if (text.startsWith('Observation:') && window.__deep) return %(reply)s;
    window.__deep = message.includes('deeply');
    if (window.__deep) return %(reply)s;
    if (message.includes('power')) {
      return step({thought: 'Calculate it.', toolName: 'calculate',
                   toolInput: {expression: '((9**999)**999)**99'}});
    }
    return step({finalAnswer: 'You said: ' + message});""" % {"reply": DEEP_REPLY % {"deep": DEEP}})


def test_a_deeply_nested_reply_and_a_gigantic_power_each_cost_one_turn(
        page: Page, app_server: str, install_fake_lm) -> None:
    # The nested reply breaks the step schema, which Chrome's constrained decoding would
    # not let through: replyCheck off plays a backend without it.
    watch = open_chat(page, app_server, install_fake_lm, responderSource=HOSTILE,
                      contextWindow=400_000, replyCheck="off")
    started = time.monotonic()
    send(page, "Reply deeply nested, please.")
    deep = page.locator(ASSISTANT).first
    expect(deep).to_have_attribute("data-state", "incomplete", timeout=TURN_TIMEOUT_MS)
    assert time.monotonic() - started < 15
    expect(deep.locator(".text")).to_contain_text("nests deeper than 64 levels")
    assert chat(page, "Hello again.") == "You said: Hello again."

    started = time.monotonic()
    answer = chat(page, "Calculate this huge power for me.")
    assert time.monotonic() - started < 10
    assert "952,335 digits" in answer and "up to 1,000 digits" in answer
    assert chat(page, "Still with me?") == "You said: Still with me?"
    assert watch.problems == []


HANGS = step_responder(r"""
    if (text.includes('hang')) return new Promise(() => {});   // never answers
    const users = [...text.matchAll(/^User: (.*)$/gm)];
    return step({finalAnswer: 'You said: ' + (users.length ? users[users.length - 1][1] : text)});""")


def test_a_hung_step_call_costs_its_timeout_and_one_turn(page: Page, app_server: str,
                                                          install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page, responderSource=HANGS)
    boot(page, app_server + "/?step_timeout=2")
    started = time.monotonic()
    send(page, "Please hang for a while.")
    failed = page.locator(ASSISTANT).first
    expect(failed).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    assert 2 <= time.monotonic() - started < 8
    expect(failed.locator(".text")).to_contain_text("did not answer in time")
    expect(failed.get_by_test_id("retry-button")).to_be_visible()
    assert chat(page, "Are you back?") == "You said: Are you back?"
    assert page.evaluate("__fakeLM.callsOf('promptStreaming').length") >= 2
    assert watch.problems == []
