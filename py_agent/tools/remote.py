"""Tools that live elsewhere: a tool server's (MCP) or a web page's (WebMCP, page tools).

Each arrives as a description (a name, a description, a JSON Schema of its input and
annotations) and a way to call it; :func:`remote_tool` makes it the same
:class:`~py_agent.tools.Tool` as any other through :func:`~py_agent.tools.schema_tool`.
Where it came from is its :class:`~py_agent.tools.origin.ToolOrigin` (a tool server's or
the page's, untrusted: its results are data, never instructions); the retriever never
reads it, the Tools panel, the trace and the approval question do. Name clashes with
other tools are resolved by the toolbox (:mod:`py_agent.tools.toolbox`).

A remote tool is consequential (:attr:`Tool.confirm`: the user approves each call)
unless its source's labels are trusted and it says it only reads. The MCP specification
asks a client to treat a tool's annotations as untrusted unless they come from a trusted
server, so a tool server's ``readOnlyHint`` counts only once the user trusts that server
(``trusted``); the page's tools are the page's own, whose labels the page that holds the
agent speaks for. A label that is not a boolean (``"true"``, ``1``), or read-only
together with destructive, is not read-only, whoever says it.

What a remote tool returns (MCP's ``CallToolResult``: text, structured content, images,
audio, resources) becomes observation text here (:func:`render_result`); its images and
sounds also come back as media (:func:`result_media`), which the turn sends to a model
that can see or hear them, inside the result's data marks; a model that cannot reads
a line naming each, never nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Awaitable, Callable, Mapping

import base64
import binascii

from ..attachments import Attachment, AttachmentError
from ..boundary import TITLE_CHARS, one_line, untrusted_text
from .definition import Tool
from .errors import ToolError
from .origin import ToolOrigin
from .output import ToolOutput
from .schema import schema_tool

# A remote description longer than this is cut: it goes into prompts, and a server
# could otherwise fill the model's window with it.
MAX_DESCRIPTION_CHARS = 1_000
# Remote text is cut here before anything else reads it (the tool runner caps the
# observation further, to the policy's size).
MAX_RESULT_CHARS = 200_000

RemoteCall = Callable[[str, dict[str, Any]], Awaitable[Any]]


class RemoteToolError(ToolError):
    """A remote tool answered with an error result (MCP ``isError``); ``str()`` is what it
    said, and the tool runner shows it as "<tool> raised an error: ..."."""

    raised_as = "an error"


HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def malformed_hints(annotations: Any) -> list[str]:
    """The hints of ``annotations`` that are not booleans (all of them, named, when the
    annotations are not an object)."""
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return ["annotations"]
    return [hint for hint in HINTS if hint in annotations
            and not isinstance(annotations[hint], bool)]


def claims_read_only(annotations: Any) -> bool:
    """Whether a tool's annotations say, well-formed, that it only reads:
    ``readOnlyHint: true``, not ``destructiveHint: true``, and every hint a boolean."""
    if not isinstance(annotations, Mapping) or malformed_hints(annotations):
        return False
    return annotations.get("readOnlyHint") is True and \
        annotations.get("destructiveHint") is not True


def consequential(annotations: Mapping[str, Any] | None, *, trusted: bool = False) -> bool:
    """Whether a remote tool must be approved before each call: always, unless its
    source's labels are ``trusted`` and it claims, well-formed, to only read
    (:func:`claims_read_only`)."""
    return not (trusted and claims_read_only(annotations))


def remote_tool(name: str, description: str, input_schema: Mapping[str, Any] | None,
                call: RemoteCall, *, origin: ToolOrigin,
                annotations: Mapping[str, Any] | None = None, trusted: bool = False,
                title: str = "", timeout_s: float | None = None) -> Tool:
    """A :class:`Tool` for a remote tool; ``call(name, arguments)`` runs it there and
    returns its result (a ``CallToolResult``-shaped dict, a string, or any JSON value).
    ``origin`` says where it comes from (its ``name`` is set to ``name`` here);
    ``trusted``: its source's labels are believed (:func:`consequential`). Its description
    and title are the source's words: cleaned of controls and invisible characters, on one
    line, capped.

    Raises :class:`~py_agent.tools.InvalidToolSchemaError` for a name or schema that
    cannot be used (the loader skips that tool and says why).
    """
    text = " ".join(untrusted_text(description or title or "").split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[:MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    hints = dict(annotations) if isinstance(annotations, Mapping) else {}

    async def run(**arguments: Any) -> str | ToolOutput:
        result = await call(name, arguments)
        text, failed = render_result(result)
        if failed:
            raise RemoteToolError(text)
        media = result_media(result, name)
        return ToolOutput(text, media) if media else text

    return schema_tool(name, text or name, input_schema, run,
                       metadata={"title": one_line(title, TITLE_CHARS), "annotations": hints},
                       confirm=consequential(hints, trusted=trusted),
                       origin=replace(origin, name=name), timeout_s=timeout_s)


# ------------------------------------------------------------------ results

def _size(data: Any) -> str:
    """The decoded size of base64 ``data``, for an image's description."""
    if not isinstance(data, str):
        return "unknown size"
    count = len(data) * 3 // 4 - data[-2:].count("=")
    return f"{count:,} bytes" if count < 10_000 else f"{count / 1024:,.0f} kB"


