import asyncio
import json

import pytest

from py_agent import (ModelUnavailableError, QuotaExceededError, RetryableToolError, StepPolicy,
                      tool)
from py_agent.model import ModelNetworkError, Purpose
from py_agent.openai_compat import ServerUnreachableError
from py_agent.testing import PromptCall, ScriptedReplies, step_json
from tests.unit.support import run, stopped_turn

CALLS: list[str] = []


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume or temperature."""
    CALLS.append(f"{value} {from_unit} {to_unit}")
    return f"{value * 28.3495:.2f} g"


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def script(*replies: str):
    scripted = ScriptedReplies(list(replies))
    return lambda call: scripted(call)


def test_tool_call_then_answer(make_agent):
    CALLS.clear()
    agent, model, _ = make_agent(script(
        step_json(thought="Convert.", tool="convert_units",
                  tool_input={"value": 3, "from_unit": "oz", "to_unit": "g"}),
        step_json(thought="Done.", answer="3 ounces is about 85 grams.")),
        tools=[convert_units, word_count])
    result = run(agent.run("How many grams is 3 ounces?", session_id="s1"))
    assert result.answer == "3 ounces is about 85 grams." and result.status == "answered"
    assert [s.kind for s in result.steps] == ["tool", "answer"]
    assert result.steps[0].observation == "85.05 g" and CALLS == ["3.0 oz g"]
    assert result.saved


def test_schema_enum_is_exactly_the_offered_tools_plus_none(make_agent):
    agent, model, _ = make_agent(tools=[convert_units, word_count])
    run(agent.run("convert 5 miles of length to km", session_id="s"))
    call = model.calls_for(Purpose.STEP)[0]
    offered = [s.tool.name for s in agent.retriever.retrieve("convert 5 miles of length to km")]
    assert "convert_units" in offered
    assert call.response_constraint["properties"]["toolName"]["enum"] == [*offered, "none"]
    assert call.response_constraint["required"] == ["thought", "toolName", "toolInput", "finalAnswer"]


def test_base_session_is_created_once_and_cloned_per_turn_with_deltas(make_agent):
    # Without memory sessions: each turn's first prompt carries the memory.
    agent, model, _ = make_agent(script(
        step_json(tool="word_count", tool_input="a b c"), step_json(answer="3 words."),
        step_json(answer="Hi again.")), tools=[word_count, convert_units], memory_sessions=0)
    run(agent.run("count words in a b c", session_id="s"))
    run(agent.run("hello", session_id="s"))
    steps = model.calls_for(Purpose.STEP)
    assert model.created == 1  # only the step base so far: no compaction ran
    assert model.clones == 2 and model.destroyed == 2
    assert steps[0].messages[0]["role"] == "system" and len(steps[0].messages) == 7
    assert "Tools for this request" in steps[0].input and steps[0].input.endswith("User: count words in a b c")
    # The second prompt of the turn is only the observation, in the same clone.
    assert steps[1].input == "Observation from word_count: 3"
    assert steps[1].session_id == steps[0].session_id
    # The next turn starts from a fresh clone of the base, not the previous turn's session.
    assert steps[2].session_id != steps[0].session_id and len(steps[2].messages) == 7
    assert "Recent turns:" in steps[2].input and "User: count words in a b c" in steps[2].input


@pytest.mark.parametrize("bad, fragment", [
    ("this is not json", "not a usable step: the reply was not valid JSON"),
    ("", "the reply was empty"),
    ('{"foo": 1}', "none of the fields"),
    (step_json(tool="launch_rockets", tool_input="now"), "no tool named 'launch_rockets'"),
    (step_json(tool="none"), 'toolName was "none" but finalAnswer was empty'),
])
def test_unusable_replies_get_corrective_observations(make_agent, bad, fragment):
    agent, model, _ = make_agent(script(bad, step_json(answer="Recovered.")), tools=[word_count])
    result = run(agent.run("count words please", session_id="s"))
    assert result.answer == "Recovered."
    assert result.steps[0].kind == "corrective" and fragment in result.steps[0].observation
    second = model.calls_for(Purpose.STEP)[1].input
    assert second.startswith("Observation: ") and fragment.split(":")[-1].strip() in second


def test_final_answer_with_unknown_tool_is_accepted_as_answer(make_agent):
    agent, _, _ = make_agent(script(step_json(tool="made_up", answer="It is 4.")))
    assert run(agent.run("what is 2+2", session_id="s")).answer == "It is 4."


def test_repeated_action_restates_the_earlier_result_without_running_again(make_agent):
    CALLS.clear()
    call = step_json(tool="convert_units", tool_input={"value": 1, "from_unit": "oz", "to_unit": "g"})
    same_reordered = step_json(tool="convert_units",
                               tool_input='{"to_unit": "g", "from_unit": "oz", "value": 1}')
    agent, model, _ = make_agent(script(call, same_reordered, step_json(answer="28 g.")),
                                 tools=[convert_units])
    result = run(agent.run("1 oz in g, mass conversion", session_id="s"))
    assert CALLS == ["1.0 oz g"]
    assert [s.kind for s in result.steps] == ["tool", "repeat", "answer"]
    assert "You already called convert_units" in result.steps[1].observation
    assert "28.35 g" in result.steps[1].observation


def test_iteration_cap_ends_with_a_clear_message(make_agent):
    replies = iter(range(100))
    agent, model, _ = make_agent(lambda call: f"nonsense {next(replies)}", max_steps=4)
    result = run(agent.run("loop forever", session_id="s"))
    assert result.status == "incomplete" and len(result.steps) == 4
    assert "could not finish this within 4 steps" in result.answer
    assert len(model.calls_for(Purpose.STEP)) == 4
    state = run(agent.memory_state("s"))
    assert state.recent_turns[0].status == "incomplete"  # the turn is kept, not lost


def test_a_model_stuck_on_the_same_call_ends_the_turn_the_second_time(make_agent):
    CALLS.clear()
    call = step_json(tool="convert_units", tool_input={"value": 1, "from_unit": "oz", "to_unit": "g"})
    agent, model, _ = make_agent(lambda c: call, tools=[convert_units], max_steps=7)
    result = run(agent.run("1 oz in g, mass conversion", session_id="s"))
    assert CALLS == ["1.0 oz g"]
    assert [s.kind for s in result.steps] == ["tool", "repeat", "repeat"]
    assert result.status == "incomplete" and len(model.calls_for(Purpose.STEP)) == 3
    assert "kept repeating the same step" in result.answer and "28.35 g" in result.answer


def test_the_same_unusable_reply_twice_again_ends_the_turn(make_agent):
    agent, model, _ = make_agent(lambda call: '{"thought": "cut', max_steps=7)
    result = run(agent.run("hello there", session_id="s"))
    assert [s.kind for s in result.steps] == ["corrective"] * 3
    assert result.status == "incomplete" and len(model.calls_for(Purpose.STEP)) == 3
    assert "could not be used and it kept giving the same one (the reply was not valid " \
        "JSON)" in result.answer
    state = run(agent.memory_state("s"))
    assert state.recent_turns[0].status == "incomplete"


def test_tool_errors_timeouts_and_retries_become_observations(make_agent):
    attempts = []

    @tool
    def flaky_lookup(query: str) -> str:
        """Look up a record in the flaky database."""
        attempts.append(query)
        raise RetryableToolError("database busy")

    @tool
    async def slow_lookup(query: str) -> str:
        """Look up a record in the slow archive."""
        await asyncio.sleep(30)

    agent, _, _ = make_agent(script(
        step_json(tool="flaky_lookup", tool_input="x"), step_json(tool="slow_lookup", tool_input="x"),
        step_json(answer="Both failed.")), tools=[flaky_lookup, slow_lookup])
    result = run(agent.run("lookup record x in the database or archive", session_id="s"))
    assert result.answer == "Both failed." and len(attempts) == 3
    assert "failed after 3 attempts: database busy" in result.steps[0].observation
    assert "did not finish within 0.3 s" in result.steps[1].observation
    assert not result.steps[0].ok and not result.steps[1].ok


def test_events_are_emitted_in_order(make_agent):
    events = []
    agent, _, _ = make_agent(script(step_json(thought="count", tool="word_count", tool_input="a b"),
                                    step_json(thought="done", answer="2")),
                             tools=[word_count], on_event=events.append)
    run(agent.run("count words a b", session_id="s"))
    kinds = [e.type for e in events]
    assert kinds == ["turn_started", "tools_retrieved", "step_started", "thought", "action",
                     "observation", "step_started", "thought", "answer", "turn_saved"]
    assert events[1].data["tools"][0]["name"] == "word_count"
    assert events[5].data == {"index": 1, "tool": "word_count", "text": "2", "ok": True,
                              "kind": "tool", "duration_ms": events[5].data["duration_ms"]}


def test_stream_yields_events_then_the_result(make_agent):
    agent, _, _ = make_agent()

    async def collect():
        return [item async for item in agent.stream("hi", session_id="s")]

    items = run(collect())
    assert items[0].type == "turn_started" and items[-1].answer == "You said: hi"


def test_a_failing_event_handler_does_not_break_the_turn(make_agent):
    def broken(event):
        raise RuntimeError("UI bug")

    agent, _, _ = make_agent(on_event=broken)
    assert run(agent.run("hi", session_id="s")).answer == "You said: hi"


def test_stop_ends_the_turn_cleanly_and_keeps_the_message_as_stopped(make_agent):
    agent, model, store = make_agent()
    model.latency = 5.0

    result = run(stopped_turn(agent, "slow question", after=0.1))
    assert result.status == "stopped" and result.answer == "" and result.saved
    [kept] = run(store.read_archive("s"))
    assert (kept.id, kept.user, kept.status) == (result.turn_id, "slow question", "stopped")
    # A stopped turn is not in the memory the model sees, and its id is used.
    state = run(store.load("s"))
    assert state.recent_turns == [] and state.next_turn_id == result.turn_id + 1
    # The turn's clone was freed; only the chat's memory session lives on.
    assert model.destroyed == model.clones - agent.memory_sessions.live


def test_model_errors_during_a_step_end_the_turn_with_a_message_and_keep_it(make_agent):
    def unavailable(call):
        raise ModelUnavailableError("model crashed")

    agent, _, store = make_agent(unavailable)
    result = run(agent.run("hello there", session_id="s"))
    assert result.status == "error" and "not available right now" in result.answer
    archive = run(store.read_archive("s"))
    assert archive[0].user == "hello there" and archive[0].status == "error"


class GpuLost(ModelUnavailableError):
    """A backend's own kind of "unavailable"."""


