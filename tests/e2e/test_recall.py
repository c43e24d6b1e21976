"""Archive recall in the page: a detail stated at turn 2 and long compacted is answered
at turn 60 from a recalled turn; the index is saved in IndexedDB and loaded after a
reload; another tab's turns are recalled; an exported, deleted and imported session is
recalled under its new id, and a deleted one no more.

The real worker and real IndexedDB, with a fake model that reads its prompt: asked which
trattoria was booked, it answers only from the prompt's recalled section
("Recalled from earlier conversations ..."), never from the memory or its history.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (ASSISTANT, SESSION_ROWS, TURN_TIMEOUT_MS, answer_to, ask_worker,
                             boot, chat, current_session, open_chat, row, wait_until)

pytestmark = pytest.mark.e2e

DETAIL = "For dinner on Friday we booked Trattoria Da Enzo in Trastevere, a table for four."
QUESTION = "What was the name of the trattoria we booked for dinner?"
ANSWER = "It was Trattoria Da Enzo."
DONT_KNOW = "I don't remember that."
HEADING = "Recalled from earlier conversations"

RESPONDER = r"""(() => {
  const step = (fields) => JSON.stringify(Object.assign(
      {thought: '', toolName: 'none', toolInput: '', finalAnswer: ''}, fields));
  return async (input, ctx) => {
    const text = String(input);
    const schema = ctx.responseConstraint;
    if (schema && schema.properties && schema.properties.facts) {
      return JSON.stringify({facts: []});
    }
    if (!(schema && schema.properties && schema.properties.toolName)) {
      return window.__fakeLM.defaultResponder(input, ctx);   // summaries
    }
    if (text.startsWith('Observation from')) return step({finalAnswer: 'Done.'});
    const users = [...text.matchAll(/^User: (.*)$/gm)];
    const message = users.length ? users[users.length - 1][1] : '';
    if (/name of the trattoria/i.test(message)) {
      // Only what this prompt recalled: not the memory, not the session's history.
      const start = text.indexOf('""" + HEADING + r"""');
      const recalled = start < 0 ? '' : text.slice(start, text.indexOf('Tools for this request:'));
      (window.__recalled = window.__recalled || []).push(recalled);
      const name = /Trattoria [A-Z]\w* [A-Z]\w*/.exec(recalled);
      return step({finalAnswer: name ? `It was ${name[0]}.` : """ + json.dumps(DONT_KNOW) + r"""});
    }
    return step({finalAnswer: 'Noted: ' + message.slice(0, 60)});
  };
})()"""

# A small window: compaction comes every few turns, so turn 2 is long compacted by turn 60.
SMALL_WINDOW = {"contextWindow": 3000, "responderSource": RESPONDER}

TOPICS = ["rivers", "volcanoes", "comets", "glaciers", "deserts", "forests", "oceans",
          "islands", "canyons", "caves", "lakes", "tides", "storms", "clouds", "meteors",
          "planets", "moons", "stars", "galaxies", "nebulas", "reefs", "tundras", "savannas",
          "wetlands", "mountains", "valleys", "fjords", "geysers", "dunes", "marshes",
          "deltas", "lagoons", "atolls", "plateaus", "prairies", "steppes", "taigas",
          "mangroves", "estuaries", "waterfalls", "icebergs", "auroras", "eclipses", "tornadoes",
          "monsoons", "hurricanes", "droughts", "floods", "earthquakes", "tsunamis", "asteroids",
          "quasars", "pulsars", "comas", "craters", "ridges", "trenches"]


def trace_hits(answer) -> list[dict]:
    """The recalled turns the trace of ``answer`` lists (shown or left out)."""
    return answer.locator('[data-testid="recalled"] .recalled-hit').evaluate_all(
        "nodes => nodes.map(n => ({session: n.dataset.sessionId, turn: Number(n.dataset.turnId),"
        " shown: n.dataset.shown === 'true', text: n.textContent}))")


def test_a_detail_from_turn_2_is_answered_at_turn_60_from_a_recalled_turn(
        page: Page, app_server: str, install_fake_lm) -> None:
    watch = open_chat(page, app_server, install_fake_lm, **SMALL_WINDOW)
    chat(page, "Hi! We're planning a long weekend in Rome with friends.")
    chat(page, DETAIL)                                    # turn 2
    for topic in TOPICS:                                  # turns 3..59
        chat(page, f"Tell me one thing about {topic}.")
    panel = page.get_by_test_id("memory-panel")
    expect(panel).not_to_have_attribute("data-compactions", "0", timeout=TURN_TIMEOUT_MS)
    session = current_session(page)
    memory = ask_worker(page, "memory", session_id=session)
    assert memory["compactions"] >= 2
    assert min(t["id"] for t in memory["recent_turns"]) > 20   # turn 2 left long ago
    assert "Enzo" not in memory["summary"]

    assert chat(page, QUESTION) == ANSWER                 # turn 60
    assert page.locator(ASSISTANT).count() == 60
    recalled = page.evaluate("window.__recalled")[-1]
    assert DETAIL in recalled and "\u27e6data from this chat, " in recalled
    # The trace says what was recalled and why; the inspector shows it too.
    answer = answer_to(page, QUESTION)
    hits = trace_hits(answer)
    assert hits[0]["turn"] == 2 and hits[0]["shown"] and hits[0]["session"] == session
    assert "matched" in hits[0]["text"] and "of the message" in hits[0]["text"]
    expect(answer.get_by_test_id("recalled").locator(".recalled-label")).to_contain_text(
        "Recalled 1 earlier turn into the prompt")
    inspector = page.get_by_test_id("recalled-turns").locator("li")
    expect(inspector.first).to_have_attribute("data-turn-id", "2")
    expect(inspector.first).to_contain_text("Trattoria Da Enzo")
    today = page.evaluate("new Date().toLocaleDateString()")
    expect(inspector.first.locator(".recalled-source")).to_have_text(f"From this chat, {today}")
    expect(page.get_by_test_id("token-meter").locator('.meter-bar [data-segment="recall"]')) \
        .to_have_count(1)
    assert watch.problems == []


def stored_blobs(page: Page) -> dict[str, list[int]]:
    """The recall store's records, read with plain IndexedDB: session -> first bytes."""
    return page.evaluate("""() => new Promise((resolve, reject) => {
      const open = indexedDB.open('py-agent');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const tx = open.result.transaction('recall', 'readonly');
        const all = tx.objectStore('recall').getAll();
        tx.oncomplete = () => { open.result.close(); resolve(Object.fromEntries(all.result.map(
          (r) => [r.session_id, [r.blob.constructor.name, ...new Uint8Array(r.blob).slice(0, 4)]]))); };
      };
    })""")


