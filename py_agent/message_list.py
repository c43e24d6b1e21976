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

from typing import Callable, Iterable

from .model import Message, ModelUnavailableError, Purpose, QuotaExceededError

# Tokens a chat template adds around each message (role markers), roughly.
MESSAGE_OVERHEAD = 4

Count = Callable[[str], int]


def messages_tokens(messages: Iterable[Message], count: Count) -> int:
    """The tokens ``messages`` hold, each counted by ``count`` plus its overhead."""
    return sum(count(m["content"]) + MESSAGE_OVERHEAD for m in messages)


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
