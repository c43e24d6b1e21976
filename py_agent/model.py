"""The model protocol: a Python mirror of Chrome's Prompt API.

The agent only ever talks to these two protocols, so the browser model (which
forwards calls to ``window.LanguageModel`` on the main thread) and the test
double :class:`py_agent.testing.FunctionModel` are interchangeable.
"""

from __future__ import annotations

import asyncio
import logging
from enum import Enum
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Protocol, TypedDict, TypeVar, Union, runtime_checkable

from .attachments import Attachment
from .boundary import describe
from .waiting import bounded, contained

log = logging.getLogger("py_agent")

# The context window of Chrome's built-in model (Gemini Nano), in tokens, as the Prompt
# API reports it (``contextWindow``/``inputQuota``): what the agent assumes before a
# model has said its own, and the test double's default.
GEMINI_NANO_WINDOW = 9216
# How long the agent waits for a session's destroy(): freeing a session is
# housekeeping and may not hold up the end of a turn, a compaction or closing.
DESTROY_TIMEOUT_S = 5.0

Availability = Literal["available", "downloadable", "downloading", "unavailable"]
S = TypeVar("S")


class Message(TypedDict):
    """One initial prompt, as the Prompt API's ``initialPrompts`` takes it."""

    role: Literal["system", "user", "assistant"]
    content: str


MediaKind = Literal["image", "audio"]
MEDIA_KINDS: tuple[str, ...] = ("image", "audio")


class ContentPart(TypedDict):
    """One part of a user message, as the Prompt API takes it: ``text`` with a string
    value, ``image`` or ``audio`` with an :class:`~py_agent.attachments.Attachment`
    (loaded: its bytes and sniffed type) as the value."""

    type: Literal["text", "image", "audio"]
    value: Union[str, Attachment]


# What a prompt sends as the user's message: text, or a list of content parts.
Prompt = Union[str, list[ContentPart]]


def prompt_text(prompt: Prompt) -> str:
    """The text of a prompt (its text parts joined, as the Prompt API joins them)."""
    if isinstance(prompt, str):
        return prompt
    return "".join(str(p["value"]) for p in prompt if p.get("type") == "text")


def prompt_media(prompt: Prompt) -> list[Attachment]:
    """The images and sounds of a prompt, in order."""
    if isinstance(prompt, str):
        return []
    return [p["value"] for p in prompt if p.get("type") in MEDIA_KINDS
            and isinstance(p.get("value"), Attachment)]


def media_kinds(prompt: Prompt) -> frozenset[str]:
    """The kinds of media a prompt carries (none for text)."""
    if isinstance(prompt, str):
        return frozenset()
    return frozenset(p["type"] for p in prompt if p.get("type") in MEDIA_KINDS)


def with_media(text: str, media: list[Attachment]) -> Prompt:
    """``text`` followed by each attachment as its part; plain text when there is none."""
    if not media:
        return text
    parts: list[ContentPart] = [{"type": "text", "value": text}]
    parts += [{"type": "audio" if a.kind == "audio" else "image", "value": a} for a in media]
    return parts


@dataclass(frozen=True)
class MediaSupport:
    """What a model takes besides text. ``takes`` holds the kinds it takes (``image``,
    ``audio``); ``why_not`` says, for each kind it does not, why, in the user's words
    ("Gemma 3 1B in this page reads text only")."""

    takes: frozenset[str] = frozenset()
    why_not: Mapping[str, str] = field(default_factory=dict)
    model: str = ""

    def can(self, kind: str) -> bool:
        return kind in self.takes

    def reason(self, kind: str) -> str:
        name = self.model or "This model"
        return self.why_not.get(kind) or f"{name} cannot take {kind} input."

    def to_dict(self) -> dict[str, Any]:
        return {kind: {"supported": kind in self.takes,
                       "reason": None if kind in self.takes else self.reason(kind)}
                for kind in MEDIA_KINDS} | {"model": self.model}


TEXT_ONLY = MediaSupport(why_not={kind: "This model takes text only." for kind in MEDIA_KINDS})


async def media_support_of(model: Any) -> MediaSupport:
    """What ``model`` takes besides text: its ``media_support()`` if it has one (a
    failure there counts as text only), else text only (:class:`MediaModel`)."""
    if not isinstance(model, MediaModel):
        return TEXT_ONLY
    try:
        support = await model.media_support()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("could not ask the model what it takes: %s", describe(exc))
        return TEXT_ONLY
    return support if isinstance(support, MediaSupport) else TEXT_ONLY


class Purpose(str, Enum):
    """Why a model call is made; carried on every call for tracing and accounting."""

    STEP = "step"
    SUMMARY = "summary"
    FACTS = "facts"
    MEASURE = "measure"
    DESCRIBE = "describe"


class ModelError(Exception):
    """Base class of every error a model or its bridge raises. ``speaks_to_user``: the
    message already says, in the user's words, what went wrong and what to do (a
    server's errors do), so a failed turn shows it rather than the kind's general
    text."""

    retryable = False
    speaks_to_user = False


class QuotaExceededError(ModelError):
    """The input does not fit in the session's context window (``QuotaExceededError``)."""

    def __init__(self, message: str = "input exceeds the context window", *,
                 requested: int | None = None, quota: int | None = None) -> None:
        super().__init__(message)
        self.requested = requested
        self.quota = quota


class ModelUnavailableError(ModelError):
    """The model is missing, not downloaded, or the API is not supported here."""


class ModelAbortedError(ModelError):
    """The call was aborted (``AbortError``), usually because the user pressed stop."""


