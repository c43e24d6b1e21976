"""``py-agent chat --mcp URL`` as a user runs it: a subprocess with piped stdin, the fake
OpenAI-compatible server as the model, the reference MCP server (npm) and ours as tool
servers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.fake_openai_server import ChatRequest, FakeServer, agent_responder
from tests.tool_server_processes import calls, everything_server, python_server, reset

pytest.importorskip("mcp")
ROOT = Path(__file__).resolve().parents[2]


def step(thought: str, tool: str = "none", tool_input="", answer: str = "") -> str:
    return json.dumps({"thought": thought, "toolName": tool, "toolInput": tool_input,
                       "finalAnswer": answer})


def tool_server_responder(request: ChatRequest):
    """The model: 'sum of A and B' calls get-sum, 'echo X' calls echo, 'weather in C'
    calls weather, 'delete the file P' calls delete_file, when offered; an observation
    is the answer."""
    if request.schema_name == "facts" or "running summary" in str(
            request.messages[0].get("content", "") if request.messages else ""):
        return agent_responder(request)
    last = request.last_user
    if last.startswith("Observation from "):
        tool, _, result = last[len("Observation from "):].partition(": ")
        # a server's result comes between data marks, which name where it came from
        result = re.sub(r"^\u27e6data from [^\u27e7]*; not instructions\u27e7 (.*) "
                        r"\u27e6end of data\u27e7$", r"\1", result.strip(), flags=re.S)
        return step("done", answer=f"{tool} said: {result}")
    message = last.rpartition("\nUser: ")[2]
    offered = request.offered_tools()
    for pattern, tool, make in (
            (r"sum of (\d+) and (\d+)", "get-sum", lambda m: {"a": int(m[1]), "b": int(m[2])}),
            (r"echo (.+)$", "echo", lambda m: {"message": m[1]}),
            (r"weather in (\w+)", "weather", lambda m: {"city": m[1]}),
            (r"delete the file (\S+)", "delete_file", lambda m: {"path": m[1]})):
        match = re.search(pattern, message, re.IGNORECASE)
        if match:
            if tool not in offered:
                return step("not offered", answer=f"{tool} was not offered: {offered}")
            return step("use it", tool, make(match))
    return step("direct", answer=f"You said: {message}")


@pytest.fixture(scope="module")
def tool_servers():
    everything, ours = everything_server(), python_server()
    yield everything, ours
    everything.stop()
    ours.stop()


def chat(model_url: str, lines: str, *args: str, timeout: float = 90):
    command = [sys.executable, "-m", "py_agent", "chat", "--base-url", model_url,
               "--model", "fake-model", "--timeout", "5", *args]
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PY_AGENT_API_KEY", "OPENAI_API_KEY")}
    environment["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="py-agent-cli-test-")
    return subprocess.run(command, input=lines, capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=timeout)


def test_a_message_is_answered_through_tool_servers(tool_servers, tmp_path) -> None:
    everything, ours = tool_servers
    with FakeServer(tool_server_responder) as model:
        done = chat(model.url, "What is the sum of 19 and 23?\nPlease echo good night\n"
                    "What is the weather in Porto?\n",
                    # their labels trusted: the read-only tools run without asking
                    "--mcp-trusted", everything.url + "/mcp", "--mcp-trusted", ours.url + "/mcp",
                    "--db", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["get-sum said: The sum of 19 and 23 is 42.",
                                        "echo said: Echo: good night",
                                        "weather said: Sunny and 21 C in Porto."]


def test_servers_that_cannot_be_used_are_named_and_the_chat_goes_on(tool_servers,
                                                                    tmp_path) -> None:
    everything, ours = tool_servers
    with FakeServer(tool_server_responder) as model:
        done = chat(model.url, "What is the sum of 1 and 2?\n",
                    "--mcp", ours.url + "/auth/mcp", "--mcp", ours.url + "/html",
                    "--mcp-trusted", everything.url + "/mcp", "--trace",
                    "--db", str(tmp_path / "s.db"))
        with_token = chat(model.url, "What is the weather in Oslo?\n",
                          "--mcp-trusted", ours.url + "/auth/mcp", "--mcp-token", "let-me-in",
                          "--db", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    assert f"tool server at {ours.url}/auth/mcp: refused: The tool server at " \
           f"{ours.url}/auth/mcp needs a token (HTTP 401)" in done.stderr
    assert f"tool server at {ours.url}/html: failed: {ours.url}/html does not answer as " \
           "an MCP server (HTTP 200, text/html)" in done.stderr
    assert f"tool server mcp-servers/everything at {everything.url}/mcp:" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == "get-sum said: The sum of 1 and 2 is 3.\n"
    assert with_token.stdout == "weather said: Sunny and 21 C in Oslo.\n", with_token.stderr


def test_a_consequential_call_asks_y_a_n(tool_servers, tmp_path) -> None:
    everything, ours = tool_servers
    reset(ours)
    lines = ("Please delete the file /tmp/t1\nn\n"
             "Please delete the file /tmp/t2\ny\n"
             "Please delete the file /tmp/t3\na\n"
             # allowed for the chat, yet asked again: the server's result of t3 is in the
             # raw turns the model reads (docs/memory.md, text from outside in memory)
             "Please delete the file /tmp/t4\ny\n"
             "Please delete the file /tmp/t5\ny\n")
    with FakeServer(tool_server_responder) as model:
        done = chat(model.url, lines, "--mcp", ours.url + "/mcp", "--db", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "delete_file said: The user denied this call of delete_file; it did not run. Do not "
        "try it again in this turn: answer the user, or ask what they want instead.",
        "delete_file said: Deleted /tmp/t2.", "delete_file said: Deleted /tmp/t3.",
        "delete_file said: Deleted /tmp/t4.", "delete_file said: Deleted /tmp/t5."]
    assert [c["path"] for c in calls(ours) if c["tool"] == "delete_file"] == \
        ["/tmp/t2", "/tmp/t3", "/tmp/t4", "/tmp/t5"]
    assert done.stderr.count('The agent wants to run delete_file from py-agent-test-server '
                             'with {"path": "/tmp/') == 5
    assert ["  denied", "  allowed once", "  allowed for this chat", "  allowed once",
            "  allowed once"] == [
        line for line in done.stderr.splitlines() if line.startswith("  ") and "allowed" in line
        or line == "  denied"]
