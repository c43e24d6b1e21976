"""What one turn carries down to every call it makes: :class:`TurnContext`.

Two turns of two chats may run at once on one agent (the page's worker serves every
chat; ``web/agent.js`` lets a page stream two at the same time). Everything that
belongs to one turn therefore travels with it, as pydantic-ai's ``RunContext`` does,
and is never written onto an object the turns share (the model, the host, the agent):
the agent makes the context, the turn runner completes it and hands it to the loop,
and each layer below gets only what it needs of it: the stop button for each model
and tool call, the chat's id as the tag of the model session the turn clones
(:func:`py_agent.model.for_conversation`), which tags what that session streams. What
a later need adds to a turn becomes a field here, handed down the same way: the turn's
approver, asked before a consequential tool call, is one.

A context is frozen: a stage of the turn that learns something (the turn's id once
it is archived, the tools retrieved for the message) makes a new one with
``dataclasses.replace`` and passes that on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..attachments import Attachment
from ..retrieval import ScoredTool
from .approval import Approver


@dataclass(frozen=True)
class TurnContext:
    """One turn's own data, passed down with each call.

    Attributes:
        session_id: the chat the turn is in; its model sessions are tagged with it.
        message: the user's message, cleaned.
        abort: set to stop the turn (the stop button); None: it cannot be stopped.
        turn_id: the turn's id in the chat's transcript (0 until it is archived).
        offered: the tools offered for the message, best first (empty until retrieved).
        approver: asked before a consequential tool call in this turn (None: the
            agent's own, if it has one; see :mod:`py_agent.turn.approval`).
        attachments: the images and sounds sent with the message, loaded (bytes read,
            type sniffed); they go to the model with this turn's prompts only.
    """

    session_id: str
    message: str
    abort: asyncio.Event | None = None
    turn_id: int = 0
    offered: tuple[ScoredTool, ...] = ()
    approver: Approver | None = None
    attachments: tuple[Attachment, ...] = ()
