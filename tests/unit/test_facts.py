"""Fact consolidation: operations, rule-caught conflicts, the budget and folds."""

import json

import pytest

from py_agent import Fact, MemoryPolicy, SessionState
from py_agent.memory.fact_rules import carried_by, lowest_first, may_revise, same_subject
from py_agent.memory.facts import FactOp, consolidate, facts_tokens, over_budget, parse_fact_ops
from py_agent.state import FactIds
from py_agent.tokens import TokenCounter

POLICY = MemoryPolicy()


def ids(start: int = 10) -> FactIds:
    return FactIds(start, set())


def test_operations_parse_with_their_optional_fields_and_aliases():
    reply = json.dumps({"facts": [
        {"category": "follow-up", "text": "The gym locker code is 8032", "op": "update",
         "replaces": "f3"},
        {"category": "preference", "text": "no longer vegetarian", "op": "retract",
         "replaces": " f5 "},
        {"category": "need", "text": "Learns SQL", "op": "new"},
        {"text": "forget it", "op": "forget", "replaces": "f9"},      # no category: fine
        {"category": "need", "text": "x", "op": "retract"},           # retract without id
        {"category": "need", "text": "Wants a bike", "op": "merge"},  # unknown op
        {"category": "need", "text": "Bike", "op": "update"},         # update without id: add
    ]})
    assert parse_fact_ops(reply, POLICY) == [
        FactOp("update", "follow-up", "The gym locker code is 8032", "f3"),
        FactOp("retract", "preference", "no longer vegetarian", "f5"),
        FactOp("add", "need", "Learns SQL"),
        FactOp("retract", "", "forget it", "f9"),
        FactOp("add", "need", "Bike"),
    ]
    fenced = '```json\n{"facts": [{"category": "need", "text": "A quiet flat"}]}\n```'
    assert parse_fact_ops(fenced, POLICY) == [FactOp("add", "need", "A quiet flat")]


def test_update_supersedes_the_named_fact_and_says_by_what():
    known = [Fact("follow-up", "The user's gym locker code is 4471", 12, "f1"),
             Fact("background", "The user has a cat called Sprocket", 3, "f2")]
    result = consolidate(known, [FactOp("update", "follow-up", "The gym code is now 8032", "f1")],
                         190, ids())
    assert [f.text for f in result.facts] == ["The user has a cat called Sprocket",
                                              "The gym code is now 8032"]
    assert result.added == [Fact("follow-up", "The gym code is now 8032", 190, "f10")]
    (change,) = result.changes
    assert change.action == "superseded" and change.fact == known[0] and change.by == "model"
    assert change.replaced_by == result.added[0]


def test_retract_removes_the_fact_and_keeps_the_reason():
    known = [Fact("preference", "The user is vegetarian", 18, "f4")]
    result = consolidate(known, [FactOp("retract", "", "the user eats fish again", "f4"),
                                 FactOp("retract", "", "forget it", "f99")], 350, ids())
    assert result.facts == [] and result.added == []
    assert [(c.action, c.reason) for c in result.changes] == [
        ("retracted", "the user eats fish again")]
    assert result.ignored == ["retract f99: no such fact"]


def test_a_fact_said_again_is_not_duplicated_but_becomes_recent():
    known = [Fact("preference", "The user is vegetarian", 18, "f1"),
             Fact("need", "Plans a trip", 20, "f2")]
    result = consolidate(known, [FactOp("add", "preference", "the user is  Vegetarian!")], 90,
                         ids())
    assert [(f.id, f.turn_id) for f in result.facts] == [("f2", 20), ("f1", 90)]
    assert result.added == [] and result.changes == []


@pytest.mark.parametrize("old, new", [
    ("The user's gym locker code is 4471.", "The user's gym locker code is 8032."),
    ("The user lives in Leeds.", "The user now lives in Bristol."),
    ("The user's daughter's school is Hollybrook Primary.",
     "The user's daughter's school is now Ashcombe Academy."),
    ("The user is vegetarian.", "The user is no longer vegetarian."),
    ("The user likes coffee.", "The user no longer likes coffee."),
])
def test_obvious_same_subject_conflicts_are_caught_without_the_model(old, new):
    a, b = Fact("background", old, 1, "f1"), Fact("background", new, 2)
    assert same_subject(a, b)
    result = consolidate([a], [FactOp("add", "background", new)], 2, ids())
    assert [f.text for f in result.facts] == [new]
    assert result.changes[0].action == "superseded" and result.changes[0].by == "rule"


