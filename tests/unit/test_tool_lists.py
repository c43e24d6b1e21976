"""The tools/list clean-up, one set of rules in two runtimes: py_agent/mcp/tool_lists.py
(CPython) and worker/tool_lists.js (the page, run here under Node.js) get the same cases
and must answer the same (docs/tools.md, "A tools/list reply, read before the SDK")."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from py_agent.mcp.tool_lists import MAX_REPLY_DEPTH, clean_tools_list, nests_deeper
from serving.paths import ROOT

GOOD = {"name": "good", "description": "Works.", "inputSchema": {"type": "object"}}
TOOLS = [
    GOOD,
    "not a tool",
    None,
    {"description": "no name", "inputSchema": {"type": "object"}},
    {"name": "", "inputSchema": {"type": "object"}},
    {"name": 7, "inputSchema": {"type": "object"}},
    {"name": "no_schema"},
    {"name": "null_schema", "inputSchema": None},
    {"name": "list_schema", "inputSchema": [{"type": "object"}]},
    {"name": "text_schema", "inputSchema": "object"},
    {"name": "untyped", "inputSchema": {"properties": {}}},
    {"name": "string_type", "inputSchema": {"type": "string"}},
    {"name": "café \"quoted\" \\ tool\n", "inputSchema": {"type": "array"}},
    {"name": "list_type", "inputSchema": {"type": ["object", "null"]}},
    {"name": "number_type", "inputSchema": {"type": 3}},
    {"name": "bool_type", "inputSchema": {"type": True}},
    {"name": "null_type", "inputSchema": {"type": None}},
    {"name": "bad_description", "description": ["x"], "inputSchema": {"type": "object"}},
    {"name": "ok_too", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
]
EXPECTED_SKIPPED = [
    "a tool skipped: it is not an object",
    "a tool skipped: it is not an object",
    "a tool skipped: it has no name",
    "a tool skipped: it has no name",
    "a tool skipped: it has no name",
    'tool "no_schema" skipped: it has no input schema',
    'tool "null_schema" skipped: its input schema is null, not an object',
    'tool "list_schema" skipped: its input schema is an array, not an object',
    'tool "text_schema" skipped: its input schema is a string, not an object',
    "tool \"untyped\" skipped: its input schema has no type (it must be of type 'object')",
    "tool \"string_type\" skipped: its input schema must be of type 'object', not \"string\"",
    'tool "café \\"quoted\\" \\\\ tool\\n" skipped: its input schema must be of type '
    "'object', not \"array\"",
    "tool \"list_type\" skipped: its input schema must be of type 'object', not an array",
    "tool \"number_type\" skipped: its input schema must be of type 'object', not a number",
    "tool \"bool_type\" skipped: its input schema must be of type 'object', not a boolean",
    "tool \"null_type\" skipped: its input schema must be of type 'object', not null",
    'tool "bad_description" skipped: its description is not text',
]


# Issue 38, point 5: annotations a server sends malformed (the Python SDK would read
# "true" and 1 as true; the TypeScript SDK would refuse the whole list).
LABELS = [
    {"name": "honest", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True, "destructiveHint": False, "title": "Honest"}},
    {"name": "string_hint", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": "true", "title": "Kept"}},
    {"name": "number_hint", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": 1}},
    {"name": "two_bad", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True, "destructiveHint": "false", "openWorldHint": None}},
    {"name": "list_annotations", "inputSchema": {"type": "object"}, "annotations": ["readOnly"]},
    {"name": "null_annotations", "inputSchema": {"type": "object"}, "annotations": None},
]
EXPECTED_LABEL_NOTES = [
    'tool "string_hint": its readOnlyHint is "true", not true or false: none of its '
    "labels is believed, so it asks before each call",
    'tool "number_hint": its readOnlyHint is a number, not true or false: none of its '
    "labels is believed, so it asks before each call",
    'tool "two_bad": its destructiveHint is "false", its openWorldHint is null, not true or '
    "false: none of its labels is believed, so it asks before each call",
    'tool "list_annotations": its annotations are an array, not an object: none of its '
    "labels is believed, so it asks before each call",
]


def reply(tools, request_id=1, **more) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools, **more}}


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def sse(*messages: str, crlf: bool = False) -> str:
    text = "".join(f"event: message\nid: {i}\ndata: {m}\n\n" for i, m in enumerate(messages))
    return text.replace("\n", "\r\n") if crlf else text


CASES = [
    ("every rule", json.dumps(reply(TOOLS, nextCursor="2")), "application/json"),
    ("a batch", json.dumps([reply([TOOLS[1], GOOD]), {"jsonrpc": "2.0", "method": "x"}]),
     "application/json"),
    ("no tools here", json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601,
                                                                       "message": "no"}}),
     "application/json"),
    ("not JSON", '{"jsonrpc": "2.0", "id": 1, "result": {', "application/json"),
    ("NaN is not JSON", '{"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "x": NaN}}',
     "application/json"),
    ("events", sse(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress"}),
                   json.dumps(reply(TOOLS[:4]))), "text/event-stream"),
    ("events with CRLF", sse(json.dumps(reply(TOOLS[10:13])), crlf=True),
     "text/event-stream; charset=utf-8"),
    ("an event that is not JSON", sse("not json", json.dumps(reply([GOOD, None]))),
     "text/event-stream"),
    ("data: without its space", "data:" + json.dumps(reply([GOOD, 1])) + "\n\n",
     "text/event-stream"),
    ("exactly as deep as allowed",
     '{"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "x": %s}}'
     % deep(MAX_REPLY_DEPTH - 2), "application/json"),
    ("one level too deep",
     '{"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "x": %s}}'
     % deep(MAX_REPLY_DEPTH - 1), "application/json"),
    ("two thousand deep", '{"jsonrpc": "2.0", "id": 1, "result": {"tools": [%s]}}'
     % deep(2000), "application/json"),
    ("deep in an event", sse(json.dumps(reply([GOOD])), deep(150)), "text/event-stream"),
    ("malformed labels", json.dumps(reply(LABELS)), "application/json"),
    ("malformed labels in an event", sse(json.dumps(reply(LABELS[1:3]))), "text/event-stream"),
    ("brackets in strings do not count",
     json.dumps(reply([{**GOOD, "description": "[{" * 500 + '\\"' + "]}" * 3}])),
     "application/json"),
]


def python_answers() -> list[dict]:
    answers = []
    for _name, text, content_type in CASES:
        skipped: list[str] = []
        body, kind, refusal = clean_tools_list(text.encode(), content_type, "req-1", skipped)
        answers.append({"text": body.decode(), "contentType": kind, "refusal": refusal,
                        "skipped": skipped})
    return answers


def node_answers() -> list[dict]:
    script = """
