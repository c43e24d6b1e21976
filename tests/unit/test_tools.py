from typing import Literal, Optional

import pytest

from py_agent import Tool, ToolArgumentError, tool


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume or temperature.

    More detail that is not part of the description.

    Args:
        value: the amount to convert.
        from_unit: unit of the amount, e.g. "oz".
        to_unit: unit wanted, e.g. "g".
    """
    return f"{value} {from_unit} -> {to_unit}"


@tool(pinned=True, name="greet")
async def say_hello(name: str, times: int = 1, shout: bool = False,
                    style: Literal["plain", "fancy"] = "plain", tags: Optional[list[str]] = None) -> str:
    """Greet somebody."""
    return ("HELLO " if shout else "hello ") * times + name


def test_metadata_comes_from_name_docstring_and_hints():
    assert isinstance(convert_units, Tool)
    assert convert_units.name == "convert_units"
    assert convert_units.description == ("Convert a quantity between units of length, mass, "
                                         "volume or temperature.")
    assert [p.name for p in convert_units.params] == ["value", "from_unit", "to_unit"]
    assert convert_units.params[0].schema == {"type": "number"}
    assert convert_units.params[1].description == 'unit of the amount, e.g. "oz".'
    assert convert_units.signature() == "convert_units(value: number, from_unit: string, to_unit: string)"
    assert not convert_units.is_async and not convert_units.pinned


def test_optional_literal_list_and_async():
    assert say_hello.name == "greet" and say_hello.pinned and say_hello.is_async
    by_name = {p.name: p for p in say_hello.params}
    assert by_name["name"].required and not by_name["times"].required
    assert by_name["style"].schema == {"enum": ["plain", "fancy"]}
    assert by_name["tags"].schema == {"type": "array", "items": {"type": "string"}}
    assert not by_name["tags"].required
    assert say_hello.input_schema()["required"] == ["name"]


def test_bind_object_and_string_forms():
    assert convert_units.bind({"value": "3", "from_unit": "oz", "to_unit": "g"}) == \
        {"value": 3.0, "from_unit": "oz", "to_unit": "g"}
    assert convert_units.bind('{"value": 2, "from_unit": "kg", "to_unit": "lb"}')["value"] == 2.0
    # A single required parameter accepts a plain string.
    assert say_hello.bind("Ada") == {"name": "Ada"}
    assert say_hello.bind({"name": "Ada", "times": "2", "shout": "yes", "style": "FANCY",
                           "tags": "a, b"}) == \
        {"name": "Ada", "times": 2, "shout": True, "style": "fancy", "tags": ["a", "b"]}


@pytest.mark.parametrize("bad, fragment", [
    ("3 oz to g", "expects toolInput as a JSON object"),
    ({"value": 3, "from_unit": "oz"}, "missing argument(s) to_unit"),
    ({"value": 3, "from_unit": "oz", "to_unit": "g", "precision": 2}, "unknown argument(s) precision"),
    ({"value": "three", "from_unit": "oz", "to_unit": "g"}, "expected a number"),
    ({"value": [1], "from_unit": "oz", "to_unit": "g"}, "expected a number"),
])
def test_wrong_arguments_say_what_was_expected(bad, fragment):
    with pytest.raises(ToolArgumentError) as err:
        convert_units.bind(bad)
    assert fragment in str(err.value)
    assert '"value": number' in str(err.value)


def test_wrong_enum_and_integer():
    with pytest.raises(ToolArgumentError, match='not one of "plain", "fancy"'):
        say_hello.bind({"name": "x", "style": "gothic"})
    with pytest.raises(ToolArgumentError, match="whole number"):
        say_hello.bind({"name": "x", "times": 1.5})


def test_tool_without_docstring_is_refused():
    def nameless(x: str) -> str:
        return x

    with pytest.raises(ValueError, match="needs a docstring"):
        tool(nameless)


def test_tool_stays_callable():
    assert convert_units(1.0, "m", "cm") == "1.0 m -> cm"


@tool(examples=["how many grams is 3 oz"], keywords=["metric", " metric ", "imperial"])
def weigh(value: float, unit: str = "g") -> str:
    """Convert a weight.

    Args:
        value: the amount.

    Examples:
        - "what's 70 kg in pounds"
        - how heavy is a stone
          in kilograms
        >>> 12 oz to g

    Returns:
        a sentence.
    """


def test_examples_come_from_the_docstring_and_the_decorator():
    assert weigh.examples == ["what's 70 kg in pounds", "how heavy is a stone in kilograms",
                              "12 oz to g", "how many grams is 3 oz"]
    assert weigh.keywords == ["metric", "imperial"]
    assert weigh.description == "Convert a weight."
    assert weigh.params[0].description == "the amount."
    assert convert_units.examples == [] and convert_units.keywords == []


def test_examples_must_be_strings():
    with pytest.raises(TypeError, match="must be strings"):
        tool(examples=[42], description="x")(lambda x: x)
    one = tool(examples="a single request")(weigh.fn)
    assert one.examples[-1] == "a single request"


def test_input_schema_is_typed_and_closed():
    assert weigh.input_schema() == {
        "type": "object", "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
        "required": ["value"], "additionalProperties": False}
