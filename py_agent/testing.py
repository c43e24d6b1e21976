"""Test doubles that behave like the Prompt API, for code that uses py_agent.

:class:`FunctionModel` answers every prompt with a plain Python function and
otherwise behaves like a ``LanguageModel``: sessions hold their messages, count
tokens (with a counter deliberately unlike py_agent's estimate, as a real
tokenizer would be), refuse input that does not fit the window with
:class:`~py_agent.model.QuotaExceededError`, clone and destroy. Every call is
recorded so tests can assert on prompt sizes and on what compaction cost.

Like browsers, it can refuse response constraints it does not support
(``constraint_check``: :func:`refusing_keywords`, :func:`refusing_every_constraint`)
with :class:`~py_agent.model.ResponseConstraintError`, as Chrome's
``NotSupportedError`` arrives.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Union

from .attachments import Attachment
from .message_list import (MESSAGE_OVERHEAD, MessageListSession, content_text, media_tokens,
                           opening_messages)
from .model import (GEMINI_NANO_WINDOW, MEDIA_KINDS, Availability, InputNotSupportedError,
                    MediaSupport, Message, ModelUnavailableError, Prompt, Purpose,
                    QuotaExceededError, ResponseConstraintError, media_kinds, prompt_media,
                    prompt_text)
from .tokens import CJK_CHARS

_TOKEN = re.compile(r"[^\W\d_]+|\d+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    """The double's exact count: each word, number, punctuation mark and CJK character."""
    total = 0
    for piece in _TOKEN.findall(text):
        cjk = 0 if piece.isascii() else len(CJK_CHARS.findall(piece))
        if cjk:
            total += cjk + (len(piece) - cjk) // 4
        else:
            total += 1 + len(piece) // 8  # long words split into several tokens
    return total


@dataclass
class PromptCall:
    """What a responder function receives, and what the model records for each call."""

    input: str
    messages: list[Message]
    response_constraint: dict[str, Any] | None
    purpose: Purpose
    session_id: int
    usage_before: int = 0
    input_tokens: int = 0
    reply: str = ""
    seq: int = 0  # order among all prompts and appends of the model
    # The images and sounds sent with this prompt (loaded: bytes, type, pixels).
    media: list[Attachment] = field(default_factory=list)


@dataclass
class AppendCall:
    """One ``append``: input the session processed without answering."""

    input: str
    purpose: Purpose
    session_id: int
    usage_before: int = 0
    input_tokens: int = 0
    seq: int = 0  # order among all prompts and appends of the model


Responder = Callable[[PromptCall], Union[str, Awaitable[str]]]
# constraint_check(schema) -> why the model refuses it, or None if it takes it.
ConstraintCheck = Callable[[dict[str, Any]], Union[str, None]]

# Where a JSON schema holds further schemas: under these keys, one or a list of them.
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")


def _keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in ``schema`` (property names are not keywords)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key in _SUBSCHEMA_LISTS and isinstance(value, list):
            for sub in value:
                found |= _keywords(sub)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            for sub in value.values():
                found |= _keywords(sub)
        elif key in ("items", "additionalProperties", "not"):
            found |= _keywords(value)
    return found


def refusing_keywords(*keywords: str) -> ConstraintCheck:
    """A schema engine that refuses any schema using one of ``keywords`` (the e2e fake's
    strict profile refuses ``anyOf``, ``oneOf`` and ``const``)."""
    def check(schema: dict[str, Any]) -> str | None:
        used = sorted(_keywords(schema) & set(keywords))
        return f'the schema uses "{used[0]}", which this model does not support' if used \
            else None
    return check


def refusing_every_constraint() -> ConstraintCheck:
    """Structured output switched off: every response constraint is refused."""
    return lambda schema: "responseConstraint is not supported"


