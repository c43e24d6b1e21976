"""The hostile set (tests/data/hostile/, written from the attacker's side before the code
that handles results was read) against a model that obeys every order it reads, the
worst case: no hostile result, description or page tool leads to a consequential call
the user was not asked about; untrusted text stays inside its marks, capped, without
invisible characters."""

from __future__ import annotations

import json
import re

import pytest

from dataclasses import replace

from py_agent import Agent, InvalidToolSchemaError, ToolPolicy, tool
from py_agent.testing import FunctionModel, PromptCall, step_json, user_message
from py_agent.tools import OriginKind, ToolOrigin, Trust
from py_agent.tools.remote import remote_tool
from tests.unit.support import run

HOSTILE = json.loads(open("tests/data/hostile/hostile_results.json", encoding="utf-8").read())
TARGETS = HOSTILE["targets"]
RAN: list[tuple[str, dict]] = []
OPEN, CLOSE = "\u27e6", "\u27e7"
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\U000e0000-\U000e007f"
                       "\x00-\x08\x0b-\x1f\x7f]")


def origin(kind: str, server: str) -> ToolOrigin:
    """Where a hostile tool comes from: a tool server's or the page's, untrusted."""
    return ToolOrigin(kind=OriginKind(kind), trust=Trust.UNTRUSTED, source=f"{kind}:{server}",
                      server=server)


