"""What a tool is: :class:`Tool`, the ``@tool`` decorator, and how a model's
``toolInput`` becomes arguments.

A tool's name comes from the function, its description from the docstring's
first paragraph, its parameters from type hints (and their descriptions from a
Google-style ``Args:`` section), and sample requests in users' words from
``examples=`` or an ``Examples:`` section (the retriever indexes them, so a tool is
found by how people ask, not only by how its author describes it). The model may send ``toolInput`` as a string
(for tools with one parameter) or a JSON object; anything that does not fit
becomes a :class:`ToolArgumentError` whose message says what was expected, so
the loop can hand it back to the model as an observation.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Union, get_args, get_origin, get_type_hints

from ..boundary import loads_bounded
from .errors import ToolArgumentError
from .origin import OWN, ToolOrigin
from .run_context import RunContext

_MISSING = inspect.Parameter.empty


@dataclass(frozen=True)
class ToolParam:
    """One parameter: its JSON-schema type, whether it is required, its default."""

    name: str
    schema: dict[str, Any]
    required: bool
    default: Any = None
    description: str = ""
    annotation: Any = str

    def type_label(self) -> str:
        """A short type name for prompts: ``number``, ``"c"|"f"``, ``list of string``,
        ``{x: number, [y: number]}`` for an object whose fields the schema names."""
        return schema_label(self.schema)


def schema_label(schema: Any, depth: int = 0) -> str:
    """A JSON schema as a short type for prompts; nested objects show their fields two
    levels deep, so a model can fill them."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return "|".join(dict.fromkeys(schema_label(s, depth) for s in schema[key]))
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return "list of " + schema_label(schema.get("items") or {}, depth + 1)
    properties = schema.get("properties")
    if kind == "object" and isinstance(properties, dict) and properties and depth < 2:
        required = schema.get("required") or []
        fields = [f"{key}: {schema_label(sub, depth + 1)}" for key, sub in properties.items()]
        return "{" + ", ".join(f if key in required else f"[{f}]"
                               for f, key in zip(fields, properties)) + "}"
    return str(kind)


@dataclass(frozen=True)
class Tool:
    """A callable the agent may use, with what the model needs to know about it.

    A tool is made once and never changed: where it comes from (:attr:`origin`), whether
    it asks first (:attr:`confirm`), its time limit and its observation room are given
    when it is made; a renamed copy (a clash with another tool's name) is a new tool
    with the same origin.
    """

    name: str
    description: str
    params: list[ToolParam]
    fn: Callable[..., Any]
    pinned: bool = False
    is_async: bool = False
    # Anything the app wants to keep with the tool (a server's annotations, say). Never
    # where it comes from: that is ``origin``.
    metadata: dict[str, Any] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    # A tool made from a JSON Schema (py_agent.tools.schema) keeps it, and a check that
    # the bound arguments satisfy it (raising ToolArgumentError); @tool needs neither.
    parameters: dict[str, Any] | None = field(default=None, repr=False)
    check: Callable[[dict[str, Any]], None] | None = field(default=None, repr=False,
                                                           compare=False)
    # Consequential: it deletes, sends, pays or otherwise acts for the user, so the
    # tool runner asks the user before each call (py_agent.turn.approval). False: it
    # only reads or computes.
    confirm: bool = False
    # Seconds a call may take, and characters its observation may keep, when not the tool
    # policy's (a tool server's tools: the network and the server's own work; a page
    # summarized part by part takes minutes, and its passages need more room).
    timeout_s: float | None = None
    observation_chars: int | None = None
    origin: ToolOrigin = OWN
    # Its function's first parameter is a RunContext (py_agent.tools.run_context): the
    # tool runner passes one with each call.
    takes_context: bool = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the tool directly calls the function, so tools stay testable (a tool
        that takes a context takes it first: ``my_tool(RunContext(), x=1)``)."""
        return self.fn(*args, **kwargs)

    def invoke(self, context: RunContext, arguments: dict[str, Any]) -> Any:
        """Call the function with bound ``arguments``, and ``context`` if it takes one."""
        if self.takes_context:
            return self.fn(context, **arguments)
        return self.fn(**arguments)

    def signature(self) -> str:
        """``name(param: type, [optional: type])`` for the prompt's tool list."""
        parts = []
        for p in self.params:
            text = f"{p.name}: {p.type_label()}"
            parts.append(text if p.required else f"[{text}]")
        return f"{self.name}({', '.join(parts)})"

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the object form of ``toolInput``: typed, closed."""
        if self.parameters is not None:
            return {**self.parameters, "additionalProperties": False}
        return {"type": "object",
                "properties": {p.name: p.schema for p in self.params},
                "required": [p.name for p in self.params if p.required],
                "additionalProperties": False}

    def expected(self) -> str:
        """What a valid ``toolInput`` looks like, for corrective observations."""
        fields = ", ".join(f'"{p.name}": {p.type_label()}' + ("" if p.required else " (optional)")
                           for p in self.params)
        text = f"{self.name} expects toolInput as a JSON object {{{fields}}}"
        if len(self.params) == 1:
            text += " or a plain string"
        return text

    def bind(self, tool_input: Any) -> dict[str, Any]:
        """Turn the model's ``toolInput`` into keyword arguments, or explain why not."""
        arguments = _bind_arguments(self, tool_input)
        if self.check is not None:
            try:
                self.check(arguments)
            except ToolArgumentError as exc:
                raise ToolArgumentError(f"{exc}; {self.expected()}") from None
        return arguments


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None, pinned: bool = False,
         examples: Iterable[str] = (), keywords: Iterable[str] = (),
         confirm: bool = False, timeout_s: float | None = None,
         observation_chars: int | None = None, origin: ToolOrigin = OWN,
         metadata: dict[str, Any] | None = None) -> Any:
    """Make a :class:`Tool` from a typed, documented function (sync or async).

    Use as ``@tool`` or ``@tool(name=..., pinned=True, examples=[...])``. A pinned
    tool is offered to the model on every request, whatever the retriever ranks.
    ``examples`` are requests as a user would type them ("what's 19 x 47?"); they
    are added to those of the docstring's ``Examples:`` section. ``keywords`` are
    other words for what the tool does (synonyms, aliases, abbreviations).
    ``confirm=True`` declares the tool consequential (it deletes, sends, pays...): the
    user is asked before each call. ``timeout_s`` and ``observation_chars`` replace the
    tool policy's limits for this tool. A function whose first parameter is annotated
    :class:`~py_agent.tools.run_context.RunContext` gets the call's context there.
    """

    def build(func: Callable[..., Any]) -> Tool:
        doc = inspect.getdoc(func) or ""
        summary, arg_docs = _parse_docstring(doc)
        desc = description if description is not None else summary
        if not desc:
            raise ValueError(f"tool {func.__name__!r} needs a docstring or a description: "
                             "the model chooses tools by their descriptions")
        samples = clean_list([*_docstring_section(doc, "Examples"), *_as_list(examples)])
        takes_context, params = _params_from_signature(func, arg_docs)
        tool_name = name or func.__name__
        if origin.name and origin.name != tool_name:
            raise ValueError(f"tool {tool_name!r}: its origin names it {origin.name!r}")
        return Tool(name=tool_name, description=desc, params=params, fn=func,
                    pinned=pinned, is_async=inspect.iscoroutinefunction(func),
                    examples=samples, keywords=clean_list(_as_list(keywords)),
                    confirm=bool(confirm), timeout_s=timeout_s,
                    observation_chars=observation_chars, origin=origin,
                    metadata=dict(metadata or {}), takes_context=takes_context)

    return build(fn) if fn is not None else build