def new_session(page: Page) -> str:
    before = current_session(page)
    page.get_by_test_id("new-session-button").click()
    wait_until(page, "document.querySelector('[data-testid=\"session-list\"] "
               "[aria-current=\"true\"]')?.dataset.sessionId !== %s" % json.dumps(before))
    return current_session(page)


def test_the_index_survives_a_reload_and_follows_export_deletion_and_import(
        shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    chat(page, "We're planning a long weekend in Rome.")
    chat(page, DETAIL)
    for topic in TOPICS[:6]:
        chat(page, f"Tell me one thing about {topic}.")
    rome = current_session(page)
    # The page asks the worker to save the index when it is hidden.
    page.evaluate("""() => { Object.defineProperty(document, 'visibilityState',
                                                   {value: 'hidden', configurable: true});
                             document.dispatchEvent(new Event('visibilitychange')); }""")
    blobs = {}
    for _ in range(100):
        blobs = stored_blobs(page)
        if rome in blobs:
            break
        page.wait_for_timeout(50)
    assert blobs[rome] == ["ArrayBuffer", 82, 67, 76, 49]   # b"RCL1": bytes, not text

    boot(page, app_server + "/")                          # a reload: the index is loaded
    asker = new_session(page)
    assert chat(page, QUESTION) == ANSWER
    hits = trace_hits(answer_to(page, QUESTION))
    assert (hits[0]["session"], hits[0]["turn"]) == (rome, 2)
    assert "Trattoria Da Enzo" in hits[0]["text"]    # its text read back from the archive

    exported = ask_worker(page, "export", session_id=rome)
    assert "RCL1" not in exported["text"]
    assert ask_worker(page, "delete_session", session_id=rome) is True
    assert rome not in stored_blobs(page)
    assert not [h for h in ask_worker(page, "recall", query=QUESTION) if h["session_id"] == rome]
    assert chat(page, QUESTION) == DONT_KNOW            # the deleted turns are gone

    imported = ask_worker(page, "import", text=exported["text"])["session_id"]
    found = ask_worker(page, "recall", query=QUESTION)   # the asker's own turns too
    assert (imported, 2) in [(h["session_id"], h["turn_id"]) for h in found]
    assert chat(page, QUESTION) == ANSWER
    hits = trace_hits(answer_to(page, QUESTION))
    assert (hits[0]["session"], hits[0]["turn"], hits[0]["shown"]) == (imported, 2, True)
    assert current_session(page) == asker
    assert watch.problems == []


def test_a_turn_said_in_another_tab_is_recalled(shared_chat, app_server: str,
                                                 install_fake_lm) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    chat(page, "Hello from the second tab.")   # so that this tab shows its own session
    asker = current_session(page)
    other = page.context.new_page()
    install_fake_lm(other, responderSource=RESPONDER)
    boot(other, app_server + "/")
    planner = new_session(other)
    chat(other, DETAIL)                                    # said in the other tab
    # This tab hears of the saved turn and lists the other tab's session.
    expect(page.locator(f'{SESSION_ROWS}[data-row="{planner}"]')).to_have_count(
        1, timeout=TURN_TIMEOUT_MS)
    assert current_session(page) == asker
    assert chat(page, QUESTION) == ANSWER
    hits = trace_hits(answer_to(page, QUESTION))
    assert (hits[0]["session"], hits[0]["turn"]) == (planner, 1)
    assert row(page, planner).count() == 1
    assert watch.problems == []
