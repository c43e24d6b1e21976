"""The page asks the user before a consequential call (py_agent.turn.approval).

The agent's approver here waits for the page's answer: the turn's ``approval_requested``
event shows the question (web/ui/approval.py), and the page answers that question by its
id with the request ``{type: 'approve', id, question_id, decision: 'once' | 'chat' |
'deny'}`` (replied ``true`` if that question was waiting). Any number of questions wait
at once, of different chats or of the same one (a turn and a ``call_tool``), each
answered on its own; none is dropped because another is asked. A question whose wait
ends without an answer (its turn stopped, or not answered in time) is withdrawn: the
page is told with the event ``approval_withdrawn`` (``{id, session_id, tool}``), and
takes the question away.

Plain Python (no ``js``/``pyodide``): ``post`` is the worker's link to the page.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from ..replies import reply
from ..state import now_ms
from ..turn.approval import ALLOW_CHAT, ALLOW_ONCE, DENY, ApprovalRequest

REQUEST = "approve"
DECISIONS = (ALLOW_ONCE, ALLOW_CHAT, DENY)


class PageApprovals:
    """The page's approver: every waiting question, by its id."""

    def __init__(self, post: Callable[[dict[str, Any]], None]) -> None:
        self.post = post
        self._waiting: dict[str, tuple[ApprovalRequest, asyncio.Future]] = {}

    def waiting(self) -> list[ApprovalRequest]:
        """The questions waiting for the page's answer, oldest first."""
        return [request for request, _ in self._waiting.values()]

    async def __call__(self, request: ApprovalRequest) -> str:
        if request.id in self._waiting:   # ids are unique: a second wait would steal the first's
            raise ValueError(f"approval question {request.id!r} is already waiting")
        future = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = (request, future)
        answered = False
        try:
            decision = await future
            answered = True
            return decision
        finally:
            del self._waiting[request.id]
            if not answered:   # its turn stopped, or the gate stopped waiting (timeout)
                self._withdrawn(request)

    def handle(self, message: dict[str, Any]) -> bool:
        """Take the page's answer (False for any other message)."""
        if message.get("type") != REQUEST:
            return False
        question, decision = message.get("question_id"), message.get("decision")
        if not isinstance(question, str) or not question:
            self._reply(message, error="question_id is required: the id of the "
                                       "approval_requested event's question")
        elif decision not in DECISIONS:
            self._reply(message, error=f"decision must be 'once', 'chat' or 'deny', "
                                       f"not {decision!r}")
        else:
            entry = self._waiting.get(question)
            waiting = entry is not None and not entry[1].done()
            if waiting:
                entry[1].set_result(decision)
            self._reply(message, value=waiting)
        return True

    def _reply(self, message: dict[str, Any], *, value: Any = None, error: str = "") -> None:
        self.post(reply(message.get("id"), error={"name": "ValueError", "message": error})
                  if error else reply(message.get("id"), value))

    def _withdrawn(self, request: ApprovalRequest) -> None:
        data = {"id": request.id, "session_id": request.session_id, "tool": request.tool}
        self.post({"type": "event", "event": {"type": "approval_withdrawn",
                                              "session_id": request.session_id, "data": data,
                                              "at": now_ms()}})
