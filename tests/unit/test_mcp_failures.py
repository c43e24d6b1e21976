"""py_agent.mcp.failures: a tool server's failure decided from its facts alone, in the same
words for the page and for CPython (issue 37, item 5)."""

from __future__ import annotations

import pytest

from py_agent.mcp import ToolServerError
from py_agent.mcp.failures import (CLOSED, INVALID_REPLY, PROTOCOL, FailureFacts, as_dict,
                                   explain, facts_from, failure, tool_error)
from py_agent.tools.remote import RemoteToolError

URL = "http://127.0.0.1:3001/mcp"
AT = f"The tool server at {URL}"
CORS = ("Access-Control-Allow-Origin (this page's origin or *), Access-Control-Allow-Headers "
        "(content-type, authorization, mcp-session-id, mcp-protocol-version, last-event-id) "
        "and Access-Control-Expose-Headers (mcp-session-id)")


@pytest.mark.parametrize("facts, kind, message", [
    (dict(error_type="address", url="ftp://x/mcp"), "address",
     "ftp://x/mcp: a tool server is reached over http or https (an address like "
     "http://host:port/mcp)."),
    (dict(error_type="missing-sdk"), "missing-sdk",
     "Tool servers need the MCP SDK for Python: pip install 'py-agent[mcp]' (or pip install mcp)"),
    (dict(error_type="missing-sdk", in_page=True), "missing-sdk",
     "This site was prepared without the MCP client: run serve.py again."),
    (dict(stage="call", aborted=True, timed_out=True), "cancelled",
     f"The call to the tool server at {URL} was stopped."),
    (dict(network_error=True, csp_blocked=True, in_page=True), "csp",
     "This page may not connect to http://127.0.0.1:3001: its Content-Security-Policy "
     f"allows only the tool servers serve.py was started with. Restart it with --mcp {URL}"),
    (dict(network_error=True, opaque_reachable=True, cross_origin=True, in_page=True), "cors",
     f"{AT} is running but does not allow this page to call it (CORS). The server must send "
     f"{CORS}."),
    (dict(network_error=True), "unreachable",
     f"{AT} cannot be reached: is it running, and is the address right?"),
    (dict(network_error=True, cross_origin=True, in_page=True), "unreachable",
     f"{AT} cannot be reached: is it running, and is the address right? Or it does not allow "
     f"this page to call it (CORS): then the server must send {CORS}."),
    (dict(timed_out=True, timeout_s=3.0), "timeout",
     f"{AT} did not answer the request to connect within 3 s."),
    (dict(stage="list", timed_out=True, timeout_s=2.0), "timeout",
     f"{AT} did not answer tools/list within 2 s."),
    (dict(stage="call", timed_out=True, timeout_s=30), "timeout",
     f"{AT} did not answer the call within 30 s."),
    (dict(stage="call", timed_out=True), "timeout", f"{AT} did not answer the call in time."),
    (dict(http_status=401, content_type="application/json"), "unauthorized",
     f"{AT} needs a token (HTTP 401): give one with headers={{'Authorization': 'Bearer "
     "TOKEN'} (--mcp-token in the terminal)."),
    (dict(http_status=401, in_page=True), "unauthorized",
     f"{AT} needs a token (HTTP 401): give one (a bearer token) when you connect it."),
    (dict(http_status=403, error_type=PROTOCOL, jsonrpc_code=-32600, token_sent=True),
     "forbidden",
     f"{AT} refused the token (HTTP 403): check that it is right and allows these tools."),
    (dict(http_status=403), "forbidden",
     f"{AT} refused the request (HTTP 403) and no token was sent: it may want one, or it "
     "may not allow this client's origin (a server made with the MCP SDK for Python "
     "refuses other origins unless told to allow them)."),
    (dict(stage="list", error_type=PROTOCOL, jsonrpc_code=-32601,
          detail="Method not found.\nmore"), "failed",
     f"{AT} refused tools/list: Method not found (JSON-RPC error -32601)."),
    (dict(http_status=404, content_type="text/plain; charset=utf-8"), "not-mcp",
     f"{URL} does not answer as an MCP server (HTTP 404, text/plain): check the address "
     "(it usually ends in /mcp)."),
    (dict(http_status=200, content_type="text/html", error_type=INVALID_REPLY), "not-mcp",
     f"{URL} does not answer as an MCP server (HTTP 200, text/html): check the address "
     "(it usually ends in /mcp)."),
    (dict(http_status=202, content_type="text/plain"), "not-mcp",
     f"{URL} does not answer as an MCP server (HTTP 202, text/plain): check the address "
     "(it usually ends in /mcp)."),
    (dict(stage="list", http_status=200, content_type="application/json",
          error_type=INVALID_REPLY,
          detail="its tools/list reply nests deeper than 100 levels"), "malformed",
     f"{AT} sent a reply that is not valid MCP (JSON-RPC): its tools/list reply nests deeper "
     "than 100 levels."),
    (dict(error_type=INVALID_REPLY), "malformed",
     f"{AT} sent a reply that is not valid MCP (JSON-RPC)."),
    (dict(error_type=CLOSED), "closed", f"{AT} closed the connection."),
    (dict(stage="list", error_type=CLOSED), "closed",
     f"{AT} went away while listing its tools."),
    (dict(stage="call", error_type=CLOSED, detail="Connection closed"), "closed",
     f"{AT} went away during the call."),
    (dict(http_status=503, content_type="text/plain", detail="Server returned an error"),
     "server-error", f"{AT} failed (HTTP 503): Server returned an error."),
    (dict(stage="list", http_status=400, content_type="application/json"), "failed",
     f"{AT} failed at tools/list (HTTP 400)."),
    (dict(detail="x" * 400), "failed", f"{AT} failed at the request to connect: "
                                       + "x" * 299 + "…."),
])
def test_each_kind_from_its_facts(facts, kind, message) -> None:
    error = explain(FailureFacts(**{"url": URL, **facts}))
    assert isinstance(error, ToolServerError)
    assert (error.kind, str(error)) == (kind, message)


