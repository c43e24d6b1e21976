"""The built-in ``recall`` tool: how the model looks something up in earlier conversations.

It searches through the call's context (:attr:`~py_agent.tools.RunContext.memory`): the
turn's recall, which searches the archive index from the turn's chat and leaves out the
turns its prompt holds already (see :mod:`py_agent.turn.recalled`).
"""

from __future__ import annotations

from functools import cache

from ..tools import RunContext, Tool, tool
from ..tools.origin import BUILTIN

RECALL_TOOL = "recall"


@cache
def recall_tool() -> Tool:
    """The built-in tool through which the model searches earlier conversations (one
    object: a tool never changes, and agents that share a toolbox share it)."""

    async def recall(ctx: RunContext, query: str) -> str:
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
        if ctx.memory is None:
            return "The recall tool is not connected to an archive here."
        return await ctx.memory.recall(query)

    return tool(recall, keywords=["remember", "recall", "earlier", "last time", "decided",
                                  "recommended", "suggested", "mentioned", "told you",
                                  "talked about", "discussed", "another chat"],
                origin=BUILTIN)
