"""The step schema constrains each offered tool's arguments; follow-ups reach the retriever."""

import json

import jsonschema
import pytest

from py_agent import tool
from tests.unit.demo import demo_tools
from py_agent.model import Purpose
from py_agent.prompting import step_schema
from py_agent.testing import ScriptedReplies, step_json
from tests.unit.support import run

DEMO = {t.name: t for t in demo_tools()}


def step(name, tool_input, answer=""):
    return {"thought": "t", "toolName": name, "toolInput": tool_input, "finalAnswer": answer}


def valid(schema, value) -> bool:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


def test_each_offered_tool_is_bound_to_its_own_arguments():
    schema = step_schema([DEMO["convert_units"], DEMO["calculate"], DEMO["current_datetime"],
                          DEMO["split_bill"]])
    jsonschema.Draft202012Validator.check_schema(schema)
    assert valid(schema, step("convert_units", {"value": 3, "from_unit": "oz", "to_unit": "g"}))
    assert valid(schema, step("calculate", {"expression": "17*23"}))
    assert valid(schema, step("calculate", "17*23"))  # one string parameter: a string is fine
    assert valid(schema, step("current_datetime", {}))
    assert valid(schema, step("split_bill", {"total": 84.5, "people": 3}))
    assert valid(schema, step("none", "", "Rome."))
    # Wrong types, missing or unknown arguments, arguments of another tool, unknown tools:
    assert not valid(schema, step("convert_units", {"value": "three", "from_unit": "oz",
                                                    "to_unit": "g"}))
    assert not valid(schema, step("convert_units", {"value": 3, "from_unit": "oz"}))
    assert not valid(schema, step("convert_units", "3 oz in g"))
    assert not valid(schema, step("split_bill", {"total": 84.5, "people": 2.5}))
    assert not valid(schema, step("calculate", {"expression": "1+1", "precise": True}))
    assert not valid(schema, step("calculate", {"value": 3, "from_unit": "oz", "to_unit": "g"}))
    assert not valid(schema, step("roll_dice", "2d6"))
    assert not valid(schema, step("none", {"x": 1}, "hi"))
    # A tool's step carries no answer, and a final answer no arguments: a small model
    # held to the schema cannot fill the other field until its reply is cut off.
    assert not valid(schema, step("calculate", {"expression": "17*23"}, "391"))
    assert not valid(schema, step("none", "None", "Rome."))


def test_enums_from_literal_hints_reach_the_schema():
    from typing import Literal

    @tool
    def brew(tea: Literal["green", "black"], minutes: int = 3) -> str:
        """Brew tea."""

    schema = step_schema([brew])
    assert valid(schema, step("brew", {"tea": "green"}))
    assert not valid(schema, step("brew", {"tea": "oolong"}))


def test_plain_names_still_give_a_name_only_schema():
    schema = step_schema(["a", "b"])
    assert schema["properties"]["toolName"]["enum"] == ["a", "b", "none"]
    assert "anyOf" not in schema


def test_the_model_gets_the_argument_schema_and_bad_arguments_come_back_as_observations(
        make_agent):
    scripted = ScriptedReplies([
        step_json(tool="convert_units", tool_input={"value": "lots", "from_unit": "kg",
                                                    "to_unit": "lb"}),
        step_json(tool="convert_units", tool_input={"value": 70, "from_unit": "kg",
                                                    "to_unit": "lb"}),
        step_json(answer="About 154 pounds.")])
    agent, model, _ = make_agent(lambda call: scripted(call), tools=demo_tools())
    result = run(agent.run("what's 70 kg in pounds", session_id="s"))
    assert result.answer == "About 154 pounds."
    first, second = result.steps[0], result.steps[1]
    assert not first.ok and "expected a number" in first.observation
    assert second.ok and "154.3" in second.observation
    constraint = model.calls_for(Purpose.STEP)[0].response_constraint
    branches = {b["properties"]["toolName"]["const"]: b["properties"]["toolInput"]
                for b in constraint["anyOf"]}
    assert branches["convert_units"]["properties"]["value"] == {"type": "number"}
    assert set(branches) == {*constraint["properties"]["toolName"]["enum"]}
    json.dumps(constraint)  # it crosses to the browser as JSON


def test_a_follow_up_is_offered_the_previous_turns_tool(make_agent):
    scripted = ScriptedReplies([
        step_json(tool="convert_units", tool_input={"value": 30, "from_unit": "C",
                                                    "to_unit": "F"}),
        step_json(answer="86 °F."),
        step_json(answer="Sure.")])
    events = []
    agent, _, _ = make_agent(lambda call: scripted(call), tools=demo_tools(),
                             on_event=events.append)
    run(agent.run("convert 30 celsius", session_id="s"))
    run(agent.run("and what about 45?", session_id="s"))
    offered = [e.data["tools"] for e in events if e.type == "tools_retrieved"][-1]
    by_name = {t["name"]: t for t in offered}
    assert "convert_units" in by_name
    assert "previous turn" in by_name["convert_units"]["why"]["signals"]


@pytest.mark.parametrize("message", ["hi", "thanks!"])
def test_chitchat_offers_only_none(make_agent, message):
    agent, model, _ = make_agent(tools=demo_tools(), compact_tool_enabled=False)
    run(agent.run(message, session_id="s"))
    constraint = model.calls_for(Purpose.STEP)[0].response_constraint
    assert constraint["properties"]["toolName"]["enum"] == ["none"]