class LinkDropped(ModelNetworkError):
    """A backend's own kind of network failure."""


@pytest.mark.parametrize("error, expected", [
    (GpuLost("the GPU process crashed"), "not available right now"),
    (LinkDropped("socket closed"), "could not be reached"),
    (ServerUnreachableError("Nothing is listening at http://127.0.0.1:9/v1: is the model "
                            "server running?"), "Nothing is listening at http://127.0.0.1:9/v1"),
])
def test_a_failed_turn_reads_by_the_errors_kind_not_its_class_name(make_agent, error, expected):
    """A subclass reads as its kind; an error whose message speaks to the user (a
    server's) is shown as it is."""
    def step(call):
        raise error

    agent, _, _ = make_agent(step)
    result = run(agent.run("hello there", session_id="s"))
    assert result.status == "error" and expected in result.answer


def test_a_step_call_that_never_answers_is_stopped_and_the_next_turn_works(make_agent):
    hanging = {"on": True}

    async def step(call):
        if hanging["on"]:
            await asyncio.Event().wait()
        return step_json(answer="Back again.")

    agent, model, store = make_agent(step, step_policy=StepPolicy(timeout_s=0.05))
    result = run(asyncio.wait_for(agent.run("hello there", session_id="s"), 5))
    assert result.status == "error" and "ModelTimeoutError" in result.error
    assert "within 0.05 s" in result.answer and "saved" in result.answer
    # The stopped call's session is gone; only the chat's memory session lives on.
    assert model.clones - agent.memory_sessions.live == model.destroyed
    assert run(store.read_archive("s"))[0].status == "error"
    hanging["on"] = False
    assert run(agent.run("are you there?", session_id="s")).answer == "Back again."


