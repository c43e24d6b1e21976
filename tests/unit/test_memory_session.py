"""Memory sessions: a turn prompts only what is new, and the memory it reads is never
stale, half-appended or evicted (reload, abort, failed turns, overflow, compaction,
several chats, another base session)."""

from __future__ import annotations

import asyncio

import pytest

from py_agent import Agent, InMemoryStore, QuotaExceededError
from py_agent.model import ModelNetworkError, Purpose
from py_agent.testing import FunctionModel, FunctionSession, context_text, step_json, user_message
from tests.unit.long_chat import long_chat
from tests.unit.support import (LONG, SMALL, chat, echo_agent_reply, make_responder, run,
                                stopped_turn)


def first_steps(model: FunctionModel):
    return [c for c in model.calls_for(Purpose.STEP) if user_message(c)]


def appended(model: FunctionModel) -> list[str]:
    return [a.input for a in model.appends]


async def settle(agent: Agent) -> None:
    """The user reads the answer: background appends and compactions finish."""
    await agent.wait_idle()
    await agent.memory_sessions.wait_idle()


def test_a_turn_prompts_only_tools_and_message_and_the_turn_is_appended_after(make_agent):
    agent, model, _ = make_agent()

    async def scenario():
        await agent.run("My sister is called Ingrid.", session_id="s")
        assert appended(model) == []  # nothing to remember before the first turn
        await settle(agent)
        await agent.run("What is my sister called?", session_id="s")

    run(scenario())
    first, second = first_steps(model)
    assert first.input.startswith("Tools for this request:")
    assert second.input.startswith("Tools for this request:") and "Ingrid" not in second.input
    # The finished turn was appended to the memory session, which the next turn cloned.
    assert appended(model) == ["Earlier turn:\nUser: My sister is called Ingrid.\n"
                               "Assistant: You said: My sister is called Ingrid."]
    assert second.messages[-1]["content"] == appended(model)[0]
    assert second.messages[0]["role"] == "system"  # the prefix still comes first
    assert model.appends[0].purpose is Purpose.STEP and model.appends[0].input_tokens > 0


def test_appended_tokens_are_counted_apart_and_refused_past_the_window():
    model = FunctionModel(make_responder(), context_window=200)

    async def scenario():
        session = await model.create(initial_prompts=[{"role": "system", "content": "Be brief."}])
        before = session.context_usage
        await session.append("one two three")
        assert session.context_usage == before + model.appends[0].input_tokens
        with pytest.raises(QuotaExceededError):
            await session.append("word " * 300)
        return session

    session = run(scenario())
    assert model.calls == [] and len(model.appends) == 1 and model.quota_errors == 1
    assert session.messages[-1] == {"role": "user", "content": "one two three"}


def test_after_a_reload_the_memory_session_is_built_from_the_stored_state(make_agent):
    agent, _, store = make_agent()
    run(agent.run("Remember that my locker code is 4471.", session_id="s"))
    fresh, model, _ = make_agent(store=store)  # a reload: same storage, new agent and model
    run(fresh.run("What is my locker code?", session_id="s"))
    (step,) = first_steps(model)
    assert "4471" not in step.input and "4471" in context_text(step)
    (built,) = appended(model)
    assert built.startswith("Memory:") and "Earlier turn:\nUser: Remember that my locker" in built
    assert model.appends[0].seq < step.seq  # built before the turn's prompt, from storage


def test_an_aborted_turn_appends_nothing(make_agent):
    agent, model, _ = make_agent()
    run(agent.run("First message.", session_id="s"))
    run(settle(agent))
    model.latency = 0.5

    assert run(stopped_turn(agent, "Forget this one.", after=0.05)).status == "stopped"
    run(settle(agent))
    model.latency = 0
    run(agent.run("Next.", session_id="s"))
    step = first_steps(model)[-1]
    assert "Forget this one" not in context_text(step) and "First message." in context_text(step)
    assert not any("Forget this one" in text for text in appended(model))