def _as_list(values: Iterable[str] | str) -> list[str]:
    """``examples="one request"`` is one example, not a list of characters."""
    if isinstance(values, str):
        return [values]
    items = list(values)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"examples and keywords must be strings, not {item!r}")
    return items


def clean_list(values: list[str]) -> list[str]:
    """Whitespace-normalised, without empties or repeats, in the given order."""
    return list(dict.fromkeys(" ".join(v.split()) for v in values if v.strip()))


_SECTION_TITLES = ("Args", "Arguments", "Parameters", "Returns", "Raises", "Examples",
                   "Example", "Keywords", "Note", "Notes", "Yields")


def _docstring_section(doc: str, title: str) -> list[str]:
    """The lines of a Google-style section such as ``Examples:``, one item per line.

    An item may start with ``-``, ``*`` or ``>>>`` and may be quoted; a line
    indented deeper than the first item continues the previous item.
    """
    names = "Examples|Example" if title == "Examples" else title
    match = re.search(rf"^(?:{names}):[ \t]*$(.*?)(?=^\S|\Z)", doc, re.MULTILINE | re.DOTALL)
    if not match:
        return []
    items: list[str] = []
    indent = None
    for line in match.group(1).splitlines():
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        text = re.sub(r"^(?:[-*•]|>>>)\s*", "", line.strip())
        if indent is not None and depth > indent and items:
            items[-1] += " " + text
            continue
        indent = depth if indent is None else indent
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        items.append(text)
    return items


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """First paragraph as the description, and ``Args:`` entries by name."""
    paragraphs = re.split(r"\n\s*\n", doc.strip(), maxsplit=1) if doc.strip() else [""]
    summary = " ".join(paragraphs[0].split())
    arg_docs: dict[str, str] = {}
    match = re.search(r"^(?:Args|Arguments|Parameters):\s*$(.*?)(?:^\S|\Z)", doc,
                      re.MULTILINE | re.DOTALL)
    if match:
        current = None
        for line in match.group(1).splitlines():
            entry = re.match(r"\s+(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", line)
            if entry:
                current = entry.group(1)
                arg_docs[current] = entry.group(2).strip()
            elif current and line.strip():
                arg_docs[current] += " " + line.strip()
    if summary.startswith(tuple(t + ":" for t in _SECTION_TITLES)):
        summary = ""
    return summary, arg_docs


