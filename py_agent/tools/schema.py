"""Tools from a JSON Schema: a name, a description, a parameters schema and a callable.

The door for tools that were not written as typed Python functions: a benchmark's
function docs, a tool server's tools, a page's tools. What comes out is the same
:class:`~py_agent.tools.Tool` as ``@tool`` makes: the retriever indexes its name,
description and parameters (names and descriptions), the step schema constrains its
arguments with the given schema, and the model's ``toolInput`` is checked against that
schema before the callable runs. Arguments that do not match come back to the model as an
observation that says which argument is wrong and why.

The schema is checked when the tool is made (:class:`InvalidToolSchemaError` says what is
wrong with it, so a loader can skip that tool and go on); its validator is compiled on the
first call, so that making hundreds of tools stays cheap. Validation uses fastjsonschema
(pure Python, draft 4/6/7 keywords; ``$schema`` and ``format`` are read as annotations),
and a ``$ref`` may only point inside the schema: a tool's schema never makes us fetch
anything.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from typing import Any, Callable, Iterable, Mapping

from .definition import Tool, ToolParam, clean_list
from .errors import ToolArgumentError, ToolError
from .origin import OWN, ToolOrigin

# A schema larger or deeper than this is not a tool's parameters but a mistake or an
# attack: refused before anything reads it further.
MAX_SCHEMA_CHARS = 100_000
MAX_SCHEMA_DEPTH = 32
# Names a tool may not take: the step's "no tool" choice.
RESERVED_NAMES = frozenset({"none"})
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


class InvalidToolSchemaError(ValueError):
    """A tool's name, description or parameters schema cannot be used; ``str()`` names the
    tool and says what is wrong."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"tool {name!r}: {reason}")
        self.tool_name = name
        self.reason = reason


def schema_tool(name: str, description: str, parameters: Mapping[str, Any] | None,
                fn: Callable[..., Any], *, pinned: bool = False, examples: Iterable[str] = (),
                keywords: Iterable[str] = (),
                metadata: Mapping[str, Any] | None = None, confirm: bool = False,
                origin: ToolOrigin = OWN, timeout_s: float | None = None,
                observation_chars: int | None = None) -> Tool:
    """Make a :class:`Tool` from a JSON-Schema description of its arguments.

    Args:
        name: the tool's name as the model writes it (letters, digits, ``_``, ``.``,
            ``-``; at most 128 characters; not ``none``).
        description: what the tool does, in words the retriever and the model read.
        parameters: a JSON Schema of type ``object`` whose ``properties`` are the
            arguments (None: the tool takes none).
        fn: called with the checked arguments as keyword arguments; sync or async.
        pinned: offer the tool on every request, whatever the retriever ranks.
        examples: requests as a user would type them, for the retriever.
        keywords: other words for what the tool does.
        metadata: anything the app wants to keep with the tool (where it comes from
            is ``origin``, never metadata).
        confirm: the tool is consequential (it deletes, sends, pays...): the user is
            asked before each call.
        origin: where the tool comes from (a tool server's, a page's...; see
            :mod:`py_agent.tools.origin`); the app's own by default.
        timeout_s, observation_chars: the tool's own time limit and observation room,
            instead of the tool policy's.

    Raises:
        InvalidToolSchemaError: the name, the description or the schema cannot be used.
    """
    if not isinstance(name, str) or not _NAME.match(name) or name in RESERVED_NAMES:
        raise InvalidToolSchemaError(str(name), "a tool's name is 1-128 letters, digits, "
                                     "'_', '.' or '-' (and not 'none')")
    if not isinstance(description, str):
        raise InvalidToolSchemaError(name, "the description must be a string")
    if not callable(fn):
        raise InvalidToolSchemaError(name, "the tool needs a callable to run")
    schema = _checked_schema(name, parameters)
    # The step's response constraint nests this schema inside its own, where a "$ref"
    # would point at the wrong root: the tool shows the model an inlined copy.
    shown = inline_refs(schema)
    required = set(shown.get("required", []))
    params = [ToolParam(name=key, schema=sub, required=key in required,
                        default=sub.get("default"),
                        description=" ".join(str(sub.get("description", "")).split()),
                        annotation=object)
              for key, sub in shown.get("properties", {}).items()]
    return Tool(name=name, description=" ".join(description.split()), params=params, fn=fn,
                pinned=pinned, is_async=_is_async(fn), metadata=dict(metadata or {}),
                examples=clean_list(list(_strings(examples, name))),
                keywords=clean_list(list(_strings(keywords, name))),
                parameters=shown, check=_LazyValidator(name, schema), confirm=bool(confirm),
                origin=origin, timeout_s=timeout_s, observation_chars=observation_chars)