def test_a_failed_turn_is_not_appended_and_a_failed_append_is_never_cloned(make_agent,
                                                                           monkeypatch):
    failing = {"step": False}

    def step(call):
        if failing["step"] and user_message(call):
            raise ModelNetworkError("the model went away")
        return echo_agent_reply(call)

    agent, model, _ = make_agent(step)
    run(agent.run("Turn one.", session_id="s"))
    run(settle(agent))
    failing["step"] = True
    assert run(agent.run("Turn two fails.", session_id="s")).status == "error"
    run(settle(agent))
    failing["step"] = False
    assert not any("Turn two fails" in text for text in appended(model))

    # An append that fails half-way: the memory session it was made on is dropped.
    original = FunctionSession.append

    async def broken_append(self, text, **kwargs):
        if "Turn three" in text:
            self.messages.append({"role": "user", "content": text[:20]})  # half of it
            raise ModelNetworkError("the append broke")
        return await original(self, text, **kwargs)

    monkeypatch.setattr(FunctionSession, "append", broken_append)
    run(agent.run("Turn three.", session_id="s"))
    run(settle(agent))
    assert agent.memory_sessions.live == 0
    monkeypatch.setattr(FunctionSession, "append", original)
    run(agent.run("Turn four.", session_id="s"))
    messages = first_steps(model)[-1].messages[7:]  # after the prefix
    memory = [m["content"] for m in messages if m["content"].startswith("Memory:")]
    # Rebuilt from the state: turn three whole, once; the half append is nowhere.
    assert len(memory) == 1 and memory[0].count("User: Turn three.") == 1
    assert not any(m["content"] == "Earlier turn:\nUser: T" for m in messages)


def test_a_turn_whose_clone_overflows_restarts_with_the_full_memory_and_rebuilds(make_agent):
    overflow = {"left": 1}

    def step(call):
        return echo_agent_reply(call)

    agent, model, _ = make_agent(step)
    original = FunctionSession.prompt

    async def prompt(self, text, **kwargs):
        if overflow["left"] and text.startswith("Tools for this request:") and \
                any(m["content"].startswith("Earlier turn:") for m in self.messages):
            overflow["left"] -= 1
            raise QuotaExceededError("overflowed")
        return await original(self, text, **kwargs)

    async def scenario():
        await agent.run("Remember the number 31337.", session_id="s")
        await settle(agent)
        FunctionSession.prompt = prompt
        try:
            result = await agent.run("Which number?", session_id="s")
        finally:
            FunctionSession.prompt = original
        await settle(agent)
        return result

    result = run(scenario())
    assert result.status == "answered"
    retry = first_steps(model)[-1]
    # The retry ran on a clone of the plain base, with the memory in its prompt.
    assert "31337" in retry.input and len(retry.messages) == 7
    assert agent.memory_sessions.live == 0  # the overflowed memory session is not reused
    run(agent.run("And now?", session_id="s"))
    assert first_steps(model)[-1].input.startswith("Tools for this request:")
    assert agent.memory_sessions.live == 1


def test_a_memory_session_that_leaves_too_little_room_is_rebuilt_within_it(make_agent):
    # A long message does not fit beside the whole memory session: it is rebuilt
    # from the view within the room left, which leaves the oldest turns out (as the
    # prompt did before), and nothing overflows.
    agent, model, _ = make_agent(lambda call: step_json(answer="Noted."), **SMALL)
    run(chat(agent, 8, wait=False))
    run(settle(agent))
    assert agent.memory_sessions.stats.built == 1
    result = run(agent.run("Please read this: " + "long words " * 850, session_id="s"))
    assert result.status == "answered"
    assert agent.memory_sessions.stats.built == 2
    step = first_steps(model)[-1]
    assert "User: Message number 0" not in context_text(step)
    assert "User: Message number 7" in context_text(step)
    assert model.quota_errors == 0 and model.overflow_events == 0