@pytest.mark.parametrize("old, new", [
    ("The user lives in Leeds.", "The user's mum lives in Harrogate."),
    ("The user likes Thai food.", "The user likes Italian food."),  # both can hold
    ("The user is allergic to cashews.", "The user is allergic to peanuts."),
    ("The user has a cat called Sprocket.", "The user has a dog called Biscuit."),
    ("The user owns a plant named Fern.", "The user owns a plant named Ivy."),
    ("The user's gym locker code is 4471.", "The user's gym locker code is 4471!"),
])
def test_different_subjects_and_compatible_facts_both_stay(old, new):
    a, b = Fact("background", old, 1, "f1"), Fact("background", new, 2)
    assert not same_subject(a, b)


def test_conflicts_need_the_same_category():
    assert not same_subject(Fact("need", "The user's budget is 100", 1),
                            Fact("decision", "The user's budget is 140", 2))


def test_the_budget_folds_lowest_priority_first_category_then_age():
    counter = TokenCounter()
    facts = [Fact("follow-up", "Call the plumber Dariusz about the leak", 5, "f1"),
             Fact("need", "The user is allergic to cashews", 6, "f2"),
             Fact("decision", "The user banks with Monzo", 7, "f3"),
             Fact("follow-up", "Return the library book The Overstory", 90, "f4"),
             Fact("preference", "The user wants metric units", 8, "f5")]
    order = [f.id for f in lowest_first(facts, POLICY.fact_priority)]
    # A fresh follow-up outranks an old decision, but not an old preference.
    assert order == ["f1", "f3", "f4", "f5", "f2"]
    tight = MemoryPolicy(facts_max_tokens=40)
    folded = over_budget(facts, tight, counter)
    assert folded and folded[0].id == "f1"
    kept = [f for f in facts if f not in folded]
    assert facts_tokens(kept, counter) <= 40
    assert over_budget(facts, POLICY, counter) == []
    # A count cap folds too.
    assert len(over_budget(facts, MemoryPolicy(max_facts=3), counter)) == 2


def test_a_summary_carries_a_fact_when_its_names_and_numbers_are_there():
    locker = Fact("follow-up", "The user's gym locker code is 8032", 1)
    budget = Fact("decision", "The kitchen budget is £18,500", 1)
    metric = Fact("preference", "The user wants metric units, not cups", 1)
    summary = ("Mags asked about her gym: the locker code is 8032. Her kitchen renovation "
               "budget is 18500 pounds. She wants metric units in recipes, no cups.")
    assert carried_by(locker, summary) and carried_by(budget, summary)
    assert carried_by(metric, summary)
    assert not carried_by(locker, "The user has a gym locker.")
    assert not carried_by(metric, "The user asked about cups of flour.")
    # A loose paraphrase without names or numbers is not trusted: the fact stays a key
    # fact rather than risk losing it.
    assert not carried_by(metric, "She prefers the decimal system for measurements.")


def test_facts_saved_without_ids_get_them_on_load():
    state = SessionState.from_dict({"session_id": "s", "facts": [
        {"category": "need", "text": "a"}, {"category": "need", "text": "b", "id": "f1"}]})
    assert [f.id for f in state.facts] == ["f2", "f1"] and state.next_fact_id == 3


KNOWN = [Fact("follow-up", "The user has a dentist appointment (Dr Achterberg) on Friday."),
         Fact("background", "The user lives in Leeds."),
         Fact("need", "The user's weekly grocery budget is £115.")]


@pytest.mark.parametrize("message", [
    "They've moved my appointment to 15:15, same day.",          # change, first person
    "We're not going to Galway anymore.",                        # no longer holds
    "Forget the library reminder, it's done.",                   # asked to forget
    "Dr Achterberg's surgery rang this morning.",                # a known fact's name
    "Food prices have beaten us, the weekly grocery budget is £140.",  # its words
])
def test_a_message_that_may_change_a_key_fact_is_noticed(message):
    assert may_revise(message, KNOWN)


@pytest.mark.parametrize("message", [
    "What's 350 degrees in Celsius?",
    "How do I make a quick berry compote?",
    "Convert 10 km to miles.",
    "Can I use caster sugar instead of granulated?",  # a change word, but not about the user
])
def test_small_talk_does_not_look_like_a_change(message):
    assert not may_revise(message, KNOWN)


def test_nothing_can_change_when_nothing_is_known():
    assert not may_revise("I moved to Bristol, forget Leeds.", [])
