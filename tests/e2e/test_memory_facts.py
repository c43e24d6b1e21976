"""The memory inspector shows facts replaced and forgotten, and memory that runs degraded.

Real worker and IndexedDB; the fake LanguageModel's extractor answers with the
operations of the reply format (update and retract by id), and its summarizer can be
made to fail so that compaction falls back to the user's own words.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from py_agent.model import Purpose
from py_agent.replay import replay
from py_agent.testing import FunctionModel
from py_agent.transfer import parse_session
from tests.e2e.pages import boot, chat, compact

pytestmark = pytest.mark.e2e

# The extractor reads the known facts (with ids) from its prompt and reports what the
# turns say: a locker code (an update if one is known), or a request to forget it.
RESPONDER = r"""(input, ctx) => {
  const text = String(input);
  const schema = ctx.responseConstraint;
  if (schema && schema.properties && schema.properties.facts) {
    const [known, turns = ''] = text.split('<turns>');
    const old = [...known.matchAll(/^- (f\d+) \[[a-z-]+\] (.*locker code.*)$/gm)].map((m) => m[1])[0];
    const facts = [];
    for (const m of turns.matchAll(/^User: (.*)$/gm)) {
      const code = m[1].match(/locker code is (\d+)/);
      if (code) facts.push(Object.assign({category: 'follow-up',
          text: `The user's gym locker code is ${code[1]}.`},
          old ? {op: 'update', replaces: old} : {}));
      if (/forget my locker/.test(m[1]) && old)
        facts.push({category: 'follow-up', op: 'retract', replaces: old,
                    text: 'the user asked to forget the locker code'});
    }
    return JSON.stringify({facts});
  }
  if (!schema && text.includes('<turns>')) {
    if (window.__badSummary) return 'Too short.';
    const said = [...text.matchAll(/^User: (.*)$/gm)].map((m) => m[1]);
    return 'Earlier the user said: ' + said.join(' / ');
  }
  return window.__fakeLM.defaultResponder(input, ctx);
}"""


def open_box(page: Page, testid: str) -> None:
    box = page.get_by_test_id(testid)
    if box.get_attribute("open") is None:
        box.locator("summary").click()


def test_replaced_and_forgotten_facts_are_shown_with_their_reason(
        shared_chat, app_server: str, tmp_path: Path) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    facts = page.get_by_test_id("memory-facts").locator("li")
    changes = page.get_by_test_id("fact-changes").locator("li")
    for text in ["Please remember: my locker code is 4471.", "Thanks!", "What time is it?"]:
        chat(page, text)
    compact(page)
    expect(facts).to_have_text(["The user's gym locker code is 4471."])
    expect(changes).to_have_count(0)

    for text in ["The gym reset the lockers, my locker code is 8032 now.", "Great.", "Ok."]:
        chat(page, text)
    compact(page)
    expect(facts).to_have_text(["The user's gym locker code is 8032."])
    open_box(page, "fact-changes-box")
    expect(changes).to_have_text(["“The user's gym locker code is 4471.”: replaced by "
                                  "“The user's gym locker code is 8032.”"])
    expect(changes.first).to_have_attribute("data-action", "superseded")

    for text in ["Please forget my locker code, I wrote it down.", "Bye.", "Hi again."]:
        chat(page, text)
    compact(page)
    expect(facts).to_have_count(0)
    expect(changes.first).to_have_attribute("data-action", "retracted")
    expect(changes.first).to_have_text("“The user's gym locker code is 8032.”: forgotten at "
                                       "the user's request (the user asked to forget the "
                                       "locker code)")
    expect(page.get_by_test_id("fact-changes-box")).to_contain_text(
        "Replaced and forgotten facts (2)")
    # The history says what each compaction did to the facts; a reload keeps it all.
    open_box(page, "compaction-history-box")
    expect(page.get_by_test_id("compaction-history")).to_contain_text("1 forgotten")
    boot(page, app_server + "/")
    open_box(page, "fact-changes-box")
    expect(changes).to_have_count(2)

    # The exported session holds what the replay harness needs, and replays.
    with page.expect_download() as download_info:
        page.get_by_test_id("export-button").click()
    exported = tmp_path / "session.jsonl"
    download_info.value.save_as(exported)
    bundle = parse_session(exported.read_text("utf-8"))
    compactions = [r for r in bundle.compressions if r.kind == "compaction"]
    refreshes = [r for r in bundle.compressions if r.kind == "facts"]
    assert len(compactions) == 3
    assert all(r.summary_prompt and r.summary_system and r.policy for r in compactions)
    # The new code and the request to forget were read for facts at once, each by a
    # facts refresh of its own.
    assert len(refreshes) == 2 and all(r.facts_prompt and r.policy for r in refreshes)
    assert "8032" in refreshes[0].facts_prompt and "forget" in refreshes[1].facts_prompt
    assert [c.action for r in bundle.compressions for c in r.fact_changes] == \
        ["superseded", "retracted"]

    def scripted(call):
        if call.purpose is Purpose.FACTS:
            return '{"facts": []}'
        return "The user talked about a gym locker and its code."

    with ThreadPoolExecutor(1) as pool:  # Playwright's own loop runs in this thread
        report = pool.submit(asyncio.run, replay(bundle, FunctionModel(scripted))).result()
    assert len(report.steps) == 5 and all(s.replayed.ok for s in report.steps)
    assert report.steps[0].fact_diff()["lost"]  # this model finds no facts: it shows
    assert watch.problems == []


def test_memory_that_runs_without_the_summarizer_says_so_until_it_works_again(
        shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=RESPONDER)
    panel, degraded = page.get_by_test_id("memory-panel"), page.get_by_test_id("memory-degraded")
    status = page.get_by_test_id("status")
    page.evaluate("window.__badSummary = true")
    for text in ["I am planning a trip to Lisbon.", "In May.", "With my sister.", "By train."]:
        chat(page, text)
    compact(page)   # the first failure keeps the raw turns for a later try
    expect(panel).to_have_attribute("data-state", "failed")
    expect(degraded).to_be_hidden()
    chat(page, "And back by plane.")
    compact(page)   # the second in a row: compacted without the model
    expect(panel).to_have_attribute("data-state", "degraded")
    expect(degraded).to_be_visible()
    expect(degraded).to_contain_text("Memory is degraded.")
    expect(degraded).to_contain_text("failed 2 time(s) in a row")
    expect(degraded).to_contain_text("too short")
    expect(page.get_by_test_id("memory-summary")).to_contain_text("the user said: "
                                                                  "I am planning a trip")
    expect(status).to_have_attribute("data-memory", "degraded")
    expect(status).to_contain_text("Memory is degraded")
    open_box(page, "compaction-history-box")
    newest = page.get_by_test_id("compaction-entry").first
    expect(newest).to_have_attribute("data-fallback", "true")
    expect(newest).to_contain_text("done without the model")

    page.evaluate("window.__badSummary = false")
    for text in ["One more thing: we need a hotel.", "Near the river."]:
        chat(page, text)
    compact(page)
    expect(panel).to_have_attribute("data-state", "idle")
    expect(degraded).to_be_hidden()
    expect(status).to_have_attribute("data-memory", "ok")
    assert watch.problems == []
