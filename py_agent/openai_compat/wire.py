"""The chat-completions wire format: request bodies in, replies and stream chunks out.

Pure functions and one accumulator, no I/O, so every shape a server may send is
tested directly. A reply becomes plain text for the agent: the message content, or,
when a server answered with a native ``tool_calls`` entry instead, the equivalent
ReAct step as JSON (see :mod:`py_agent.openai_compat` for why steps are JSON).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import MalformedReplyError, ServerError, error_for_status

DONE = "[DONE]"
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


SCHEMA_MODES = ("json_schema", "json_object")


# Keywords that describe an object as a whole, merged into each branch of an anyOf beside them.
_OBJECT_KEYWORDS = ("type", "properties", "required", "additionalProperties")


def branches_complete(schema: Any) -> Any:
    """The same constraint in a form every grammar converter follows, at every level.

    llama.cpp's JSON-schema converter (llama-server, Ollama, llama-cpp-python) reads an
    ``anyOf``/``oneOf`` as a choice between its branches and drops the keywords beside
    it. The step schema has its fields and required list beside an ``anyOf`` whose
    branches bind each tool's name to its arguments, so a server would let the model
    leave out fields or write others. Here each branch gets the object keywords beside
    it merged in (a property both name is the branch's, which narrows it; required is the
    union); the page's engine does the same (``schemaForEngine`` in
    ``web/page_model/engine.js``).
    """
    if isinstance(schema, list):
        return [branches_complete(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: branches_complete(v) for k, v in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties"):
            out[key] = branches_complete(value)
        else:
            out[key] = value
    choice = "anyOf" if "anyOf" in out else "oneOf" if "oneOf" in out else None
    beside = [k for k in _OBJECT_KEYWORDS if k in out]
    if choice is None or not isinstance(out[choice], list) or not beside:
        return out
    base = {k: out[k] for k in beside}
    merged = []
    for branch in out[choice]:
        if not isinstance(branch, dict):
            merged.append(branch)
            continue
        result = {**base, **branch}
        if "properties" in base or "properties" in branch:
            result["properties"] = {**base.get("properties", {}), **branch.get("properties", {})}
        if "required" in base or "required" in branch:
            result["required"] = list(dict.fromkeys([*base.get("required", []),
                                                     *branch.get("required", [])]))
        merged.append(result)
    rest = {k: v for k, v in out.items() if k not in beside and k not in ("anyOf", "oneOf")}
    return {**rest, choice: merged}


def response_format(schema: dict[str, Any], name: str, mode: str = "json_schema") -> dict[str, Any]:
    """``response_format`` asking for JSON that follows ``schema``.

    ``json_schema`` is the API's own form. Not ``strict``: OpenAI's strict mode refuses
    free-form objects such as a tool's ``toolInput``; llama.cpp, vLLM, Ollama and LM
    Studio constrain decoding to the schema either way. ``json_object`` with a
    ``schema`` beside it is llama-cpp-python's dialect (its server refuses
    ``json_schema``); elsewhere it still asks for JSON. The schema goes in the form every
    grammar converter reads in full (:func:`branches_complete`).
    """
    schema = branches_complete(schema)
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema",
            "json_schema": {"name": _SCHEMA_NAME.sub("_", name)[:64] or "reply",
                            "schema": schema}}


def user_content(prompt: Any) -> Any:
    """A user message's ``content`` on the wire: the text, or, when images or sounds go
    with it, OpenAI's content parts: ``text``, ``image_url`` with a data URL, and
    ``input_audio`` (base64 and its format, ``wav`` or ``mp3``)."""
    if isinstance(prompt, str):
        return prompt
    parts: list[dict[str, Any]] = []
    for part in prompt:
        value = part["value"]
        if part["type"] == "text":
            parts.append({"type": "text", "text": str(value)})
            continue
        data = base64.b64encode(bytes(value.content or b"")).decode("ascii")
        mime = value.type or "application/octet-stream"
        if part["type"] == "image":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
        else:
            audio_format = {"audio/mpeg": "mp3", "audio/mp3": "mp3"}.get(mime, "wav")
            parts.append({"type": "input_audio",
                          "input_audio": {"data": data, "format": audio_format}})
    return parts


def has_media(messages: list[dict[str, Any]]) -> frozenset[str]:
    """The kinds of media the messages carry (``image``, ``audio``)."""
    kinds = set()
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "image_url":
                    kinds.add("image")
                elif kind == "input_audio":
                    kinds.add("audio")
    return frozenset(kinds)


def chat_body(model: str, messages: list[dict[str, Any]], *, stream: bool,
              schema: dict[str, Any] | None, schema_name: str, max_tokens: int | None,
              include_usage: bool, schema_mode: str = "json_schema",
              options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON body of one ``POST /chat/completions``."""
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if schema is not None:
        body["response_format"] = response_format(schema, schema_name, schema_mode)
    if stream and include_usage:
        body["stream_options"] = {"include_usage": True}
    for key, value in (options or {}).items():
        body.setdefault(key, value)
    return body


