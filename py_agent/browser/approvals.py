"""The page asks the user before a consequential call (py_agent.turn.approval).

The agent's approver here waits for the page's answer: the turn's ``approval_requested``
event shows the question (web/ui/approval.py), and the page answers with the request
``{type: 'approve', id, session_id, decision: 'once' | 'chat' | 'deny'}`` (replied
``true`` if a question was waiting). A chat has at most one question at a time (its turn
waits for the answer); a question left when the turn stops is dropped.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from ..replies import reply
from ..turn.approval import DENY, ApprovalRequest

REQUEST = "approve"


class PageApprovals:
    """The page's approver: one waiting question per chat."""

    def __init__(self, post: Callable[[dict[str, Any]], None]) -> None:
        self.post = post
        self._waiting: dict[str, asyncio.Future] = {}

    async def __call__(self, request: ApprovalRequest) -> str:
        old = self._waiting.pop(request.session_id, None)
        if old is not None and not old.done():
            old.set_result(DENY)
        future = asyncio.get_running_loop().create_future()
        self._waiting[request.session_id] = future
        try:
            return await future
        finally:
            if self._waiting.get(request.session_id) is future:
                del self._waiting[request.session_id]

    def handle(self, message: dict[str, Any]) -> bool:
        """Take the page's answer (False for any other message)."""
        if message.get("type") != REQUEST:
            return False
        future = self._waiting.get(str(message.get("session_id")))
        waiting = future is not None and not future.done()
        if waiting:
            future.set_result(str(message.get("decision") or DENY))
        self.post(reply(message.get("id"), waiting))
        return True
