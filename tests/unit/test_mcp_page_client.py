"""The page's MCP client (worker/mcp_client.js, run under Node.js with the same SDK the page
bundles) against the same misbehaving servers as CPython's: the facts it reports, explained
by py_agent.mcp.failures, say what the terminal says (issue 37, item 5; issue 38, item 9).
The page itself is checked in tests/e2e/test_tool_servers.py."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import time

import pytest

from py_agent.mcp import ToolServerError
from py_agent.mcp.failures import FailureFacts, facts_from, failure
from py_agent.mcp.python_client import python_connection
from serving.paths import NODE_MODULES, ROOT
from tests.tool_server_processes import free_port, python_server
from tests.unit.support import run

pytest.importorskip("mcp")
SDK = NODE_MODULES / "@modelcontextprotocol" / "client" / "dist" / "index.mjs"
FIELDS = {field.name for field in dataclasses.fields(FailureFacts)}

DRIVER = """
import {connect} from %(client)s;
const jobs = JSON.parse(process.argv.at(-1));
const out = [];
for (const job of jobs) {
  const started = Date.now();
  let server = null, entry;
  try {
    server = await connect(%(sdk)s, job.url, {timeoutMs: job.timeoutMs});
    const tools = await server.listTools();
    entry = {tools: tools.map((t) => t.name), skipped: [...server.skipped]};
    if (job.tool) entry.result = await server.callTool(job.tool, job.args, 'c1', job.timeoutMs);
  } catch (error) {
    entry = {facts: error.facts ?? null, message: String(error.message)};
  }
  entry.seconds = (Date.now() - started) / 1000;
  out.push(entry);
  await server?.close().catch(() => {});
}
console.log(JSON.stringify(out));
process.exit(0);
"""


@pytest.fixture(scope="module", autouse=True)
def node():
    if not shutil.which("node") or not SDK.is_file():
        pytest.skip("needs Node.js and node_modules: run `python serve.py --prepare-only`")


@pytest.fixture(scope="module")
def ours():
    server = python_server()
    yield server
    server.stop()


def page_outcomes(jobs: list[dict]) -> list[dict]:
    """Each job through worker/mcp_client.js: its tools, or its failure explained."""
    script = DRIVER % {"client": json.dumps((ROOT / "worker" / "mcp_client.js").as_uri()),
                       "sdk": json.dumps(SDK.as_uri())}
    done = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps(jobs)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    outcomes = []
    for entry in json.loads(done.stdout.strip().splitlines()[-1]):
        if "facts" in entry:
            assert entry["facts"], entry   # every failure carries its facts
            # ... and only facts FailureFacts knows (none is silently dropped)
            assert set(entry["facts"]) <= FIELDS, set(entry["facts"]) - FIELDS
            error = failure(facts_from(entry["facts"]))
            entry = {"kind": getattr(error, "kind", "tool-error"), "message": str(error),
                     "facts": entry["facts"], "seconds": entry["seconds"]}
        outcomes.append(entry)
    return outcomes


def terminal_outcome(job: dict) -> dict:
    """The same job through py_agent.mcp.python_client."""
    async def go() -> dict:
        started = time.monotonic()
        connection = None
        try:
            connection = await python_connection(job["url"], timeout_s=job["timeoutMs"] / 1000)
            tools = await connection.list_tools()
            entry = {"tools": [t["name"] for t in tools], "skipped": list(connection.skipped)}
            if job.get("tool"):
                entry["result"] = await connection.call_tool(job["tool"], job["args"],
                                                             job["timeoutMs"] / 1000)
        except Exception as exc:   # a ToolServerError, or the tool's own error
            entry = {"kind": getattr(exc, "kind", "tool-error"), "message": str(exc)}
        finally:
            if connection is not None:
                await connection.close()
        entry["seconds"] = time.monotonic() - started
        return entry
    return run(go())


def test_the_page_and_the_terminal_say_the_same_for_the_same_failure(ours) -> None:
    base = ours.url
    jobs = [
        {"url": base + "/html"},
        {"url": base + "/nowhere"},
        {"url": base + "/raw/deep?depth=2000"},
        {"url": base + "/raw/hanglist", "timeoutMs": 2000},
        {"url": base + "/silent/mcp", "timeoutMs": 3000},
        {"url": base + "/raw/rpcerror?code=-32000", "tool": "quota_tool", "args": {"q": "x"}},
        {"url": base + "/raw/badschema?sse=1"},
        {"url": "ftp://example.invalid/mcp"},
        {"url": base + "/auth/mcp"},
        {"url": base + "/raw/malformed"},
        {"url": f"http://127.0.0.1:{free_port()}/mcp"},
        {"url": base + "/raw/deep?depth=2000&sse=1"},
        {"url": base + "/raw/rpcerror?code=-32000&sse=1", "tool": "quota_tool", "args": {"q": "x"}},
        {"url": base + "/mcp", "tool": "daily_quota", "args": {"q": "x"}},
    ]
    jobs = [{"timeoutMs": 5000, "args": {}, **job} for job in jobs]
    page = page_outcomes(jobs)
    terminal = [terminal_outcome(job) for job in jobs]
    for job, in_page, in_terminal in zip(jobs, page, terminal):
        assert in_page["seconds"] < job["timeoutMs"] / 1000 + 0.7, (job, in_page)
        assert in_terminal["seconds"] < job["timeoutMs"] / 1000 + 0.7, (job, in_terminal)
        in_page.pop("seconds"), in_terminal.pop("seconds"), in_page.pop("facts", None)
    exact, auth, malformed, unreachable = page[:8] + page[11:], page[8], page[9], page[10]
    assert exact == terminal[:8] + terminal[11:]
    assert [p.get("kind", "listed") for p in exact] == [
        "not-mcp", "not-mcp", "malformed", "timeout", "timeout", "tool-error", "listed",
        "address", "malformed", "tool-error", "tool-error"]
    assert exact[6]["skipped"] == [
        "tool \"string_tool\" skipped: its input schema must be of type 'object', not \"string\""]
    # the same words, but where to give a token names each home's own control
    assert auth["kind"] == terminal[8]["kind"] == "unauthorized"
    assert auth["message"].split(": ")[0] == terminal[8]["message"].split(": ")[0]
    # the same words, then each SDK's own
    assert malformed["kind"] == terminal[9]["kind"] == "malformed"
    prefix = f"The tool server at {base}/raw/malformed sent a reply that is not valid MCP (JSON-RPC): "
    assert malformed["message"].startswith(prefix) and terminal[9]["message"].startswith(prefix)
    # the same words; a page cannot tell a server that is down from one that refuses its
    # origin (CORS), so it names both
    assert unreachable["kind"] == terminal[10]["kind"] == "unreachable"
    assert unreachable["message"].startswith(terminal[10]["message"] + " Or it does not allow "
                                             "this page to call it (CORS)")


def test_a_failure_without_facts_is_still_explained() -> None:
    """What py_agent/browser/tool_servers.py does with an Error mcp_client.js did not make."""
    error = failure(facts_from({"detail": "Cannot read properties of undefined", "in_page": True}))
    assert isinstance(error, ToolServerError) and error.kind == "failed"
    assert str(error) == ("The tool server failed at the request to connect: Cannot read "
                          "properties of undefined.")
