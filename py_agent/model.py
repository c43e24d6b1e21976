"""The model protocol: a Python mirror of Chrome's Prompt API.

The agent only ever talks to these two protocols, so the browser model (which
forwards calls to ``window.LanguageModel`` on the main thread) and the test
double :class:`py_agent.testing.FunctionModel` are interchangeable.
"""

from __future__ import annotations

import asyncio
import logging
from enum import Enum
from typing import Any, Literal, Protocol, TypedDict, TypeVar, runtime_checkable

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


class Purpose(str, Enum):
    """Why a model call is made; carried on every call for tracing and accounting."""

    STEP = "step"
    SUMMARY = "summary"
    FACTS = "facts"
    MEASURE = "measure"


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

    async def prompt(self, text: str, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        """Append ``text`` as a user message and return the model's reply."""
        ...

    async def measure(self, text: str) -> int | None:
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
        ...