def test_quota_overflow_mid_turn_restarts_once_with_condensed_steps(make_agent):
    state = {"n": 0}

    def overflow_once(call: PromptCall):
        state["n"] += 1
        if state["n"] == 1:
            return step_json(tool="word_count", tool_input="a b c")
        if state["n"] == 2:
            raise QuotaExceededError("full", requested=10_000, quota=9216)
        return step_json(answer="3 words")

    agent, model, _ = make_agent(overflow_once, tools=[word_count])
    result = run(agent.run("count the words a b c", session_id="s"))
    assert result.answer == "3 words"
    restart = model.calls_for(Purpose.STEP)[-1].input
    assert "Steps already taken this turn:\n- word_count(a b c) → 3" in restart


def test_message_too_long_for_the_window_is_refused_clearly(make_agent):
    agent, _, store = make_agent()
    result = run(agent.run("word " * 40_000, session_id="s"))
    assert result.status == "error" and "too long" in result.answer
    assert len(run(store.read_archive("s"))) == 1


def test_garbage_and_enormous_model_output_never_crash(make_agent):
    agent, _, _ = make_agent(script("\x00\xff{{{", "}" * 100_000, json.dumps([1, 2]),
                                    json.dumps({"toolName": 7}), step_json(answer="fine")))
    result = run(agent.run("hello", session_id="s"))
    assert result.answer == "fine" and [s.kind for s in result.steps][:4] == ["corrective"] * 4


def test_empty_prompt_is_a_clear_error(make_agent):
    agent, _, _ = make_agent()
    with pytest.raises(ValueError, match="non-empty"):
        run(agent.run("   ", session_id="s"))


def test_cancelling_the_run_task_keeps_the_turn_as_stopped_and_frees_the_clone(make_agent):
    agent, model, store = make_agent()
    model.latency = 5.0

    async def scenario():
        task = asyncio.ensure_future(agent.run("question", session_id="s"))
        for _ in range(500):  # until the step is being asked (a fixed wait flakes under load)
            if model.calls:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
    assert [(t.user, t.status) for t in run(store.read_archive("s"))] == [("question", "stopped")]
    assert model.clones - agent.memory_sessions.live == model.destroyed == 1
    model.latency = 0
    again = run(agent.run("again", session_id="s"))
    assert again.answer == "You said: again" and again.turn_id == 2
