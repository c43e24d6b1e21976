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
        """Search earlier conversations with the user (older turns of this chat, and other
        chats) for what was said, decided or recommended: names, places, figures, dates.

        Args:
            query: what to look for, in the user's words.

        Examples:
            what did we decide last week about the trip
            remind me what you recommended
            what was the name of that restaurant I told you about
            what did I say my budget was
            which book did you suggest the other day
            when did I mention my flight
            what were we talking about yesterday
            did we settle on a date for the party
        """
        return "The recall tool is not connected to an archive here."

    built = tool(recall, keywords=["remember", "recall", "earlier", "last time", "decided",
                                   "recommended", "suggested", "mentioned", "told you",
                                   "talked about", "discussed", "another chat"])
    built.metadata["builtin"] = RECALL_TOOL
    return built


def bind_recall_tool(placeholder: Tool, search: Callable[[str], Awaitable[str]]) -> Tool:
    """The placeholder, answering with ``search(query)`` (one turn's search)."""

    async def recall(query: str) -> str:
        return await search(query)

    return replace(placeholder, fn=recall, is_async=True, metadata=dict(placeholder.metadata))