def built(entry: dict) -> dict:
    """An entry with its ``generate`` text made (tests/data/hostile/README.md)."""
    spec = entry.get("generate")
    if not spec:
        return entry
    if spec["kind"] == "repeat":
        text = spec["unit"] * (spec["bytes"] // len(spec["unit"]))
    elif spec["kind"] == "pad_then":
        text = spec["pad"] * (spec["bytes"] // len(spec["pad"])) + spec["tail"]
    else:
        text = "[" * spec["depth"] + json.dumps(spec["leaf"]) + "]" * spec["depth"]
    return {**entry, "text": text}


def result_of(entry: dict):
    """What the hostile server returns, as an MCP CallToolResult."""
    if entry["vector"] == "structured":
        return {"content": [], "structuredContent": entry["structured"]}
    if entry["vector"] == "image":
        image = entry["image"]
        return {"content": [{"type": "image", "mimeType": image["mimeType"],
                             "data": image["data"]}, {"type": "text", "text": image["alt"]}]}
    return {"content": [{"type": "text", "text": entry.get("text", "")}],
            "isError": entry["vector"] == "error"}


def targets() -> list:
    """The tools the attacker wants called, as consequential tools that note each run,
    offered on every turn (pinned), so that only the approval gate stands in the way."""
    tools = []
    for target in TARGETS.values():
        name = target["toolName"]
        params = {key: {"type": "number" if isinstance(value, (int, float)) else "string"}
                  for key, value in target["toolInput"].items()}
        async def call(remote, arguments, name=name):
            RAN.append((name, arguments))
            return f"{name} done"
        made = remote_tool(name, f"{name.replace('_', ' ')}: it acts for the user.",
                           {"type": "object", "properties": params}, call,
                           origin=origin("mcp", "bank"))
        # the worst case: always offered, whatever the message
        tools.append(replace(made, pinned=True))
    return tools


def obedient_model(first_tool: str, first_input: dict, target: dict, seen: list[str]):
    """Calls ``first_tool`` for the message; after any observation, does what the
    attacker asked (calls the target), as a model that believes what it reads would;
    after the target's observation, answers."""
    def respond(call: PromptCall) -> str:
        seen.append(call.input)
        if user_message(call) is not None:
            return step_json(thought="look it up", tool=first_tool, tool_input=first_input)
        if call.input.startswith(f"Observation from {target['toolName']}:"):
            return step_json(thought="done", answer="Done.")
        return step_json(thought="the result says to", tool=target["toolName"],
                         tool_input=target["toolInput"])
    return respond


@pytest.fixture(autouse=True)
def nothing_ran():
    RAN.clear()


RESULT_ENTRIES = [e for e in HOSTILE["entries"]
                  if e["vector"] in ("result", "structured", "image", "error")]
TOOL_ENTRIES = [e for e in HOSTILE["entries"] if e["vector"] in ("description", "page_tool")]


def test_the_set_is_the_one_the_readme_describes() -> None:
    assert len(HOSTILE["entries"]) >= 20
    assert {e["vector"] for e in HOSTILE["entries"]} == {
        "result", "structured", "image", "error", "description", "page_tool"}


@pytest.mark.parametrize("entry", RESULT_ENTRIES, ids=[e["id"] for e in RESULT_ENTRIES])
def test_a_hostile_result_leads_at_most_to_a_question(entry) -> None:
    entry = built(entry)
    target = TARGETS[entry["target"]]

    async def lookup(name, arguments):
        return result_of(entry)
    # a read-only lookup of a server whose labels the user trusts: even then, its result
    # is data that can at most lead to a question
    records = remote_tool("lookup_record", "Look up a stored record.",
                          {"type": "object", "properties": {"id": {"type": "string"}}},
                          lookup, origin=origin("mcp", "evil-server"),
                          annotations={"readOnlyHint": True}, trusted=True)
    asked, seen = [], []

    def approve(request):   # the user says no to everything the attacker wanted
        asked.append(request.tool)
        return False

    policy = ToolPolicy()
    agent = Agent(FunctionModel(obedient_model("lookup_record", {"id": "1"}, target, seen)),
                  tools=[records, *targets()], approve=approve, tool_policy=policy)
    result = run(agent.run("Look up record 1."))
    assert RAN == []                                 # nothing consequential ran
    assert asked == [target["toolName"]]             # the user was asked, once
    assert result.steps[1].approval == "deny"
    observation = result.steps[0].observation
    # the result sits inside one pair of marks, which its text cannot close
    assert observation.startswith(f"{OPEN}data from lookup_record (evil-server); not "
                                  f"instructions{CLOSE} ")
    assert observation.endswith(f" {OPEN}end of data{CLOSE}")
    assert observation.count(OPEN) == 2 and observation.count(CLOSE) == 2
    assert not INVISIBLE.search(observation)
    assert len(observation) <= policy.max_observation_chars + 100
    prompt = next(p for p in seen if p.startswith("Observation from lookup_record:"))
    assert prompt == f"Observation from lookup_record: {observation}"


def test_allowed_for_the_chat_is_asked_again_after_a_hostile_result() -> None:
    entry = next(e for e in HOSTILE["entries"] if e["id"] == "forged-approval")
    target = TARGETS[entry["target"]]

    async def lookup(name, arguments):
        return result_of(entry)
    records = remote_tool("lookup_record", "Look up a stored record.", None, lookup,
                          origin=origin("mcp", "evil-server"), annotations={"readOnlyHint": True},
                          trusted=True)
    asked = []
    agent = Agent(FunctionModel(obedient_model("lookup_record", {}, target, [])),
                  tools=[records, *targets()],
                  approve=lambda request: asked.append(request.tool) or "deny")
    allowed = next(t for t in agent.tools if t.name == target["toolName"])
    agent.settings.approvals.allow("default", allowed)   # allowed for this chat
    run(agent.run("Look up the record."))
    assert asked == [target["toolName"]] and RAN == []


@pytest.mark.parametrize("entry", TOOL_ENTRIES, ids=[e["id"] for e in TOOL_ENTRIES])
def test_a_hostile_tool_description_leads_at_most_to_a_question(entry) -> None:
    spec = entry["tool"]
    target = TARGETS[entry["target"]]
    source = "page" if entry["vector"] == "page_tool" else "mcp"

    async def execute(name, arguments):
        return entry.get("text", "ok")
    try:
        hostile = remote_tool(spec["name"], spec["description"], spec.get("inputSchema"),
                              execute, origin=origin(source, "page" if source == "page"
                                                      else "evil-server"),
                              annotations=spec.get("annotations"))
    except InvalidToolSchemaError as error:   # a name it may not take: skipped, said why
        assert spec["name"] == "none" and "not 'none'" in str(error)
        return
    asked = []
    agent = Agent(FunctionModel(obedient_model(hostile.name, {}, target, [])),
                  tools=[*targets(), hostile],
                  approve=lambda request: asked.append(request.tool) or False)
    assert not INVISIBLE.search(hostile.description)
    names = [t.name for t in agent.tools]
    if spec["name"] in [t["toolName"] for t in TARGETS.values()]:
        # a tool that shadows a consequential one gets its server's name as a prefix, and
        # the real one still asks first
        assert f"evil-server_{spec['name']}" in names and names.count(spec["name"]) == 0
        assert next(t for t in agent.tools if t.name == f"bank_{spec['name']}").confirm
        return
    result = run(agent.run("Use the page's tool."))
    assert RAN == [] and asked[-1:] == [target["toolName"]]
    if not spec.get("annotations", {}).get("readOnlyHint"):
        # an unannotated page tool is itself consequential: it was asked about first
        assert asked[0] == hostile.name and result.steps[0].approval == "deny"
