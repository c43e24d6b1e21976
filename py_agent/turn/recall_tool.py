"""The built-in ``recall`` tool: how the model looks something up in earlier conversations.

The registry holds a placeholder (:func:`recall_tool`) so the retriever can offer it like
any tool; a turn that is offered it gets a copy bound to that turn
(:func:`bind_recall_tool`): it searches the archive recall index from that session,
leaving out the turns the prompt holds (see :mod:`py_agent.turn.recalled`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Awaitable, Callable

from ..tools import Tool, tool

RECALL_TOOL = "recall"


def recall_tool() -> Tool:
    """The built-in tool through which the model searches earlier conversations."""

    async def recall(query: str) -> str:
        """Look up what was said in earlier conversations with the user (older turns of
        this chat, and other chats): names, figures, decisions, recommendations.

        Args:
            query: what to look for, in the user's words (a time such as "last week" helps).

        Examples:
            what did we decide last week
            remind me what you recommended
            what was the name of that restaurant I told you about
            what did I say my budget was
            did we talk about this in another chat
            search our earlier conversations for the flight number
        """
        return "The recall tool is not connected to an archive here."

    built = tool(recall, keywords=["remember", "recall", "remind", "earlier", "before",
                                   "previously", "last time", "we decided", "you recommended",
                                   "you suggested", "I told you", "I mentioned",
                                   "another chat", "conversation history"])
    built.metadata["builtin"] = RECALL_TOOL
    return built


def bind_recall_tool(placeholder: Tool, search: Callable[[str], Awaitable[str]]) -> Tool:
    """The placeholder, answering with ``search(query)`` (one turn's search)."""

    async def recall(query: str) -> str:
        return await search(query)

    return replace(placeholder, fn=recall, is_async=True, metadata=dict(placeholder.metadata))
