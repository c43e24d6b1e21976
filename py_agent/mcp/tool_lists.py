"""A ``tools/list`` reply with one unusable tool must cost that tool, not the list.

Both official SDKs check a ``tools/list`` result as a whole: one tool whose input schema
is not an object schema (or that has no name) and the whole list is refused. So the
connection reads that reply first (a plain JSON body or server-sent events) and takes
such tools out, keeping why; the server's other tools are listed as usual and the
skipped ones are named to the user. ``worker/mcp_client.js`` does the same in the page.
"""

from __future__ import annotations

import json
from typing import Any


def unusable(tool: Any) -> str | None:
    """Why the SDKs would refuse ``tool`` (a tools/list entry), or None."""
    if not isinstance(tool, dict):
        return "it is not an object"
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return "it has no name"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        kind = schema.get("type") if isinstance(schema, dict) else type(schema).__name__
        return f"its input schema must be of type 'object', not {kind!r}"
    if "description" in tool and not isinstance(tool["description"], str):
        return "its description is not text"
    return None


def sanitize_message(message: Any, skipped: list[str]) -> Any:
    """A JSON-RPC message with the unusable tools of its tools/list result taken out."""
    result = message.get("result") if isinstance(message, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return message
    kept = []
    for tool in tools:
        why = unusable(tool)
        if why is None:
            kept.append(tool)
        else:
            name = tool.get("name") if isinstance(tool, dict) else None
            skipped.append(f"tool {name!r} skipped: {why}")
    return {**message, "result": {**result, "tools": kept}}


def sanitize_body(body: bytes, content_type: str, skipped: list[str]) -> bytes:
    """A tools/list reply body (JSON or server-sent events) without unusable tools;
    the body as it was if it cannot be read."""
    try:
        if "event-stream" in content_type:
            events = body.decode("utf-8").split("\n\n")
            out = []
            for event in events:
                lines = event.split("\n")
                data = "\n".join(line[5:].lstrip(" ") for line in lines if line.startswith("data:"))
                if data:
                    message = sanitize_message(json.loads(data), skipped)
                    lines = [line for line in lines if not line.startswith("data:")]
                    lines.append("data: " + json.dumps(message))
                out.append("\n".join(lines))
            return "\n\n".join(out).encode("utf-8")
        message = json.loads(body)
        if isinstance(message, list):
            return json.dumps([sanitize_message(m, skipped) for m in message]).encode()
        return json.dumps(sanitize_message(message, skipped)).encode()
    except (ValueError, UnicodeDecodeError):
        return body   # not readable here: the SDK says what is wrong with it


def is_tools_list(body: bytes) -> bool:
    """Whether a request body is a tools/list request."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(message, dict) and message.get("method") == "tools/list"
