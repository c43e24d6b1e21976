import asyncio
from dataclasses import replace

import pytest

from py_agent import InMemoryStore, ModelUnavailableError, StorageError, UnknownSessionError
from py_agent.model import Purpose
from py_agent.testing import PromptCall, context_text, step_json, user_message
from tests.unit.support import compactions, LONG, SMALL, chat, preference_then_chat, run, summarizer_reply


def test_compaction_triggers_on_tokens_and_folds_old_turns_into_summary(make_agent):
    agent, model, store = make_agent(**SMALL)
    run(chat(agent, 12))
    state = run(agent.memory_state("s"))
    assert state.compactions >= 1
    assert "Message number 0" in state.summary
    assert len(state.recent_turns) >= 2 and state.recent_turns[-1].user.startswith("Message number 11")
    assert not state.budget.due
    records = run(compactions(agent))
    assert records and records[0].ok and records[0].tokens_after < records[0].tokens_before
    assert records[0].turn_ids[0] == 1
    # Every raw turn is in the archive, compacted or not.
    assert [t.id for t in run(store.read_archive("s"))] == list(range(1, 13))


def test_short_turns_do_not_trigger_compaction(make_agent):
    agent, model, _ = make_agent(**SMALL)

    async def scenario():
        for i in range(15):
            await agent.run(f"hi {i}", session_id="s")
        await agent.wait_idle()

    run(scenario())
    assert run(agent.memory_state("s")).compactions == 0
    assert model.calls_for(Purpose.SUMMARY) == []


def test_run_returns_before_compaction_and_turns_added_meanwhile_survive(make_agent):
    gate = asyncio.Event()

    async def slow_summary(call: PromptCall) -> str:
        await gate.wait()
        return summarizer_reply(call)

    agent, model, _ = make_agent(summary=slow_summary, **SMALL)

    async def scenario():
        await chat(agent, 9, wait=False)
        assert (await agent.memory_state("s")).compacting  # answered while compaction waits
        await agent.run("I arrived during the compaction", session_id="s")
        gate.set()
        await agent.wait_idle()

    run(scenario())
    state = run(agent.memory_state("s"))
    assert state.compactions >= 1
    assert any(t.user == "I arrived during the compaction" for t in state.recent_turns)
    summarized = {i for r in run(compactions(agent)) for i in r.turn_ids}
    kept = {t.id for t in state.recent_turns}
    assert not summarized & kept and summarized | kept == set(range(1, 11))


def test_failed_summary_keeps_raw_turns_and_is_retried_later(make_agent):
    outcomes = iter([ModelUnavailableError("down"), "<turns>leaked</turns> the user said things",
                     None])

    def flaky_summary(call: PromptCall) -> str:
        outcome = next(outcomes, None)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome if outcome is not None else summarizer_reply(call)

    # Retried at once (no back-off), and the fallback only after a third failure.
    policy = replace(SMALL["memory"], retry_backoff_s=0, fallback_after_failures=3)
    agent, model, store = make_agent(summary=flaky_summary, window=SMALL["window"],
                                     memory=policy)

    async def turns_until(condition, start=0):
        for i in range(start, start + 30):
            await agent.run(f"Message number {i}: {LONG}", session_id="s")
            await agent.wait_idle()
            if condition(await compactions(agent)):
                return i + 1
        raise AssertionError("condition never met")

    first_failure = run(turns_until(lambda records: len(records) == 1))
    state = run(agent.memory_state("s"))
    assert state.failed_compactions == 1 and state.compactions == 0 and state.summary == ""
    assert len(state.recent_turns) == first_failure  # the raw turns stayed
    # The next turn retries; the leaked-tag summary is rejected; the one after succeeds.
    run(turns_until(lambda records: len(records) == 3, start=first_failure))
    records = run(compactions(agent))
    assert [r.ok for r in records] == [False, False, True]
    assert "down" in records[0].error and "wrapper tags" in records[1].error
    state = run(agent.memory_state("s"))
    assert state.compactions == 1 and "Message number 0" in state.summary


