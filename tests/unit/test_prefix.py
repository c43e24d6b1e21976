"""Prefix compression: a compact instruction and fewer examples when the window is tight."""

import pytest

from py_agent import MemoryPolicy, MemoryPolicyError
from py_agent.prefix import COMPACT_SYSTEM_INSTRUCTION, plan_prefix, turn_room
from py_agent.model import Purpose
from py_agent.testing import context_text
from py_agent.tokens import TokenCounter
from tests.unit.support import LONG, run

COUNTER = TokenCounter()


@pytest.mark.parametrize("window, level, scaled, messages", [
    (9216, "full", False, 7),    # system + two worked examples (4 + 2 messages)
    (4096, "compact", True, 5),  # short system + the tool-call example
    (2048, "minimal", True, 1),  # short system alone
])
def test_the_prefix_shrinks_with_the_window(window, level, scaled, messages):
    plan = plan_prefix(window, MemoryPolicy(), COUNTER, tools_tokens=120)
    assert (plan.level, plan.scaled, len(plan.messages)) == (level, scaled, messages)
    assert plan.tokens <= MemoryPolicy().max_prefix_ratio * window
    room = turn_room(window, plan.tokens, plan.policy, 120)
    assert room >= MemoryPolicy().min_turns_ratio * window
    if level != "full":
        assert plan.messages[0]["content"] == COMPACT_SYSTEM_INSTRUCTION
        assert "did not fit" in plan.reason or "scaled" in plan.reason
    if scaled:
        assert plan.policy.reserved_turn_tokens < MemoryPolicy().reserved_turn_tokens


def test_long_tool_descriptions_compress_the_prefix_on_a_large_window():
    # (3,200 tool tokens: with the user profile's 300-token share and the 400 tokens of
    # recalled turns planned too, 3,400 leave too little room for any prefix without
    # scaling the policy.)
    plan = plan_prefix(9216, MemoryPolicy(), COUNTER, tools_tokens=3200)
    assert plan.level != "full" and not plan.scaled


def test_a_callers_own_instruction_is_kept_while_examples_go():
    plan = plan_prefix(2048, MemoryPolicy(), COUNTER, system_instruction="Be a pirate.")
    assert plan.messages[0]["content"] == "Be a pirate." and plan.level == "compact"


def test_a_window_too_small_for_anything_is_refused():
    with pytest.raises(MemoryPolicyError, match="cannot hold even the minimal prefix"):
        plan_prefix(700, MemoryPolicy(), COUNTER)


@pytest.mark.parametrize("window", [2048, 4096, 9216])
def test_an_agent_on_a_small_window_keeps_talking_without_overflow(make_agent, window):
    events = []
    agent, model, _ = make_agent(window=window, on_event=events.append)

    async def scenario():
        await agent.run("I'm vegetarian, please remember that.", session_id="s")
        for i in range(40):
            await agent.run(f"Message number {i}: {LONG}", session_id="s")
        await agent.wait_idle()

    run(scenario())
    step_base = next(c for c in model.calls if c.purpose is Purpose.STEP)
    plan = agent.prefix_plan
    assert step_base.messages[:len(plan.messages)] == plan.messages
    assert model.quota_errors == 0 and model.overflow_events == 0
    state = run(agent.memory_state("s"))
    assert state.compactions >= 1 and state.prefix["level"] == plan.level
    planned = [e for e in events if e.type == "prefix_planned"]
    if window == 9216:
        assert plan.level == "full" and not planned and agent.policy == agent.requested_policy
    else:
        assert planned and planned[0].data["level"] == plan.level != "full"
        assert agent.policy.reserved_turn_tokens < agent.requested_policy.reserved_turn_tokens
    # The key fact of turn 1 reaches the last prompt whatever the window.
    last = [c for c in model.calls_for(Purpose.STEP) if "Tools for this request" in c.input][-1]
    assert "The user is vegetarian" in context_text(last)


def test_the_policy_in_use_changes_in_one_announced_step_not_as_a_side_effect(make_agent):
    events = []
    agent, model, _ = make_agent(window=2048, on_event=events.append)
    requested = agent.requested_policy
    run(agent.bases.get(Purpose.STEP))   # making the step base plans, and changes nothing
    assert agent.prefix_plan.scaled and agent.policy == requested
    assert run(agent.run("hi", session_id="s")).ok
    changed = [e.data for e in events if e.type == "policy_changed"]
    assert len(changed) == 1 and agent.policy == agent.prefix_plan.policy != requested
    assert changed[0]["window"] == 2048 and changed[0]["scaled"] and changed[0]["reason"]
    assert changed[0]["before"]["reserved_turn_tokens"] == requested.reserved_turn_tokens
    assert changed[0]["after"]["reserved_turn_tokens"] == agent.policy.reserved_turn_tokens
    run(agent.run("and again", session_id="s"))
    assert len([e for e in events if e.type == "policy_changed"]) == 1   # said once
    # Another model with a larger window: the policy asked for is back, and said so.
    agent.model = type(model)(model.fn, context_window=9216)
    assert run(agent.run("hello", session_id="s")).ok
    changed = [e.data for e in events if e.type == "policy_changed"]
    assert len(changed) == 2 and agent.policy == requested and not changed[1]["scaled"]


def test_the_real_window_is_learnt_from_the_session_and_the_prefix_made_again(make_agent):
    class NoWindowAttribute:
        """Like the browser bridge: the window is known only once a session exists."""

        def __init__(self, model):
            self.inner = model

        async def availability(self):
            return await self.inner.availability()

        async def create(self, **kwargs):
            return await self.inner.create(**kwargs)

    agent, model, _ = make_agent(window=2048)
    agent.model = NoWindowAttribute(model)
    assert run(agent.run("hi", session_id="s")).ok
    assert model.created == 2  # planned for 9,216, made again for 2,048
    assert agent.prefix_plan.level == "minimal" and agent.prefix_plan.window == 2048


def test_the_estimate_before_any_session_uses_the_plan(make_agent):
    agent, model, store = make_agent(window=2048)
    run(agent.run("hello there", session_id="s"))
    fresh, model2, _ = make_agent(window=2048, store=store)
    estimate = run(fresh.memory_state("s"))
    assert model2.created == 0 and estimate.budget_estimated
    assert estimate.prefix["level"] == "minimal" and estimate.budget.reserved < 2048
    measured = run(agent.memory_state("s")).budget
    assert abs(estimate.budget.prefix - measured.prefix) < 0.5 * measured.prefix
