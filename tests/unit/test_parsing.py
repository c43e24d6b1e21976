import json

import pytest
from hypothesis import given, settings, strategies as st

from py_agent.parsing import Step, StepParseError, parse_step

VALID = {"thought": "t", "toolName": "calc", "toolInput": {"x": 1}, "finalAnswer": ""}


@pytest.mark.parametrize("text", [
    json.dumps(VALID),
    "```json\n" + json.dumps(VALID) + "\n```",
    "Sure! Here is my step:\n" + json.dumps(VALID) + "\nHope that helps.",
    "{not json} then " + json.dumps(VALID),
    '{"unrelated": 1} ' + json.dumps(VALID),
])
def test_step_is_found_in_fenced_or_chatty_output(text):
    step = parse_step(text)
    assert step == Step(thought="t", tool_name="calc", tool_input={"x": 1}, final_answer="")


@pytest.mark.parametrize("text, reason", [
    ("", "empty"),
    ("   \n", "empty"),
    ("I think the answer is 4", "not valid JSON"),
    ('{"thought": "unterminated', "not valid JSON"),
    ('{"a": 1}', "none of the fields"),
    ('[1, 2, 3]', "not valid JSON"),
    ('{"thought": 5, "toolName": "none"}', "thought must be a string"),
    ('{"toolName": ["calc"]}', "toolName must be a string"),
    ('{"toolName": "none", "finalAnswer": {"x": 1}}', "finalAnswer must be a string"),
    ("x" * 60_000, "no JSON step"),
])
def test_unusable_output_gives_a_reason(text, reason):
    with pytest.raises(StepParseError, match=reason):
        parse_step(text)


def test_non_text_and_loose_types_are_handled():
    with pytest.raises(StepParseError):
        parse_step(None)  # type: ignore[arg-type]
    step = parse_step('{"toolName": null, "finalAnswer": 42, "toolInput": 7}')
    assert step.tool_name == "none" and step.final_answer == "42" and step.tool_input == "7"
    assert step.is_final


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_parses_or_raises_step_parse_error(text):
    try:
        step = parse_step(text)
    except StepParseError as exc:
        assert str(exc)
    else:
        assert isinstance(step.thought, str) and isinstance(step.tool_name, str)
        assert isinstance(step.tool_input, (str, dict, list, bool))


@settings(max_examples=300, deadline=None)
@given(prefix=st.text(max_size=80).filter(lambda s: "{" not in s),
       suffix=st.text(max_size=80),
       thought=st.text(max_size=40), answer=st.text(max_size=40),
       tool_input=st.one_of(st.text(max_size=20),
                            st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)))
def test_a_valid_step_survives_any_surrounding_text(prefix, suffix, thought, answer, tool_input):
    obj = {"thought": thought, "toolName": "none", "toolInput": tool_input, "finalAnswer": answer}
    step = parse_step(prefix + json.dumps(obj) + suffix)
    assert step.thought == thought.strip() and step.final_answer == answer.strip()
    assert step.tool_input == tool_input


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["thought", "toolName", "toolInput",
                                                       "finalAnswer", "x"]), inner, max_size=4),
                    max_leaves=10))
def test_valid_json_of_any_shape_never_crashes(value):
    try:
        parse_step(json.dumps(value))
    except StepParseError:
        pass


def test_an_answer_cut_off_by_the_token_limit_is_kept_as_far_as_it_got():
    # A small model at temperature 0 writes the same cut reply when asked again, so the
    # answer it had is taken, not a corrective step.
    head = '{"thought": "I know this.", "toolName": "none", "toolInput": "", "finalAnswer": '
    assert parse_step(head + '"Rome is the capital of It').final_answer == \
        "Rome is the capital of It"
    assert parse_step(head + '"Rome."').final_answer == "Rome."  # only the brace missing
    assert parse_step(head + '"a \\').final_answer == "a"  # cut inside an escape
    cut = [head[:30], head + '"', '{"thought": "x", "toolName": "calc", "toolInput": {"a": 1',
           '{"thought": "x", "toolName": "calc", "toolInput": {"a": 1}, "finalAnswer": "no',
           'Sure! {"finalAnswer": "cut']
    for text in cut:  # a cut tool call, or no answer yet: still a corrective step
        with pytest.raises(StepParseError):
            parse_step(text)