def _block_text(block: Any) -> str:
    """One content block of a tool result as text the model can read."""
    if not isinstance(block, Mapping):
        return _json(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        mime = str(block.get("mimeType") or kind)
        return f"[{'an image' if kind == 'image' else 'audio'} ({mime}, {_size(block.get('data'))})]"
    if kind == "resource_link":
        label = block.get("title") or block.get("name") or "a resource"
        return f"[resource: {label} <{block.get('uri', '')}>]"
    if kind == "resource":
        resource = block.get("resource") if isinstance(block.get("resource"), Mapping) else {}
        if isinstance(resource.get("text"), str):
            return resource["text"]
        return (f"[a {resource.get('mimeType') or 'binary'} resource <{resource.get('uri', '')}>"
                " that cannot be shown as text]")
    return _json(block)


def result_media(result: Any, tool: str) -> tuple[Attachment, ...]:
    """The images and sounds of a ``CallToolResult`` (base64 ``data`` blocks), loaded and
    checked as any attachment is (a block that is not one is left to the text)."""
    if not isinstance(result, Mapping) or not isinstance(result.get("content"), list):
        return ()
    found = []
    for index, block in enumerate(result["content"]):
        if not isinstance(block, Mapping) or block.get("type") not in ("image", "audio"):
            continue
        try:
            data = base64.b64decode(str(block.get("data") or ""), validate=True)
            found.append(Attachment(content=data, type=str(block.get("mimeType") or "") or None,
                                    name=f"{tool} {block['type']} {index + 1}").loaded())
        except (binascii.Error, ValueError, AttachmentError):
            continue
    return tuple(found)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def render_result(result: Any) -> tuple[str, bool]:
    """A remote tool's result as observation text, and whether it is an error result.

    An MCP ``CallToolResult`` shows its content blocks in order (text as it is, images and
    audio described, resources named), then its ``structuredContent`` as JSON when no
    text carried it. A string is itself; any other value is JSON. Cut at
    :data:`MAX_RESULT_CHARS`.
    """
    failed = False
    if isinstance(result, Mapping) and isinstance(result.get("content"), list):
        failed = result.get("isError") is True
        parts = [_block_text(block) for block in result["content"]]
        texts = [p for p in parts if p]
        structured = result.get("structuredContent")
        if structured is not None and not any(
                isinstance(b, Mapping) and b.get("type") == "text" and str(b.get("text", "")).strip()
                for b in result["content"]):
            texts.append(_json(structured))
        text = "\n".join(texts) if texts else "(the tool returned no content)"
    elif isinstance(result, Mapping) and "structuredContent" in result:
        failed = result.get("isError") is True
        text = _json(result["structuredContent"])
    elif isinstance(result, str):
        text = result
    elif result is None:
        text = "(the tool returned nothing)"
    else:
        text = _json(result)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f" … [cut: the tool returned {len(text):,} characters]"
    return text, failed