def test_key_facts_survive_and_shape_later_prompts(make_agent):
    agent, model, _ = make_agent(**SMALL)
    run(preference_then_chat(agent, 14))
    state = run(agent.memory_state("s"))
    assert [f.text for f in state.facts] == ["The user is vegetarian"]
    assert state.facts_by_category() == {"preference": ["The user is vegetarian"]}
    assert all("vegetarian" not in t.user for t in state.recent_turns)  # turn 1 is compacted
    run(agent.run("suggest a recipe", session_id="s"))
    last_first_prompt = [c for c in model.calls_for(Purpose.STEP) if user_message(c)][-1]
    assert "- [preference] The user is vegetarian" in context_text(last_first_prompt)
    # Extraction ran more than once, yet the fact is stored once.
    assert len(model.calls_for(Purpose.FACTS)) >= 2


def test_manual_compaction_with_focus(make_agent):
    agent, model, _ = make_agent()
    run(chat(agent, 5))
    assert run(agent.memory_state("s")).compactions == 0
    report = run(agent.compact("s", focus="keep the dietary constraints"))
    assert report.ok and report.compacted_turns == 3
    assert "keep the dietary constraints" in model.calls_for(Purpose.SUMMARY)[-1].input
    state = run(agent.memory_state("s"))
    assert len(state.recent_turns) == 2 and state.compactions == 1
    assert run(compactions(agent))[-1].trigger == "manual"
    nothing = run(agent.compact("s"))
    assert not nothing.ok and nothing.error == "nothing to compact"


def test_the_model_can_call_the_compact_tool(make_agent):
    def step(call: PromptCall) -> str:
        message = user_message(call)
        if message and "compact your memory" in message:
            return step_json(tool="compact", tool_input={"focus": "the travel plans"})
        if call.input.startswith("Observation from compact"):
            return step_json(answer="Done, memory compacted.")
        return step_json(answer="ok")

    agent, model, _ = make_agent(step)
    run(chat(agent, 4))
    result = run(agent.run("please compact your memory now", session_id="s"))
    assert result.answer == "Done, memory compacted." and result.compaction_scheduled
    assert result.steps[0].kind == "compact"
    run(agent.wait_idle())
    record = run(compactions(agent))[-1]
    assert record.ok and record.trigger == "tool" and record.focus == "the travel plans"


class FlakyStore(InMemoryStore):
    """Every write fails while ``broken`` holds an error."""

    broken: StorageError | None = None

    def _check_failure(self) -> None:
        if self.broken is not None:
            raise self.broken
        super()._check_failure()


def test_storage_errors_lose_nothing(make_agent):
    store = FlakyStore()
    agent, model, _ = make_agent(store=store)
    run(agent.run("first", session_id="s"))
    store.broken = StorageError("quota exceeded", kind="quota")
    events = []
    agent.on_event = events.append
    result = run(agent.run("second", session_id="s"))
    assert result.answer == "You said: second" and not result.saved
    error = next(e for e in events if e.type == "storage_error")
    assert error.data["kind"] == "quota" and "kept in memory" in error.data["message"]
    state = run(agent.memory_state("s"))
    assert state.unsaved_turns == 1 and [t.user for t in state.recent_turns] == ["first", "second"]
    assert [t.user for t in run(agent.transcript("s"))] == ["first", "second"]
    # The next successful write saves the pending turn too.
    store.broken = None
    third = run(agent.run("third", session_id="s"))
    assert third.saved and [e.data["unsaved"] for e in events if e.type == "turn_saved"] == [0]
    assert [(t.user, t.status) for t in run(store.read_archive("s"))] == [
        ("first", "answered"), ("second", "answered"), ("third", "answered")]
    assert run(agent.memory_state("s")).unsaved_turns == 0


def test_a_turn_whose_start_could_not_be_written_is_still_saved_at_its_end(make_agent):
    store = InMemoryStore()
    agent, _, _ = make_agent(store=store)
    store.fail_next = StorageError("busy", kind="blocked")  # the write of the turn's start
    assert run(agent.run("hello", session_id="s")).saved
    assert [(t.user, t.status) for t in run(store.read_archive("s"))] == [("hello", "answered")]