# How many "$ref"s deep an inlined schema goes; a recursive schema is cut there (the cut
# part accepts anything; the validator still checks it against the real schema).
MAX_INLINED_REFS = 4


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by what it points to, and without its
    ``$defs``/``definitions``: a schema that can be nested in another."""

    def resolve(pointer: str) -> Any:
        node: Any = schema
        for part in pointer.lstrip("#").split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else (
                node[int(part)] if isinstance(node, list) and part.isdigit()
                and int(part) < len(node) else None)
            if node is None:
                return {}
        return node

    def walk(node: Any, refs: int) -> Any:
        if isinstance(node, list):
            return [walk(v, refs) for v in node]
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$ref"), str):
            if refs >= MAX_INLINED_REFS:
                return {}
            target = walk(resolve(node["$ref"]), refs + 1)
            rest = {k: walk(v, refs) for k, v in node.items() if k != "$ref"}
            return {**target, **rest} if isinstance(target, dict) else rest
        return {k: walk(v, refs) for k, v in node.items()
                if k not in ("$defs", "definitions", "$schema", "$id")}

    return walk(schema, 0)


def _strings(values: Iterable[str], name: str) -> Iterable[str]:
    if isinstance(values, str):
        return [values]
    items = list(values)
    if not all(isinstance(v, str) for v in items):
        raise InvalidToolSchemaError(name, "examples and keywords must be strings")
    return items


def _is_async(fn: Callable[..., Any]) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))


def _checked_schema(name: str, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """A private, JSON-clean copy of ``parameters``, checked enough to build a tool on."""
    if parameters is None:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise InvalidToolSchemaError(name, "the parameters schema must be a JSON object")
    try:
        text = json.dumps(parameters)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidToolSchemaError(name, f"the parameters schema is not JSON ({exc})") from None
    if len(text) > MAX_SCHEMA_CHARS:
        raise InvalidToolSchemaError(name, f"the parameters schema is {len(text):,} characters "
                                     f"long (at most {MAX_SCHEMA_CHARS:,})")
    schema = json.loads(text)
    _check_depth_and_refs(name, schema, 0)
    kind = schema.get("type", "object")
    if kind != "object":
        raise InvalidToolSchemaError(name, f"the parameters schema must be of type 'object', "
                                     f"not {kind!r}")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or not all(isinstance(v, dict)
                                                   for v in properties.values()):
        raise InvalidToolSchemaError(name, "'properties' must map each argument to a schema")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise InvalidToolSchemaError(name, "'required' must be a list of argument names")
    missing = [r for r in required if r not in properties]
    if missing:
        raise InvalidToolSchemaError(name, f"'required' names arguments it does not define: "
                                     f"{', '.join(missing)}")
    for key, sub in properties.items():
        _check_types(name, key, sub)
    schema["type"] = "object"
    return schema


def _check_depth_and_refs(name: str, node: Any, depth: int) -> None:
    if depth > MAX_SCHEMA_DEPTH:
        raise InvalidToolSchemaError(name, f"the parameters schema nests deeper than "
                                     f"{MAX_SCHEMA_DEPTH} levels")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref is not None and (not isinstance(ref, str) or not ref.startswith("#")):
            raise InvalidToolSchemaError(name, f"'$ref' may only point inside the schema "
                                         f"(got {str(ref)[:80]!r})")
        for value in node.values():
            _check_depth_and_refs(name, value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            _check_depth_and_refs(name, value, depth + 1)


def _check_types(name: str, key: str, schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    unknown = [k for k in kinds if k not in _TYPES]
    if unknown:
        raise InvalidToolSchemaError(name, f"argument {key!r} has an unknown type "
                                     f"{unknown[0]!r} (JSON Schema types: "
                                     f"{', '.join(sorted(_TYPES))})")


class _LazyValidator:
    """Checks bound arguments against the tool's schema; compiled on first use."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.schema = schema
        self._validate: Callable[[Any], Any] | None = None

    def compile(self) -> Callable[[Any], Any]:
        """The compiled validator; :class:`InvalidToolSchemaError` if the schema is wrong in
        a way only compiling finds (a keyword with a value of the wrong kind, say)."""
        if self._validate is None:
            import fastjsonschema
            definition = {k: v for k, v in copy.deepcopy(self.schema).items()
                          if k not in ("$schema", "$id", "id")}
            try:
                # use_default=False: the validator would otherwise write the schema's
                # defaults into the model's arguments; the callable gets what was given.
                self._validate = fastjsonschema.compile(definition, handlers={},
                                                        use_formats=False, use_default=False)
            except Exception as exc:  # the library raises several kinds on bad schemas
                raise InvalidToolSchemaError(self.name, f"the parameters schema is invalid: "
                                             f"{exc}") from None
        return self._validate

    def __call__(self, arguments: dict[str, Any]) -> None:
        import fastjsonschema
        try:
            validate = self.compile()
        except InvalidToolSchemaError as exc:
            raise ToolError(str(exc)) from None
        try:
            validate(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise ToolArgumentError(_explain(exc)) from None


def _explain(exc: Any) -> str:
    """fastjsonschema's ``data.x[0].y must be ...`` as ``argument 'x[0].y' must be ...``."""
    message = str(getattr(exc, "message", "") or exc)
    name = str(getattr(exc, "name", "") or "")
    if not name.startswith("data") or not message.startswith(name + " "):
        return message
    path, rule = name[len("data"):].lstrip("."), message[len(name) + 1:]
    return f"argument {path!r} {rule}" if path else f"the arguments {rule}"


def check_schema(tool: Tool) -> None:
    """Compile ``tool``'s argument validator now (it is otherwise compiled on the first
    call): :class:`InvalidToolSchemaError` if only compiling shows the schema is wrong."""
    if isinstance(tool.check, _LazyValidator):
        tool.check.compile()
