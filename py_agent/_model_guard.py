"""A model session that only ever raises :class:`~py_agent.model.ModelError` and only
ever returns clean text.

The agent talks to models it does not control: the Prompt API bridge, an HTTP
backend, a user's own class. Whatever they raise (``OSError``, ``KeyError``,
``RecursionError``, even ``SystemExit``) or return (``None``, bytes, lone
surrogates, megabytes), the turn sees a typed error or valid, bounded text.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .boundary import clean_text, describe
from .events import log
from .model import (LanguageModel, Message, ModelCallError, ModelError, ModelSession, Prompt,
                    Purpose, TaggedSession, as_model_error, destroy_quietly, for_conversation)
from .waiting import Crashed, contained

# Replies longer than this are cut before anything reads them (the step parser looks
# at the first 50,000 characters; a summary is far shorter).
MAX_REPLY_CHARS = 200_000


def _typed(exc: BaseException) -> ModelError:
    """The ModelError for ``exc``; its ``__cause__`` is the original exception."""
    if isinstance(exc, Crashed) and exc.__cause__ is not None:
        exc = exc.__cause__
    return as_model_error(exc)


def _cancelled_by_us() -> bool:
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return task is None or cancelling is None or cancelling() > 0


async def _call(awaitable: Any) -> Any:
    """Await a model call; any failure becomes a ModelError (our own cancellation passes)."""
    try:
        return await contained(awaitable)
    except asyncio.CancelledError:
        if _cancelled_by_us():
            raise
        raise ModelCallError("the model call was cancelled by the model itself") from None
    except Exception as exc:
        raise _typed(exc) from None


def clean_reply(value: Any, max_chars: int = MAX_REPLY_CHARS) -> str:
    """A reply as valid text of at most ``max_chars``; a reply that is not text at all
    (a dict, a number) is a :class:`ModelCallError`."""
    if value is None:
        return ""
    if not isinstance(value, (str, bytes, bytearray)):
        raise ModelCallError(f"the model replied with {type(value).__name__}, not text")
    text = clean_text(value[:max_chars * 4] if isinstance(value, (bytes, bytearray)) else value)
    return text[:max_chars]


def _count(read: Any, name: str) -> int:
    try:
        value = read()
    except Exception as exc:
        raise ModelCallError(f"the session's {name} could not be read: {describe(exc)}") from exc
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ModelCallError(f"the session's {name} is {value!r}, not a number")
    return int(value)


class GuardedSession:
    """Wraps a :class:`ModelSession`; see the module docstring."""

    def __init__(self, inner: ModelSession) -> None:
        self.inner = inner

    @property
    def context_window(self) -> int:
        return _count(lambda: self.inner.context_window, "context window")

    @property
    def context_usage(self) -> int:
        return _count(lambda: self.inner.context_usage, "context usage")

    @property
    def conversation_id(self) -> str:
        """The chat the wrapped session's streamed pieces are tagged with ("" for a
        backend without tags; see :class:`~py_agent.model.TaggedSession`)."""
        try:
            tag = self.inner.conversation_id if isinstance(self.inner, TaggedSession) else ""
        except Exception:
            return ""
        return tag if isinstance(tag, str) else ""

    @conversation_id.setter
    def conversation_id(self, value: str) -> None:
        try:
            for_conversation(self.inner, value)
        except Exception as exc:  # a tag the backend refuses costs only the tag
            log.warning("could not tag a model session: %s", describe(exc))

    async def prompt(self, text: Prompt, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        reply = await _call(self.inner.prompt(text, response_constraint=response_constraint,
                                              purpose=purpose))
        return clean_reply(reply)

    async def measure(self, text: Prompt) -> int | None:
        value = await _call(self.inner.measure(text))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        return value

    async def clone(self) -> "GuardedSession":
        return guard(await _call(self.inner.clone()))

    async def destroy(self) -> None:
        """Free the session; never raises (a failed destroy only leaks the session)."""
        await destroy_quietly(self.inner)


class GuardedAppendableSession(GuardedSession):
    """A guarded session whose model can also ``append`` (read without answering)."""

    async def append(self, text: str, *, purpose: Purpose = Purpose.STEP) -> None:
        await _call(self.inner.append(text, purpose=purpose))  # type: ignore[attr-defined]


def guard(session: Any) -> GuardedSession:
    """``session`` guarded, keeping ``append`` when the model's session has it."""
    if isinstance(session, GuardedSession):
        return session
    if session is None:
        raise ModelCallError("the model returned no session")
    appendable = callable(getattr(session, "append", None))
    return (GuardedAppendableSession if appendable else GuardedSession)(session)


async def create_guarded(model: LanguageModel, initial_prompts: list[Message],
                         purpose: Purpose, expected_inputs: tuple[str, ...] = ()
                         ) -> GuardedSession:
    """``model.create(...)`` as a :class:`GuardedSession`; failures are ModelErrors.
    ``expected_inputs`` (the kinds of media its prompts carry) is passed only when given,
    so a model that takes text only need not know the option."""
    extra = {"expected_inputs": tuple(expected_inputs)} if expected_inputs else {}
    session = await _call(model.create(initial_prompts=initial_prompts, purpose=purpose,
                                       **extra))
    if session is None:
        raise ModelCallError("the model's create() returned no session")
    return guard(session)
