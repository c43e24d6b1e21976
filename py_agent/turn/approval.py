"""Approval before consequential calls: one gate for every kind of tool.

A tool that deletes, sends or pays declares itself consequential (:attr:`Tool.confirm`:
``@tool(confirm=True)``, ``schema_tool(confirm=True)``, a tool server's tool unless its
labels are trusted). The tool runner asks this gate after the model chose the tool and
its arguments were checked, before the call: the app's approver (the page's dialog, the
terminal's y/n/a prompt, an ``approve`` callback in Python) sees an
:class:`ApprovalRequest` and answers **allow once**, **allow for this chat** (that tool
is not asked about again in this chat) or **deny**. A denial, no approver, or no answer
in time becomes an observation the model reads, and the turn goes on. Each question
and answer is an event (``approval_requested``, ``approval``) the trace shows.

"That tool" is the tool of one origin (:meth:`~py_agent.tools.ToolOrigin.identity`: its
kind, its source, its name there), never a bare name another server's tool could take.

An approver returns (or awaits) ``True`` / ``"once"`` to allow once, ``"chat"`` to
allow for the chat, and ``False`` / ``"deny"`` (or anything else) to deny.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Union

from ..boundary import describe
from ..tools import Tool

ALLOW_ONCE, ALLOW_CHAT, DENY = "once", "chat", "deny"
# How long a question waits for the user before it counts as a denial.
DEFAULT_APPROVAL_TIMEOUT_S = 300.0

Answer = Union[bool, str]
Approver = Callable[["ApprovalRequest"], Union[Answer, Awaitable[Answer]]]
# tell(type, data): the question and the answer as events of the turn's step.
ApprovalEmit = Callable[[str, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class ApprovalRequest:
    """What the user is asked about: the tool, its checked arguments, where it comes from
    (``server``: a tool server's name, ``"page"``, or ``""`` for the app's own tools) and
    the chat (``session_id``). ``id`` names this one question, made when it is asked: an
    app that shows several questions at once answers each by its id."""

    tool: str
    arguments: dict[str, Any]
    server: str
    source: str
    session_id: str
    description: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # Where the tool comes from (ToolOrigin.to_dict(): kind, trust, source key, server,
    # address with its credentials redacted, name there), for the app to show.
    origin: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments, "server": self.server,
                "source": self.source, "session_id": self.session_id,
                "description": self.description, "id": self.id, "origin": dict(self.origin)}

    def __str__(self) -> str:
        where = f" ({self.server})" if self.server else ""
        return f"{self.tool}{where} {json.dumps(self.arguments, ensure_ascii=False)}"


def decision(answer: Any) -> str:
    """An approver's answer as ALLOW_ONCE, ALLOW_CHAT or DENY."""
    if answer is True or answer == ALLOW_ONCE:
        return ALLOW_ONCE
    if answer == ALLOW_CHAT:
        return ALLOW_CHAT
    return DENY


@dataclass
class Approvals:
    """The tools the user allowed for a whole chat, per chat (kept while the agent runs),
    each kept by its origin's identity: allowing one server's ``send_email`` never allows
    another's that takes the name later."""

    allowed: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)

    def allows(self, session_id: str, tool: Tool) -> bool:
        return tool.origin.identity(tool.name) in self.allowed.get(session_id, ())

    def allow(self, session_id: str, tool: Tool) -> None:
        self.allowed.setdefault(session_id, set()).add(tool.origin.identity(tool.name))

    def forget(self, session_id: str) -> None:
        self.allowed.pop(session_id, None)


@dataclass
class ApprovalGate:
    """One turn's gate, built once by the turn runner: its chat, the app's approver
    (None: nobody to ask) and the chat's standing approvals."""

    session_id: str
    approver: Approver | None
    approvals: Approvals
    timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    # The untrusted text in what the model reads (this turn's results, and what its
    # memory still holds: raw turns, the summary's marked part, marked facts, recalled
    # turns), each said with where it came from. While there is any, what the user
    # allowed for the chat is asked again, so that such text can at most lead to a
    # question; the question's events carry these reasons for the trace.
    untrusted: list[str] = field(default_factory=list)

    @property
    def tainted(self) -> bool:
        return bool(self.untrusted)

    def taint(self, reason: str) -> None:
        """Untrusted text entered what the model reads: ``reason`` says which, from where."""
        if reason and reason not in self.untrusted:
            self.untrusted.append(reason)

    async def check(self, tool: Tool, arguments: dict[str, Any],
                    tell: ApprovalEmit | None = None) -> str | None:
        """None if the call may run; otherwise the observation the model reads instead.
        The question and the answer go to ``tell(type, data)``."""
        if not tool.confirm:
            return None
        # A server (or the page) is named; the app's own tools come from nowhere else.
        request = ApprovalRequest(tool=tool.name, arguments=arguments,
                                  server=tool.origin.server if tool.origin.untrusted else "",
                                  source=tool.origin.kind.value,
                                  session_id=self.session_id, description=tool.description,
                                  origin=tool.origin.to_dict())
        reasons = list(self.untrusted)
        if self.approvals.allows(self.session_id, tool):
            if not reasons:
                await _tell(tell, "approval", request, ALLOW_CHAT,
                            "allowed for this chat earlier")
                return None
            tell = _with_reasons(tell, reasons, "allowed for this chat, asked again: text from "
                                                "outside is in what the model reads")
        elif reasons:
            tell = _with_reasons(tell, reasons)
        if self.approver is None:
            await _tell(tell, "approval", request, DENY, "no one to ask")
            return (f"{tool.name} was not called: it needs the user's approval, and this app "
                    "has no way to ask (give the Agent an approve= callback). Tell the user "
                    "what you would have done instead.")
        await _tell(tell, "approval_requested", request)
        try:
            answer = await asyncio.wait_for(self._ask(request), self.timeout_s)
        except asyncio.TimeoutError:
            await _tell(tell, "approval", request, DENY, "no answer in time")
            return (f"{tool.name} was not called: the user did not answer the approval "
                    f"question within {self.timeout_s:g} s.")
        except Exception as exc:   # a broken approver must not run the call
            await _tell(tell, "approval", request, DENY,
                        f"the approver failed: {describe(exc)}")
            return f"{tool.name} was not called: asking the user failed ({describe(exc)})."
        chosen = decision(answer)
        await _tell(tell, "approval", request, chosen)
        if chosen == DENY:
            return (f"The user denied this call of {tool.name}; it did not run. Do not try "
                    "it again in this turn: answer the user, or ask what they want instead.")
        if chosen == ALLOW_CHAT:
            self.approvals.allow(self.session_id, tool)
        return None

    async def _ask(self, request: ApprovalRequest) -> Any:
        answer = self.approver(request)  # type: ignore[misc]
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


def _with_reasons(tell: ApprovalEmit | None, reasons: list[str],
                  asked_again: str = "") -> ApprovalEmit | None:
    """``tell`` with the untrusted text behind a question added to its events."""
    if tell is None:
        return None

    async def told(event: str, data: dict[str, Any]) -> None:
        data = {**data, "untrusted": reasons}
        if asked_again:
            data["asked_again"] = asked_again
        await tell(event, data)
    return told


async def _tell(tell: ApprovalEmit | None, event: str, request: ApprovalRequest,
                chosen: str = "", why: str = "") -> None:
    if tell is None:
        return
    data = request.to_dict()
    if event == "approval":
        data.update(decision=chosen, why=why)
    await tell(event, data)
