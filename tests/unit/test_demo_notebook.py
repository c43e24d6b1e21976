"""Notes and to-dos over the key-value protocol: behaviour, persistence, storage errors."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from demo_tools import notebook_tools
from demo_tools.notebook import parse_due
from py_agent import InMemoryKeyValueStore
from py_agent.store import StorageError
from py_agent.testing import step_json
from tests.unit.demo import demo_tools
from tests.unit.support import run

TODAY = dt.date(2026, 3, 11)  # a Wednesday


def make_tools(kv=None):
    kv = kv if kv is not None else InMemoryKeyValueStore()
    ticks = itertools.count(1_773_000_000, 60)
    tools = notebook_tools(kv, clock=lambda: float(next(ticks)), today=lambda: TODAY)
    return kv, {t.name: t for t in tools}


def call(tools, name, *args, **kwargs):
    return run(tools[name](*args, **kwargs))


# --- notes ---------------------------------------------------------------------------

def test_add_and_search_notes():
    kv, t = make_tools()
    assert call(t, "add_note", "Book the hotel in Lisbon and buy a travel adapter",
                "Trip to Lisbon") == 'Saved note #1 "Trip to Lisbon".'
    assert call(t, "add_note", "The wifi password is hunter2") == \
        'Saved note #2 "The wifi password is hunter2".'
    assert call(t, "add_note", "Dentist on Friday at 10").startswith('Saved note #3 "Dentist')
    found = call(t, "search_notes", "trip")
    assert found.startswith('1 note about "trip":')
    assert "#1 Trip to Lisbon" in found and "travel adapter" in found
    assert "hunter2" in call(t, "search_notes", "wifi password")
    # inflections meet: "adapters" finds "adapter"
    assert "Trip to Lisbon" in call(t, "search_notes", "adapters")
    # by number
    assert call(t, "search_notes", "#2").startswith("#2 The wifi password")
    # empty query: the newest first
    recent = call(t, "search_notes", "")
    assert recent.startswith("3 notes, newest first:")
    assert recent.index("#3") < recent.index("#2") < recent.index("#1")
    missing = call(t, "search_notes", "volcano")
    assert missing.startswith('No note mentions "volcano".') and "#1 Trip to Lisbon" in missing
    # stored under the note: prefix, as JSON records
    rows = run(kv.list("note:"))
    assert [k for k, _ in rows] == ["note:000001", "note:000002", "note:000003"]
    assert rows[0][1]["title"] == "Trip to Lisbon" and rows[0][1]["created_at"] > 0


def test_no_notes_and_empty_input():
    _, t = make_tools()
    assert call(t, "search_notes", "") == "There are no notes yet."
    assert call(t, "search_notes", "trip") == "There are no notes yet."
    assert call(t, "add_note", "   ").startswith("Nothing saved: the note is empty")
    assert call(t, "delete_note", "x") == "There are no notes to delete."
    assert call(t, "delete_note", "  ").startswith("Which note?")


def test_duplicate_notes_are_not_saved_twice_and_same_title_appends():
    kv, t = make_tools()
    call(t, "add_note", "Passport, adapter", "Packing")
    assert call(t, "add_note", "passport,   adapter", "packing") == \
        'Already in note #1 "Packing"; nothing changed.'
    appended = call(t, "add_note", "Sunscreen", "Packing")
    assert appended.startswith('Added to the existing note #1 "Packing"')
    assert run(kv.get("note:000001"))["text"] == "Passport, adapter\nSunscreen"
    call(t, "add_note", "Call grandma")
    assert call(t, "add_note", "call grandma") == \
        'Already saved as note #2 "Call grandma"; nothing changed.'
    assert len(run(kv.list("note:"))) == 2


def test_delete_note_by_title_number_or_words_and_ids_are_not_reused():
    kv, t = make_tools()
    call(t, "add_note", "Lisbon hotel booking ref 1234", "Lisbon hotel")
    call(t, "add_note", "Porto hotel booking ref 9876", "Porto hotel")
    call(t, "add_note", "Buy stamps")
    ambiguous = call(t, "delete_note", "hotel")
    assert ambiguous.startswith("Several notes match; which one?")
    assert "#1 Lisbon hotel" in ambiguous and "#2 Porto hotel" in ambiguous
    assert call(t, "delete_note", "porto hotel") == 'Deleted note #2 "Porto hotel".'
    assert call(t, "delete_note", "#3") == 'Deleted note #3 "Buy stamps".'
    assert call(t, "delete_note", "note 7").startswith('No note matches "note 7".')
    assert call(t, "delete_note", "Lisbon") == 'Deleted note #1 "Lisbon hotel".'
    # numbers of deleted notes are never handed out again
    assert call(t, "add_note", "New one") == 'Saved note #4 "New one".'


# --- to-dos --------------------------------------------------------------------------

@pytest.mark.parametrize("words, expected", [
    ("", ""), ("today", "2026-03-11"), ("tomorrow", "2026-03-12"), ("Friday", "2026-03-13"),
    ("on friday", "2026-03-13"), ("wednesday", "2026-03-18"), ("next monday", "2026-03-16"),
    ("in 3 days", "2026-03-14"), ("in two weeks", "2026-03-25"), ("next week", "2026-03-18"),
    ("2026-05-01", "2026-05-01"), ("by 1 May 2026", "2026-05-01"),
    ("sometime in spring", "sometime in spring"),
])
def test_due_dates_are_read_relative_to_today(words, expected):
    assert parse_due(words, TODAY) == expected


def test_todo_round_trip():
    kv, t = make_tools()
    assert call(t, "list_todos") == "The to-do list is empty."
    assert call(t, "add_todo", "buy milk", "tomorrow") == \
        "Added to-do [ ] #1 buy milk (due Thu 2026-03-12). 1 open to-do."
    call(t, "add_todo", "call the dentist")
    call(t, "add_todo", "pay the rent", "2026-03-01")
    listed = call(t, "list_todos")
    assert listed.splitlines() == [
        "3 open to-dos:",
        "[ ] #3 pay the rent (due Sun 2026-03-01, overdue)",
        "[ ] #1 buy milk (due Thu 2026-03-12)",
        "[ ] #2 call the dentist",
    ]
    assert call(t, "complete_todo", "milk") == "Done: #1 buy milk. 2 open to-dos left."
    assert call(t, "complete_todo", "2") == "Done: #2 call the dentist. 1 open to-do left."
    listed = call(t, "list_todos")
    assert "#1" not in listed and "(2 done; pass include_done=true to list them.)" in listed
    everything = call(t, "list_todos", include_done=True)
    assert "2 done:" in everything and "[x] #1 buy milk" in everything
    assert "overdue" not in everything.split("2 done:")[1]   # done items are never overdue
    record = run(kv.get("todo:000001"))
    assert record["done"] is True and record["done_at"] > record["created_at"]


def test_todo_duplicates_not_found_and_empty_input():
    _, t = make_tools()
    assert call(t, "add_todo", "  ").startswith("Nothing added: the task is empty")
    call(t, "add_todo", "Buy milk")
    assert call(t, "add_todo", "buy  milk.") == "Already on the to-do list: [ ] #1 Buy milk"
    moved = call(t, "add_todo", "buy milk", "friday")
    assert moved == ("Already on the to-do list; moved the due date: "
                     "[ ] #1 Buy milk (due Fri 2026-03-13)")
    call(t, "add_todo", "buy bread")
    assert call(t, "complete_todo", "buy").startswith("Several open to-dos match; which one?")
    missing = call(t, "complete_todo", "walk the dog")
    assert missing == ('No open to-do matches "walk the dog". '
                       "Open to-dos: #1 Buy milk; #2 buy bread.")
    assert call(t, "complete_todo", "#9").startswith('No open to-do matches "#9"')
    assert call(t, "complete_todo", "").startswith("Which to-do?")
    call(t, "complete_todo", "bread")
    assert call(t, "complete_todo", "bread") == "That one is already done: [x] #2 buy bread"
    # a done task may be added again as a new to-do
    assert call(t, "add_todo", "buy bread").startswith("Added to-do [ ] #3 buy bread")
    call(t, "complete_todo", "milk")
    call(t, "complete_todo", "bread")
    assert call(t, "list_todos").startswith("No open to-dos: everything is done.")


# --- persistence and storage errors ------------------------------------------------------

def test_notes_and_todos_persist_through_the_store_not_the_tools():
    kv = InMemoryKeyValueStore()
    _, first = make_tools(kv)
    call(first, "add_note", "Remember the blue suitcase", "Trip")
    call(first, "add_todo", "renew passport", "friday")
    _, second = make_tools(kv)          # e.g. after a reload: new tools, same storage
    assert "blue suitcase" in call(second, "search_notes", "suitcase")
    assert "#1 renew passport (due Fri 2026-03-13)" in call(second, "list_todos")
    assert call(second, "add_note", "Hat", "Sun") == 'Saved note #2 "Sun".'


class BrokenStore(InMemoryKeyValueStore):
    """Every read or write fails, as IndexedDB does when the database went away."""

    def __init__(self, error: StorageError) -> None:
        super().__init__()
        self.error = error

    async def get(self, key):
        raise self.error

    async def list(self, prefix=""):
        raise self.error


def test_storage_errors_become_readable_answers():
    kv, t = make_tools()
    kv.fail_next = StorageError("Storage is full: free space by deleting old sessions.",
                                kind="quota")
    answer = call(t, "add_note", "Lisbon trip ideas")
    assert answer == ("Could not save the note: Storage is full: free space by deleting old "
                      "sessions.")
    call(t, "add_todo", "buy milk")
    kv.fail_next = StorageError("Storage is full.", kind="quota")
    assert call(t, "complete_todo", "milk") == "Could not update the to-do: Storage is full."
    assert "[ ] #1 buy milk" in call(t, "list_todos")   # nothing half-done
    _, broken = make_tools(BrokenStore(StorageError("Reload this page.", kind="version")))
    assert call(broken, "search_notes", "x") == "Could not read the notes: Reload this page."
    assert call(broken, "list_todos") == "Could not read the to-do list: Reload this page."
    assert call(broken, "add_todo", "x") == "Could not add the to-do: Reload this page."
    assert call(broken, "delete_note", "x") == "Could not delete the note: Reload this page."


def test_a_failed_record_write_skips_a_number_but_never_reuses_one():
    kv, t = make_tools()

    call(t, "add_note", "first")
    # The counter write succeeds, the note's write fails.
    original_put = kv.put

    async def put(key, value):
        if key.startswith("note:"):
            raise StorageError("Storage is full.", kind="quota")
        await original_put(key, value)

    kv.put = put
    assert call(t, "add_note", "second").startswith("Could not save the note")
    kv.put = original_put
    assert call(t, "add_note", "third") == 'Saved note #3 "third".'
    assert [v["text"] for _, v in run(kv.list("note:"))] == ["first", "third"]


def test_agent_uses_the_notebook_and_a_storage_error_is_an_observation(make_agent):
    kv = InMemoryKeyValueStore()
    replies = iter([
        step_json(thought="Save it.", tool="add_note",
                  tool_input={"title": "Trip", "text": "Pack the blue suitcase"}),
        step_json(answer="Noted."),
        step_json(thought="Save it.", tool="add_todo", tool_input={"task": "buy milk"}),
        step_json(answer="Sorry, I could not save that."),
    ])
    agent, _, _ = make_agent(lambda call: next(replies), tools=demo_tools(kv))
    result = run(agent.run("Note for my trip: pack the blue suitcase", session_id="s"))
    assert result.steps[0].observation == 'Saved note #1 "Trip".'
    assert run(kv.get("note:000001"))["text"] == "Pack the blue suitcase"
    kv.fail_next = StorageError("Storage is full.", kind="quota")
    result = run(agent.run("remind me to buy milk", session_id="s"))
    assert result.status == "answered"
    assert result.steps[0].observation == "Could not add the to-do: Storage is full."
