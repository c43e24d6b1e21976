"""A model session kept as a list of chat messages: what a message costs, how a
session starts, and what every such session holds (:class:`MessageListSession`).

Two backends keep their sessions this way, the OpenAI-compatible server
(:mod:`py_agent.openai_compat.model`) and the test double
(:class:`py_agent.testing.FunctionModel`), and the prefix planner counts initial
prompts the same way before any session exists. Each counts a text's tokens its own
way (the server's estimate, the double's deliberately different count); the rules
they share live here: a chat template adds a few tokens around every message, a
system prompt may only come first, and initial prompts that do not fit the window
are refused when the session is created, as the Prompt API's ``create()`` refuses
them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .attachments import Attachment
from .model import Message, ModelUnavailableError, Purpose, QuotaExceededError

# Tokens a chat template adds around each message (role markers), roughly.
MESSAGE_OVERHEAD = 4
# What an image costs a model's window, roughly: 64 tokens for each 256×256 tile it
# spans, plus a few (encoders that tile, as Qwen's and the fake Prompt API's do, grow
# with the pixels; Gemma 3's fixed 256 is about a 512×512 picture's count); a picture
# whose size is unknown counts as IMAGE_TOKENS.
IMAGE_TOKENS = 256
IMAGE_TILE = 256
TILE_TOKENS = 64
# ... and a second of sound (Gemma 3n's audio encoder: 6.25 tokens a second).
AUDIO_TOKENS_PER_SECOND = 6.25
# A sound whose length is unknown counts as this many seconds.
AUDIO_GUESS_SECONDS = 30.0


def media_tokens(media: Iterable[Attachment]) -> int:
    """What images and sounds cost a window, estimated (a model that can measure them,
    the Prompt API's ``measureContextUsage``, says exactly)."""
    from .attachments import wav_seconds
    total = 0
    for item in media:
        if item.kind == "audio":
            seconds = wav_seconds(item.content or b"") if item.type == "audio/wav" else None
            total += int((seconds or AUDIO_GUESS_SECONDS) * AUDIO_TOKENS_PER_SECOND) + 1
        elif item.width and item.height:
            tiles = max(1, -(-item.width // IMAGE_TILE)) * max(1, -(-item.height // IMAGE_TILE))
            total += tiles * TILE_TOKENS + 8
        else:
            total += IMAGE_TOKENS
    return total


def content_text(content: Any) -> str:
    """A message's text, whether its content is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or p.get("value") or "") for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return str(content)

Count = Callable[[str], int]


def messages_tokens(messages: Iterable[Message], count: Count) -> int:
    """The tokens ``messages`` hold, each counted by ``count`` plus its overhead."""
    return sum(count(content_text(m["content"])) + MESSAGE_OVERHEAD for m in messages)


def opening_messages(initial_prompts: list[Message], count: Count,
                     window: int) -> tuple[list[Message], int]:
    """A new session's messages (copies of ``initial_prompts``) and the tokens they
    hold. Raises ValueError for a system prompt that is not the first, and
    :class:`QuotaExceededError` when they do not fit ``window``."""
    for i, message in enumerate(initial_prompts):
        if message["role"] == "system" and i != 0:
            raise ValueError("a system prompt must come first in initial_prompts")
    messages: list[Message] = [{"role": m["role"], "content": m["content"]}
                               for m in initial_prompts]
    usage = messages_tokens(messages, count)
    if usage > window:
        raise QuotaExceededError("initial prompts exceed the context window",
                                 requested=usage, quota=window)
    return messages, usage


class MessageListSession:
    """What every message-list session holds: its own copy of the messages, the tokens
    they hold (``context_usage``), and the rule that a destroyed session refuses every
    call. A backend adds ``context_window`` and the calls."""

    def __init__(self, messages: list[Message], purpose: Purpose, usage: int) -> None:
        self.messages = list(messages)
        self.purpose = purpose
        self._usage = usage
        self.destroyed = False

    @property
    def context_usage(self) -> int:
        return self._usage

    def _check_alive(self) -> None:
        if self.destroyed:
            raise ModelUnavailableError("the session has been destroyed")
