"""A fake OpenAI-compatible chat-completions server (stdlib ``http.server``), for tests.

It speaks the real wire format closely: ``POST /v1/chat/completions`` with and
without ``stream`` (server-sent events: a role delta, ``delta.content`` pieces,
``tool_calls`` deltas with the name first and the arguments in pieces, a final
chunk with ``finish_reason``, a usage chunk with empty ``choices`` when
``stream_options.include_usage`` is set, then ``data: [DONE]``), ``GET /v1/models``,
error bodies in OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``)
with their statuses (401 without the right key, 404 ``model_not_found``, 400
``context_length_exceeded``, 400 for ``response_format`` when told not to support it
(a type, or schemas using a keyword),
429 with ``Retry-After``, 500/503), images and sounds as OpenAI's content parts
(``image_url`` with a data URL, ``input_audio``: read back as :attr:`ChatRequest.media`,
or refused with llama.cpp's 500 when ``vision=False``), and optional llama.cpp (``/props``, ``/tokenize``),
vLLM (``max_model_len``) and Ollama (``/api/show``, ``/api/ps``) extras. CORS as
llama.cpp and vLLM do it by default (any origin, preflights answered), or
``cors=False`` for a server that lets no page in.

What the "model" says comes from a responder ``fn(ChatRequest) -> Action | str``;
:meth:`FakeServer.push` queues one-off actions (errors, hangs, a connection closed
mid-stream) that go before it. Every request is recorded in ``server.requests``.

Run it alone for manual tries and the page's tests::

    python -m tests.fake_openai_server --port 8099     # scripted agent replies
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

from py_agent.testing import count_tokens


@dataclass
class ChatRequest:
    """A chat-completions request as the responder sees it."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        if not users:
            return ""
        content = users[-1].get("content", "")
        if isinstance(content, list):   # content parts: the text ones
            return "".join(str(p.get("text", "")) for p in content
                           if isinstance(p, dict) and p.get("type") == "text")
        return str(content)

    @property
    def media(self) -> list[dict[str, Any]]:
        """Every image and sound of the request, in order: ``{kind, mime, bytes, width,
        height}`` (the mime and pixels read from the data; a sound's format as sent)."""
        found = []
        for message in self.messages:
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "image_url":
                    url = str((part.get("image_url") or {}).get("url", ""))
                    head, _, data = url.partition(",")
                    raw = base64.b64decode(data) if head.endswith(";base64") else b""
                    width, height = _pixels(raw)
                    found.append({"kind": "image", "mime": head[5:].split(";")[0],
                                  "bytes": len(raw), "width": width, "height": height,
                                  "data_url": head.startswith("data:")})
                elif part.get("type") == "input_audio":
                    audio = part.get("input_audio") or {}
                    found.append({"kind": "audio", "mime": f"audio/{audio.get('format')}",
                                  "bytes": len(base64.b64decode(str(audio.get("data", "")))),
                                  "width": None, "height": None, "data_url": False})
        return found

    @property
    def schema(self) -> dict[str, Any] | None:
        fmt = self.body.get("response_format") or {}
        if fmt.get("type") == "json_object":
            return fmt.get("schema")
        return (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" \
            else None

    @property
    def schema_name(self) -> str:
        return str(((self.body.get("response_format") or {}).get("json_schema") or {})
                   .get("name", ""))

    def offered_tools(self) -> list[str]:
        """Tool names the request offers: the step schema's enum, else the prompt's list."""
        if self.schema:
            enum = self.schema.get("properties", {}).get("toolName", {}).get("enum")
            # the step schema as the backend sends it: one complete branch per tool
            enum = enum or [b["properties"]["toolName"]["const"]
                            for b in self.schema.get("anyOf", [])
                            if "const" in b.get("properties", {}).get("toolName", {})]
            if enum:
                return [t for t in enum if t != "none"]
        return re.findall(r"^- (\w+)\(", self.last_user, re.MULTILINE)


@dataclass
class Reply:
    """A successful completion: content and/or tool calls ({"name", "arguments"})."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    chunk_chars: int = 6  # streamed content comes in pieces this long
    close_after_chunks: int | None = None  # drop the connection after this many events
    hang_after_chunks: int | None = None   # stop sending (keep the connection) after this many
    usage: bool = True                     # include usage at all


@dataclass
class Fail:
    """An error reply in OpenAI's shape."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    retry_after: str | None = None
    param: str | None = None


@dataclass
class Hang:
    """Answer nothing for ``seconds`` (longer than any client timeout in the tests)."""

    seconds: float = 30.0


@dataclass
class Raw:
    """Send these bytes as the body with this status and content type."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


Action = Union[Reply, Fail, Hang, Raw, str]
Responder = Callable[[ChatRequest], Action]


def _pixels(data: bytes) -> tuple[int | None, int | None]:
    """A PNG's or a JPEG's size, for saying what arrived."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    at = 2
    while data[:2] == b"\xff\xd8" and at + 9 < len(data) and data[at] == 0xFF:
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None, None


def received(media: list[dict[str, Any]]) -> str:
    """What a request's media were, as the scripted model says it: "image (image/png,
    64×48, 1,234 bytes)"."""
    said = []
    for item in media:
        pixels = f", {item['width']}×{item['height']}" if item.get("width") else ""
        said.append(f"{item['kind']} ({item['mime']}{pixels}, {item['bytes']:,} bytes)")
    return "; ".join(said)


def echo_responder(request: ChatRequest) -> Action:
    return Reply(content=f"You said: {request.last_user}")


class FakeServer:
    """The server, on a background thread. Use as a context manager or call ``close``."""

    def __init__(self, responder: Responder = echo_responder, *, models: tuple[str, ...] = ("fake-model",),
                 api_key: str | None = None, context_window: int | None = None,
                 flavor: str = "openai",
                 response_formats: tuple[str, ...] = ("json_schema", "json_object"),
                 refusal_status: int = 400, refused_keywords: tuple[str, ...] = (),
                 stream_options: bool = True, cors: bool = True, host: str = "127.0.0.1",
                 port: int = 0, chunk_pause_s: float = 0.0, vision: bool = True,
                 embedding_models: dict[str, int] | None = None) -> None:
        self.responder = responder
        # False: a model without a projector, refusing images and sounds as llama.cpp does
        self.vision = vision
        # embedding model -> its dimension, served at POST /v1/embeddings
        self.embedding_models = dict(embedding_models or {})
        self.models = models
        self.api_key = api_key
        self.context_window = context_window
        self.flavor = flavor  # "openai", "llama.cpp", "vllm", "ollama"
        self.response_formats = response_formats  # the response_format types it accepts
        self.refusal_status = refusal_status  # llama-cpp-python refuses json_schema with a 500
        # JSON-schema keywords its grammar converter refuses (400), in any response_format
        self.refused_keywords = refused_keywords
        self.stream_options = stream_options
        self.cors = cors
        # seconds between streamed events, as a model that generates as it goes
        self.chunk_pause_s = chunk_pause_s
        self.requests: list[dict[str, Any]] = []
        self.queued: list[Action] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *actions: Action) -> None:
        """Queue actions that answer the next chat requests, before the responder."""
        with self.lock:
            self.queued.extend(actions)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests
                if r["method"] == "POST" and r["path"].endswith("/chat/completions")]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _error_body(fail: Fail) -> bytes:
    return json.dumps({"error": {"message": fail.message, "type": fail.type, "param": fail.param,
                                 "code": fail.code}}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def fake(self) -> FakeServer:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        pass

    # ---------------------------------------------------------------- plumbing

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode())

    def _fail(self, fail: Fail) -> None:
        headers = {"Retry-After": fail.retry_after} if fail.retry_after is not None else None
        self._send(fail.status, _error_body(fail), headers=headers)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _record(self, body: Any) -> None:
        with self.fake.lock:
            self.fake.requests.append({"method": self.command, "path": self.path,
                                       "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "body": body})

    def _authorized(self) -> bool:
        key = self.fake.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._fail(Fail(401, "Incorrect API key provided.", code="invalid_api_key"))
        return False

    def end_headers(self) -> None:
        origin = self.headers.get("Origin")
        if origin and self.fake.cors:
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Vary", "Origin")
        super().end_headers()

    # ----------------------------------------------------------------- routes

    def do_OPTIONS(self) -> None:  # noqa: N802  (a browser's CORS preflight)
        self._record(None)
        self.send_response(204 if self.fake.cors else 405)
        if self.fake.cors:
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers",
                             self.headers.get("Access-Control-Request-Headers") or "*")
            self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self._record(None)
        fake, path = self.fake, self.path.split("?")[0]
        if path == "/v1/models":
            if not self._authorized():
                return
            data = []
            for name in fake.models:
                entry: dict[str, Any] = {"id": name, "object": "model", "owned_by": "fake"}
                if fake.flavor == "vllm" and fake.context_window:
                    entry["max_model_len"] = fake.context_window
                data.append(entry)
            self._json(200, {"object": "list", "data": data})
        elif path == "/props" and fake.flavor == "llama.cpp":
            self._json(200, {"default_generation_settings": {"n_ctx": fake.context_window},
                             "total_slots": 1})
        elif path == "/api/ps" and fake.flavor == "ollama":
            self._json(200, {"models": []})
        else:
            self._json(404, {"error": {"message": f"File Not Found: {path}", "type": "not_found_error",
                                       "code": 404}})

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        self._record(body)
        fake, path = self.fake, self.path.split("?")[0]
        if path == "/tokenize" and fake.flavor in ("llama.cpp", "vllm") and isinstance(body, dict):
            text = str(body.get("content", body.get("prompt", "")))
            count = count_tokens(text)
            self._json(200, {"tokens": list(range(count))} if fake.flavor == "llama.cpp"
                       else {"count": count, "tokens": list(range(count)), "max_model_len": 1})
            return
        if path == "/api/show" and fake.flavor == "ollama":
            self._json(200, {"parameters": f"num_ctx {fake.context_window}" if fake.context_window
                             else "stop \"<end>\"", "model_info": {"gemma3.context_length": 32768}})
            return
        if path == "/v1/embeddings" and fake.embedding_models and isinstance(body, dict):
            self._embeddings(body)
            return
        if path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found_error"}})
            return
        if not self._authorized():
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._fail(Fail(400, "'messages' is a required property"))
            return
        self._chat(ChatRequest(body, {k.lower(): v for k, v in self.headers.items()}))

    def _embeddings(self, body: dict) -> None:
        """``POST /v1/embeddings`` as the servers answer it: one ``{index, embedding}`` per
        input, in a ``data`` list. The vectors are hashed character trigrams (not unit
        length: the client normalises), deterministic, of the model's dimension."""
        model, texts = body.get("model"), body.get("input")
        if model not in self.fake.embedding_models:
            self._json(404, {"error": {"message": f"model '{model}' not found",
                                       "type": "not_found_error"}})
            return
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._json(400, {"error": {"message": "'input' must be a string or a list of strings",
                                       "type": "invalid_request_error"}})
            return
        size = self.fake.embedding_models[model]
        data = []
        for index, text in enumerate(texts):
            vector = [0.0] * size
            padded = f"  {text.lower()}  "
            for i in range(len(padded) - 2):
                digest = hashlib.sha1(padded[i:i + 3].encode()).digest()
                vector[int.from_bytes(digest[:4], "little") % size] += 2.0
            data.append({"object": "embedding", "index": index, "embedding": vector})
        self._json(200, {"object": "list", "model": model, "data": data,
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    # ------------------------------------------------------------------- chat

    def _chat(self, request: ChatRequest) -> None:
        fake, body = self.fake, request.body
        if body.get("model") not in fake.models:
            self._fail(Fail(404, f"The model `{body.get('model')}` does not exist or you do not "
                                 "have access to it.", code="model_not_found"))
            return
        if request.media and not fake.vision:
            self._fail(Fail(500, "image input is not supported - hint: if this is unexpected, "
                                 "you may need to provide the mmproj", type="server_error"))
            return
        kind = (body.get("response_format") or {}).get("type")
        if kind and kind not in fake.response_formats:
            self._fail(Fail(fake.refusal_status, f"response_format.type: input should be one of "
                                                 f"{', '.join(fake.response_formats) or 'text'}, "
                                                 f"not {kind!r}", param="response_format"))
            return
        used = [k for k in fake.refused_keywords if f'"{k}"' in json.dumps(request.schema or {})]
        if kind and used:
            self._fail(Fail(400, f"response_format: the JSON schema uses {used[0]!r}, which "
                                 "this server's grammar does not support",
                            param="response_format"))
            return
        if "stream_options" in body and not fake.stream_options:
            self._fail(Fail(400, "Unrecognized request argument supplied: stream_options"))
            return
        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) + 4 for m in request.messages)
        if fake.context_window and prompt_tokens > fake.context_window:
            self._fail(Fail(400, f"This model's maximum context length is {fake.context_window} "
                                 f"tokens. However, your messages resulted in {prompt_tokens} "
                                 "tokens.", code="context_length_exceeded", param="messages"))
            return
        with fake.lock:
            action = fake.queued.pop(0) if fake.queued else None
        if action is None:
            action = fake.responder(request)
        if isinstance(action, str):
            action = Reply(content=action)
        if isinstance(action, Fail):
            self._fail(action)
        elif isinstance(action, Hang):
            time.sleep(action.seconds)
            self.close_connection = True
        elif isinstance(action, Raw):
            self._send(action.status, action.body, action.content_type)
        elif body.get("stream"):
            self._stream(request, action, prompt_tokens)
        else:
            self._whole(action, prompt_tokens)

    def _usage(self, reply: Reply, prompt_tokens: int) -> dict[str, int]:
        completion = count_tokens(reply.content) + sum(
            count_tokens(c["name"] + json.dumps(c.get("arguments", {}))) for c in reply.tool_calls)
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion}

    def _finish(self, reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _whole(self, reply: Reply, prompt_tokens: int) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                for i, c in enumerate(reply.tool_calls)]
        data: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion",
                                "created": int(time.time()), "model": self.fake.models[0],
                                "choices": [{"index": 0, "message": message,
                                             "finish_reason": self._finish(reply)}]}
        if reply.usage:
            data["usage"] = self._usage(reply, prompt_tokens)
        self._json(200, data)

    def _stream(self, request: ChatRequest, reply: Reply, prompt_tokens: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": request.body["model"]}

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events: list[dict[str, Any] | str] = [choice({"role": "assistant", "content": ""})]
        text = reply.content
        for start in range(0, len(text), max(1, reply.chunk_chars)):
            events.append(choice({"content": text[start:start + reply.chunk_chars]}))
        for i, call in enumerate(reply.tool_calls):
            arguments = json.dumps(call.get("arguments", {}))
            events.append(choice({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                                  "function": {"name": call["name"],
                                                               "arguments": ""}}]}))
            for start in range(0, len(arguments), 8):
                events.append(choice({"tool_calls": [{"index": i, "function": {
                    "arguments": arguments[start:start + 8]}}]}))
        events.append(choice({}, self._finish(reply)))
        include_usage = (request.body.get("stream_options") or {}).get("include_usage")
        if include_usage and reply.usage:
            events.append({**base, "choices": [], "usage": self._usage(reply, prompt_tokens)})
        events.append("[DONE]")
        for index, event in enumerate(events):
            if reply.close_after_chunks is not None and index >= reply.close_after_chunks:
                self.close_connection = True
                self.connection.shutdown(2)  # drop it without the terminating chunk
                return
            if reply.hang_after_chunks is not None and index >= reply.hang_after_chunks:
                time.sleep(30)
                self.close_connection = True
                return
            payload = event if isinstance(event, str) else json.dumps(event)
            if index and self.fake.chunk_pause_s:
                time.sleep(self.fake.chunk_pause_s)
            self._chunk(f"data: {payload}\n\n".encode())
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


