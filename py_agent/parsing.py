"""Reading a ReAct step out of whatever the model wrote.

Even with a response constraint, output can arrive fenced in Markdown, wrapped
in chatter, truncated, or as JSON of the wrong shape. The parser finds the
first object that looks like a step and checks its shape; anything else is a
:class:`StepParseError` whose message becomes a corrective observation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .boundary import MAX_JSON_DEPTH, clean_value, depth_within

MAX_PARSE_CHARS = 50_000
MAX_OBJECT_STARTS = 25
STEP_KEYS = ("thought", "toolName", "toolInput", "finalAnswer")


class StepParseError(ValueError):
    """The model's output is not a usable step; the message says why."""


@dataclass(frozen=True)
class Step:
    """One parsed step: a tool call, or a final answer when ``tool_name`` is none."""

    thought: str
    tool_name: str
    tool_input: Any
    final_answer: str

    @property
    def is_final(self) -> bool:
        return self.tool_name in ("", "none") and bool(self.final_answer.strip())


def json_objects(text: str, on_too_deep: list[int] | None = None):
    """Each JSON object embedded in ``text``, in order, trying a bounded number of starts.

    An object nested deeper than :data:`~py_agent.boundary.MAX_JSON_DEPTH` is never
    handed to the parser (it would recurse once per level); its start is skipped and,
    if ``on_too_deep`` is given, recorded there.
    """
    decoder = json.JSONDecoder()
    start = text.find("{")
    tried = 0
    while start != -1 and tried < MAX_OBJECT_STARTS:
        tried += 1
        if not depth_within(text, start):
            if on_too_deep is not None:
                on_too_deep.append(start)
            start = text.find("{", start + 1)
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # JSONDecodeError, or an int past 4300 digits
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            yield clean_value(value)
        start = text.find("{", end)


def parse_step(text: Any) -> Step:
    """Parse model output into a :class:`Step` or raise :class:`StepParseError`."""
    if not isinstance(text, str):
        raise StepParseError(f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise StepParseError("the reply was empty")
    body = text[:MAX_PARSE_CHARS]
    found_object = False
    too_deep: list[int] = []
    for obj in json_objects(body, too_deep):
        found_object = True
        if any(key in obj for key in STEP_KEYS):
            return _step_from_object(obj)
    if found_object:
        raise StepParseError("the JSON object has none of the fields "
                             "thought, toolName, toolInput, finalAnswer")
    cut = cut_answer(body)
    if cut is not None:
        return cut
    if too_deep:
        raise StepParseError(f"the JSON nests deeper than {MAX_JSON_DEPTH} levels; "
                             "a step is one flat object")
    if len(text) > MAX_PARSE_CHARS:
        raise StepParseError(f"the reply was {len(text)} characters long with no JSON step "
                             f"in its first {MAX_PARSE_CHARS}")
    raise StepParseError("the reply was not valid JSON")


def cut_answer(text: str) -> Step | None:
    """A final answer whose reply was cut off inside ``finalAnswer`` (the reply's token
    limit), as far as it got; None for any other broken reply.

    Asked again, a model at low temperature writes the same cut reply, so a corrective
    observation costs steps and gains nothing; what it wrote is the answer it had. Only a
    step that chose no tool, with its answer under way, is kept: a cut tool call is not
    guessed at.
    """
    stripped = text.rstrip()
    key = stripped.rfind('"finalAnswer"')
    if not stripped.startswith("{") or key == -1 or not depth_within(stripped, 0):
        return None
    for closer in ('"}', '}'):
        try:
            value = json.loads(stripped.rstrip("\\") + closer)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and key > stripped.rfind('"toolInput"') > 0:
            try:
                step = _step_from_object(clean_value(value))
            except StepParseError:
                return None
            return step if step.is_final else None
    return None


def _step_from_object(obj: dict[str, Any]) -> Step:
    thought = obj.get("thought", "")
    tool_name = obj.get("toolName", "none")
    tool_input = obj.get("toolInput", "")
    final_answer = obj.get("finalAnswer", "")
    if thought is None:
        thought = ""
    if tool_name is None:
        tool_name = "none"
    if final_answer is None:
        final_answer = ""
    if not isinstance(thought, str):
        raise StepParseError("thought must be a string")
    if not isinstance(tool_name, str):
        raise StepParseError("toolName must be a string naming a tool or \"none\"")
    if not isinstance(final_answer, str):
        if isinstance(final_answer, (int, float)) and not isinstance(final_answer, bool):
            final_answer = str(final_answer)
        else:
            raise StepParseError("finalAnswer must be a string")
    if tool_input is None:
        tool_input = ""
    if isinstance(tool_input, (int, float)) and not isinstance(tool_input, bool):
        tool_input = str(tool_input)
    if not isinstance(tool_input, (str, dict, list, bool)):
        raise StepParseError("toolInput must be a string or a JSON object")
    return Step(thought=thought.strip(), tool_name=tool_name.strip(), tool_input=tool_input,
                final_answer=final_answer.strip())