def _params_from_signature(func: Callable[..., Any],
                           arg_docs: dict[str, str]) -> tuple[bool, list[ToolParam]]:
    """Whether the function takes a RunContext first, and its other parameters."""
    try:
        hints = get_type_hints(func)
    except Exception:  # unresolvable annotations: fall back to strings
        hints = {}
    params = []
    takes_context = False
    for index, p in enumerate(inspect.signature(func).parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if _is_context(hints.get(p.name, p.annotation)):
            if index != 0:
                raise ValueError(f"tool {func.__name__!r}: a RunContext parameter must be "
                                 "the first one")
            takes_context = True
            continue
        annotation = hints.get(p.name, str)
        optional, inner = _unwrap_optional(annotation)
        params.append(ToolParam(
            name=p.name, schema=_schema_for(inner), annotation=inner,
            required=p.default is _MISSING and not optional,
            default=None if p.default is _MISSING else p.default,
            description=arg_docs.get(p.name, "")))
    return takes_context, params


def _is_context(annotation: Any) -> bool:
    """``RunContext`` (or its name, when the annotation could not be resolved)."""
    if annotation is RunContext:
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1].strip("'\"") == "RunContext"


def _unwrap_optional(annotation: Any) -> tuple[bool, Any]:
    """``X | None`` → (True, X); anything else → (False, annotation)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) < len(get_args(annotation)):
            return True, (args[0] if len(args) == 1 else Union[tuple(args)])
    return False, annotation


def _schema_for(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Literal:
        return {"enum": list(get_args(annotation))}
    if annotation in (list, typing.List) or origin is list:
        args = get_args(annotation)
        return {"type": "array", "items": _schema_for(args[0]) if args else {}}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
    if annotation in simple:
        return {"type": simple[annotation]}
    if origin is dict:
        return {"type": "object"}
    return {"type": "string"}


def _bind_arguments(t: Tool, tool_input: Any) -> dict[str, Any]:
    if isinstance(tool_input, str):
        stripped = tool_input.strip()
        if stripped.startswith("{"):
            try:
                tool_input = loads_bounded(stripped)
            except ValueError:
                pass
    if tool_input is None or tool_input == "":
        tool_input = {}
    if not isinstance(tool_input, dict):
        required = [p for p in t.params if p.required]
        target = required[0] if len(required) == 1 else (t.params[0] if len(t.params) == 1 else None)
        if target is None:
            raise ToolArgumentError(f"got {_describe(tool_input)}; {t.expected()}")
        tool_input = {target.name: tool_input}
    by_name = {p.name: p for p in t.params}
    unknown = sorted(set(tool_input) - set(by_name))
    if unknown:
        raise ToolArgumentError(f"unknown argument(s) {', '.join(unknown)}; {t.expected()}")
    missing = [p.name for p in t.params if p.required and p.name not in tool_input]
    if missing:
        raise ToolArgumentError(f"missing argument(s) {', '.join(missing)}; {t.expected()}")
    bound = {}
    for key, value in tool_input.items():
        param = by_name[key]
        if value is None and not param.required:
            bound[key] = param.default
            continue
        try:
            bound[key] = _coerce(value, param.schema)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ToolArgumentError(f"argument {key!r}: {exc}; {t.expected()}") from None
    return bound


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _coerce(value: Any, schema: dict[str, Any]) -> Any:
    """Convert a JSON value (or a string the model wrote) to the declared type."""
    if "enum" in schema:
        options = schema["enum"]
        if value in options:
            return value
        for option in options:
            if isinstance(value, str) and str(option).lower() == value.strip().lower():
                return option
        raise ValueError(f"{_describe(value)} is not one of {', '.join(json.dumps(o) for o in options)}")
    kind = schema.get("type")
    if kind == "string":
        if isinstance(value, (dict, list)):
            raise ValueError(f"expected a string, got {_describe(value)}")
        return value if isinstance(value, str) else json.dumps(value) if isinstance(value, bool) else str(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "1", "on"):
            return True
        if text in ("false", "no", "0", "off"):
            return False
        raise ValueError(f"expected true or false, got {_describe(value)}")
    if kind in ("integer", "number"):
        if isinstance(value, bool):
            raise ValueError(f"expected a {kind}, got {_describe(value)}")
        try:
            number = float(str(value).strip().replace(",", "")) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected a {kind}, got {_describe(value)}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError(f"expected a finite {kind}, got {_describe(value)}")
        if kind == "integer":
            if number != int(number):
                raise ValueError(f"expected a whole number, got {_describe(value)}")
            return int(number)
        return number
    if kind == "array":
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                value = loads_bounded(text)
            else:
                value = [part.strip() for part in text.split(",") if part.strip()]
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {_describe(value)}")
        items = schema.get("items") or {}
        return [_coerce(v, items) for v in value] if items else value
    if kind == "object":
        if isinstance(value, str):
            value = loads_bounded(value)
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {_describe(value)}")
        return value
    return value
