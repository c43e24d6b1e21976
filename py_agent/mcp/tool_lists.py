"""A ``tools/list`` reply with one unusable tool must cost that tool, not the list.

Both official SDKs check a ``tools/list`` result as a whole: one tool whose input schema
is not an object schema (or that has no name) and the whole list is refused. So the
connection reads that reply first (a plain JSON body or server-sent events) and takes
such tools out, keeping why; the server's other tools are listed as usual and the
skipped ones are named to the user.

``worker/tool_lists.js`` does the same in the page, by the same rules (docs/tools.md,
"A tools/list reply, read before the SDK"; ``tests/unit/test_tool_lists.py`` runs the
same cases through both):

1. A reply nested deeper than :data:`MAX_REPLY_DEPTH` levels is not read (a parser
   would run out of stack on it, and no usable tool nests that deep): it becomes a
   JSON-RPC parse error (-32700) for its request, and the refusal says why.
2. A tool is taken out when it is not an object, has no name (a non-empty string), has
   no input schema that is an object of type ``'object'``, or has a description that
   is not text.
3. A reply that is not JSON (or an event whose data is not) is left as it is: the SDK
   says what is wrong with it.
4. A tool's labels (``annotations``) that are not an object, or hold a hint
   (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``) that is
   not ``true`` or ``false``, lose every hint, and the tool is named with why: no label
   of it is believed, so it asks before each call (the Python SDK would read ``"true"``
   and ``1`` as true; the TypeScript SDK would refuse the whole list). Null annotations
   are taken off without a word.
"""

from __future__ import annotations

import json
from typing import Any

MAX_REPLY_DEPTH = 100
PARSE_ERROR = -32700   # JSON-RPC: the reply could not be parsed
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def quoted(value: str) -> str:
    """A string as JSON writes it (as ``JSON.stringify`` does in the page)."""
    return json.dumps(value, ensure_ascii=False)


def json_kind(value: Any) -> str:
    """What a JSON value is, in words: null, a boolean, a number, a string, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def unusable(tool: Any) -> str | None:
    """Why the SDKs would refuse ``tool`` (a tools/list entry), or None."""
    if not isinstance(tool, dict):
        return "it is not an object"
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return "it has no name"
    if "inputSchema" not in tool:
        return "it has no input schema"
    schema = tool["inputSchema"]
    if not isinstance(schema, dict):
        return f"its input schema is {json_kind(schema)}, not an object"
    if "type" not in schema:
        return "its input schema has no type (it must be of type 'object')"
    kind = schema["type"]
    if kind != "object":
        said = quoted(kind) if isinstance(kind, str) else json_kind(kind)
        return f"its input schema must be of type 'object', not {said}"
    if "description" in tool and not isinstance(tool["description"], str):
        return "its description is not text"
    return None


def skipped_line(tool: Any, why: str) -> str:
    """How a tool taken out is named to the user."""
    name = tool.get("name") if isinstance(tool, dict) else None
    if isinstance(name, str) and name:
        return f"tool {quoted(name)} skipped: {why}"
    return f"a tool skipped: {why}"


def _said_value(value: Any) -> str:
    return quoted(value) if isinstance(value, str) else json_kind(value)


def believable_labels(tool: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """``tool`` with labels it may keep (rule 4); why any were taken off goes to
    ``notes``."""
    if "annotations" not in tool:
        return tool
    annotations = tool["annotations"]
    if annotations is None:
        return {key: value for key, value in tool.items() if key != "annotations"}
    if not isinstance(annotations, dict):
        why = f"its annotations are {json_kind(annotations)}, not an object"
        kept = {key: value for key, value in tool.items() if key != "annotations"}
    else:
        bad = [hint for hint in HINTS if hint in annotations
               and not isinstance(annotations[hint], bool)]
        if not bad:
            return tool
        why = ", ".join(f"its {hint} is {_said_value(annotations[hint])}" for hint in bad) \
            + ", not true or false"
        kept = {**tool, "annotations": {key: value for key, value in annotations.items()
                                        if key not in HINTS}}
    notes.append(f"tool {quoted(tool['name'])}: {why}: none of its labels is believed, so it "
                 "asks before each call")
    return kept


def nests_deeper(text: str, limit: int = MAX_REPLY_DEPTH) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than ``limit`` (a scan, not
    a parse: it needs no stack)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def too_deep() -> str:
    """The refusal of rule 1 (an SDK may list tools on its own, inside a call: so it
    names the reply)."""
    return f"its tools/list reply nests deeper than {MAX_REPLY_DEPTH} levels"


def sanitize_message(message: Any, skipped: list[str]) -> Any:
    """A JSON-RPC message with the unusable tools of its tools/list result taken out, and
    the labels of the others that cannot be believed."""
    result = message.get("result") if isinstance(message, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return message
    kept = []
    for tool in tools:
        why = unusable(tool)
        if why is None:
            kept.append(believable_labels(tool, skipped))
        else:
            skipped.append(skipped_line(tool, why))
    return {**message, "result": {**result, "tools": kept}}


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")   # as JSON.parse, which takes no NaN or Infinity


def _clean_json(text: str, skipped: list[str]) -> str:
    message = json.loads(text, parse_constant=_no_constants)
    if isinstance(message, list):
        return json.dumps([sanitize_message(m, skipped) for m in message])
    return json.dumps(sanitize_message(message, skipped))


def refusal_body(request_id: Any, why: str) -> bytes:
    """The JSON-RPC error that stands for a reply that is not read."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": PARSE_ERROR, "message": why}}).encode()


def clean_tools_list(body: bytes, content_type: str, request_id: Any,
                     skipped: list[str]) -> tuple[bytes, str, str]:
    """A tools/list reply (JSON or server-sent events) without its unusable tools (named
    in ``skipped``): ``(body, content_type, refusal)``. ``refusal`` is why the reply was
    not read at all (then ``body`` is a JSON-RPC parse error for ``request_id``), or "".
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, content_type, ""
    if "event-stream" in content_type:
        events = text.replace("\r\n", "\n").split("\n\n")
        out = []
        for event in events:
            lines = event.split("\n")
            data = "\n".join(line[6:] if line.startswith("data: ") else line[5:]
                             for line in lines if line.startswith("data:"))
            if data:
                if nests_deeper(data):
                    return refusal_body(request_id, too_deep()), "application/json", too_deep()
                try:
                    data = _clean_json(data, skipped)
                except ValueError:
                    pass   # not JSON: the SDK says what is wrong with it
                else:
                    lines = [line for line in lines if not line.startswith("data:")]
                    lines.append("data: " + data)
            out.append("\n".join(lines))
        return "\n\n".join(out).encode("utf-8"), content_type, ""
    if nests_deeper(text):
        return refusal_body(request_id, too_deep()), "application/json", too_deep()
    try:
        return _clean_json(text, skipped).encode("utf-8"), content_type, ""
    except ValueError:
        return body, content_type, ""   # not JSON: the SDK says what is wrong with it


def rpc_request(body: bytes) -> tuple[Any, str] | None:
    """``(id, method)`` of a JSON-RPC request body; None for anything else (a
    notification, a response, a batch, not JSON)."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if isinstance(message, dict) and isinstance(message.get("method"), str) \
            and message.get("id") is not None:
        return message["id"], message["method"]
    return None
