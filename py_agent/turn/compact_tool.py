"""The built-in ``compact`` tool: how the model asks for its memory to be compacted.

It runs nothing itself: the loop (:mod:`py_agent.turn.loop`) recognises it by its
``builtin`` mark and the turn schedules a compaction right after the answer.
"""

from __future__ import annotations

from ..tools import Tool, tool

COMPACT_TOOL = "compact"


def compact_tool() -> Tool:
    """The built-in tool through which the model asks for its memory to be compacted."""

    def compact(focus: str = "") -> str:
        """Compact the conversation memory: summarise older turns to free context room.

        Args:
            focus: what the summary must be sure to keep.

        Examples:
            our chat is very long now, please tidy up your memory
            summarize what we talked about and forget the details
            make room in the context but remember my allergies
        """
        return "scheduled"

    built = tool(compact, keywords=["compact", "compress", "condense", "shorten", "chat history",
                                    "conversation", "context window", "memory full"])
    built.metadata["builtin"] = COMPACT_TOOL
    return built
