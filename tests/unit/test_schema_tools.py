"""Tools from a JSON Schema (py_agent.tools.schema): the same Tool as @tool makes, checked
against the schema, with wrong arguments explained to the model."""

import asyncio

import jsonschema
import pytest

from py_agent import InvalidToolSchemaError, ToolArgumentError, schema_tool, tool
from py_agent.model import Purpose
from py_agent.prompting import step_schema
from py_agent.retrieval import ToolRetriever
from py_agent.testing import ScriptedReplies, step_json
from py_agent.tools.schema import check_schema, inline_refs
from tests.unit.support import run

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city, e.g. Lisbon"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14,
                 "description": "How many days ahead"},
    },
    "required": ["city"],
}
BOOKING = {
    "type": "object",
    "$defs": {"guest": {"type": "object",
                        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                        "required": ["name"]}},
    "properties": {
        "hotel": {"type": "string"},
        "guests": {"type": "array", "items": {"$ref": "#/$defs/guest"}, "minItems": 1},
        "nights": {"type": "integer"},
    },
    "required": ["hotel", "guests"],
}


def weather_tool(calls=None):
    def forecast(**kwargs):
        if calls is not None:
            calls.append(kwargs)
        return f"{kwargs['city']}: sunny"
    return schema_tool("get_weather", "Get the weather forecast for a city.", WEATHER, forecast)


def test_a_schema_tool_is_a_tool_like_any_other():
    t = weather_tool()
    assert (t.name, t.description) == ("get_weather", "Get the weather forecast for a city.")
    assert [(p.name, p.required) for p in t.params] == [
        ("city", True), ("unit", False), ("days", False)]
    assert t.params[2].description == "How many days ahead"
    assert t.signature() == 'get_weather(city: string, [unit: "celsius"|"fahrenheit"], ' \
                            '[days: integer])'
    assert t.bind({"city": "Lisbon", "days": "3"}) == {"city": "Lisbon", "days": 3}
    assert t.bind("Porto") == {"city": "Porto"}  # one required argument: a string will do
    assert t(city="Faro") == "Faro: sunny"


def test_the_callable_gets_the_arguments_the_model_gave_and_no_schema_defaults():
    # A schema's "default" documents what the callable does without the argument; it is
    # not written into the call (a tool server applies its own defaults, and a benchmark
    # scores the arguments the model chose).
    schema = {"type": "object", "required": ["path"],
              "properties": {"path": {"type": "string"},
                             "hidden": {"type": "boolean", "default": False},
                             "options": {"type": "object", "default": {},
                                         "properties": {"depth": {"type": "integer",
                                                                  "default": 1}}}}}
    t = schema_tool("ls", "List a folder.", schema, lambda **kwargs: kwargs)
    assert t.bind({"path": "/tmp"}) == {"path": "/tmp"}
    assert t.bind({"path": "/tmp", "options": {}}) == {"path": "/tmp", "options": {}}


def test_nested_fields_reach_the_prompt_and_refs_are_inlined_for_the_step_schema():
    t = schema_tool("book_hotel", "Book hotel rooms.", BOOKING, lambda **kw: "booked")
    assert t.signature() == ("book_hotel(hotel: string, guests: list of {name: string, "
                             "[age: integer]}, [nights: integer])")
    schema = step_schema([t])
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "$ref" not in str(schema) and "$defs" not in str(schema)
    good = {"thought": "t", "toolName": "book_hotel", "finalAnswer": "",
            "toolInput": {"hotel": "Ritz", "guests": [{"name": "Ana", "age": 30}]}}
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "toolInput": {"hotel": "Ritz", "guests": [{"age": 3}]}},
                            schema)
    with pytest.raises(jsonschema.ValidationError):  # closed, like @tool's
        jsonschema.validate({**good, "toolInput": {**good["toolInput"], "spa": True}}, schema)


@pytest.mark.parametrize("tool_input, says", [
    ({"unit": "celsius"}, "missing argument(s) city"),
    ({"city": "Rome", "unit": "kelvin"}, "argument 'unit': 'kelvin' is not one of \"celsius\", \"fahrenheit\""),
    ({"city": "Rome", "days": 30}, "argument 'days' must be smaller than or equal to 14"),
    ({"city": "Rome", "days": 2.5}, "expected a whole number"),
    ({"city": "Rome", "when": "today"}, "unknown argument(s) when"),
])
def test_wrong_arguments_say_what_is_wrong_and_what_is_expected(tool_input, says):
    with pytest.raises(ToolArgumentError) as caught:
        weather_tool().bind(tool_input)
    assert says in str(caught.value)
    assert 'get_weather expects toolInput as a JSON object {"city": string' in str(caught.value)


def test_nested_arguments_are_checked_against_the_real_schema():
    t = schema_tool("book_hotel", "Book hotel rooms.", BOOKING, lambda **kw: "booked")
    assert t.bind({"hotel": "Ritz", "guests": [{"name": "Ana"}]})["guests"] == [{"name": "Ana"}]
    for wrong, says in [({"hotel": "Ritz", "guests": []}, "argument 'guests' must contain"),
                        ({"hotel": "Ritz", "guests": [{"age": 4}]},
                         "argument 'guests[0]' must contain ['name'] properties"),
                        ({"hotel": "Ritz", "guests": [{"name": "A", "age": "old"}]},
                         "argument 'guests[0].age' must be integer")]:
        with pytest.raises(ToolArgumentError, match=None) as caught:
            t.bind(wrong)
        assert says in str(caught.value), str(caught.value)


