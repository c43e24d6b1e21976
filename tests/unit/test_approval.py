"""Approval before consequential calls (py_agent.turn.approval): the gate in the tool
runner, after the arguments are checked and before the call, for every kind of tool."""

from __future__ import annotations

import asyncio
import re

import pytest

from py_agent import Agent, ToolPolicy, tool
from py_agent.testing import FunctionModel, PromptCall, step_json, user_message
from py_agent.turn.approval import ApprovalGate, Approvals, ApprovalRequest
from py_agent.turn.policies import ToolPolicy as Policy
from py_agent.turn.tool_runner import run_tool
from tests.unit.demo import demo_tools
from tests.unit.support import run

DELETED: list[str] = []


@tool(confirm=True)
def delete_everything(folder: str) -> str:
    """Delete every file in a folder."""
    DELETED.append(folder)
    return f"Deleted everything in {folder}."


@tool
def list_files(folder: str) -> str:
    """List the files in a folder."""
    return f"{folder}: a.txt, b.txt"


def model_calling(tool_name: str, tool_input: dict) -> FunctionModel:
    """Calls ``tool_name`` for each message, then answers with the observation."""
    def respond(call: PromptCall) -> str:
        if user_message(call) is not None:
            return step_json(thought="do it", tool=tool_name, tool_input=tool_input)
        observed = re.search(r"Observation from [\w.-]+: (.*)", call.input, re.DOTALL)
        return step_json(thought="done", answer=observed.group(1) if observed else call.input)
    return FunctionModel(respond)


@pytest.fixture(autouse=True)
def nothing_deleted():
    DELETED.clear()


def agent_with(approve=None, **kwargs) -> tuple[Agent, list]:
    events = []
    agent = Agent(model_calling("delete_everything", {"folder": "photos"}),
                  tools=[delete_everything, list_files], approve=approve,
                  on_event=lambda e: events.append((e.type, e.data)), **kwargs)
    return agent, events


def test_without_an_approver_a_consequential_call_is_refused_and_the_turn_goes_on() -> None:
    agent, events = agent_with()
    result = run(agent.run("Delete everything in photos."))
    assert DELETED == []
    assert result.status == "answered"
    assert result.steps[0].tool == "delete_everything" and not result.steps[0].ok
    assert result.steps[0].approval == "deny"
    assert result.answer.startswith("delete_everything was not called: it needs the user's "
                                    "approval, and this app has no way to ask (give the "
                                    "Agent an approve= callback)")
    [(kind, data)] = [(k, d) for k, d in events if k.startswith("approval")]
    assert kind == "approval" and data["decision"] == "deny" and data["why"] == "no one to ask"


def test_allow_once_runs_the_call_and_asks_again_next_time() -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    agent, events = agent_with(approve)
    first = run(agent.run("Delete everything in photos.", session_id="chat-1"))
    assert first.answer == "Deleted everything in photos." and DELETED == ["photos"]
    assert first.steps[0].approval == "once"
    run(agent.run("Delete everything in photos again.", session_id="chat-1"))
    assert len(asked) == 2 and DELETED == ["photos", "photos"]
    request = asked[0]
    assert (request.tool, request.arguments, request.server, request.session_id) == \
        ("delete_everything", {"folder": "photos"}, "", "chat-1")
    kinds = [(k, d.get("decision")) for k, d in events if k.startswith("approval")]
    assert kinds == [("approval_requested", None), ("approval", "once")] * 2
    assert all(d["index"] == 1 for k, d in events if k.startswith("approval"))


def test_each_question_has_an_id_of_its_own_that_its_events_carry() -> None:
    asked: list[ApprovalRequest] = []
    agent, events = agent_with(lambda request: asked.append(request) or "deny")
    for session in ("chat-1", "chat-1", "chat-2"):
        run(agent.run("Delete everything in photos.", session_id=session))
    ids = [request.id for request in asked]
    assert len(ids) == 3 and len(set(ids)) == 3 and all(isinstance(i, str) and i for i in ids)
    # the question and its answer carry the same id; the next question a new one
    carried = [d["id"] for k, d in events if k.startswith("approval")]
    assert carried == [ids[0], ids[0], ids[1], ids[1], ids[2], ids[2]]
    assert asked[0].to_dict()["id"] == ids[0]


def test_allow_for_this_chat_asks_once_per_chat() -> None:
    asked = []

    async def approve(request: ApprovalRequest) -> str:   # an async approver
        asked.append(request.session_id)
        await asyncio.sleep(0)
        return "chat"

    agent, events = agent_with(approve)
    for session in ("a", "a", "a", "b"):
        result = run(agent.run("Delete everything in photos.", session_id=session))
        assert result.steps[0].ok
    assert asked == ["a", "b"] and len(DELETED) == 4
    decisions = [d["decision"] for k, d in events if k == "approval"]
    assert decisions == ["chat", "chat", "chat", "chat"]
    whys = [d["why"] for k, d in events if k == "approval"]
    assert whys[1] == whys[2] == "allowed for this chat earlier"


def test_deny_becomes_an_observation_the_model_reads() -> None:
    prompts = []

    def respond(call: PromptCall) -> str:
        prompts.append(call.input)
        if user_message(call) is not None:
            return step_json(thought="delete", tool="delete_everything",
                             tool_input={"folder": "photos"})
        return step_json(thought="the user said no", answer="OK, I left your photos alone.")

    agent = Agent(FunctionModel(respond), tools=[delete_everything],
                  approve=lambda request: False)
    result = run(agent.run("Delete everything in photos."))
    assert DELETED == [] and result.answer == "OK, I left your photos alone."
    assert prompts[-1] == ("Observation from delete_everything: The user denied this call of "
                           "delete_everything; it did not run. Do not try it again in this "
                           "turn: answer the user, or ask what they want instead.")


def test_a_turns_own_approver_wins_and_read_only_tools_never_ask() -> None:
    agent, _ = agent_with(approve=lambda request: True)
    result = run(agent.run("Delete everything in photos.", approve=lambda request: "deny"))
    assert DELETED == [] and result.steps[0].approval == "deny"
    reader = Agent(model_calling("list_files", {"folder": "photos"}), tools=[list_files],
                   approve=lambda request: pytest.fail("a read-only tool asked"))
    assert run(reader.run("List my photos.")).answer == "photos: a.txt, b.txt"


def test_the_arguments_are_checked_before_anyone_is_asked() -> None:
    asked = []
    gate = ApprovalGate("s", lambda request: asked.append(request) or True, Approvals())
    outcome = run(run_tool(delete_everything, {"folder": ["not", "text"]}, Policy(), gate=gate))
    assert not outcome.ok and outcome.observation.startswith("Error: invalid input")
    assert asked == [] and DELETED == []


def test_no_answer_in_time_is_a_denial() -> None:
    async def never(request):
        await asyncio.sleep(60)

    gate = ApprovalGate("s", never, Approvals(), timeout_s=0.2)
    outcome = run(run_tool(delete_everything, {"folder": "x"}, ToolPolicy(), gate=gate))
    assert outcome.observation == ("delete_everything was not called: the user did not "
                                   "answer the approval question within 0.2 s.")
    assert DELETED == []


def test_the_demos_deleting_tool_is_consequential() -> None:
    tools = {t.name: t for t in demo_tools()}
    assert tools["delete_note"].confirm
    assert not any(t.confirm for name, t in tools.items() if name != "delete_note")