@dataclass
class ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class Reply:
    """What one completion produced, and what it cost."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def text(self) -> str:
        """The reply as the agent reads it: content, or a tool call written as a step."""
        if self.content.strip() or not self.tool_calls:
            return self.content
        call = self.tool_calls[0]
        try:
            arguments: Any = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            arguments = call.arguments
        return json.dumps({"thought": "", "toolName": call.name, "toolInput": arguments,
                           "finalAnswer": ""}, ensure_ascii=False)


def _usage(reply: Reply, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and prompt >= 0:
        reply.prompt_tokens = prompt
    if isinstance(completion, int) and completion >= 0:
        reply.completion_tokens = completion


def _error_in_body(data: dict[str, Any], url: str, model: str) -> ServerError | None:
    """An ``{"error": ...}`` object sent with a 200 status or inside a stream."""
    error = data.get("error")
    if not error:
        return None
    status = 500
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        status = error["code"] if 400 <= error["code"] < 600 else 500
    return error_for_status(status, json.dumps(data).encode(), {}, url=url, model=model)


def _choice(data: Any, what: str) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        raise MalformedReplyError(f"the {what} was not a JSON object")
    choices = data.get("choices")
    if choices is None or choices == []:
        return None
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise MalformedReplyError(f"the {what} has a malformed 'choices' list")
    return choices[0]


def parse_completion(body: bytes, *, url: str, model: str) -> Reply:
    """A non-streamed reply; raises :class:`MalformedReplyError` for anything else."""
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        raise MalformedReplyError(f"The model server at {url} sent a reply that is not JSON: "
                                  f"{body[:200]!r}") from None
    if isinstance(data, dict) and (error := _error_in_body(data, url, model)):
        raise error
    choice = _choice(data, "reply")
    if choice is None:
        raise MalformedReplyError(f"The model server at {url} sent a reply without choices.")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedReplyError(f"The model server at {url} sent a choice without a message.")
    reply = Reply(content=_text(message.get("content")), finish_reason=choice.get("finish_reason"))
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict):
            arguments = function.get("arguments", "")
            reply.tool_calls.append(ToolCall(
                id=str(raw.get("id", "")), name=str(function.get("name", "")),
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments)))
    _usage(reply, data.get("usage"))
    return reply


def _text(content: Any) -> str:
    """Message content as text: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    raise MalformedReplyError("the message content is neither text nor a list of parts")


class StreamAccumulator:
    """Builds a :class:`Reply` from the ``data`` of each server-sent event.

    ``feed`` returns the new content text of that event ("" for role, tool-call,
    usage and empty chunks). Tool-call deltas are joined by their ``index``: the
    first delta carries id and name, later ones pieces of the arguments.
    """

    def __init__(self, *, url: str, model: str) -> None:
        self.reply = Reply()
        self.done = False
        self._url, self._model = url, model
        self._calls: dict[int, ToolCall] = {}

    def feed(self, data: str) -> str:
        if self.done:
            return ""
        if data.strip() == DONE:
            self.done = True
            return ""
        try:
            chunk = json.loads(data)
        except ValueError:
            raise MalformedReplyError(f"The model server at {self._url} streamed an event that "
                                      f"is not JSON: {data[:200]!r}") from None
        if isinstance(chunk, dict) and (error := _error_in_body(chunk, self._url, self._model)):
            raise error
        choice = _choice(chunk, "streamed chunk")
        _usage(self.reply, chunk.get("usage"))
        if choice is None:
            return ""
        if choice.get("finish_reason"):
            self.reply.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise MalformedReplyError("a streamed chunk has a malformed delta")
        for raw in delta.get("tool_calls") or []:
            self._tool_call_delta(raw)
        text = _text(delta.get("content"))
        self.reply.content += text
        return text

    def _tool_call_delta(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        index = raw.get("index", len(self._calls))
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = ToolCall()
            self.reply.tool_calls.append(call)
        call.id = str(raw.get("id") or call.id)
        function = raw.get("function") or {}
        if isinstance(function, dict):
            call.name += str(function.get("name") or "")
            arguments = function.get("arguments") or ""
            call.arguments += arguments if isinstance(arguments, str) else json.dumps(arguments)

    @property
    def complete(self) -> bool:
        """True once the stream said it was over: ``[DONE]`` or a finish reason."""
        return self.done or self.reply.finish_reason is not None
