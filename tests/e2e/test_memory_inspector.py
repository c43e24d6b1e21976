"""The memory inspector end to end: key facts by category, the recent raw turns, the
token meter, the compaction history (with a focus, and a failure), and Export/Import.

Real worker and IndexedDB, the fake LanguageModel scripted to summarize and to extract
facts (tests/e2e/pages.py has the helpers).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (ASSISTANT, MESSAGES, TURN_TIMEOUT_MS, boot, chat, compact,
                             current_session, row, session_ids, stored_sessions, texts,
                             wait_until)

pytestmark = pytest.mark.e2e

# Fact extraction finds one fact per topic in the compacted turns, in every category;
# the summarizer lists what the user said (after a "Summary:" label the agent strips),
# or, once a test sets window.__badSummary, answers too briefly to be a valid summary.
RESPONDER = r"""(input, ctx) => {
  const text = String(input);
  const schema = ctx.responseConstraint;
  if (schema && schema.properties && schema.properties.facts) {
    const turns = text.split('<turns>')[1] || '';
    const found = [
      [/vegetarian/, 'preference', 'The user is vegetarian.'],
      [/night shifts/, 'background', 'The user works night shifts as a nurse.'],
      [/dinner party/, 'need', 'The user is planning a dinner party for six.'],
      [/risotto/, 'decision', 'The main course will be risotto.'],
      [/shopping list/, 'follow-up', 'Send the user a shopping list.'],
    ].filter(([pattern]) => pattern.test(turns)).map(([, category, fact]) => ({category, text: fact}));
    return JSON.stringify({facts: found});
  }
  if (!schema && text.includes('<turns>')) {
    if (window.__badSummary) return 'Too short.';
    const said = [...text.matchAll(/^User: (.*)$/gm)].map((m) => m[1]);
    return 'Summary: Earlier the user said: ' + said.join(' / ');
  }
  return window.__fakeLM.defaultResponder(input, ctx);
}"""

MESSAGES_1_TO_5 = [
    "I am vegetarian and I work night shifts as a nurse.",
    "I am planning a dinner party for six on Saturday.",
    "We settled it: the risotto is the main course. Send me a shopping list later.",
    "What wine goes with a mushroom risotto?",
    "And a dessert that can be made the day before?",
]
CATEGORIES = ["preference", "need", "background", "follow-up", "decision"]
FOCUS = "keep the dietary constraints"


def meter(page: Page) -> dict:
    """The token meter as numbers: window, estimated flag and the segments in order."""
    return page.evaluate("""() => {
      const meter = document.querySelector('[data-testid="token-meter"]');
      const segments = [...meter.querySelectorAll('.meter-bar [data-segment]')]
        .map((s) => [s.dataset.segment, Number(s.dataset.tokens)]);
      return {window: Number(meter.dataset.window), state: meter.dataset.state,
              estimated: meter.dataset.estimated, segments,
              label: meter.querySelector('.meter-bar').getAttribute('aria-label'),
              text: meter.querySelector('.meter-text').textContent};
    }""")


def open_details(page: Page, testid: str) -> None:
    box = page.get_by_test_id(testid)
    if box.get_attribute("open") is None:
        box.locator("summary").click()


def history(page: Page) -> list[dict]:
    return page.eval_on_selector_all(
        '[data-testid="compaction-entry"]',
        "nodes => nodes.map(n => ({...n.dataset, text: n.textContent}))")


def number(text: int) -> str:
    return f"{text:,}"


# ------------------------------------------------------------------------------ tests

def test_compaction_groups_facts_and_logs_history_with_focus(shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    for text in MESSAGES_1_TO_5:
        chat(page, text)
    facts = page.get_by_test_id("memory-facts")
    expect(facts.locator("li")).to_have_count(0)
    assert history(page) == []
    open_details(page, "memory-turns-box")
    turns = page.get_by_test_id("memory-turns").locator("li")
    expect(turns).to_have_count(5)

    compact(page, FOCUS)
    # The focus reached the summarizer's prompt.
    prompts = page.evaluate("__fakeLM.calls.filter(c => !c.hasConstraint && "
                            "c.input.includes('<turns>')).map(c => c.input)")
    assert len(prompts) == 1
    assert f"<focus>Make sure the summary keeps: {FOCUS}</focus>" in prompts[0]
    expect(page.get_by_test_id("compact-focus")).to_have_value("")   # used up

    # Key facts, grouped under a heading per category, in the categories' order.
    groups = facts.get_by_test_id("fact-group")
    expect(groups).to_have_count(5)
    assert [g.get_attribute("data-category") for g in groups.all()] == CATEGORIES
    expect(groups.locator("h4")).to_have_text(["Preferences (1)", "Needs (1)",
                                               "Background (1)", "Follow-ups (1)",
                                               "Decisions (1)"])
    expect(facts.locator('li[data-category="preference"]')).to_have_text(
        "The user is vegetarian.")
    expect(facts.locator('[data-category="decision"] li')).to_have_text(
        "The main course will be risotto.")
    for item in facts.locator("li").all():
        category = item.get_attribute("data-category")
        assert item.evaluate("(n, c) => n.closest('.fact-group').dataset.category === c",
                             category)
    expect(page.get_by_test_id("memory-summary")).to_have_text(
        "Earlier the user said: " + " / ".join(MESSAGES_1_TO_5[:3]))

    # The raw turns the next prompt carries: the newest two, clipped to user + answer.
    expect(turns).to_have_count(2)
    expect(turns.first).to_have_attribute("data-turn-id", "4")
    expect(turns.first).to_contain_text("You: " + MESSAGES_1_TO_5[3])
    expect(turns.first).to_contain_text("Agent: You said: " + MESSAGES_1_TO_5[3])

    # The history: one manual compaction of turns 1-3, tokens before → after, the focus.
    open_details(page, "compaction-history-box")
    expect(page.get_by_test_id("compaction-history-box")).to_contain_text("Compaction history (1)")
    [entry] = history(page)
    assert entry["ok"] == "true" and entry["trigger"] == "manual" and entry["turns"] == "3"
    before, after = int(entry["tokensBefore"]), int(entry["tokensAfter"])
    assert before > after > 0
    assert "3 turns (#1–#3)" in entry["text"]
    assert (f"{number(before)} → {number(after)} tokens, {number(before - after)} saved"
            in entry["text"])
    assert f"Focus: {FOCUS}" in entry["text"]
    assert "manual" in entry["text"] and "took" in entry["text"]
    expect(page.get_by_test_id("compaction-entry")).to_be_visible()

    # A compaction that fails is logged with its error; nothing else changes.
    chat(page, "One more thing: the guests arrive at seven.")
    page.evaluate("window.__badSummary = true")
    compact(page)
    # The reply came; the history the page asks for after it follows.
    expect(page.get_by_test_id("compaction-entry")).to_have_count(2)
    entries = history(page)
    assert len(entries) == 2
    newest = entries[0]
    assert newest["ok"] == "false" and newest["trigger"] == "manual"
    assert "failed" in newest["text"] and "too short" in newest["text"]
    assert "saved" not in newest["text"]
    expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-state", "failed")
    expect(page.get_by_test_id("memory-info")).to_contain_text("the last compaction failed")
    expect(page.get_by_test_id("compaction-history").locator(".compaction-error")) \
        .to_contain_text("too short")
    expect(facts.locator("li")).to_have_count(5)
    expect(turns).to_have_count(3)
    expect(page.get_by_test_id("status")).to_contain_text("Nothing compacted")
    assert watch.problems == []


def test_token_meter_adds_up_and_follows_the_turns(shared_chat, app_server: str) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    token_meter = page.get_by_test_id("token-meter")
    expect(token_meter).to_have_attribute("data-state", "empty")   # a new session: no turns

    chat(page, "Hello! What can you do?")
    expect(token_meter).to_have_attribute("data-state", "ok")
    first = meter(page)
    names = [name for name, _ in first["segments"]]
    assert names == ["prefix", "memory", "recall", "turns", "free", "reserved"]
    tokens = dict(first["segments"])
    assert first["window"] == 9216 and first["estimated"] == "false"
    assert sum(tokens.values()) == first["window"]
    assert tokens["prefix"] > 100 and tokens["reserved"] == 2048 and tokens["recall"] == 400
    assert tokens["memory"] == 0 and 0 < tokens["turns"] < 200
    # The numbers, as text for everyone (and as the bar's accessible name).
    used = first["window"] - tokens["free"]
    assert (f"{number(used)} of 9,216 tokens in use ({number(tokens['reserved'])} of them "
            "kept free for the answer)") in first["text"]
    for value in tokens.values():
        assert number(value) in first["label"]
    assert "≈" not in first["text"]
    expect(token_meter.locator(".meter-legend")).to_contain_text("answer room")

    long_message = "Tell me about rivers and lakes and the sea. " * 20
    chat(page, long_message)
    wait_until(page, "document.querySelector('[data-testid=\"token-meter\"] "
               "[data-segment=\"turns\"]').dataset.tokens > %d" % tokens["turns"])
    second = dict(meter(page)["segments"])
    grown = second["turns"] - tokens["turns"]
    assert grown > 150   # the message and its echoed answer
    assert second["free"] == tokens["free"] - grown
    assert sum(second.values()) == first["window"]

    # After a reload the worker has no model session yet: the meter is an estimate.
    boot(page, app_server + "/")
    expect(token_meter).to_have_attribute("data-estimated", "true")
    estimate = meter(page)
    estimated = dict(estimate["segments"])
    assert sum(estimated.values()) == estimate["window"] == 9216
    assert estimated["turns"] > 150 and estimated["prefix"] > 100
    assert estimate["text"].startswith("≈") and "Estimated" in estimate["text"]

    # Compaction moves tokens from the turns into memory.
    chat(page, "A third message, so that one turn can be compacted.")
    expect(token_meter).to_have_attribute("data-estimated", "false")
    before = dict(meter(page)["segments"])
    compact(page)
    expect(page.get_by_test_id("memory-summary")).not_to_have_text("")
    wait_until(page, "document.querySelector('[data-testid=\"token-meter\"] "
               "[data-segment=\"memory\"]').dataset.tokens > 0")  # the meter follows
    after = dict(meter(page)["segments"])
    assert after["memory"] > 0 and after["turns"] < before["turns"]
    assert sum(after.values()) == 9216
    assert watch.problems == []


def test_export_delete_import_brings_the_session_back(shared_chat, tmp_path: Path) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    for text in MESSAGES_1_TO_5[:3]:
        chat(page, text)
    compact(page, FOCUS)
    expect(page.get_by_test_id("memory-summary")).not_to_have_text("")
    session = current_session(page)
    shown = texts(page)
    summary = page.get_by_test_id("memory-summary").text_content()
    facts = page.get_by_test_id("memory-facts").locator("li").all_text_contents()
    # Facts come from every turn read so far, the kept ones too, not only the compacted.
    assert facts == ["The user is vegetarian.", "The user is planning a dinner party for six.",
                     "The user works night shifts as a nurse.", "Send the user a shopping list.",
                     "The main course will be risotto."]

    # Export: a JSON Lines download of the whole session.
    with page.expect_download() as download_info:
        page.get_by_test_id("export-button").click()
    download = download_info.value
    assert download.suggested_filename.endswith(".jsonl")
    exported = tmp_path / download.suggested_filename
    download.save_as(exported)
    lines = [json.loads(line) for line in exported.read_text("utf-8").splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["turns"] == 3
    assert lines[0]["state"]["session_id"] == session
    assert [line["type"] for line in lines[1:]] == ["turn"] * 3 + ["compression"]
    expect(page.get_by_test_id("transfer-message")).to_contain_text("Exported 3 turns")

    # Delete it (the list's inline confirmation): gone from the page and from storage.
    row(page, session).get_by_test_id("delete-session").click()
    row(page, session).get_by_test_id("confirm-delete").click()
    expect(row(page, session)).to_have_count(0)
    expect(page.locator(MESSAGES)).to_have_count(0)
    assert stored_sessions(page) == []

    # Import: the session is listed and opened, with its transcript and memory.
    page.get_by_test_id("import-input").set_input_files(exported)
    message = page.get_by_test_id("transfer-message")
    expect(message).to_contain_text("Imported “I am vegetarian")
    expect(message).to_contain_text("(3 turns)")
    expect(row(page, session)).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    expect(page.locator(MESSAGES)).to_have_count(6)
    assert current_session(page) == session
    assert texts(page) == shown
    expect(page.get_by_test_id("memory-summary")).to_have_text(summary)
    expect(page.get_by_test_id("memory-facts").locator("li")).to_have_text(facts)
    expect(page.locator(ASSISTANT).first).to_have_attribute("data-compacted", "true")
    expect(row(page, session)).to_contain_text("I am vegetarian")
    expect(page.get_by_test_id("compaction-entry")).to_have_count(1)
    [entry] = history(page)
    assert entry["trigger"] == "manual" and f"Focus: {FOCUS}" in entry["text"]
    assert [s["session_id"] for s in stored_sessions(page)] == [session]
    # The conversation goes on from the imported memory.
    chat(page, "What should I cook?")
    prompt = page.evaluate("__fakeLM.callsOf('promptStreaming').at(-1).context")
    assert summary in prompt and "The user is vegetarian." in prompt

    # Importing the same file again makes a second session beside it.
    page.get_by_test_id("import-input").set_input_files(exported)
    expect(page.locator('[data-testid="session-list"] [data-session-id]')).to_have_count(2)
    assert current_session(page) != session
    expect(page.locator(MESSAGES)).to_have_count(6)
    row(page, session).locator('[data-action="open"]').click()
    expect(page.locator(MESSAGES)).to_have_count(8)

    # A bad file: a clear message, and nothing changes.
    listed = session_ids(page)
    page.get_by_test_id("import-input").set_input_files(files=[{
        "name": "notes.jsonl", "mimeType": "application/jsonl",
        "buffer": b'{"type": "shopping", "items": ["rice"]}\n'}])
    expect(message).to_have_attribute("data-state", "error")
    expect(message).to_contain_text("Could not import “notes.jsonl”")
    expect(message).to_contain_text("Nothing was changed.")
    expect(message).to_have_attribute("role", "alert")
    assert session_ids(page) == listed
    assert current_session(page) == session
    expect(page.locator(MESSAGES)).to_have_count(8)
    assert len(stored_sessions(page)) == 2
    assert watch.problems == []
