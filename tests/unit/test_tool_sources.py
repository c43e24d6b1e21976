"""Tools from elsewhere made `Tool`s (py_agent.tools.remote), kept per source
(py_agent.tools.toolset), and handed to a running agent (Agent.set_tools)."""

from __future__ import annotations

import asyncio

import pytest

from py_agent import Agent, InvalidToolSchemaError, tool
from py_agent.testing import FunctionModel
from py_agent.tools.remote import (MAX_DESCRIPTION_CHARS, RemoteToolError, consequential,
                                   remote_tool, render_result, resolve_clashes)
from py_agent.tools.toolset import ToolSet


def make(name: str, server: str = "srv", annotations=None, trusted: bool = False,
         result=None, calls=None):
    async def call(remote_name, arguments):
        if calls is not None:
            calls.append((remote_name, arguments))
        return result if result is not None else {"content": [{"type": "text",
                                                              "text": f"{remote_name} ok"}]}
    return remote_tool(name, f"The {name} tool.", {"type": "object", "properties": {
        "text": {"type": "string"}}}, call, source="mcp", server=server,
        annotations=annotations, trusted=trusted)


@pytest.mark.parametrize("annotations, trusted, expected", [
    (None, False, True),                                            # unannotated: asks
    ({"readOnlyHint": True}, False, False),
    ({"readOnlyHint": False, "destructiveHint": False}, False, True),  # may still send
    (None, True, False),                                            # a trusted server
    ({"destructiveHint": True}, True, True),
    ({"readOnlyHint": True, "destructiveHint": True}, False, False),
])
def test_consequential_from_annotations(annotations, trusted, expected) -> None:
    assert consequential(annotations, trusted=trusted) is expected
    assert make("t", annotations=annotations, trusted=trusted).confirm is expected


def test_results_become_text_and_images_are_described() -> None:
    text, failed = render_result({"content": [
        {"type": "text", "text": "The sum is 5."},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
        {"type": "resource", "resource": {"uri": "mem://x", "text": "inline text"}},
        {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]})
    assert not failed
    assert text.splitlines() == [
        "The sum is 5.", "[an image (image/png, 8 bytes) that this model cannot see]",
        "[resource: a.txt <file:///a.txt>]", "inline text",
        "[audio (audio/wav, 3 bytes) that this model cannot hear]"]
    # structured content shows as JSON when no text block carries it
    assert render_result({"content": [], "structuredContent": {"sum": 5}}) == ('{"sum": 5}', False)
    assert render_result({"content": [{"type": "text", "text": "5"}],
                          "structuredContent": {"sum": 5}}) == ("5", False)
    assert render_result({"content": [{"type": "text", "text": "no"}], "isError": True}) == \
        ("no", True)
    assert render_result("plain") == ("plain", False)
    assert render_result({"x": 1}) == ('{"x": 1}', False)
    huge, _ = render_result("x" * 1_000_000)
    assert len(huge) < 201_000 and huge.endswith("[cut: the tool returned 1,000,000 characters]")


def test_a_remote_tool_calls_its_server_by_its_own_name_and_raises_on_error_results() -> None:
    calls = []
    echo = make("echo", calls=calls)
    assert echo.metadata["source"] == "mcp" and echo.metadata["server"] == "srv"
    assert asyncio.run(echo.fn(**echo.bind({"text": "hi"}))) == "echo ok"
    [renamed] = [t for t in resolve_clashes([make("echo", server="a"), echo]) if
                 t.metadata["server"] == "srv"]
    assert renamed.name == "srv_echo"
    assert asyncio.run(renamed.fn(text="x")) == "echo ok" and calls[-1] == ("echo", {"text": "x"})
    failing = make("fail", result={"content": [{"type": "text", "text": "bad input"}],
                                   "isError": True})
    with pytest.raises(RemoteToolError, match="bad input"):
        asyncio.run(failing.fn(text="x"))


def test_long_descriptions_are_cut_and_bad_names_refused() -> None:
    long = remote_tool("long", "word " * 1000, None, lambda *a: None, source="mcp", server="s")
    assert len(long.description) == MAX_DESCRIPTION_CHARS
    for bad in ("none", "has space", "", "x" * 129):
        with pytest.raises(InvalidToolSchemaError):
            remote_tool(bad, "d", None, lambda *a: None, source="mcp", server="s")


def test_clashes_prefix_the_server_tools_never_the_agents_own() -> None:
    @tool
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    tools = resolve_clashes([echo, make("echo", server="mcp-servers/everything"),
                             make("echo", server="other"), make("add", server="other")])
    assert [t.name for t in tools] == ["echo", "mcp-servers_everything_echo", "other_echo", "add"]


def test_toolset_sources_and_a_running_agent_follow_changes() -> None:
    @tool
    def local(text: str) -> str:
        """A local tool."""
        return text

    seen = []
    toolset = ToolSet([local])
    toolset.subscribe(lambda tools: seen.append([t.name for t in tools]))
    agent = Agent(FunctionModel(lambda prompt: "{}"), tools=toolset.tools())
    toolset.subscribe(agent.set_tools)
    toolset.set_source("mcp:a", [make("echo", server="a"), make("local", server="a")])
    assert seen[-1] == ["local", "echo", "local"]
    names = [t.name for t in agent.tools]
    assert names[:3] == ["local", "echo", "a_local"] and "compact" in names
    assert agent.retriever.tools == agent.tools
    assert toolset.remove_source("mcp:a") and not toolset.remove_source("mcp:a")
    assert [t.name for t in agent.tools if t.name not in ("compact", "recall")] == ["local"]
