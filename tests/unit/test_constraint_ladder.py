"""The response-constraint ladder (py_agent/constraints.py): a model that refuses a
constraint is asked again under a simpler one, the turn still answers, the level that
worked is remembered per model and named in the trace, and the change is announced once.
The same for fact extraction, and for a model server that refuses ``response_format``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from demo_tools.calculator import calculate
from py_agent import Agent, InMemoryStore, MemoryPolicy
from py_agent.constraints import (ConstraintLadder, ConstraintLevel, ModelConstraints,
                                  level_below)
from py_agent.model import Purpose, ResponseConstraintError
from py_agent.openai_compat import OpenAIModel, ResponseFormatRefusedError
from py_agent.testing import (FunctionModel, PromptCall, refusing_every_constraint,
                              refusing_keywords, step_json, user_message)
from tests.fake_openai_server import FakeServer, agent_responder
from tests.unit.support import make_responder, run

QUESTION = "What is 17 times 23? Use the calculator."
STRICT = ("anyOf", "oneOf", "const")  # what the e2e fake's strict-schema profile refuses


def calculator_step(call: PromptCall) -> str:
    """What a model writes at any level: a calculator call for the question (its
    arguments as an object, as the prompt's signature shows them), then the answer
    from the observation, or an echo."""
    if call.input.startswith("Observation from calculate: "):
        result = call.input.rpartition(" = ")[2]
        return step_json(thought="The calculator answered.", answer=f"17 times 23 is {result}.")
    message = user_message(call) or ""
    if re.search(r"17 times 23", message):
        return step_json(thought="This needs the calculator.", tool="calculate",
                         tool_input={"expression": "17 * 23"})
    return step_json(thought="I can answer directly.", answer=f"You said: {message}")


def agent_over(model: Any, **kwargs: Any) -> Agent:
    return Agent(model=model, store=InMemoryStore(), tools=[calculate], **kwargs)


def step_constraints(model: FunctionModel) -> list[dict | None]:
    return [c.response_constraint for c in model.calls_for(Purpose.STEP)]


def kind_of(constraint: dict | None) -> str:
    """Which ladder level a step constraint is, read from its shape."""
    if constraint is None:
        return "none"
    if "anyOf" in constraint:
        return "full"
    return "names" if "toolName" in constraint.get("properties", {}) else "object"


@pytest.mark.parametrize("check, level", [
    (None, "full"),
    (refusing_keywords(*STRICT), "names"),
    (refusing_keywords("enum", "anyOf"), "object"),
    (refusing_every_constraint(), "none"),
])
def test_the_step_asks_for_the_richest_constraint_the_model_takes(check, level):
    model = FunctionModel(make_responder(calculator_step), constraint_check=check)
    events: list = []
    agent = agent_over(model, on_event=events.append)
    result = run(agent.run(QUESTION, session_id="calc"))

    assert result.status == "answered" and "391" in result.answer
    assert [s.tool for s in result.steps] == ["calculate", "none"]
    assert result.steps[0].observation == "17 * 23 = 391"
    assert [s.constraint for s in result.steps] == [level, level]
    assert [s.to_dict()["constraint"] for s in result.steps] == [level, level]
    # Every call that reached the model was made at that level, after one refusal per
    # richer level, in order (and only in the first step).
    assert {kind_of(c) for c in step_constraints(model)} == {level}
    richer = ["full", "names", "object", "none"][:["full", "names", "object", "none"].index(level)]
    assert [kind_of(c) for _, c, _ in model.refusals] == richer
    announced = [e.data for e in events if e.type == "constraint_level"]
    if level == "full":
        assert announced == []
    else:
        assert [(a["purpose"], a["level"], a["index"]) for a in announced] == [("step", level, 1)]
        assert [r["level"] for r in announced[0]["refused"]] == richer
        assert "NotSupportedError" in announced[0]["refused"][0]["error"]
    started = [e.data["constraint"] for e in events if e.type == "step_started"]
    assert started == ["full", level]   # step 2 starts where step 1 ended up


def test_the_names_level_uses_nothing_a_strict_engine_refuses():
    model = FunctionModel(make_responder(calculator_step),
                          constraint_check=refusing_keywords(*STRICT))
    run(agent_over(model).run(QUESTION, session_id="calc"))
    schema = step_constraints(model)[0]
    assert refusing_keywords(*STRICT)(schema) is None
    assert set(schema["properties"]["toolName"]["enum"]) >= {"calculate", "none"}
    assert schema["properties"]["toolInput"] == {"type": ["string", "object"]}


def test_the_level_that_worked_is_remembered_for_later_turns_and_announced_once():
    model = FunctionModel(make_responder(calculator_step),
                          constraint_check=refusing_keywords(*STRICT))
    events: list = []
    agent = agent_over(model, on_event=events.append)
    first = run(agent.run(QUESTION, session_id="calc"))
    refused = len(model.refusals)
    second = run(agent.run(QUESTION, session_id="calc"))
    other_chat = run(agent.run("and hello there", session_id="other"))

    assert "391" in first.answer and "391" in second.answer
    assert other_chat.answer == "You said: and hello there"
    assert len(model.refusals) == refused == 1   # later turns start at the names level
    assert {s.constraint for r in (second, other_chat) for s in r.steps} == {"names"}
    assert len([e for e in events if e.type == "constraint_level"]) == 1
    assert agent.bases.constraints().levels() == {"step": "names"}


def test_what_was_learnt_belongs_to_the_model_it_was_learnt_of():
    strict = FunctionModel(make_responder(calculator_step),
                           constraint_check=refusing_keywords(*STRICT))
    chrome = FunctionModel(make_responder(calculator_step))
    agent = agent_over(strict)
    run(agent.run(QUESTION, session_id="calc"))
    agent.model = chrome
    assert [s.constraint for s in run(agent.run(QUESTION, session_id="calc")).steps] \
        == ["full", "full"]
    agent.model = strict
    assert [s.constraint for s in run(agent.run(QUESTION, session_id="calc")).steps] \
        == ["names", "names"]
    assert len(strict.refusals) == 1 and chrome.refusals == []


def test_a_reply_that_could_not_comply_steps_down_for_that_call_only():
    """A SyntaxError (the model could not write a compliant reply) is not a refusal of
    the constraint: the call is made again a level down, nothing is remembered."""
    failed: list[str] = []

    def step(call: PromptCall) -> str:
        if kind_of(call.response_constraint) == "full" and not failed:
            failed.append(call.input)
            raise ResponseConstraintError("SyntaxError: the reply broke the constraint",
                                          original_name="SyntaxError")
        return calculator_step(call)

    model = FunctionModel(make_responder(step))
    events: list = []
    agent = agent_over(model, on_event=events.append)
    result = run(agent.run(QUESTION, session_id="calc"))
    assert "391" in result.answer
    assert [s.constraint for s in result.steps] == ["names", "full"]
    assert [e for e in events if e.type == "constraint_level"] == []
    assert agent.bases.constraints().levels() == {}


def test_a_refusal_with_no_level_left_is_the_turns_error():
    constraints = ModelConstraints()

    async def call(schema):
        raise ResponseConstraintError("NotSupportedError: no", original_name="NotSupportedError")

    with pytest.raises(ResponseConstraintError):
        run(constraints.ask(Purpose.STEP, lambda level: {"type": "object"}, call))
    assert constraints.level(Purpose.STEP) is ConstraintLevel.NONE
    assert level_below(Purpose.FACTS, ConstraintLevel.FULL) is ConstraintLevel.OBJECT
    ladder = ConstraintLadder()
    model = object()
    assert ladder.of(model) is ladder.of(model) and ladder.of(object()) is not ladder.of(model)


# ----------------------------------------------------------------- fact extraction

def facts_from_text(call: PromptCall) -> str:
    """An extractor that writes its JSON inside chatter, as a model with no constraint
    might: the parser must still find it."""
    found = re.search(r"I(?:'m| am) (vegetarian|vegan)", call.input)
    facts = [{"category": "preference", "text": f"The user is {found.group(1)}"}] if found else []
    return "Here are the facts:\n```json\n" + json.dumps({"facts": facts}) + "\n```"


@pytest.mark.parametrize("check, level", [
    (None, "full"),
    (refusing_keywords("enum"), "object"),
    (refusing_every_constraint(), "none"),
])
def test_fact_extraction_takes_the_same_ladder(check, level):
    model = FunctionModel(make_responder(calculator_step, facts=facts_from_text),
                          constraint_check=check)
    events: list = []
    agent = agent_over(model, on_event=events.append,
                       memory=MemoryPolicy(min_recent_turns=1))
    for message in ("Hello, I am vegetarian.", "What should I cook tonight?"):
        run(agent.run(message, session_id="food"))
    report = run(agent.compact("food"))
    state = run(agent.memory_state("food"))

    assert report.ok
    assert [f.text for f in state.facts] == ["The user is vegetarian"]
    facts_calls = model.calls_for(Purpose.FACTS)
    assert facts_calls and {kind_of_facts(c.response_constraint) for c in facts_calls} == {level}
    announced = [e.data for e in events if e.type == "constraint_level"
                 and e.data["purpose"] == "facts"]
    assert [a["level"] for a in announced] == ([] if level == "full" else [level])
    if level != "full":
        assert announced[0]["label"] == {"object": "plain JSON object",
                                         "none": "no constraint (parsed as text)"}[level]


def kind_of_facts(constraint: dict | None) -> str:
    if constraint is None:
        return "none"
    return "full" if "facts" in constraint.get("properties", {}) else "object"


# ----------------------------------------------------------------- a model server

def test_a_server_that_takes_no_response_format_still_answers_through_the_calculator():
    with FakeServer(agent_responder, response_formats=()) as server:
        model = OpenAIModel(server.url, "fake-model", context_window=8192, stream=False)
        agent = agent_over(model)
        first = run(agent.run(QUESTION, session_id="calc"))
        refused_before = len(server.chat_requests())
        second = run(agent.run(QUESTION, session_id="calc"))
        bodies = server.chat_requests()
        run(agent.close())

    assert "391" in first.answer and "391" in second.answer
    assert [s.tool for s in first.steps] == ["calculate", "none"]
    assert {s.constraint for s in first.steps + second.steps} == {"none"}
    # The second turn sends no response_format at all: what was learnt holds.
    assert all("response_format" not in b for b in bodies[refused_before:])
    assert len(bodies) - refused_before == 2


def test_a_server_that_refuses_anyof_gets_the_tool_name_enum_as_json_schema():
    with FakeServer(agent_responder, refused_keywords=("anyOf",)) as server:
        model = OpenAIModel(server.url, "fake-model", context_window=8192, stream=False)
        result = run(agent_over(model).run(QUESTION, session_id="calc"))
        bodies = server.chat_requests()

    assert "391" in result.answer
    assert [s.constraint for s in result.steps] == ["names", "names"]
    sent = [b["response_format"] for b in bodies]
    # json_schema and json_object each refused the full schema; the enum went as json_schema.
    assert [f["type"] for f in sent] == ["json_schema", "json_object", "json_schema",
                                         "json_schema"]
    assert "anyOf" not in json.dumps(sent[2])
    assert model.schema_mode == "json_schema"


def test_a_schema_refused_in_every_form_is_a_refused_response_constraint():
    with FakeServer(agent_responder, response_formats=()) as server:
        model = OpenAIModel(server.url, "fake-model", context_window=8192, stream=False)

        async def ask():
            session = await model.create(initial_prompts=[{"role": "user", "content": "hi"}])
            return await session.prompt("User: hi", response_constraint={"type": "object"})

        with pytest.raises(ResponseFormatRefusedError) as raised:
            run(ask())
    assert isinstance(raised.value, ResponseConstraintError)
    assert "response_format" in str(raised.value)
