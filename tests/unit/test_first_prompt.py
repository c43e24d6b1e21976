"""The first prompt of a turn (py_agent.turn.first_prompt), built from plain data."""

from __future__ import annotations

from py_agent import MemoryPolicy, tool
from py_agent.memory import MemoryAccountant
from py_agent.results import StepTrace
from py_agent.retrieval import ToolRetriever
from py_agent.state import Fact, SessionState, StepRecord, Turn
from py_agent.tokens import TokenCounter
from py_agent.turn.first_prompt import build_first_prompt, without_memory


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume or temperature."""
    return "85.05 g"


MESSAGE = "How many grams are 3 ounces?"
POLICY = MemoryPolicy(reserved_turn_tokens=400, summary_target_tokens=100,
                      summary_max_tokens=200)


def offered():
    return ToolRetriever([convert_units]).retrieve(MESSAGE)


def accountant() -> MemoryAccountant:
    return MemoryAccountant(POLICY, TokenCounter())


def memory(turns: int = 3) -> SessionState:
    return SessionState(
        session_id="s", summary="The user cooks for four on Sundays.",
        facts=[Fact("preference", "The user is vegetarian", 1, "f1")],
        recent_turns=[Turn(id=i, user=f"Question number {i} about dinner plans.",
                           answer=f"Answer number {i}.",
                           steps=[StepRecord(tool="convert_units", tool_input={"value": i},
                                             observation="x" * 400)])
                      for i in range(1, turns + 1)])


def test_without_memory_the_prompt_is_tools_and_message_only():
    tools = offered()
    text = build_first_prompt(MESSAGE, tools, None, 5000, accountant())
    assert text == without_memory(MESSAGE, tools)
    assert text.startswith("Tools for this request:\n- convert_units(")
    assert text.endswith(f"User: {MESSAGE}") and "Memory:" not in text


def test_the_memory_comes_first_with_summary_facts_and_turns_old_observations_cut():
    text = build_first_prompt(MESSAGE, offered(), memory(), 5000, accountant())
    assert text.startswith("Memory:\nSummary of the earlier conversation:\n"
                           "The user cooks for four on Sundays.")
    assert "Key facts:\n- [preference] The user is vegetarian" in text
    for i in (1, 2, 3):
        assert f"User: Question number {i} about dinner plans." in text
    # Observations are cut in all but the newest micro_compact_keep_turns (2) turns.
    assert text.count("x" * 400) == 2 and text.count("[trimmed]") == 1
    assert text.index("Memory:") < text.index("Tools for this request:") < text.index(
        f"User: {MESSAGE}")


def test_the_oldest_turns_stay_out_when_the_room_is_short_but_the_message_never_does():
    counter = accountant()
    roomy = build_first_prompt(MESSAGE, offered(), memory(), 5000, counter)
    fixed = counter.counter.count(without_memory(MESSAGE, offered()))
    # Room for the fixed part and the reserve, and a little memory: not every turn fits.
    tight = build_first_prompt(MESSAGE, offered(), memory(), fixed + 400 + 150, counter)
    assert "Question number 1" in roomy and "Question number 1" not in tight
    assert tight.endswith(f"User: {MESSAGE}")
    assert counter.counter.count(tight) < counter.counter.count(roomy)


def test_a_tight_restart_halves_the_memory_room_and_lists_the_steps_taken():
    steps = [StepTrace(index=1, kind="tool", tool="convert_units",
                       tool_input={"value": 3, "from_unit": "oz", "to_unit": "g"},
                       observation="85.05 g")]
    free = 1400
    normal = build_first_prompt(MESSAGE, offered(), memory(6), free, accountant(), steps)
    tight = build_first_prompt(MESSAGE, offered(), memory(6), free, accountant(), steps,
                               tight=True)
    assert "Steps already taken this turn:" not in normal
    assert tight.endswith("Steps already taken this turn:\n- convert_units("
                          '{"value": 3, "from_unit": "oz", "to_unit": "g"}) → 85.05 g')
    assert tight.count("User: Question number") < normal.count("User: Question number")