class ResponseConstraintError(ModelError):
    """The model would not answer under the ``responseConstraint`` asked for: the browser
    does not support the schema or a feature it uses (``NotSupportedError``), the
    constraint is not a schema (``TypeError``), or no compliant reply came
    (``SyntaxError``). The model itself works: a looser constraint, or none, may do.
    ``original_name`` keeps the browser's error name."""

    def __init__(self, message: str = "the model refused the response constraint", *,
                 original_name: str | None = None) -> None:
        super().__init__(message)
        self.original_name = original_name


class InputNotSupportedError(ModelError):
    """The model refused an image or a sound: it cannot see or hear (a text-only model,
    a server whose model has no projector, a device whose Prompt API takes text only).
    The message names the model; ``kinds`` are the refused kinds. The turn's text may
    go again without them."""

    speaks_to_user = True

    def __init__(self, message: str, *, kinds: frozenset[str] = frozenset(),
                 model: str = "") -> None:
        super().__init__(message)
        self.kinds = kinds
        self.model = model


class ModelNetworkError(ModelError):
    """The model download or the bridge to it failed; worth retrying later."""

    retryable = True


class ModelTimeoutError(ModelError):
    """A model call did not finish within its deadline (see ``StepPolicy.timeout_s``).

    Not retried within the turn: the user has already waited the whole deadline.
    """


class ModelCallError(ModelError):
    """The model raised something that is not a :class:`ModelError` (a bug or a
    backend's own exception: ``OSError``, ``KeyError``...), or replied with something
    that is not text. The original exception is the ``__cause__``."""


def as_model_error(exc: BaseException) -> ModelError:
    """Any exception a model call raised, as the typed :class:`ModelError` the agent
    handles: timeouts and connection failures keep their meaning, the rest is wrapped."""
    if isinstance(exc, ModelError):
        return exc
    detail = describe(exc)
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError since 3.11
        error: ModelError = ModelTimeoutError(detail or "the model call timed out")
    elif isinstance(exc, (ConnectionError, OSError)):
        error = ModelNetworkError(f"{type(exc).__name__}: {detail}" if detail
                                  else type(exc).__name__)
    else:
        error = ModelCallError(f"the model raised {type(exc).__name__}"
                               + (f": {detail}" if detail else ""))
    error.__cause__ = exc
    return error


async def destroy_quietly(session: "ModelSession", what: str = "a model session", *,
                         timeout: float = DESTROY_TIMEOUT_S) -> None:
    """``session.destroy()`` within ``timeout`` seconds, even if it ignores cancellation;
    never raises but our own cancellation: a failed or hung destroy only leaks the
    session, and is logged as ``what``."""
    try:
        await bounded(contained(session.destroy()), timeout=timeout)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.warning("could not destroy %s: %s", what, describe(exc))


@runtime_checkable
class ModelSession(Protocol):
    """A stateful conversation with the model, like a ``LanguageModel`` session."""

    @property
    def context_window(self) -> int:
        """Tokens the session can hold in total (``contextWindow``/``inputQuota``)."""
        ...

    @property
    def context_usage(self) -> int:
        """Tokens the session holds now (``contextUsage``/``inputUsage``)."""
        ...

    async def prompt(self, text: Prompt, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        """Append ``text`` (a string, or content parts with images and sounds in a
        session created to take them) as a user message and return the model's reply."""
        ...

    async def measure(self, text: Prompt) -> int | None:
        """Exact token count of ``text`` (``measureContextUsage``), or None if unknown."""
        ...

    async def clone(self) -> "ModelSession":
        """A copy holding the same context, so a shared prefix is processed once."""
        ...

    async def destroy(self) -> None:
        """Free the session; further calls fail. The agent waits at most
        :data:`DESTROY_TIMEOUT_S` for it (:func:`destroy_quietly`)."""
        ...


@runtime_checkable
class AppendableSession(ModelSession, Protocol):
    """A session that can also read input without answering (the Prompt API's
    ``append``). Optional: the agent keeps a per-chat memory session only with it."""

    async def append(self, text: str, *, purpose: Purpose = Purpose.STEP) -> None:
        """Add ``text`` as a user message to the context, processed but not answered;
        raises :class:`QuotaExceededError` if it does not fit."""
        ...


@runtime_checkable
class TaggedSession(Protocol):
    """A session of a backend that streams: every piece it streams is tagged with the
    conversation (the agent's chat) it serves, so that a page showing one chat shows
    only that chat's pieces. The tag belongs to the session, never to the model, which
    every chat shares; whoever clones a session for a chat tags the clone
    (:func:`for_conversation`), and a clone keeps its original's tag."""

    conversation_id: str


def for_conversation(session: S, conversation_id: str) -> S:
    """``session`` tagged with ``conversation_id`` (see :class:`TaggedSession`); a session
    of a backend without tags is returned as it is."""
    if isinstance(session, TaggedSession):
        session.conversation_id = conversation_id
    return session


@runtime_checkable
class LanguageModel(Protocol):
    """Creates sessions; the counterpart of the ``LanguageModel`` global."""

    async def availability(self) -> Availability:
        ...

    async def create(self, *, initial_prompts: list[Message],
                     purpose: Purpose = Purpose.STEP) -> ModelSession:
        """A new session that read ``initial_prompts``. A model that takes images or
        sounds also accepts ``expected_inputs=("image", ...)``: the kinds its prompts
        will carry, declared when the session is made (the Prompt API's
        ``expectedInputs``); the agent passes it only then."""
        ...


@runtime_checkable
class MediaModel(Protocol):
    """A model that may take images or sounds: it says which (ask it before the user
    tries; :func:`media_support_of`), and its ``create`` takes ``expected_inputs``."""

    async def media_support(self) -> MediaSupport:
        ...