def test_a_compaction_rebuilds_in_the_background_and_swaps(make_agent, monkeypatch):
    agent, model, _ = make_agent(**SMALL)
    gate = asyncio.Event()
    original = FunctionSession.append

    async def gated(self, text, **kwargs):
        if text.startswith("Memory:\nSummary"):
            await gate.wait()  # the background rebuild waits here
        return await original(self, text, **kwargs)

    monkeypatch.setattr(FunctionSession, "append", gated)

    async def scenario():
        for i in range(30):
            await agent.run(f"Message number {i}: {LONG}", session_id="s")
            await agent.wait_idle()
            if agent.memory_sessions.rebuilding:
                break
        assert agent.memory_sessions.rebuilding, "no compaction happened"
        summary = (await agent.memory_state("s")).summary
        # The rebuild is not ready: the old memory session serves, without the summary.
        await agent.run("While it rebuilds.", session_id="s")
        old = first_steps(model)[-1]
        assert summary not in context_text(old) and "Message number 0" in context_text(old)
        gate.set()
        await settle(agent)
        await agent.run("After the swap.", session_id="s")
        return summary

    summary = run(scenario())
    new = first_steps(model)[-1]
    assert agent.memory_sessions.stats.rebuilt >= 1
    assert summary in context_text(new)
    # The turn that arrived during the rebuild was caught up, once.
    assert context_text(new).count("User: While it rebuilds.") == 1


def test_a_changed_fact_is_never_read_from_an_old_memory_session(make_agent):
    agent, model, _ = make_agent()
    run(agent.run("Hello there.", session_id="s"))
    run(settle(agent))
    from py_agent.state import CompressionRecord, Fact

    record = CompressionRecord(session_id="s", started_at=0, duration_ms=0, ok=True,
                               turn_ids=[], previous_summary="", summary_prompt="", summary="",
                               kind="facts")

    def refreshed(current):  # what a facts refresh commits
        state = current.copy()
        state.facts = [Fact(category="preference", text="The user is vegan now")]
        return state, record

    run(agent.sessions.commit_compaction("s", refreshed))
    run(agent.run("What should I cook?", session_id="s"))
    assert "The user is vegan now" in context_text(first_steps(model)[-1])


def test_only_the_most_recently_used_chats_keep_a_memory_session(make_agent):
    agent, model, _ = make_agent(memory_sessions=2)
    for chat_id in ("a", "b", "c"):
        run(agent.run(f"Hello from {chat_id}.", session_id=chat_id))
    assert agent.memory_sessions.live == 2 and not agent.memory_sessions.holds("a")
    assert agent.memory_sessions.stats.evicted == 1
    run(settle(agent))
    run(agent.run("Back in a.", session_id="a"))  # rebuilt from the state
    assert "Hello from a." in context_text(first_steps(model)[-1])
    assert agent.memory_sessions.live == 2 and not agent.memory_sessions.holds("b")
    run(agent.close())
    assert model.created + model.clones == model.destroyed  # close frees them all


def test_a_new_base_session_invalidates_the_memory_session(make_agent):
    agent, model, _ = make_agent()
    run(agent.run("Remember 27.", session_id="s"))
    run(settle(agent))
    old_base = agent.bases.existing(Purpose.STEP)
    agent.model = model  # what switching the model does: new base sessions
    run(agent.run("Which number?", session_id="s"))
    step = first_steps(model)[-1]
    assert agent.bases.existing(Purpose.STEP) is not old_base
    assert "Remember 27." in context_text(step)
    assert model.created == 2


def test_without_append_the_agent_prompts_the_memory_as_before(make_agent, monkeypatch):
    monkeypatch.delattr(FunctionSession, "append")
    agent, model, _ = make_agent()
    run(agent.run("Remember 27.", session_id="s"))
    run(agent.run("Which number?", session_id="s"))
    assert "Remember 27." in first_steps(model)[-1].input
    assert agent.memory_sessions.live == 0


def test_the_long_chat_reads_a_quarter_of_the_tokens_on_the_critical_path():
    today = run(long_chat(turns=120, memory_sessions=0))
    fast = run(long_chat(turns=120))
    assert fast.critical_tokens[100] * 4 <= today.critical_tokens[100]
    assert sum(fast.total_tokens.values()) <= sum(today.total_tokens.values())
    assert fast.quota_errors == fast.overflow_events == 0
    assert "[preference] The user is vegetarian" in fast.final_prompt
