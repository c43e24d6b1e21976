"""The page's approver (py_agent/browser/approvals.py): every question waits by its own id,
of any number of chats at once, and the page's ``approve`` request answers one question.

Wired as the agent worker wires it (py_agent/browser/main.py): the page's messages go to
``PageApprovals.handle`` first, then to ``AgentHost``; both post to one list, the page.
"""

from __future__ import annotations

import asyncio
import re

from py_agent import Agent
from py_agent.browser.approvals import PageApprovals
from py_agent.host import AgentHost
from py_agent.testing import FunctionModel, PromptCall, step_json, user_message
from py_agent.tools import tool
from py_agent.turn.approval import ApprovalGate, Approvals, ApprovalRequest
from tests.unit.support import run

DELETED: list[str] = []


@tool(confirm=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"Deleted {path}."


def model() -> FunctionModel:
    """Deletes the file the message names, then answers with what it observed."""
    def respond(call: PromptCall) -> str:
        message = user_message(call)
        if message is not None:
            return step_json(tool="delete_file", tool_input={"path": message.split()[-1]})
        observed = re.search(r"Observation from [\w.-]+: (.*)", call.input, re.DOTALL)
        return step_json(answer=observed.group(1) if observed else call.input)
    return FunctionModel(respond)


class Worker:
    """An agent, its host and its approver, as the worker has them; ``posted`` is what
    the page received."""

    def __init__(self) -> None:
        DELETED.clear()
        self.posted: list[dict] = []
        self.approvals = PageApprovals(self.posted.append)
        self.agent = Agent(model(), tools=[delete_file], approve=self.approvals)
        self.host = AgentHost(self.agent, self.posted.append)
        self._ids = 0

    def send(self, kind: str, **fields) -> str:
        """A request from the page; its id."""
        self._ids += 1
        message = {"type": kind, "id": f"ui{self._ids}", **fields}
        if not self.approvals.handle(message):
            self.host.handle(message)
        return message["id"]

    def reply(self, request_id: str) -> dict | None:
        return next((m for m in self.posted if m.get("type") == "reply"
                     and m.get("id") == request_id), None)

    async def replied(self, request_id: str) -> dict:
        for _ in range(1000):
            found = self.reply(request_id)
            if found is not None:
                return found
            await asyncio.sleep(0)
        raise AssertionError(f"no reply to {request_id}")

    def events(self, kind: str) -> list[dict]:
        return [m["event"] for m in self.posted
                if m.get("type") == "event" and m["event"]["type"] == kind]

    async def asked(self, count: int) -> list[dict]:
        """Wait until ``count`` questions were asked and wait for the page's answer (none
        answered yet); their events' data."""
        for _ in range(1000):
            if len(self.events("approval_requested")) >= count and \
                    len(self.approvals.waiting()) >= count:
                return [e["data"] for e in self.events("approval_requested")]
            await asyncio.sleep(0)
        raise AssertionError(f"fewer than {count} questions were asked")

    def answer(self, question_id: str, decision: str) -> bool | dict:
        reply = self.reply(self.send("approve", question_id=question_id, decision=decision))
        assert reply is not None   # answered at once
        return reply["value"] if reply["ok"] else reply["error"]


def test_two_chats_wait_at_once_and_each_answer_reaches_its_own_question() -> None:
    async def scenario():
        worker = Worker()
        first = worker.send("run", session_id="chat-a", text="Please delete /tmp/a")
        second = worker.send("run", session_id="chat-b", text="Please delete /tmp/b")
        a, b = await worker.asked(2)
        assert (a["session_id"], b["session_id"]) == ("chat-a", "chat-b")
        assert a["id"] != b["id"]
        assert [r.id for r in worker.approvals.waiting()] == [a["id"], b["id"]]
        # the second question did not end the first: both still wait
        assert worker.reply(first) is None and worker.reply(second) is None
        assert worker.events("approval_withdrawn") == []

        assert worker.answer(b["id"], "deny") is True
        result_b = (await worker.replied(second))["value"]
        assert result_b["steps"][0]["approval"] == "deny"
        assert result_b["answer"].startswith("The user denied this call of delete_file")
        assert worker.reply(first) is None   # chat-a still waits for its own answer
        assert [r.id for r in worker.approvals.waiting()] == [a["id"]]

        assert worker.answer(a["id"], "once") is True
        result_a = (await worker.replied(first))["value"]
        assert result_a["steps"][0]["approval"] == "once"
        assert result_a["answer"] == "Deleted /tmp/a."
        assert DELETED == ["/tmp/a"]
        # answered questions wait no more: a late or second answer finds nothing
        assert worker.answer(a["id"], "once") is False
        assert worker.approvals.waiting() == []
        assert worker.events("approval_withdrawn") == []
        decided = {e["data"]["id"]: e["data"]["decision"] for e in worker.events("approval")}
        assert decided == {a["id"]: "once", b["id"]: "deny"}
    run(scenario())


def test_the_same_chat_can_wait_on_two_questions_and_neither_is_dropped() -> None:
    async def scenario():
        worker = Worker()
        turn = worker.send("run", session_id="chat", text="Please delete /tmp/turn")
        await worker.asked(1)
        # another agent (WebMCP's call_tool) asks in the same chat meanwhile
        call = worker.send("call_tool", name="delete_file", input={"path": "/tmp/call"},
                           session_id="chat")
        first, second = await worker.asked(2)
        assert first["session_id"] == second["session_id"] == "chat"
        assert len(worker.approvals.waiting()) == 2
        assert worker.answer(second["id"], "once") is True
        assert (await worker.replied(call))["value"] == "Deleted /tmp/call."
        assert worker.reply(turn) is None
        assert worker.answer(first["id"], "deny") is True
        assert (await worker.replied(turn))["value"]["steps"][0]["approval"] == "deny"
        assert DELETED == ["/tmp/call"]
    run(scenario())


def test_a_stopped_turn_withdraws_its_question_and_leaves_the_others() -> None:
    async def scenario():
        worker = Worker()
        stopped = worker.send("run", session_id="chat-a", text="Please delete /tmp/a")
        kept = worker.send("run", session_id="chat-b", text="Please delete /tmp/b")
        a, b = await worker.asked(2)
        worker.send("stop", session_id="chat-a")
        assert (await worker.replied(stopped))["value"]["status"] == "stopped"
        [withdrawn] = worker.events("approval_withdrawn")
        assert withdrawn["session_id"] == "chat-a"
        assert withdrawn["data"] == {"id": a["id"], "session_id": "chat-a", "tool": "delete_file"}
        assert [r.id for r in worker.approvals.waiting()] == [b["id"]]
        assert worker.answer(a["id"], "once") is False   # too late: nothing ran
        assert worker.answer(b["id"], "once") is True
        assert (await worker.replied(kept))["value"]["answer"] == "Deleted /tmp/b."
        assert DELETED == ["/tmp/b"]
    run(scenario())


def test_a_question_not_answered_in_time_is_withdrawn_then_denied() -> None:
    async def scenario():
        posted: list[dict] = []
        approvals = PageApprovals(posted.append)
        told: list[tuple[str, dict]] = []

        async def emit(kind: str, data: dict) -> None:
            told.append((kind, data))

        gate = ApprovalGate("chat", approvals, Approvals(), timeout_s=0.05)
        refusal = await gate.check(delete_file, {"path": "/tmp/x"}, emit)
        assert refusal is not None and "did not answer" in refusal
        [asked] = [data for kind, data in told if kind == "approval_requested"]
        [event] = [m["event"] for m in posted if m["type"] == "event"]
        assert (event["type"], event["data"]["id"]) == ("approval_withdrawn", asked["id"])
        assert told[-1][0] == "approval" and told[-1][1]["why"] == "no answer in time"
        assert approvals.waiting() == []
    run(scenario())


def test_the_request_names_a_question_and_a_decision() -> None:
    async def scenario():
        worker = Worker()
        worker.send("run", session_id="chat", text="Please delete /tmp/a")
        [asked] = await worker.asked(1)
        # by chat, as before: refused, and the question still waits
        assert worker.answer("", "once") == {
            "name": "ValueError",
            "message": "question_id is required: the id of the approval_requested event's "
                       "question"}
        reply = worker.reply(worker.send("approve", session_id="chat", decision="once"))
        assert reply["ok"] is False and reply["error"]["name"] == "ValueError"
        assert worker.answer(asked["id"], "yes please")["message"] == \
            "decision must be 'once', 'chat' or 'deny', not 'yes please'"
        assert worker.answer("no-such-question", "once") is False
        assert [r.id for r in worker.approvals.waiting()] == [asked["id"]]
        assert worker.answer(asked["id"], "chat") is True
        assert not worker.approvals.handle({"type": "sessions", "id": "ui99"})
    run(scenario())


def test_a_question_id_cannot_wait_twice() -> None:
    async def scenario():
        approvals = PageApprovals(lambda message: None)
        request = ApprovalRequest("delete_file", {"path": "x"}, "", "", "chat", id="q1")
        waiting = asyncio.ensure_future(approvals(request))
        await asyncio.sleep(0)
        try:
            await approvals(request)
        except ValueError as exc:
            assert "already waiting" in str(exc)
        else:
            raise AssertionError("a second wait on one id was accepted")
        assert approvals.handle({"type": "approve", "id": "r", "question_id": "q1",
                                 "decision": "once"})
        assert await waiting == "once"
    run(scenario())