# ------------------------------------------------------- a scripted agent model

_ARITHMETIC = re.compile(r"(-?\d+(?:\.\d+)?)\s*(\+|-|\*|/|x|×|times|plus|minus|divided by)\s*"
                         r"(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_OPERATORS = {"times": "*", "x": "*", "×": "*", "plus": "+", "minus": "-", "divided by": "/"}


def _step(thought: str, tool: str = "none", tool_input: Any = "", answer: str = "") -> str:
    return json.dumps({"thought": thought, "toolName": tool, "toolInput": tool_input,
                       "finalAnswer": answer})


def agent_responder(request: ChatRequest) -> Action:
    """Plausible replies for the agent's three kinds of call, decided from the request.

    Steps: arithmetic in the user's message and an offered tool whose name starts with
    ``calc`` → call it; an observation → answer with it; a question about what was said
    before → answer from the memory the prompt carries; anything else → echo.
    Summaries join the user lines they are given; fact extraction finds none.
    """
    if request.schema_name == "facts":
        return json.dumps({"facts": []})
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    if "running summary" in system:
        users = re.findall(r"^User: (.*)$", request.last_user, re.MULTILINE)
        return " ".join(f"The user asked: {u[:80]}." for u in users) or "Nothing much was said."
    last = request.last_user
    if last.startswith("Observation from "):
        tool, _, result = last[len("Observation from "):].partition(": ")
        return _step(f"{tool} gave the result.", answer=f"The answer is {result.strip()}.")
    if last.startswith("Observation:"):
        return _step("I will answer directly.", answer="I could not use a tool for that.")
    message = last.rpartition("\nUser: ")[2] if "\nUser: " in last else last.removeprefix("User: ")
    message = message.split("\nAttached to this message")[0]
    if request.schema_name == "describe":
        return json.dumps({"descriptions": [("an image" if item["kind"] == "image" else "a sound")
                                            + " the user sent" for item in request.media]})
    if request.media:
        return _step("The user sent media.",
                     answer=f"You said: {message}. I received: {received(request.media)}.")
    calculator = next((t for t in request.offered_tools() if t.startswith("calc")), None)
    match = _ARITHMETIC.search(message)
    if calculator and match:
        op = _OPERATORS.get(match.group(2).lower(), match.group(2))
        return _step("This needs arithmetic.", calculator,
                     {"expression": f"{match.group(1)} {op} {match.group(3)}"})
    if re.search(r"\b(before|earlier|previous|remember)\b", message, re.IGNORECASE):
        # The memory: appended memory messages (a memory session), or the head of the
        # last prompt (when the prompt carries it).
        memory = "\n\n".join([*(str(m.get("content", "")) for m in request.messages[:-1]
                                if m.get("role") == "user" and str(m.get("content", "")).startswith(
                                    ("Memory:", "Earlier turn:"))),
                               last.split("\n\nTools for this request:")[0]])
        earlier = re.findall(r"^User: (.*)$", memory, re.MULTILINE)
        summary = re.search(r"Summary of the earlier conversation:\n(.*)", memory)
        if earlier:
            return _step("The memory has it.", answer=f"Earlier you asked: {earlier[0]}")
        if summary:
            return _step("The summary has it.", answer=f"From my notes: {summary.group(1)}")
        return _step("Nothing in memory.", answer="I do not remember anything earlier.")
    return _step("I can answer directly.", answer=f"You said: {message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--model", action="append", help="model names served (repeatable)")
    parser.add_argument("--context-window", type=int, default=None)
    parser.add_argument("--flavor", default="openai", choices=["openai", "llama.cpp", "vllm", "ollama"])
    parser.add_argument("--api-key", help="require this key (Authorization: Bearer)")
    parser.add_argument("--no-cors", action="store_true", help="let no web page in (no CORS)")
    args = parser.parse_args()
    server = FakeServer(agent_responder, models=tuple(args.model or ["fake-model"]),
                        context_window=args.context_window, flavor=args.flavor, host=args.host,
                        port=args.port, api_key=args.api_key, cors=not args.no_cors)
    print(f"fake OpenAI-compatible server at {server.url}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
