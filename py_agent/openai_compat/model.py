"""``OpenAIModel``: the ``LanguageModel`` protocol over an OpenAI-compatible server.

A session is the list of messages sent so far. ``create`` stores the initial
prompts; ``clone`` copies the list, so every clone of the agent's prefilled base
session starts with the same messages, byte for byte. Servers with prefix caching
(llama.cpp's slots, vLLM's automatic prefix caching, Ollama's kept context)
therefore process the system instruction and few-shot examples once, as the Prompt
API does with ``initialPrompts``. ``prompt`` sends the whole list plus the new user
message and appends both sides on success; a failed call leaves the session as it was.

Context usage is exact after the first reply (the server's ``usage`` counts the whole
conversation as the model saw it) and estimated before, or when a server sends no usage.
A prompt that would not fit the window raises :class:`QuotaExceededError` before any
request, as the Prompt API does, and so does the server's own context-length refusal.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Union

from ..message_list import MESSAGE_OVERHEAD, MessageListSession, media_tokens, opening_messages
from ..model import (MEDIA_KINDS, Availability, InputNotSupportedError, MediaSupport, Message,
                     Prompt, Purpose, QuotaExceededError, media_kinds, prompt_media, prompt_text)
from ..tokens import estimate_tokens
from .client import ChatClient, Timeouts
from .discovery import ServerFacts, discover, token_count, tokenize_body
from .errors import (BadRequestError, ModelNotFoundError, ResponseFormatRefusedError, ServerError,
                     ServerFailureError, looks_like_media_refusal, unsupported_feature)
from .transport import HttpTransport
from .wire import SCHEMA_MODES, Reply, chat_body, has_media, user_content

log = logging.getLogger("py_agent.openai_compat")

DEFAULT_CONTEXT_WINDOW = 4096
MIN_REPLY_TOKENS = 64


@dataclass(frozen=True)
class StreamChunk:
    """A piece of a reply as it streams in: ``delta`` is new, ``text`` is all so far;
    ``conversation_id`` is the chat of the session that asked ("" if it has none)."""

    purpose: str
    delta: str
    text: str
    request_id: str
    conversation_id: str = ""


ChunkHandler = Callable[[StreamChunk], Union[None, Awaitable[None]]]


class OpenAISession(MessageListSession):
    """A conversation kept as a message list; see the module docstring.

    ``conversation_id`` is the agent's chat this session serves: the pieces its prompts
    stream carry it (:attr:`StreamChunk.conversation_id`), and a clone keeps it.
    """

    def __init__(self, model: "OpenAIModel", messages: list[Message], purpose: Purpose,
                 usage: int, conversation_id: str = "") -> None:
        super().__init__(messages, purpose, usage)
        self._model = model
        self.conversation_id = conversation_id

    @property
    def context_window(self) -> int:
        return self._model.window

    async def prompt(self, text: Prompt, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        self._check_alive()
        model = self._model
        model.check_media(media_kinds(text))
        needed = (self._usage + estimate_tokens(prompt_text(text))
                  + media_tokens(prompt_media(text)) + MESSAGE_OVERHEAD)
        room = model.window - needed
        if room < MIN_REPLY_TOKENS:
            raise QuotaExceededError("the prompt does not fit the context window",
                                     requested=needed + MIN_REPLY_TOKENS, quota=model.window)
        messages = [*self.messages, {"role": "user", "content": user_content(text)}]
        reply = await model.complete(messages, response_constraint, Purpose(purpose),
                                     max_tokens=min(model.max_tokens, room),
                                     conversation_id=self.conversation_id)
        answer = reply.text
        self.messages = [*messages, {"role": "assistant", "content": answer}]
        if reply.prompt_tokens is not None:
            self._usage = reply.prompt_tokens + (reply.completion_tokens
                                                 if reply.completion_tokens is not None
                                                 else estimate_tokens(answer))
        else:
            self._usage = needed + estimate_tokens(answer) + MESSAGE_OVERHEAD
        return answer

    async def append(self, text: str, *, purpose: Purpose = Purpose.STEP) -> None:
        """Add a user message without a request. The next prompt sends it in the same
        place every turn, so a server with prefix caching reuses what it computed."""
        self._check_alive()
        needed = self._usage + estimate_tokens(text) + MESSAGE_OVERHEAD
        if needed + MIN_REPLY_TOKENS > self._model.window:
            raise QuotaExceededError("the appended input does not fit the context window",
                                     requested=needed + MIN_REPLY_TOKENS, quota=self._model.window)
        self.messages = [*self.messages, {"role": "user", "content": text}]
        self._usage = needed

    async def measure(self, text: Prompt) -> int | None:
        self._check_alive()
        if not isinstance(text, str):
            exact = await self._model.measure(prompt_text(text))
            return None if exact is None else exact + media_tokens(prompt_media(text))
        return await self._model.measure(text)

    async def clone(self) -> "OpenAISession":
        self._check_alive()
        return OpenAISession(self._model, self.messages, self.purpose, self._usage,
                             self.conversation_id)

    async def destroy(self) -> None:
        self.destroyed = True


class OpenAIModel:
    """A :class:`~py_agent.model.LanguageModel` backed by a chat-completions server.

    Args:
        base_url: the API base, e.g. ``http://localhost:11434/v1`` (Ollama),
            ``http://localhost:8080`` (llama.cpp; ``/v1`` is added), ``http://host:8000/v1`` (vLLM).
        model: the model name the server knows.
        api_key: sent as ``Authorization: Bearer``; never logged or shown.
        context_window: tokens per conversation; asked from the server when None
            (see :mod:`.discovery`), else :data:`DEFAULT_CONTEXT_WINDOW`.
        max_tokens: the longest reply asked for (less when the window is nearly full).
        structured_output: how a call's JSON schema goes as ``response_format``: None
            tries ``json_schema``, then llama-cpp-python's ``json_object`` + schema,
            keeping the first the server takes; ``"json_schema"`` or ``"json_object"``
            uses only that; False never sends one. A schema refused in every form is a
            :class:`~py_agent.model.ResponseConstraintError`, and the agent asks again
            under a simpler one, or none (:mod:`py_agent.constraints`).
        stream: stream replies (server-sent events); ``on_chunk`` sees each piece.
        options: extra body fields for every request (``temperature``, ``seed``...).
        transport: how HTTP is spoken: :class:`StdlibTransport` in CPython, ``fetch``
            in the browser.
        timeouts, max_retries, max_retry_wait: see :class:`ChatClient`.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 context_window: int | None = None, max_tokens: int = 1024,
                 structured_output: bool | str | None = None, stream: bool = True,
                 on_chunk: ChunkHandler | None = None, options: dict[str, Any] | None = None,
                 transport: HttpTransport | None = None, timeouts: Timeouts | None = None,
                 max_retries: int = 2, max_retry_wait: float = 30.0) -> None:
        if not model or not isinstance(model, str):
            raise ValueError("a model name is required")
        if context_window is not None and context_window < 256:
            raise ValueError("context_window must be at least 256 tokens")
        if structured_output not in (None, False, *SCHEMA_MODES):
            raise ValueError(f"structured_output must be None, False or one of {SCHEMA_MODES}")
        if transport is None:
            from .stdlib_transport import StdlibTransport
            transport = StdlibTransport()
        self.client = ChatClient(base_url, model, transport, api_key=api_key, timeouts=timeouts,
                                 max_retries=max_retries, max_retry_wait=max_retry_wait)
        self.name = model
        self.max_tokens = max_tokens
        self.schema_fallback = structured_output is None
        self.schema_mode: str | None = (SCHEMA_MODES[0] if structured_output is None
                                        else structured_output or None)
        self.stream = stream
        self.on_chunk = on_chunk
        self.options = dict(options or {})
        self.include_usage = True
        self.facts: ServerFacts | None = None
        self.context_window: int | None = context_window
        self.window_source = "configured" if context_window else "unknown"
        self.last_error: ServerError | None = None
        self._discovery_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        # Kinds of media the server refused for this model, with what it said.
        self.refused_media: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"OpenAIModel({self.client.base_url!r}, {self.name!r})"

    @property
    def base_url(self) -> str:
        return self.client.base_url

    @property
    def window(self) -> int:
        return self.context_window or DEFAULT_CONTEXT_WINDOW

    async def connect(self) -> ServerFacts:
        """Reach the server once and learn what it tells (window, tokenizer, models).

        Raises the typed error when the server cannot be reached; later calls retry.
        """
        async with self._discovery_lock:
            if self.facts is None:
                self.facts = await discover(self.client)
                if self.context_window is None:
                    self.context_window = self.facts.context_window or DEFAULT_CONTEXT_WINDOW
                    self.window_source = (self.facts.source if self.facts.context_window
                                          else "default: the server does not say; configure it")
            return self.facts

    async def availability(self) -> Availability:
        try:
            await self.connect()
        except ServerError as exc:
            self.last_error = exc
            return "unavailable"
        return "available"

    async def media_support(self) -> MediaSupport:
        """Images and sounds are offered to the server until it refuses them for this
        model (a server says which models see only when asked with one: llama.cpp
        without a projector, a text model on vLLM or Ollama); then that kind is not."""
        takes = frozenset(k for k in MEDIA_KINDS if k not in self.refused_media)
        return MediaSupport(takes, dict(self.refused_media), self.name)

    def check_media(self, kinds: frozenset[str]) -> None:
        """Refuse, before any request, the kinds this model's server refused already."""
        refused = sorted(k for k in kinds if k in self.refused_media)
        if refused:
            raise InputNotSupportedError(self.refused_media[refused[0]],
                                         kinds=frozenset(refused), model=self.name)

    def _media_refused(self, kinds: frozenset[str], exc: ServerError) -> InputNotSupportedError:
        what = " and ".join("images" if k == "image" else "sounds" for k in sorted(kinds))
        message = (f"The model {self.name!r} at {self.base_url} does not take {what} "
                   f"({exc.status}): {exc.detail or exc}. Send the message without the "
                   "attachment, or choose a model that can see or hear.")
        for kind in kinds:
            self.refused_media[kind] = message
        return InputNotSupportedError(message, kinds=kinds, model=self.name)

    async def create(self, *, initial_prompts: list[Message],
                     purpose: Purpose = Purpose.STEP,
                     expected_inputs: tuple[str, ...] = ()) -> OpenAISession:
        self.check_media(frozenset(expected_inputs))
        await self.connect()
        messages, usage = opening_messages(initial_prompts, estimate_tokens, self.window)
        return OpenAISession(self, messages, Purpose(purpose), usage)

    def describe(self) -> dict[str, Any]:
        """Which model answers, for a status line."""
        return {"backend": "openai-compatible", "model": self.name, "base_url": self.base_url,
                "context_window": self.window, "window_source": self.window_source,
                "structured_output": self.schema_mode}

    async def measure(self, text: str) -> int | None:
        """Exact tokens of ``text`` where the server has a tokenizer endpoint, else None."""
        tokenizer = self.facts.tokenizer if self.facts else None
        if tokenizer is None:
            return None
        try:
            data = await self.client.get_json("/tokenize", root=True,
                                              body=tokenize_body(tokenizer, self.name, text))
        except ServerError:
            return None
        return token_count(tokenizer, data)

    async def complete(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None,
                       purpose: Purpose, *, max_tokens: int, conversation_id: str = "") -> Reply:
        """One completion; streamed pieces go to ``on_chunk``, tagged with
        ``conversation_id`` (the chat the calling session serves). A refused ``stream_options``
        is dropped for good. A refused ``response_format`` is tried in the next form
        (kept for good once one takes the schema); a schema refused in every form raises
        :class:`ResponseFormatRefusedError`, a refused response constraint, and the
        forms stay as they were: it was the schema, not the form, that failed."""
        request_id = f"o{next(self._ids)}"
        mode = self.schema_mode if schema is not None else None
        while True:
            body = chat_body(self.name, messages, stream=self.stream, schema=schema if mode else None,
                             schema_name=purpose.value, max_tokens=max_tokens,
                             include_usage=self.include_usage, schema_mode=mode or SCHEMA_MODES[0],
                             options=self.options)
            try:
                reply = await self.client.complete(
                    body, self._chunk_sink(purpose, request_id, conversation_id))
            except ModelNotFoundError as exc:
                served = ", ".join(self.facts.models) if self.facts and self.facts.models else ""
                if served:
                    raise ModelNotFoundError(f"{exc} Models this server has: {served}.",
                                             status=exc.status, code=exc.code,
                                             detail=exc.detail) from None
                raise
            except (BadRequestError, ServerFailureError) as exc:
                media = has_media(messages)
                if media and looks_like_media_refusal(exc.detail, exc.code):
                    raise self._media_refused(media, exc) from exc
                feature = unsupported_feature(exc.detail, exc.code)
                if "stream_options" in body and feature == "stream_options":
                    self.include_usage = False
                elif mode and (feature == "response_format" or (
                        isinstance(exc, BadRequestError) and feature is None)):
                    lower = self._next_schema_mode(mode) if self.schema_fallback else None
                    if lower is None:
                        raise ResponseFormatRefusedError(
                            f"The model server at {self.base_url} refused the response's JSON "
                            f"schema ({exc.status}): {exc.detail or exc}", status=exc.status,
                            code=exc.code, detail=exc.detail) from exc
                    log.warning("%s refused response_format %s (%s); trying %s",
                                self.base_url, mode, exc.detail or exc, lower)
                    mode = lower
                else:
                    raise
            else:
                if mode is not None and mode != self.schema_mode:
                    self.schema_mode = mode  # this form works where the first did not
                return reply

    @staticmethod
    def _next_schema_mode(mode: str) -> str | None:
        index = SCHEMA_MODES.index(mode) + 1
        return SCHEMA_MODES[index] if index < len(SCHEMA_MODES) else None

    def _chunk_sink(self, purpose: Purpose, request_id: str, conversation_id: str):
        handler = self.on_chunk
        if handler is None:
            return None
        parts: list[str] = []

        async def sink(delta: str) -> None:
            parts.append(delta)
            try:
                result = handler(StreamChunk(purpose.value, delta, "".join(parts), request_id,
                                             conversation_id))
                if result is not None:
                    await result
            except Exception:  # a display bug must not cost the user the reply
                log.exception("on_chunk failed")

        return sink