@pytest.mark.parametrize("name, parameters, says", [
    ("none", WEATHER, "not 'none'"),
    ("two words", WEATHER, "1-128 letters"),
    ("t", {"type": "string"}, "must be of type 'object', not 'string'"),
    ("t", [1, 2], "must be a JSON object"),
    ("t", {"type": "object", "properties": []}, "'properties' must map"),
    ("t", {"type": "object", "properties": {"a": {"type": "float"}}},
     "argument 'a' has an unknown type 'float'"),
    ("t", {"type": "object", "properties": {"a": {}}, "required": ["b"]},
     "does not define: b"),
    ("t", {"type": "object", "properties": {"a": {"$ref": "https://example.org/s.json"}}},
     "'$ref' may only point inside the schema"),
    ("t", {"type": "object", "properties": {"a": {"description": "x" * 100_001}}},
     "characters long"),
    ("t", {"type": "object", "properties": {"a": {"default": {1, 2}}}}, "is not JSON"),
])
def test_unusable_schemas_are_refused_with_the_reason(name, parameters, says):
    with pytest.raises(InvalidToolSchemaError) as caught:
        schema_tool(name, "Does something.", parameters, lambda **kw: None)
    assert says in str(caught.value)


def test_a_schema_nested_past_the_limit_is_refused():
    deep: dict = {"type": "object"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(InvalidToolSchemaError, match="nests deeper"):
        schema_tool("t", "Does something.", deep, lambda **kw: None)


def test_a_schema_only_compiling_finds_wrong_is_named_and_costs_the_model_one_observation():
    parameters = {"type": "object", "properties": {"n": {"type": "number", "minimum": "x"}}}
    t = schema_tool("t", "Does something.", parameters, lambda **kw: None)
    with pytest.raises(InvalidToolSchemaError, match="minimum must be a number"):
        check_schema(t)
    with pytest.raises(Exception, match="the parameters schema is invalid"):
        t.bind({"n": 1})


def test_recursive_refs_are_cut_for_the_prompt_but_checked_in_full():
    tree = {"type": "object", "$defs": {"node": {
        "type": "object", "properties": {"label": {"type": "string"},
                                         "children": {"type": "array",
                                                      "items": {"$ref": "#/$defs/node"}}},
        "required": ["label"]}},
        "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"]}
    shown = inline_refs(tree)
    assert "$ref" not in str(shown)
    t = schema_tool("draw_tree", "Draw a tree.", tree, lambda **kw: "drawn")
    deep = {"label": "a"}
    for _ in range(8):
        deep = {"label": "a", "children": [deep]}
    assert t.bind({"root": deep})["root"] == deep
    bad = {"label": "a", "children": [{"label": "b", "children": [{"children": []}]}]}
    with pytest.raises(ToolArgumentError, match="must contain"):
        t.bind({"root": bad})


def test_the_retriever_finds_schema_tools_by_their_words():
    tools = [weather_tool(),
             schema_tool("send_email", "Send an email message to a recipient.",
                         {"type": "object", "properties": {
                             "to": {"type": "string", "description": "recipient address"},
                             "body": {"type": "string"}}, "required": ["to", "body"]},
                         lambda **kw: "sent"),
             tool(lambda text: len(text.split()), name="count_words",
                  description="Count the words in a text.")]
    retriever = ToolRetriever(tools, top_k=1)
    assert retriever.retrieve("will it rain in Lisbon tomorrow?")[0].tool.name == "get_weather"
    assert retriever.retrieve("mail my landlord about the rent")[0].tool.name == "send_email"


def test_the_agent_hands_a_wrong_argument_back_and_calls_the_tool_once_it_is_right(make_agent):
    calls: list[dict] = []
    scripted = ScriptedReplies([
        step_json(tool="get_weather", tool_input={"city": "Oslo", "unit": "kelvin"}),
        step_json(tool="get_weather", tool_input={"city": "Oslo", "unit": "celsius"}),
        step_json(answer="Sunny in Oslo.")])
    agent, model, _ = make_agent(lambda call: scripted(call), tools=[weather_tool(calls)])
    result = run(agent.run("weather in Oslo?", session_id="s"))
    assert result.answer == "Sunny in Oslo."
    assert calls == [{"city": "Oslo", "unit": "celsius"}]
    first = result.steps[0].observation
    assert "invalid input for get_weather" in first and "kelvin" in first
    prompts = [c.input for c in model.calls_for(Purpose.STEP)]
    assert any("kelvin" in p and "is not one of" in p for p in prompts[1:])


def test_async_callables_and_callable_objects_are_awaited(make_agent):
    class Lookup:
        async def __call__(self, **kwargs):
            await asyncio.sleep(0)
            return {"found": kwargs["term"]}

    async def define(term: str):
        return f"{term}: a word"

    parameters = {"type": "object", "properties": {"term": {"type": "string"}},
                  "required": ["term"]}
    by_object = schema_tool("lookup", "Look up a term in the glossary.", parameters, Lookup())
    by_function = schema_tool("define", "Define a word.", parameters, define)
    assert by_object.is_async and by_function.is_async
    scripted = ScriptedReplies([step_json(tool="lookup", tool_input={"term": "ReAct"}),
                                step_json(answer="ok")])
    agent, _, _ = make_agent(lambda call: scripted(call), tools=[by_object, by_function])
    result = run(agent.run("look up ReAct in the glossary", session_id="s"))
    assert result.steps[0].observation == '{"found": "ReAct"}'