class FunctionSession(MessageListSession):
    """A session of :class:`FunctionModel`; see that class."""

    def __init__(self, model: "FunctionModel", messages: list[Message], purpose: Purpose,
                 usage: int, expected: frozenset[str] = frozenset()) -> None:
        """``usage``: the tokens ``messages`` hold (a clone's source may have trimmed
        its messages on overflow, so it is carried, not counted again); ``expected``:
        the kinds of media it was created to take."""
        super().__init__(messages, purpose, usage)
        self._model = model
        self.expected = expected
        self.id = model.new_session_id()

    @property
    def context_window(self) -> int:
        return self._model.context_window

    def _input(self, prompt: Prompt) -> tuple[str, list[Attachment], int]:
        """The prompt's text (media shown as markers), its media and the tokens it
        takes; a kind of media the session was not created for is refused, as the
        Prompt API refuses it (``NotSupportedError``)."""
        kinds = media_kinds(prompt)
        missing = kinds - self.expected
        if missing:
            self._model.media_refusals += 1
            raise InputNotSupportedError(
                f"NotSupportedError: the session was not created to take "
                f"{', '.join(sorted(missing))} input", kinds=frozenset(missing),
                model="FunctionModel")
        media = prompt_media(prompt)
        text = prompt_text(prompt) + "".join(f"\n[{m.kind}: {m.label}]" for m in media)
        return text, media, self._model.count(prompt_text(prompt)) + media_tokens(media)

    async def prompt(self, text: Prompt, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        self._check_alive()
        text, media, media_cost = self._input(text)
        check = self._model.constraint_check
        refusal = None if response_constraint is None or check is None \
            else check(response_constraint)
        if refusal:  # before anything is read, as Chrome checks the constraint first
            self._model.refusals.append((Purpose(purpose), response_constraint, refusal))
            raise ResponseConstraintError(f"NotSupportedError: {refusal}",
                                          original_name="NotSupportedError")
        needed = media_cost + MESSAGE_OVERHEAD
        if self._usage + needed > self.context_window:
            self._model.quota_errors += 1
            raise QuotaExceededError("the prompt does not fit the context window",
                                     requested=self._usage + needed, quota=self.context_window)
        call = PromptCall(input=text, messages=list(self.messages),
                          response_constraint=response_constraint, purpose=Purpose(purpose),
                          session_id=self.id, usage_before=self._usage, input_tokens=needed,
                          seq=self._model.next_seq(), media=media)
        self._model.calls.append(call)
        # Always yield, as a real call across the worker bridge does.
        await asyncio.sleep(self._model.latency)
        reply = self._model.fn(call)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, str):
            reply = json.dumps(reply)
        call.reply = reply
        self.messages.append({"role": "user", "content": text})
        self.messages.append({"role": "assistant", "content": reply})
        self._usage += needed + self._model.count(reply) + MESSAGE_OVERHEAD
        while self._usage > self.context_window and len(self.messages) > 1:
            # What the real API does on overflow: drop the oldest non-system message.
            self._model.overflow_events += 1
            index = 1 if self.messages[0]["role"] == "system" else 0
            dropped = self.messages.pop(index)
            self._usage -= self._model.count(content_text(dropped["content"])) + MESSAGE_OVERHEAD
        return reply

    async def append(self, text: str, *, purpose: Purpose = Purpose.STEP) -> None:
        """Read ``text`` as a user message without answering (the Prompt API's
        ``append``); input that does not fit is refused whole, as by ``prompt``."""
        self._check_alive()
        needed = self._model.count(text) + MESSAGE_OVERHEAD
        if self._usage + needed > self.context_window:
            self._model.quota_errors += 1
            raise QuotaExceededError("the appended input does not fit the context window",
                                     requested=self._usage + needed, quota=self.context_window)
        self._model.appends.append(AppendCall(input=text, purpose=Purpose(purpose),
                                              session_id=self.id, usage_before=self._usage,
                                              input_tokens=needed, seq=self._model.next_seq()))
        await asyncio.sleep(self._model.latency)
        self._check_alive()
        self.messages.append({"role": "user", "content": text})
        self._usage += needed

    async def measure(self, text: Prompt) -> int | None:
        self._check_alive()
        if not self._model.measure_supported:
            return None
        return self._input(text)[2]

    async def clone(self) -> "FunctionSession":
        self._check_alive()
        copy = FunctionSession(self._model, self.messages, self.purpose, self._usage,
                               self.expected)
        self._model.clones += 1
        return copy

    async def destroy(self) -> None:
        if not self.destroyed:
            self.destroyed = True
            self._model.destroyed += 1


