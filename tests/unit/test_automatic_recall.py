"""Automatic recall and the recall tool (py_agent.turn.recalled, py_agent.turn.recall_tool):
what a message brings into its turn's first prompt, within the room the memory policy
plans, never what the prompt holds already, never from a private session of another chat,
never into the memory session; and the tool the model may call."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from py_agent import Agent, InMemoryStore, MemoryPolicy
from py_agent.model import Purpose
from py_agent.prefix import plan_prefix
from py_agent.testing import FunctionModel, PromptCall, context_text, step_json, user_message
from py_agent.tokens import TokenCounter
from py_agent.turn.recalled import RECALLED_HEADING
from tests.unit.support import LONG, SMALL, echo_agent_reply, make_responder, run

DETAIL = "For the record, the Wi-Fi password at the cabin is TROUT-7731."
QUESTION = "What was the Wi-Fi password at the cabin again?"


def answers_from_recalled_text(call: PromptCall) -> str:
    """A model that knows the password only if it has read it: in this prompt (the
    recalled section, or the memory), or in what its session read before."""
    message = user_message(call)
    if message is None:  # an observation: answer with it
        return step_json(answer=call.input.split(":", 1)[-1].strip()[:300])
    if "password" in message.lower():
        seen = re.search(r"TROUT-\d+", call.input) or re.search(r"TROUT-\d+",
                                                                 context_text(call))
        return step_json(answer=f"It is {seen.group(0)}." if seen else "I don't remember.")
    return echo_agent_reply(call)


def agent_with(step=answers_from_recalled_text, *, memory: MemoryPolicy | None = None,
               store=None, window: int = SMALL["window"], **kwargs):
    model = FunctionModel(make_responder(step), context_window=window)
    events: list = []
    agent = Agent(model=model, store=store if store is not None else InMemoryStore(),
                  memory=memory or SMALL["memory"], on_event=events.append, **kwargs)
    return agent, model, events


async def long_chat(agent: Agent, session_id: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        await agent.run(f"Tell me about topic number {i}: {LONG}", session_id=session_id)
    await agent.wait_idle()


def first_prompts(model: FunctionModel) -> list[PromptCall]:
    return [c for c in model.calls_for(Purpose.STEP) if user_message(c)]


def recalled_events(events, source="auto") -> list[dict]:
    return [e.data for e in events if e.type == "recalled" and e.data["source"] == source]


def test_a_detail_long_compacted_is_answered_from_a_recalled_turn(make_agent):
    agent, model, events = agent_with()

    async def scenario():
        await agent.run("Hi! We're planning the cabin weekend.", session_id="s")
        await agent.run(DETAIL, session_id="s")           # turn 2
        await long_chat(agent, "s", 25)
        return await agent.run(QUESTION, session_id="s")

    result = run(scenario())
    state = run(agent.memory_state("s"))
    assert state.compactions and all(t.id > 2 for t in state.recent_turns)
    assert "TROUT" not in state.summary  # the summary kept the gist only
    assert result.answer == "It is TROUT-7731."
    prompt = first_prompts(model)[-1].input
    section = prompt[prompt.index(RECALLED_HEADING):prompt.index("Tools for this request:")]
    assert "\u27e6data from this chat, " in section and DETAIL in section
    (event,) = recalled_events(events)[-1:]
    shown = [h for h in event["hits"] if h["shown"]]
    assert [(h["session_id"], h["turn_id"]) for h in shown][:1] == [("s", 2)]
    assert shown[0]["why"]["coverage"] >= 0.4 and "user" in shown[0]["why"]["signals"]
    assert event["tokens"] <= event["budget"] == SMALL["memory"].recall_max_tokens
    inspected = state.recalled
    assert [(h["session_id"], h["turn_id"]) for h in inspected][:1] == [("s", 2)]


def test_without_recall_the_same_question_goes_unanswered(make_agent):
    agent, model, events = agent_with(memory=replace(SMALL["memory"], recall_k=0))

    async def scenario():
        await agent.run(DETAIL, session_id="s")
        await long_chat(agent, "s", 25)
        return await agent.run(QUESTION, session_id="s")

    assert run(scenario()).answer == "I don't remember."
    assert RECALLED_HEADING not in first_prompts(model)[-1].input
    assert recalled_events(events) == []


def test_turns_the_prompt_holds_already_are_never_recalled(make_agent):
    agent, model, events = agent_with()

    async def scenario():
        await agent.run(DETAIL, session_id="s")
        await agent.run("Nice, thanks.", session_id="s")
        return await agent.run(QUESTION, session_id="s")

    result = run(scenario())
    assert RECALLED_HEADING not in first_prompts(model)[-1].input
    considered = [h for e in recalled_events(events) for h in e["hits"]]
    assert all(h["turn_id"] not in (1, 2, 3) for h in considered)
    # The detail is still a raw turn of the memory, where the model reads it.
    assert result.answer == "It is TROUT-7731."


def test_a_message_that_matches_only_weakly_brings_nothing(make_agent):
    agent, model, events = agent_with()

    async def scenario():
        await agent.run(DETAIL, session_id="s")
        await long_chat(agent, "s", 12)
        await agent.run("Could you suggest a name for my new puppy?", session_id="s")

    run(scenario())
    assert RECALLED_HEADING not in first_prompts(model)[-1].input
    for event in recalled_events(events)[-1:]:
        assert not any(h["shown"] for h in event["hits"])
        assert all("at least 40% needed" in h["reason"] for h in event["hits"])


def test_recalled_turns_stay_within_the_planned_room(make_agent):
    tight = replace(SMALL["memory"], recall_max_tokens=120)
    agent, model, events = agent_with(memory=tight)
    directions = " The cabin is the third one past the old mill, then left at the lake. " * 12

    async def scenario():
        for chat in ("x1", "x2", "x3"):
            await agent.run(DETAIL + directions, session_id=chat)
        await agent.run(QUESTION, session_id="s")

    run(scenario())
    prompt = first_prompts(model)[-1].input
    section = prompt[prompt.index(RECALLED_HEADING):prompt.index("\n\nTools for this request:")]
    assert agent.accountant.counter.count(section) <= 120
    # the best turn, cut to fit, its words as data
    assert DETAIL in section and section.endswith("… \u27e6end of data\u27e7")
    event = recalled_events(events)[-1]
    assert event["tokens"] <= event["budget"] == 120
    assert [h["shown"] for h in event["hits"]] == [True, False, False]
    assert [h["reason"] for h in event["hits"][1:]] == ["no room left"] * 2


def test_the_prefix_plan_and_the_raw_turns_budget_make_room_for_recall():
    counter = TokenCounter()
    roomy = plan_prefix(9216, MemoryPolicy(), counter)
    assert not roomy.scaled and roomy.to_dict()["recall_max_tokens"] == 400
    assert plan_prefix(9216, MemoryPolicy(recall_k=0), counter).to_dict()[
        "recall_max_tokens"] == 0
    small = plan_prefix(2048, MemoryPolicy(), counter)
    assert small.scaled and 96 <= small.policy.recall_max_tokens < 400  # scaled with the rest
    agent, _, _ = agent_with(window=2048, memory=MemoryPolicy())

    async def scenario():
        await agent.run(DETAIL, session_id="s")
        await long_chat(agent, "s", 30)
        return await agent.run(QUESTION, session_id="s")

    assert run(scenario()).answer == "It is TROUT-7731."  # no overflow on a tiny window
    assert agent.model.quota_errors == 0  # type: ignore[attr-defined]


def test_a_private_session_is_not_recalled_into_another_chat_but_into_itself(make_agent):
    store = InMemoryStore()
    agent, model, events = agent_with(store=store)

    async def scenario():
        await agent.run(DETAIL, session_id="secret")
        state = await store.load("secret")
        state.private = True
        await store.save(state)
        await agent.sessions.refresh("secret")
        await agent.run(QUESTION, session_id="other")
        other = first_prompts(model)[-1].input
        await long_chat(agent, "secret", 25)
        await agent.run(QUESTION, session_id="secret")
        return other, first_prompts(model)[-1].input

    other, own = run(scenario())
    assert "TROUT" not in other
    asked_elsewhere = [e.data for e in events if e.type == "recalled" and e.session_id == "other"]
    assert not any(h["session_id"] == "secret" for e in asked_elsewhere for h in e["hits"])
    assert DETAIL in own  # its own older turns are the user's own to recall


def test_another_chat_s_turn_is_recalled_with_that_chat_s_title(make_agent):
    agent, model, events = agent_with()

    async def scenario():
        await agent.run(DETAIL, session_id="cabin")
        await agent.rename_session("cabin", "Cabin weekend")
        return await agent.run(QUESTION, session_id="new")

    assert run(scenario()).answer == "It is TROUT-7731."
    assert '\u27e6data from the chat "Cabin weekend", ' in first_prompts(model)[-1].input


def test_recalled_text_enters_the_first_prompt_never_the_memory_session(make_agent):
    agent, model, events = agent_with()

    async def scenario():
        await agent.run(DETAIL, session_id="cabin")
        await agent.run("Hello, new chat here.", session_id="s")
        await agent.wait_idle()
        await agent.memory_sessions.wait_idle()
        await agent.run(QUESTION, session_id="s")          # on the memory session's clone
        await agent.memory_sessions.wait_idle()
        await agent.run("And how long is the drive?", session_id="s")

    run(scenario())
    question, follow_up = first_prompts(model)[-2:]
    assert question.messages[-1]["content"].startswith("Earlier turn:")  # a memory session
    assert question.input.startswith(RECALLED_HEADING) and "TROUT-7731" in question.input
    appended = [a.input for a in model.appends]
    answered = [text for text in appended if QUESTION in text]
    assert answered == [f"Earlier turn:\nUser: {QUESTION}\nAssistant: It is TROUT-7731."]
    assert not any(RECALLED_HEADING in text for text in appended)
    assert not any(RECALLED_HEADING in m["content"] for m in follow_up.messages)


def tool_user(call: PromptCall) -> str:
    """A model that asks the recall tool when the user asks what was decided."""
    message = user_message(call)
    if message is None:
        return step_json(answer="From the archive: " + call.input.split(":", 1)[-1].strip())
    if "what did we decide" in message.lower():
        offered = call.response_constraint["properties"]["toolName"]["enum"]
        if "recall" in offered:
            return step_json(thought="Look it up.", tool="recall",
                             tool_input={"query": "boat rental decision"})
        return step_json(answer="NOT OFFERED: " + ", ".join(offered))
    return echo_agent_reply(call)


def test_the_model_can_call_the_recall_tool(make_agent):
    agent, model, events = agent_with(tool_user)

    async def scenario():
        await agent.run("We decided on the boat rental from Marina Azul, 9 am pickup.",
                        session_id="trip")
        return await agent.run("What did we decide last week about the boat?",
                               session_id="other")

    result = run(scenario())
    step = next(s for s in result.steps if s.tool == "recall")
    assert step.kind == "tool" and step.ok
    assert "Marina Azul" in step.observation and '\u27e6data from the chat "We decided' in step.observation
    assert result.answer.startswith("From the archive:") and "Marina Azul" in result.answer
    (event,) = recalled_events(events, "tool")
    assert event["query"] == "boat rental decision"
    assert [h["turn_id"] for h in event["hits"]][:1] == [1]


def test_the_retriever_offers_the_recall_tool_for_questions_about_earlier_talk():
    agent, _, _ = agent_with()
    for message in ("what did we decide last week", "remind me what you recommended",
                    "what was the name of that restaurant I told you about"):
        offered = [s.tool.name for s in agent.retriever.retrieve(message)]
        assert "recall" in offered, (message, offered)


def test_the_recall_tool_takes_no_everyday_request_s_tool_from_the_offer():
    from py_agent.retrieval import ToolRetriever
    from tests.unit import retrieval_sets
    data = retrieval_sets.everyday_set()
    if data is None:
        pytest.skip("the everyday request set is missing")
    with_recall = ToolRetriever(data.tools, top_k=3)
    without = ToolRetriever([t for t in data.tools if t.name != "recall"], top_k=3)
    lost, offered = [], 0
    for query in data.queries:
        got = {s.tool.name for s in with_recall.retrieve(query.text, previous=query.previous)}
        before = {s.tool.name for s in without.retrieve(query.text, previous=query.previous)}
        offered += "recall" in got
        if before & query.expected and not got & query.expected:
            lost.append(query.text)
    assert lost == []
    assert offered <= len(data.queries) // 8   # offered to few requests it does not serve


def test_the_recall_tool_says_when_nothing_matches_and_needs_a_query(make_agent):
    from py_agent.turn.recalled import recall_for_tool
    agent, _, _ = agent_with()
    run(agent.run(DETAIL, session_id="s"))
    now = agent.archive_recall.clock()
    text, hits = run(recall_for_tool(agent.archive_recall, "other", "volcano eruptions", set(),
                                     now))
    assert hits == [] and "Nothing in earlier conversations matches 'volcano eruptions'" in text
    text, hits = run(recall_for_tool(agent.archive_recall, "other", "  ", set(), now))
    assert hits == [] and "needs a query" in text
    text, hits = run(recall_for_tool(agent.archive_recall, "other", "cabin wifi password",
                                     set(), now))
    assert [h.turn_id for h in hits][:1] == [1] and "TROUT-7731" in text
    from py_agent.tools import RunContext
    builtin = next(t for t in agent.tools if t.name == "recall")
    # it reaches the archive only through a call's context, never on its own
    assert "not connected" in run(builtin.fn(RunContext(), query="x"))
