"""The user profile across sessions (issue 24, item 2), with FunctionModel in CPython.

A preference said in one session reaches the first prompt of another; a private session
neither gives nor reads; the user edits and forgets facts, and a forgotten one stays
forgotten; a later session updates or retracts a fact an earlier one gave; deleting a
session takes its facts out; two agents (two tabs) on one store share one profile.

The extractor here reads the known facts (ids "f…" of the session, "p…" of the profile)
from its prompt and answers as the reply format says: it updates the known fact on the
same subject by id, or retracts it.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from py_agent import Agent, InMemoryStore, MemoryPolicy, StorageError
from py_agent.memory.profile_rules import shown_facts
from py_agent.model import Purpose
from py_agent.profile import (ProfileFact, RemovedFact, UnknownProfileFactError, UserProfile,
                              forget, reconcile, withdraw)
from py_agent.sqlite_store import SqliteStore
from py_agent.state import Fact, SessionState
from py_agent.testing import FunctionModel, PromptCall, context_text, user_message
from py_agent.tokens import TokenCounter
from tests.unit.support import make_responder, run
from tests.unit.test_rpc_and_host import host_for

KNOWN = re.compile(r"^- (\w+) \[([a-z-]+)\] (.*)$", re.MULTILINE)
DIET = re.compile(r"\b(vegetarian|vegan)\b")


def extractor(call: PromptCall) -> str:
    """Facts from the user's words in the turns: a diet (an update of a known diet fact),
    an allergy, a home town (left to py-agent's same-subject rule), a plan (not lasting);
    "forget my diet" and "no longer vegetarian" retract the known diet fact."""
    known_part, _, turns = call.input.partition("<turns>")
    known = [(fid, text) for fid, _, text in KNOWN.findall(known_part)]
    diet = next((fid for fid, text in known if DIET.search(text)), None)
    facts = []
    for said in re.findall(r"^User: (.*)$", turns, re.MULTILINE):
        if "no longer vegetarian" in said or "forget my diet" in said:
            if diet:
                facts.append({"category": "preference", "op": "retract", "replaces": diet,
                              "text": "the user said it no longer holds"})
            continue
        if match := re.search(r"\bI(?:'m| am)(?: now)? (vegetarian|vegan)\b", said):
            text = f"The user is {match.group(1)}."
            old = diet if diet and text not in [t for _, t in known] else None
            facts.append({"category": "preference", "text": text,
                          **({"op": "update", "replaces": old} if old else {})})
        if match := re.search(r"allergic to (\w+)", said):
            facts.append({"category": "need", "text": f"The user is allergic to {match.group(1)}."})
        if match := re.search(r"I live in ([A-Z]\w+)", said):
            facts.append({"category": "background", "text": f"The user lives in {match.group(1)}."})
        if match := re.search(r"planning a trip to ([A-Z]\w+)", said):
            facts.append({"category": "decision",
                          "text": f"The user plans a trip to {match.group(1)}."})
    return json.dumps({"facts": facts})


# Facts are read after every turn (a refresh whenever any turn is unread).
POLICY = MemoryPolicy(facts_refresh_ratio=0.001)


def new_agent(store=None, model: FunctionModel | None = None,
              **kwargs) -> tuple[Agent, FunctionModel]:
    model = model or FunctionModel(make_responder(facts=extractor))
    return Agent(model=model, store=store if store is not None else InMemoryStore(),
                 memory=kwargs.pop("memory", POLICY), **kwargs), model


def say(agent: Agent, session_id: str, *messages: str) -> None:
    """Send each message, and let the memory read it for facts."""
    for message in messages:
        assert run(agent.run(message, session_id=session_id)).ok
        run(agent.wait_idle())


def seen_with(model: FunctionModel, message: str) -> str:
    """Everything the model had read when it answered the first step of ``message``
    (its memory session or the prompt's memory, and the prompt)."""
    calls = [c for c in model.calls_for(Purpose.STEP) if user_message(c) == message]
    assert calls, f"no turn asked {message!r}"
    return context_text(calls[-1])


def profile_texts(agent: Agent) -> list[str]:
    return [f.text for f in run(agent.profile())]


def own_texts(agent: Agent, session_id: str) -> list[str]:
    return [f.text for f in run(agent.memory_state(session_id)).facts]


# ---------------------------------------------------------------- across sessions

@pytest.mark.parametrize("live", [True, False], ids=["memory-sessions", "whole-prompt"])
def test_a_preference_said_in_one_session_reaches_the_first_prompt_of_a_new_one(live):
    agent, model = new_agent(memory_sessions=4 if live else 0)
    say(agent, "a", "Hello there.", "I'm vegetarian, by the way.",
        "I am planning a trip to Lisbon.")
    [fact] = run(agent.profile())  # the decision is not a lasting fact: it stays in "a"
    assert (fact.text, fact.category, fact.session_id) == ("The user is vegetarian.",
                                                           "preference", "a")
    assert fact.turn_id == 2 and fact.fact_id == run(agent.memory_state("a")).facts[0].id
    assert fact.at > 0

    say(agent, "b", "What should I cook tonight?")
    seen = seen_with(model, "What should I cook tonight?")
    assert ("About the user, remembered across chats:\n"
            "- [preference] The user is vegetarian.") in seen
    assert "Lisbon" not in seen
    memory = run(agent.memory_state("b"))
    assert [f.text for f in memory.profile] == ["The user is vegetarian."] and memory.facts == []
    assert memory.budget.profile > 0
    # Its own session shows it once, as its own key fact.
    say(agent, "a", "Thanks.")
    assert "remembered across chats" not in seen_with(model, "Thanks.")
    assert run(agent.memory_state("a")).profile == []


def test_the_extractor_sees_the_profile_facts_with_their_ids():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.")
    say(agent, "b", "I'm allergic to peanuts.")
    prompt = model.calls_for(Purpose.FACTS)[-1].input
    assert "- p1 [preference] The user is vegetarian." in prompt
    assert sorted(profile_texts(agent)) == ["The user is allergic to peanuts.",
                                            "The user is vegetarian."]


def test_an_open_session_reads_what_another_one_adds_without_a_rebuild():
    agent, model = new_agent()
    say(agent, "b", "Hi, let us talk about dinner.")
    say(agent, "a", "I'm allergic to walnuts.")
    built = agent.memory_sessions.stats.built
    say(agent, "b", "Any dessert ideas?")
    assert "- [need] The user is allergic to walnuts." in seen_with(model, "Any dessert ideas?")
    # The memory session of "b" read only the new fact, not its whole memory again.
    assert agent.memory_sessions.stats.built == built
    assert any(a.input.startswith("More about the user, remembered across chats:\n"
                                  "- [need] The user is allergic to walnuts.")
               for a in model.appends)


def test_a_later_session_updates_a_fact_an_earlier_one_gave():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.")
    say(agent, "b", "I'm now vegan.")
    [fact] = run(agent.profile())
    assert (fact.text, fact.session_id) == ("The user is vegan.", "b")
    record = run(agent.compressions("b"))[-1]
    assert [(c.action, c.fact.text) for c in record.fact_changes] == [
        ("superseded", "The user is vegetarian.")]
    # "a" no longer holds the old value as its own, and reads the new one.
    assert own_texts(agent, "a") == []
    say(agent, "a", "Suggest a lunch.")
    seen = seen_with(model, "Suggest a lunch.")
    assert "The user is vegan." in seen and "The user is vegetarian." not in seen


def test_a_later_session_retracts_a_fact_an_earlier_one_gave():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.")
    say(agent, "b", "I am no longer vegetarian, I eat fish again.")
    assert run(agent.profile()) == [] and own_texts(agent, "a") == []
    removed = agent.sessions.profiles.current.removed
    assert [(r.session_id, r.reason) for r in removed] == [("a", "retracted")]
    say(agent, "c", "What is for dinner?")
    assert "vegetarian" not in seen_with(model, "What is for dinner?")


def test_the_same_subject_rule_works_across_sessions():
    agent, _ = new_agent()
    say(agent, "a", "I live in Leeds.")
    say(agent, "b", "I live in Bristol these days.")
    assert profile_texts(agent) == ["The user lives in Bristol."]
    assert own_texts(agent, "a") == []


# ---------------------------------------------------------------- private sessions

def test_a_private_session_gives_nothing_to_the_profile_and_reads_nothing():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.")
    run(agent.set_private("secret", True))  # before its first message
    say(agent, "secret", "I'm allergic to penicillin.", "Which cheese is safe?")
    assert profile_texts(agent) == ["The user is vegetarian."]
    assert own_texts(agent, "secret") == ["The user is allergic to penicillin."]
    assert "vegetarian" not in seen_with(model, "Which cheese is safe?")
    say(agent, "b", "Plan my week.")
    assert "penicillin" not in seen_with(model, "Plan my week.")
    listed = {i.session_id: i.private for i in run(agent.store.list_sessions())}
    assert listed["secret"] is True and listed["a"] is False
    assert run(agent.memory_state("secret")).private is True


def test_making_a_session_private_later_takes_its_facts_out_and_back():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.", "I'm allergic to kiwi.")
    say(agent, "b", "I live in York.")
    assert len(run(agent.profile())) == 3
    run(agent.set_private("a", True))
    assert profile_texts(agent) == ["The user lives in York."]
    assert own_texts(agent, "a") == ["The user is vegetarian.", "The user is allergic to kiwi."]
    say(agent, "c", "Cook something.")
    assert "kiwi" not in seen_with(model, "Cook something.")
    run(agent.set_private("a", False))
    assert sorted(profile_texts(agent)) == ["The user is allergic to kiwi.",
                                            "The user is vegetarian.", "The user lives in York."]


# ---------------------------------------------------------------- the user's control

def test_forget_removes_a_fact_from_every_prompt_and_it_does_not_come_back():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.", "I'm allergic to soy.")
    say(agent, "b", "Hello.")  # "b" has a memory session that read both facts
    fact = next(f for f in run(agent.profile()) if "vegetarian" in f.text)
    forgotten = run(agent.forget_profile_fact(fact.id))
    assert forgotten == fact and profile_texts(agent) == ["The user is allergic to soy."]
    assert own_texts(agent, "a") == ["The user is allergic to soy."]  # and its own copy
    say(agent, "b", "Dinner ideas?")
    say(agent, "a", "More ideas?")
    for message in ("Dinner ideas?", "More ideas?"):
        seen = seen_with(model, message)
        assert "The user is vegetarian." not in seen and "allergic to soy" in seen
    with pytest.raises(UnknownProfileFactError):
        run(agent.forget_profile_fact(fact.id))

    # The same old turn read again (say, by a tab that had not seen the forgetting):
    # the fact is not taken again.
    state = agent.sessions.state("a")
    state.facts_through = 0
    say(agent, "a", "Thanks.")
    assert any("I'm vegetarian." in c.input for c in model.calls_for(Purpose.FACTS)[-1:])
    assert "The user is vegetarian." not in profile_texts(agent) + own_texts(agent, "a")
    blocked = run(agent.compressions("a"))[-1].fact_changes
    assert [(c.action, c.by) for c in blocked] == [("retracted", "rule")]
    # Said again, later: that is news, and it is remembered.
    say(agent, "a", "Actually I'm vegetarian again.")
    assert "The user is vegetarian." in profile_texts(agent)


def test_edit_changes_the_words_everywhere():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.")
    say(agent, "b", "Hi.")
    [fact] = run(agent.profile())
    edited = run(agent.edit_profile_fact(fact.id, "  The user is vegetarian but eats   eggs. "))
    assert edited.text == "The user is vegetarian but eats eggs." and edited.edited_at
    assert (edited.session_id, edited.turn_id) == (fact.session_id, fact.turn_id)
    assert own_texts(agent, "a") == ["The user is vegetarian but eats eggs."]
    say(agent, "b", "Breakfast?")
    seen = seen_with(model, "Breakfast?")
    assert "vegetarian but eats eggs" in seen and "The user is vegetarian.\n" not in seen
    for bad in ("", "x" * 301, "<turns>sneaky</turns>", 42):
        with pytest.raises(ValueError):
            run(agent.edit_profile_fact(fact.id, bad))
    with pytest.raises(UnknownProfileFactError):
        run(agent.edit_profile_fact("p99", "anything"))


def test_deleting_a_session_takes_its_facts_out_of_the_profile():
    agent, model = new_agent()
    say(agent, "a", "I'm vegetarian.")
    say(agent, "b", "I'm allergic to sesame.")
    events = []
    agent.on_event = events.append
    assert run(agent.delete_session("a")) is True
    assert profile_texts(agent) == ["The user is allergic to sesame."]
    assert [e.data["action"] for e in events if e.type == "profile_updated"] == ["deleted"]
    say(agent, "c", "Lunch?")
    assert "vegetarian" not in seen_with(model, "Lunch?")


def test_the_profile_is_off_when_the_policy_says_so():
    agent, model = new_agent(memory=MemoryPolicy(facts_refresh_ratio=0.001, user_profile=False))
    say(agent, "a", "I'm vegetarian.")
    say(agent, "b", "Dinner?")
    assert run(agent.profile()) == [] and own_texts(agent, "a") == ["The user is vegetarian."]
    assert "vegetarian" not in seen_with(model, "Dinner?")


# ---------------------------------------------------------------- two tabs

@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_two_agents_on_one_store_share_one_profile(kind, tmp_path):
    if kind == "memory":
        stores = [InMemoryStore()] * 2
    else:
        stores = [SqliteStore(tmp_path / "agent.db"), SqliteStore(tmp_path / "agent.db")]
    model = FunctionModel(make_responder(facts=extractor), latency=0.005)
    tab1, _ = new_agent(stores[0], model)
    tab2, _ = new_agent(stores[1], model)
    say(tab1, "a", "I'm vegetarian.")
    say(tab2, "b", "What should I cook?")
    assert "The user is vegetarian." in seen_with(model, "What should I cook?")

    # Both tabs learn something at the same moment: neither write is lost.
    async def both():
        await asyncio.gather(tab1.run("I'm allergic to shrimp.", session_id="a"),
                             tab2.run("I live in Oslo.", session_id="b"))
        await asyncio.gather(tab1.wait_idle(), tab2.wait_idle())
    run(both())
    assert sorted(profile_texts(tab1)) == sorted(profile_texts(tab2)) == [
        "The user is allergic to shrimp.", "The user is vegetarian.", "The user lives in Oslo."]

    # One tab forgets; the other's next prompt (in a session it has open) has it no more.
    fact = next(f for f in run(tab2.profile()) if "vegetarian" in f.text)
    run(tab2.forget_profile_fact(fact.id))
    say(tab1, "b", "And for lunch?")
    seen = seen_with(model, "And for lunch?")
    assert "vegetarian" not in seen and "shrimp" in seen
    assert own_texts(tab1, "a") == ["The user is allergic to shrimp."]


# ---------------------------------------------------------------- plain rules

def test_shown_facts_keep_to_their_budget_by_priority():
    profile = UserProfile()
    for i in range(40):
        category = "need" if i % 10 == 0 else "background"
        profile.facts.append(ProfileFact(profile.new_id(), category,
                                         f"The user has fact number {i} with several words.",
                                         "other", f"f{i}", i, float(i)))
    policy, counter = MemoryPolicy(profile_max_tokens=120), TokenCounter()
    shown = shown_facts(profile, SessionState("s"), policy, counter)
    assert 0 < len(shown) < 40
    assert counter.count("About the user, remembered across chats:\n" +
                         "\n".join(f"- [{f.category}] {f.text}" for f in shown)) <= 120
    # Needs rank above background, the newest first within a category.
    assert {f.text for f in shown if "number 0 " in f.text or "number 30 " in f.text} == {
        "The user has fact number 0 with several words.",
        "The user has fact number 30 with several words."}
    assert "The user has fact number 39 with several words." in {f.text for f in shown}
    assert [f.id for f in shown] == sorted((f.id for f in shown), key=lambda i: int(i[1:]))
    assert shown_facts(profile, SessionState("s", private=True), policy, counter) == []


def test_reconcile_drops_removed_copies_and_takes_edits():
    state = SessionState("a", facts=[Fact("preference", "likes tea", 1, "f1"),
                                     Fact("need", "needs a ramp", 2, "f2"),
                                     Fact("decision", "flies on Monday", 3, "f3")])
    profile = UserProfile(facts=[ProfileFact("p1", "need", "needs a wide ramp", "a", "f2", 2)],
                          removed=[RemovedFact("a", "f1", "preference", "likes tea", 1,
                                               "forgotten"),
                                   RemovedFact("other", "f3", "decision", "x", 1, "retracted")])
    updated = reconcile(state, profile)
    assert [(f.id, f.text) for f in updated.facts] == [("f2", "needs a wide ramp"),
                                                       ("f3", "flies on Monday")]
    assert reconcile(updated, profile) is None  # nothing more to do
    assert state.facts[0].text == "likes tea"  # the input is not changed


def test_profile_edits_are_pure_and_round_trip():
    profile = UserProfile(facts=[ProfileFact("p1", "need", "a ramp", "a", "f1", 1, 5.0),
                                 ProfileFact("p2", "background", "lives in Oslo", "b", "f4", 2)])
    after = forget(profile, "p1", at=9.0)
    assert [f.id for f in after.facts] == ["p2"] and [f.id for f in profile.facts] == ["p1", "p2"]
    assert after.removed == [RemovedFact("a", "f1", "need", "a ramp", 1, "forgotten", 9.0)]
    assert UserProfile.from_dict(json.loads(json.dumps(after.to_dict()))) == after
    assert UserProfile.from_dict(None) == UserProfile()
    withdrawn = withdraw(after, "a", deleted=True)
    assert withdrawn.removed == [] and [f.id for f in withdrawn.facts] == ["p2"]
    assert withdraw(after, "a").removed == after.removed  # made private: the forgetting stays
    with pytest.raises(UnknownProfileFactError, match="p7"):
        forget(profile, "p7")
    assert profile.new_id() == "p3"


# ---------------------------------------------------------------- the page's requests

def test_the_host_lists_edits_forgets_and_makes_private():
    agent, model = new_agent()
    _, posted, ask = host_for(agent)
    assert run(ask({"type": "run", "id": 1, "session_id": "a", "text": "I'm vegetarian."}))["ok"]
    run(agent.wait_idle())
    run(agent.rename_session("a", "Food talk"))
    [row] = run(ask({"type": "profile", "id": 2}))["value"]
    assert (row["text"], row["session_id"], row["session_title"], row["session_listed"],
            row["turn_id"]) == ("The user is vegetarian.", "a", "Food talk", True, 1)
    edited = run(ask({"type": "edit_profile_fact", "id": 3, "fact_id": row["id"],
                      "text": "The user is vegetarian, eats fish."}))
    assert edited["ok"] and edited["value"]["text"] == "The user is vegetarian, eats fish."
    bad = run(ask({"type": "edit_profile_fact", "id": 4, "fact_id": row["id"], "text": " "}))
    assert not bad["ok"] and bad["error"]["name"] == "ValueError"
    gone = run(ask({"type": "forget_profile_fact", "id": 5, "fact_id": row["id"]}))
    assert gone["ok"] and run(ask({"type": "profile", "id": 6}))["value"] == []
    unknown = run(ask({"type": "forget_profile_fact", "id": 7, "fact_id": row["id"]}))
    assert unknown["error"]["name"] == "UnknownProfileFactError"
    assert "traceback" not in unknown["error"]
    # A new chat made private before its first message; the list and the memory say so.
    assert run(ask({"type": "set_private", "id": 8, "session_id": "new", "private": True}))["ok"]
    rows = {r["session_id"]: r for r in run(ask({"type": "sessions", "id": 9}))["value"]}
    assert rows["new"]["private"] is True and rows["a"]["private"] is False
    memory = run(ask({"type": "memory", "id": 10, "session_id": "new"}))["value"]
    assert memory["private"] is True and memory["profile"] == []
    wrong = run(ask({"type": "set_private", "id": 11, "session_id": "new", "private": "yes"}))
    assert not wrong["ok"]
    events = [p["event"] for p in posted if p["type"] == "event"]
    assert [e["data"]["action"] for e in events if e["type"] == "profile_updated"
            and e["data"]["by"] == "user"] == ["edited", "forgotten"]
    assert [e["session_id"] for e in events if e["type"] == "session_private"] == ["new"]
    assert any(e["type"] == "profile_updated" and e["data"]["by"] == "memory" for e in events)


def test_a_damaged_profile_record_reads_as_what_can_be_read():
    damaged = {"facts": [{"id": "p1", "category": "need", "text": "a ramp", "session_id": "a"},
                         {"text": "no id"}, "not a fact"],
               "removed": "not a list", "next_id": "x", "version": 3}
    profile = UserProfile.from_dict(damaged)
    assert [f.id for f in profile.facts] == ["p1"] and profile.removed == []
    assert (profile.next_id, profile.version) == (1, 3)
    assert UserProfile.from_dict({"facts": "nope"}) == UserProfile()


def test_a_compaction_goes_on_while_the_profile_cannot_be_read():
    class NoProfile(InMemoryStore):
        broken = False

        async def load_profile(self):
            if self.broken:
                raise StorageError("the profile record is unreadable", kind="unknown")
            return await super().load_profile()

    store = NoProfile()
    agent, _ = new_agent(store)
    say(agent, "a", "Hello.")
    store.broken = True
    say(agent, "a", "I'm vegetarian.")   # the turn and its memory pass work without it
    assert own_texts(agent, "a") == ["The user is vegetarian."]
    assert run(agent.compressions("a"))[-1].facts_error is None
    store.broken = False
    say(agent, "a", "Thanks.")   # the next pass gives the fact to the profile
    assert profile_texts(agent) == ["The user is vegetarian."]
