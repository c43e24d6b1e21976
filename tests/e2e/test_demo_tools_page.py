"""The demo page's notes, to-do and recipe tools end to end: the real page, worker and
IndexedDB, with a scripted fake model that calls the tools.

The fake model reads the user's message at the end of a turn's first prompt and calls the
tool it names (only if the retriever offered it: the enum of the step schema), then
answers with the observation, so each answer shows exactly what the tool returned.
"""

from __future__ import annotations

import datetime as dt

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import ASSISTANT, boot, chat, open_chat, tool_call_responder

pytestmark = pytest.mark.e2e

# message pattern -> the tool call the "model" makes; then the observation as the answer.
TOOL_RESPONDER = tool_call_responder(r"""[
    [/^Write down a note titled (.+?): (.+)$/i, (m) => ['add_note', {title: m[1], text: m[2]}]],
    [/^What did I write down about the (\w+)\?$/i, (m) => ['search_notes', {query: m[1]}]],
    [/^Remind me to (.+) (tomorrow)$/i, (m) => ['add_todo', {task: m[1], due: m[2]}]],
    [/^What's on my to-do list\?$/i, () => ['list_todos', {}]],
    [/^Tick (.+) off my to-do list$/i, (m) => ['complete_todo', {task: m[1]}]],
    [/^I'm vegetarian, what can I cook with (\w+)\?$/i,
     (m) => ['find_recipes', {ingredients: m[1], diet: 'vegetarian'}]],
]""")


def tool_steps(page: Page) -> list[str]:
    """The tools the last answer's trace shows, in order."""
    steps = page.locator(ASSISTANT).last.get_by_test_id("trace-step")
    tools = steps.evaluate_all("nodes => nodes.map(n => n.dataset.tool || '')")
    return [t for t in tools if t and t != "none"]


def kv_rows(page: Page) -> list:
    """The demo tools' records as the page's IndexedDB holds them (read without the app)."""
    return page.evaluate("""() => new Promise((resolve, reject) => {
        const q = indexedDB.open('py-agent');
        q.onerror = () => reject(q.error);
        q.onsuccess = () => {
          const db = q.result;
          const tx = db.transaction('kv', 'readonly');
          const keys = tx.objectStore('kv').getAllKeys();
          const values = tx.objectStore('kv').getAll();
          tx.oncomplete = () => {
            db.close();
            resolve(keys.result.map((k, i) => [k, values.result[i]]));
          };
        };
    })""")


def test_a_note_survives_a_reload_and_is_found_in_a_new_session(
        page: Page, app_server: str, install_fake_lm) -> None:
    watch = open_chat(page, app_server, install_fake_lm, responderSource=TOOL_RESPONDER)
    answer = chat(page, "Write down a note titled Lisbon trip: book the tram 28 tour "
                        "and pack the blue suitcase")
    assert answer == 'add_note -> Saved note #1 "Lisbon trip".'
    assert tool_steps(page) == ["add_note"]
    rows = dict(kv_rows(page))
    assert rows["note:000001"]["text"] == "book the tram 28 tour and pack the blue suitcase"

    # A fresh page and worker, and a new conversation: the note is read from IndexedDB.
    boot(page, app_server + "/")
    page.get_by_test_id("new-session-button").click()
    expect(page.locator(ASSISTANT)).to_have_count(0)
    answer = chat(page, "What did I write down about the trip?")
    assert answer.startswith('search_notes -> 1 note about "trip":')
    assert "#1 Lisbon trip" in answer and "pack the blue suitcase" in answer
    observation = page.locator(ASSISTANT).last.get_by_test_id("trace-step") \
        .filter(has_text="search_notes").locator('[data-part="observation"]')
    expect(observation).to_contain_text("pack the blue suitcase")
    assert watch.problems == []


def test_todo_round_trip_and_a_vegetarian_recipe_search(
        page: Page, app_server: str, install_fake_lm) -> None:
    watch = open_chat(page, app_server, install_fake_lm, responderSource=TOOL_RESPONDER)
    tomorrow = (dt.date.today() + dt.timedelta(days=1)).strftime("%a %Y-%m-%d")

    answer = chat(page, "Remind me to buy oat milk tomorrow")
    assert answer == f"add_todo -> Added to-do [ ] #1 buy oat milk (due {tomorrow}). 1 open to-do."
    answer = chat(page, "What's on my to-do list?")
    assert answer == f"list_todos -> 1 open to-do:\n[ ] #1 buy oat milk (due {tomorrow})"
    assert tool_steps(page) == ["list_todos"]

    boot(page, app_server + "/")   # the list is still there after a reload
    answer = chat(page, "Tick oat milk off my to-do list")
    assert answer == "complete_todo -> Done: #1 buy oat milk. 0 open to-dos left."
    answer = chat(page, "What's on my to-do list?")
    assert answer.startswith("list_todos -> No open to-dos: everything is done.")
    todo = dict(kv_rows(page))["todo:000001"]
    assert todo["done"] is True and todo["task"] == "buy oat milk"

    answer = chat(page, "I'm vegetarian, what can I cook with chickpeas?")
    assert answer.startswith("find_recipes -> ") and "vegetarian recipes with chickpeas" in answer
    assert "Chickpea and spinach curry" in answer
    assert "chorizo" not in answer.lower() and "chicken" not in answer.lower()
    assert watch.problems == []