@pytest.mark.parametrize("detail", [
    "connection refused", "timed out", "HTTP 401 unauthorized", "JSON parse error",
    "Connection closed", "ECONNREFUSED", "TimeoutError", "<html>", "CORS",
])
def test_the_words_of_an_error_decide_nothing(detail) -> None:
    """Message text is shown, never read: with no facts, any words are a plain failure."""
    error = explain(FailureFacts(url=URL, stage="list", detail=detail))
    assert error.kind == "failed"
    assert str(error) == f"{AT} failed at tools/list: {detail}."


@pytest.mark.parametrize("code", [-32000, -32001, -32099, -32603, -32602, -32601, 0, 42])
def test_a_json_rpc_error_answering_a_call_is_the_tools_own_error(code) -> None:
    facts = FailureFacts(url=URL, stage="call", error_type=PROTOCOL, jsonrpc_code=code,
                         http_status=200, content_type="application/json",
                         detail="The daily quota is used up.")
    error = failure(facts)
    assert type(error) is RemoteToolError and str(error) == "The daily quota is used up."
    assert tool_error(facts) is not None
    # the same code the SDK made up (not on the wire) is the connection's, not the tool's
    synthesized = FailureFacts(url=URL, stage="call", jsonrpc_code=code, error_type=CLOSED)
    assert isinstance(failure(synthesized), ToolServerError)


@pytest.mark.parametrize("facts", [
    dict(stage="list"), dict(stage="connect"), dict(stage="call", aborted=True),
    dict(stage="call", timed_out=True), dict(stage="call", http_status=401),
])
def test_only_a_call_answered_with_an_error_is_the_tools(facts) -> None:
    facts = FailureFacts(url=URL, error_type=PROTOCOL, jsonrpc_code=-32000, **facts)
    assert tool_error(facts) is None and isinstance(failure(facts), ToolServerError)


def test_a_server_error_without_words_still_says_something() -> None:
    facts = FailureFacts(url=URL, stage="call", error_type=PROTOCOL, jsonrpc_code=-32000)
    assert str(failure(facts)) == "the tool server answered with JSON-RPC error -32000."


def test_the_pages_plain_facts_are_held_to_their_types() -> None:
    facts = facts_from({"url": URL, "stage": "list", "http_status": 404.0,
                        "content_type": "text/html", "network_error": 1, "timed_out": True,
                        "timeout_s": 2.5, "jsonrpc_code": "x", "error_type": "made-up",
                        "detail": 7, "in_page": True, "extra": "dropped"})
    assert as_dict(facts) == {
        "url": URL, "stage": "list", "http_status": 404, "content_type": "text/html",
        "network_error": False, "csp_blocked": False, "opaque_reachable": False,
        "cross_origin": False, "timed_out": True, "timeout_s": 2.5, "aborted": False,
        "jsonrpc_code": None, "error_type": "", "detail": "", "in_page": True,
        "token_sent": False}
    assert facts_from(None, URL) == FailureFacts(url=URL)
    assert facts_from({"stage": "elsewhere", "timeout_s": float("nan"),
                       "http_status": 401.5}, URL) == FailureFacts(url=URL)


def test_facts_are_frozen() -> None:
    with pytest.raises(Exception):
        FailureFacts(url=URL).stage = "call"  # type: ignore[misc]