def test_unreadable_storage_keeps_the_chat_going_in_memory_without_overwriting(make_agent):
    class BrokenStore(InMemoryStore):
        async def load(self, session_id):
            raise StorageError("database blocked", kind="blocked")

    store = BrokenStore()
    events = []
    agent, _, _ = make_agent(store=store, on_event=events.append, **SMALL)
    results = [run(agent.run(f"Message number {i}: {LONG}", session_id="s")) for i in range(10)]
    run(agent.wait_idle())
    assert all(r.status == "answered" and not r.saved for r in results)
    warning = next(e for e in events if e.type == "storage_error")
    assert warning.data["kind"] == "blocked" and "goes on in memory" in warning.data["message"]
    state = run(agent.memory_state("s"))
    assert state.detached and state.unsaved_turns == 10 and state.compactions >= 1
    assert len(run(agent.transcript("s"))) == 10  # nothing lost: exportable from memory
    assert store.writes == 0  # never overwrote what it could not read


def test_unknown_sessions_raise_a_clear_error(make_agent):
    agent, _, _ = make_agent()
    for call in (agent.memory_state("nope"), agent.compact("nope"), agent.transcript("nope"),
                 agent.compressions("nope")):
        with pytest.raises(UnknownSessionError, match="unknown session: 'nope'"):
            run(call)


def test_sessions_are_separate_renamable_and_deletable(make_agent):
    agent, _, store = make_agent()
    run(agent.run("about cats", session_id="a"))
    run(agent.run("about dogs", session_id="b"))
    assert [t.user for t in run(agent.memory_state("a")).recent_turns] == ["about cats"]
    assert run(agent.memory_state("b")).title == "about dogs"
    run(agent.rename_session("a", "  Cat   questions "))
    assert run(store.load("a")).title == "Cat questions"
    assert {i.session_id for i in run(store.list_sessions())} == {"a", "b"}
    assert run(agent.delete_session("a")) and not run(agent.delete_session("a"))
    with pytest.raises(UnknownSessionError):
        run(agent.memory_state("a"))


def test_state_reloads_from_the_store_in_a_new_agent(make_agent):
    agent, _, store = make_agent(**SMALL)
    run(chat(agent, 10))
    before = run(agent.memory_state("s"))
    again, _, _ = make_agent(store=store, **SMALL)
    after = run(again.memory_state("s"))
    assert after.summary == before.summary and after.recent_turns == before.recent_turns
    assert run(again.run("continue", session_id="s")).turn_id == 11


def test_a_window_too_small_for_any_prefix_is_a_clear_error(make_agent):
    agent, _, _ = make_agent(window=700)
    result = run(agent.run("hello", session_id="s"))
    assert result.status == "error" and "cannot hold" in result.error


def test_unavailable_model_is_reported(make_agent):
    agent, model, _ = make_agent()
    model.set_availability("downloadable")
    result = run(agent.run("hello", session_id="s"))
    assert result.status == "error" and "not available" in result.answer


def test_the_budget_is_estimated_before_any_model_session_exists(make_agent):
    agent, model, store = make_agent()
    run(agent.run("hello there", session_id="s"))
    measured = run(agent.memory_state("s"))
    assert measured.budget is not None and not measured.budget_estimated
    assert measured.to_dict()["budget"]["estimated"] is False
    assert measured.budget.prefix == agent.bases.existing(Purpose.STEP).context_usage

    reloaded, model2, _ = make_agent(store=store)  # a page reload: no model session yet
    estimate = run(reloaded.memory_state("s"))
    assert model2.created == 0 and not reloaded.bases.purposes  # no session, so no download
    assert estimate.budget_estimated and estimate.to_dict()["budget"]["estimated"] is True
    assert estimate.budget.context_window == model2.context_window == 9216
    assert abs(estimate.budget.prefix - measured.budget.prefix) < 0.5 * measured.budget.prefix
    assert estimate.budget.turns == measured.budget.turns > 0
    assert not estimate.budget.due and estimate.budget.trigger > 0


def test_the_estimate_falls_back_to_gemini_nanos_window(make_agent):
    from py_agent.bases import DEFAULT_CONTEXT_WINDOW

    class NoWindow:  # like the browser bridge: the window is known only from a session
        async def availability(self):
            return "available"

        async def create(self, **kwargs):
            raise AssertionError("memory_state must not create a session")

    agent, _, store = make_agent()
    run(agent.run("hello", session_id="s"))
    bare = type(agent)(model=NoWindow(), store=store)
    budget = run(bare.memory_state("s")).budget
    assert budget.context_window == DEFAULT_CONTEXT_WINDOW == 9216 and budget.prefix > 0
