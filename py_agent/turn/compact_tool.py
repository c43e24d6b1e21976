"""The built-in ``compact`` tool: how the model asks for its memory to be compacted.

It asks through the call's context (:meth:`~py_agent.tools.MemoryAccess.request_compaction`);
the turn schedules the compaction right after the answer.
"""

from __future__ import annotations

from functools import cache

from ..tools import RunContext, Tool, tool
from ..tools.origin import BUILTIN

COMPACT_TOOL = "compact"
SCHEDULED = ("Memory compaction is scheduled to run right after this answer. "
             "Now answer the user.")


@cache
def compact_tool() -> Tool:
    """The built-in tool through which the model asks for its memory to be compacted
    (one object, shared by the agents of a toolbox)."""

    async def compact(ctx: RunContext, focus: str = "") -> str:
        """Compact the conversation memory: summarise older turns to free context room.

        Args:
            focus: what the summary must be sure to keep.

        Examples:
            our chat is very long now, please tidy up your memory
            summarize what we talked about and forget the details
            make room in the context but remember my allergies
        """
        if ctx.memory is None:
            return "There is no conversation memory to compact here."
        ctx.memory.request_compaction(focus if isinstance(focus, str) else str(focus))
        return SCHEDULED

    return tool(compact, keywords=["compact", "compress", "condense", "shorten", "chat history",
                                   "conversation", "context window", "memory full"],
                origin=BUILTIN)