import {cleanToolsList} from %s;
const cases = JSON.parse(process.argv.at(-1));
console.log(JSON.stringify(cases.map(([name, text, contentType]) => {
  const skipped = [];
  return {...cleanToolsList(text, contentType, 'req-1', skipped), skipped};
})));
""" % json.dumps((ROOT / "worker" / "tool_lists.js").as_uri())
    done = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps(CASES)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def messages(answer: dict) -> list:
    """The JSON-RPC messages a cleaned reply holds (text that is not JSON as itself)."""
    text = answer["text"]
    if "event-stream" in answer["contentType"]:
        found = []
        for event in text.replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(l[6:] if l.startswith("data: ") else l[5:]
                             for l in event.split("\n") if l.startswith("data:"))
            if data:
                found.append(_loads(data))
        return found
    return [_loads(text)]


def _loads(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.fixture(scope="module")
def answers():
    if not shutil.which("node"):
        pytest.skip("needs Node.js")
    return python_answers(), node_answers()


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_both_runtimes_clean_a_reply_alike(answers, index) -> None:
    in_python, in_node = answers[0][index], answers[1][index]
    assert in_python["skipped"] == in_node["skipped"]
    assert in_python["refusal"] == in_node["refusal"]
    assert in_python["contentType"] == in_node["contentType"]
    assert messages(in_python) == messages(in_node)


def test_what_the_rules_say(answers) -> None:
    python = dict(zip([c[0] for c in CASES], answers[0]))
    assert python["every rule"]["skipped"] == EXPECTED_SKIPPED
    kept = messages(python["every rule"])[0]["result"]
    assert [t["name"] for t in kept["tools"]] == ["good", "ok_too"] and kept["nextCursor"] == "2"
    assert python["a batch"]["skipped"] == ["a tool skipped: it is not an object"]
    for name in ("not JSON", "NaN is not JSON", "no tools here"):
        assert python[name]["skipped"] == [] and python[name]["refusal"] == ""
    assert python["not JSON"]["text"] == CASES[3][1]
    assert python["exactly as deep as allowed"]["refusal"] == ""
    too_deep = "its tools/list reply nests deeper than 100 levels"
    for name in ("one level too deep", "two thousand deep", "deep in an event"):
        assert python[name]["refusal"] == too_deep
        assert python[name]["contentType"] == "application/json"
        assert messages(python[name]) == [{"jsonrpc": "2.0", "id": "req-1", "error": {
            "code": -32700, "message": too_deep}}]
    assert python["brackets in strings do not count"]["refusal"] == ""
    assert python["events"]["skipped"] == ["a tool skipped: it is not an object",
                                           "a tool skipped: it is not an object",
                                           "a tool skipped: it has no name"]


def test_malformed_labels_are_taken_off_and_said(answers) -> None:
    python = dict(zip([c[0] for c in CASES], answers[0]))
    labels = python["malformed labels"]
    assert labels["skipped"] == EXPECTED_LABEL_NOTES and labels["refusal"] == ""
    kept = {t["name"]: t.get("annotations") for t in messages(labels)[0]["result"]["tools"]}
    assert kept == {"honest": LABELS[0]["annotations"], "string_hint": {"title": "Kept"},
                    "number_hint": {}, "two_bad": {}, "list_annotations": None,
                    "null_annotations": None}
    assert python["malformed labels in an event"]["skipped"] == EXPECTED_LABEL_NOTES[:2]


def test_the_depth_scan_needs_no_stack() -> None:
    assert not nests_deeper(deep(100)) and nests_deeper(deep(101))
    assert nests_deeper(deep(200_000))
    assert not nests_deeper('"' + "[" * 500 + '"')
    assert not nests_deeper('["\\"' + "[" * 500 + '"]')
