"""Tools from elsewhere made `Tool`s (py_agent.tools.remote), with their origin; how a
toolbox holds several sources is tests/unit/test_toolbox.py's."""

from __future__ import annotations

import asyncio

import pytest

from py_agent import InvalidToolSchemaError, tool
from py_agent.tools import OriginKind, ToolOrigin, Trust
from py_agent.tools.remote import (MAX_DESCRIPTION_CHARS, RemoteToolError, consequential,
                                   remote_tool, render_result)
from py_agent.tools.toolbox import resolve_names


def server_origin(server: str) -> ToolOrigin:
    return ToolOrigin(kind=OriginKind.MCP, trust=Trust.UNTRUSTED, source=f"mcp:{server}",
                      server=server, url=f"http://{server}/mcp")


def make(name: str, server: str = "srv", annotations=None, trusted: bool = False,
         result=None, calls=None):
    async def call(remote_name, arguments):
        if calls is not None:
            calls.append((remote_name, arguments))
        return result if result is not None else {"content": [{"type": "text",
                                                              "text": f"{remote_name} ok"}]}
    return remote_tool(name, f"The {name} tool.", {"type": "object", "properties": {
        "text": {"type": "string"}}}, call, origin=server_origin(server),
        annotations=annotations, trusted=trusted)


@pytest.mark.parametrize("annotations, trusted, expected", [
    (None, False, True),                                            # unannotated: asks
    ({"readOnlyHint": True}, False, True),      # an untrusted source's claim is not believed
    ({"readOnlyHint": True}, True, False),      # a trusted one's is
    ({"readOnlyHint": False, "destructiveHint": False}, True, True),   # may still send
    (None, True, True),                         # a trusted source's unlabelled tool asks
    ({"destructiveHint": True}, True, True),
    ({"readOnlyHint": True, "destructiveHint": True}, True, True),    # says both: asks
    ({"readOnlyHint": "true"}, True, True),     # malformed labels count as consequential
    ({"readOnlyHint": 1}, True, True),
    ({"readOnlyHint": True, "destructiveHint": "false"}, True, True),
    ({"readOnlyHint": True, "openWorldHint": None}, True, True),
    (["readOnlyHint"], True, True),
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
        "The sum is 5.", "[an image (image/png, 8 bytes)]",
        "[resource: a.txt <file:///a.txt>]", "inline text",
        "[audio (audio/wav, 3 bytes)]"]
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
    assert echo.origin == ToolOrigin(kind=OriginKind.MCP, trust=Trust.UNTRUSTED, source="mcp:srv",
                                     server="srv", url="http://srv/mcp", name="echo")
    assert echo.origin.untrusted and not echo.origin.local
    assert asyncio.run(echo.fn(**echo.bind({"text": "hi"}))) == "echo ok"
    resolved, _ = resolve_names([[make("echo", server="a"), echo]])
    [renamed] = [t for t in resolved if t.origin.server == "srv"]
    assert renamed.name == "srv_echo" and renamed.origin.name == "echo"
    assert asyncio.run(renamed.fn(text="x")) == "echo ok" and calls[-1] == ("echo", {"text": "x"})
    failing = make("fail", result={"content": [{"type": "text", "text": "bad input"}],
                                   "isError": True})
    with pytest.raises(RemoteToolError, match="bad input"):
        asyncio.run(failing.fn(text="x"))


def test_long_descriptions_are_cut_and_bad_names_refused() -> None:
    long = remote_tool("long", "word " * 1000, None, lambda *a: None, origin=server_origin("s"))
    assert len(long.description) == MAX_DESCRIPTION_CHARS
    for bad in ("none", "has space", "", "x" * 129):
        with pytest.raises(InvalidToolSchemaError):
            remote_tool(bad, "d", None, lambda *a: None, origin=server_origin("s"))


def test_clashes_prefix_the_server_tools_never_the_agents_own() -> None:
    @tool
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    tools, problems = resolve_names([[echo], [make("echo", server="mcp-servers/everything")],
                                     [make("echo", server="other"), make("add", server="other")]])
    assert [t.name for t in tools] == ["echo", "mcp-servers_everything_echo", "other_echo", "add"]
    assert problems == []