class FunctionModel:
    """A ``LanguageModel`` whose replies come from ``fn(call: PromptCall) -> str``.

    Args:
        fn: answers each prompt; may be async; may raise model errors to simulate them.
        context_window: the window each session enforces (Gemini Nano's by default).
        availability: what ``availability()`` reports; ``create`` fails unless "available".
        measure_supported: whether ``measure`` returns exact counts or None.
        latency: seconds each prompt takes, to test stopping a turn mid-call.
        constraint_check: which response constraints the model refuses (see
            :data:`ConstraintCheck`); a refused prompt raises
            :class:`~py_agent.model.ResponseConstraintError` and is listed in ``refusals``
            as ``(purpose, constraint, reason)``, not in ``calls``. None takes any.
        accepts: the kinds of media it takes (``"image"``, ``"audio"``); a session
            takes them only when created with ``expected_inputs`` naming them, as the
            Prompt API's. Each prompt's media are in its call's ``media``.
    """

    def __init__(self, fn: Responder, *, context_window: int = GEMINI_NANO_WINDOW,
                 availability: Availability = "available", measure_supported: bool = True,
                 latency: float = 0.0, constraint_check: ConstraintCheck | None = None,
                 accepts: tuple[str, ...] = ()) -> None:
        self.fn = fn
        self.accepts = frozenset(accepts)
        self.media_refusals = 0
        self.constraint_check = constraint_check
        self.refusals: list[tuple[Purpose, dict[str, Any], str]] = []
        self.context_window = context_window
        self._availability: Availability = availability
        self.measure_supported = measure_supported
        self.latency = latency
        self.calls: list[PromptCall] = []
        self.appends: list[AppendCall] = []  # tokens read without answering, kept apart
        self.created = 0
        self.clones = 0
        self.destroyed = 0
        self.quota_errors = 0
        self.overflow_events = 0
        self._ids = 0
        self._seq = 0

    def next_seq(self) -> int:
        """The number of the next prompt or append, in the order the model saw them."""
        self._seq += 1
        return self._seq

    def new_session_id(self) -> int:
        """A number for a new session (created or cloned)."""
        self._ids += 1
        return self._ids

    def count(self, text: str) -> int:
        return count_tokens(text)

    async def availability(self) -> Availability:
        return self._availability

    def set_availability(self, value: Availability) -> None:
        self._availability = value

    async def media_support(self) -> MediaSupport:
        return MediaSupport(self.accepts, {k: f"FunctionModel takes no {k} input"
                                           for k in MEDIA_KINDS if k not in self.accepts},
                            "FunctionModel")

    async def create(self, *, initial_prompts: list[Message],
                     purpose: Purpose = Purpose.STEP,
                     expected_inputs: tuple[str, ...] = ()) -> FunctionSession:
        if self._availability != "available":
            raise ModelUnavailableError(f"the model is {self._availability}")
        refused = frozenset(expected_inputs) - self.accepts
        if refused:
            raise InputNotSupportedError(
                f"NotSupportedError: FunctionModel takes no {', '.join(sorted(refused))} input",
                kinds=refused, model="FunctionModel")
        messages, usage = opening_messages(initial_prompts, self.count, self.context_window)
        self.created += 1
        return FunctionSession(self, messages, Purpose(purpose), usage,
                               frozenset(expected_inputs))

    def calls_for(self, purpose: Purpose) -> list[PromptCall]:
        return [c for c in self.calls if c.purpose == purpose]


def context_text(call: PromptCall) -> str:
    """Everything the model had read when it answered ``call``: the session's
    messages (prefix, appended memory) and the prompt itself."""
    return "\n\n".join([*(m["content"] for m in call.messages), call.input])


def step_json(*, thought: str = "", tool: str = "none", tool_input: Any = "",
              answer: str = "") -> str:
    """A step as the model would write it, for responder functions in tests."""
    return json.dumps({"thought": thought, "toolName": tool, "toolInput": tool_input,
                       "finalAnswer": answer})


def user_message(call: PromptCall) -> str | None:
    """The user's message in a turn's first prompt, or None for a delta prompt."""
    if "Tools for this request:" not in call.input:
        return None
    head, sep, message = call.input.rpartition("\n\nUser: ")
    if not sep:
        return call.input[6:] if call.input.startswith("User: ") else None
    return message.split("\n\nSteps already taken this turn:")[0]


@dataclass
class ScriptedReplies:
    """A responder that plays back replies in order, then repeats a fallback."""

    replies: list[str] = field(default_factory=list)
    fallback: str = step_json(answer="Done.")

    def __call__(self, call: PromptCall) -> str:
        return self.replies.pop(0) if self.replies else self.fallback
