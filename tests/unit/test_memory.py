import pytest

from py_agent import Fact, MemoryPolicy, MemoryPolicyError, SessionState, Turn
from py_agent.memory import MemoryAccountant
from py_agent.state import StepRecord


def turn(i: int, words: int = 20, observation: str = "") -> Turn:
    steps = [StepRecord(thought="t", tool="lookup", tool_input="q", observation=observation)] \
        if observation else []
    return Turn(id=i, user=f"message {i} " + "word " * words, answer=f"answer {i}", steps=steps)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"keep_recent_ratio": 0.7, "trigger_ratio": 0.7}, "must be below trigger_ratio"),
    ({"keep_recent_ratio": 0.8, "trigger_ratio": 0.5}, "must be below trigger_ratio"),
    ({"trigger_ratio": 0}, "trigger_ratio must be in"),
    ({"reserved_turn_tokens": -1}, "reserved_turn_tokens must be positive"),
    ({"summary_target_tokens": 500, "summary_max_tokens": 100}, "at least summary_target_tokens"),
    ({"min_recent_turns": -2}, "min_recent_turns must not be negative"),
])
def test_contradictory_policies_are_refused(kwargs, fragment):
    with pytest.raises(MemoryPolicyError, match=fragment):
        MemoryPolicy(**kwargs)


def test_policy_that_cannot_fit_the_window_is_refused():
    with pytest.raises(MemoryPolicyError, match="cannot hold"):
        MemoryPolicy().check_window(context_window=2048, prefix_tokens=600)
    MemoryPolicy().check_window(context_window=9216, prefix_tokens=600)


def test_budget_subtracts_prefix_reserve_summary_facts_and_recall():
    accountant = MemoryAccountant(MemoryPolicy())
    state = SessionState("s", summary="x" * 400, facts=[Fact("preference", "likes tea")],
                         recent_turns=[turn(1)])
    budget = accountant.budget(state, context_window=9216, prefix=500)
    assert budget.summary == 100
    assert budget.recall == MemoryPolicy().recall_max_tokens == 400
    assert budget.turn_budget == 9216 - 500 - 2048 - 100 - budget.facts - 400
    off = MemoryAccountant(MemoryPolicy(recall_k=0)).budget(state, context_window=9216,
                                                             prefix=500)
    assert off.recall == 0 and off.turn_budget == budget.turn_budget + 400
    assert budget.trigger == int(budget.turn_budget * 0.7)
    assert budget.keep == int(budget.turn_budget * 0.3)
    assert not budget.due


def test_trigger_is_on_tokens_not_turn_count():
    accountant = MemoryAccountant(MemoryPolicy())
    few_big = SessionState("a", recent_turns=[turn(i, words=1500) for i in range(4)])
    many_small = SessionState("b", recent_turns=[turn(i, words=2) for i in range(60)])
    assert accountant.budget(few_big, 9216, 500).due
    assert not accountant.budget(many_small, 9216, 500).due


def test_boundary_keeps_the_recency_budget_and_a_minimum_of_turns():
    accountant = MemoryAccountant(MemoryPolicy(min_recent_turns=2))
    turns = [turn(i, words=40) for i in range(10)]
    cost = accountant.turn_tokens(turns[0], micro=True)
    cut = accountant.boundary(turns, keep_budget=cost * 4 + 5)
    assert cut == 6  # the four newest fit the budget
    # A budget too small for anything still keeps the minimum.
    assert accountant.boundary(turns, keep_budget=1) == 8
    # A single huge newest turn is kept alone... along with the minimum.
    huge = turns[:-1] + [turn(99, words=5000)]
    assert accountant.boundary(huge, keep_budget=cost * 4) == 8


def test_view_micro_compacts_old_observations_only():
    policy = MemoryPolicy(micro_compact_keep_turns=1, micro_compact_chars=40)
    accountant = MemoryAccountant(policy)
    long_obs = "observation " * 50
    state = SessionState("s", recent_turns=[turn(1, 2, long_obs), turn(2, 2, long_obs)])
    view, dropped = accountant.view(state, room=10_000)
    assert dropped == 0
    assert "[trimmed]" in view.turns[0] and len(view.turns[0]) < 200
    assert long_obs.strip() in view.turns[1]


def test_view_leaves_out_oldest_turns_rather_than_overflow():
    accountant = MemoryAccountant(MemoryPolicy())
    state = SessionState("s", summary="kept summary", recent_turns=[turn(i, 200) for i in range(6)])
    view, dropped = accountant.view(state, room=300)
    assert dropped == 5 and len(view.turns) == 1 and "message 5" in view.turns[0]
    assert view.summary == "kept summary"
