"""What went wrong with a tool server, decided once, from the facts of the failure.

Each home gathers the same :class:`FailureFacts`: CPython from the ``mcp`` package's typed
errors and what its HTTP transport saw (:mod:`py_agent.mcp.python_client`); the page from
the TypeScript SDK's typed errors, its fetch, the no-cors probe and the CSP report
(``worker/mcp_client.js``, whose plain ``facts`` object :func:`facts_from` reads in
``py_agent/browser/tool_servers.py``). :func:`failure` decides from them alone: a server's
JSON-RPC error answering a call is the tool's error, which the model reads
(:func:`tool_error`); anything else is a :class:`ToolServerError` whose kind and message
say what the user can do (:func:`explain`), in the same words in both homes. ``detail``
(an SDK's message, a server's) is only ever shown, never read to decide. A message never
holds the credentials of the server's address (:func:`~py_agent.redaction.redact_url`),
nor any the SDK's words carry.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..redaction import host_of, redact_text, redact_url
from ..tools.remote import RemoteToolError
from .errors import ToolServerError

# When it failed: connecting (server/discover or initialize), listing, or calling a tool.
STAGES = ("connect", "list", "call")

# What the SDK's error was, as a category (FailureFacts.error_type):
PROTOCOL = "protocol"            # a JSON-RPC error the server sent (jsonrpc_code)
CLOSED = "closed"                # the connection ended before the reply
INVALID_REPLY = "invalid-reply"  # a reply that is not JSON-RPC (not JSON, not MCP, too deep)
ADDRESS = "address"              # not an http(s) address
MISSING_SDK = "missing-sdk"      # the MCP SDK is not installed
ERROR_TYPES = ("", PROTOCOL, CLOSED, INVALID_REPLY, ADDRESS, MISSING_SDK)

INSTALL_HINT = ("Tool servers need the MCP SDK for Python: pip install 'py-agent[mcp]' "
                "(or pip install mcp)")
CORS_HEADERS = ("Access-Control-Allow-Origin (this page's origin or *), "
                "Access-Control-Allow-Headers (content-type, authorization, mcp-session-id, "
                "mcp-protocol-version, last-event-id) and Access-Control-Expose-Headers "
                "(mcp-session-id)")
MCP_CONTENT_TYPES = ("application/json", "text/event-stream")
DETAIL_CHARS = 300


@dataclass(frozen=True)
class FailureFacts:
    """The facts of one failure, as either home observed them (never a message's words).

    Attributes:
        url: the server's address.
        stage: ``connect``, ``list`` or ``call``.
        http_status: the HTTP status that answered the failing request, if one did.
        content_type: that answer's content type.
        network_error: the request never got an HTTP answer (refused, no route, blocked).
        csp_blocked: this page's Content-Security-Policy refused the connection (page).
        opaque_reachable: a no-cors request got through: the server is there but does not
            allow this page's origin (page).
        cross_origin: the request went to another origin than the page's, where CORS
            applies (page).
        timed_out: the limit passed without an answer; ``timeout_s`` is that limit.
        aborted: the call was stopped (Stop, or the tool runner's deadline).
        jsonrpc_code: the code of a JSON-RPC error (the server's, when ``error_type`` is
            ``protocol``).
        error_type: what the SDK's error was, as a category (``ERROR_TYPES``).
        detail: the SDK's or the server's own words, for display only.
        in_page: it happened in the page (whose controls the advice names).
        token_sent: the requests carried a bearer token (a 403 refused the token, or the
            client itself: its origin, say).
    """

    url: str
    stage: str = "connect"
    http_status: int | None = None
    content_type: str = ""
    network_error: bool = False
    csp_blocked: bool = False
    opaque_reachable: bool = False
    cross_origin: bool = False
    timed_out: bool = False
    timeout_s: float | None = None
    aborted: bool = False
    jsonrpc_code: int | None = None
    error_type: str = ""
    detail: str = ""
    in_page: bool = False
    token_sent: bool = False


def facts_from(data: Mapping[str, Any] | None, url: str = "") -> FailureFacts:
    """:class:`FailureFacts` from a plain mapping (the page's ``error.facts``): unknown
    keys are dropped and each value is held to its field's type."""
    data = data if isinstance(data, Mapping) else {}

    def text(key: str) -> str:
        value = data.get(key)
        return value if isinstance(value, str) else ""

    def flag(key: str) -> bool:
        return data.get(key) is True

    def number(key: str) -> float | None:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            return None
        return value

    def integer(key: str) -> int | None:
        value = number(key)
        return int(value) if value is not None and value == int(value) else None

    stage = text("stage")
    error_type = text("error_type")
    return FailureFacts(
        url=text("url") or url, stage=stage if stage in STAGES else "connect",
        http_status=integer("http_status"), content_type=text("content_type"),
        network_error=flag("network_error"), csp_blocked=flag("csp_blocked"),
        opaque_reachable=flag("opaque_reachable"), cross_origin=flag("cross_origin"),
        timed_out=flag("timed_out"), timeout_s=number("timeout_s"), aborted=flag("aborted"),
        jsonrpc_code=integer("jsonrpc_code"),
        error_type=error_type if error_type in ERROR_TYPES else "",
        detail=text("detail"), in_page=flag("in_page"), token_sent=flag("token_sent"))


def as_dict(facts: FailureFacts) -> dict[str, Any]:
    """The facts as a plain dict (for logs and tests)."""
    return dataclasses.asdict(facts)


# ------------------------------------------------------------------ the decision

def failure(facts: FailureFacts) -> Exception:
    """What to raise for this failure: the tool's own error (:func:`tool_error`), or the
    server's (:func:`explain`)."""
    return tool_error(facts) or explain(facts)


def tool_error(facts: FailureFacts) -> RemoteToolError | None:
    """A call the server answered with a JSON-RPC error (any code: -32000 to -32099 are
    the server's own) failed as a tool fails: the model reads the server's words, and
    the server stays connected. None for any other failure."""
    if facts.stage != "call" or facts.error_type != PROTOCOL or facts.aborted \
            or facts.timed_out or facts.network_error or facts.http_status in (401, 403):
        return None
    said = _said(facts.detail)
    return RemoteToolError(said or f"the tool server answered with JSON-RPC error "
                                    f"{facts.jsonrpc_code}.")


WHAT = {"connect": "the request to connect", "list": "tools/list", "call": "the call"}


def explain(facts: FailureFacts) -> ToolServerError:
    """The kind of failure and what to do about it, from the facts alone."""
    url, stage, status = redact_url(facts.url) if facts.url else "", facts.stage, \
        facts.http_status
    at = f"The tool server at {url}" if url else "The tool server"
    if facts.error_type == MISSING_SDK:
        return ToolServerError("missing-sdk", "This site was prepared without the MCP client: "
                                              "run serve.py again." if facts.in_page
                               else INSTALL_HINT)
    if facts.error_type == ADDRESS:
        return ToolServerError("address", f"{url}: a tool server is reached over http or "
                                          "https (an address like http://host:port/mcp).")
    if facts.aborted:
        return ToolServerError("cancelled", f"The call to the tool server at {url} was stopped.")
    if facts.csp_blocked:
        origin = _origin(url)
        return ToolServerError("csp", f"This page may not connect to {origin}: its "
                                      "Content-Security-Policy allows only the tool servers "
                                      f"serve.py was started with. Restart it with --mcp {url}")
    if facts.network_error:
        if facts.opaque_reachable:
            return ToolServerError("cors", f"{at} is running but does not allow this page to "
                                           f"call it (CORS). The server must send "
                                           f"{CORS_HEADERS}.")
        cors = (" Or it does not allow this page to call it (CORS): then the server must "
                f"send {CORS_HEADERS}.") if facts.cross_origin else ""
        return ToolServerError("unreachable", f"{at} cannot be reached: is it running, and is "
                                              f"the address right?{cors}")
    if facts.timed_out:
        within = f"within {facts.timeout_s:g} s" if facts.timeout_s else "in time"
        return ToolServerError("timeout", f"{at} did not answer {WHAT[stage]} {within}.")
    if status == 401:
        where = ("give one (a bearer token) when you connect it." if facts.in_page else
                 "give one with headers={'Authorization': 'Bearer TOKEN'} (--mcp-token in "
                 "the terminal).")
        return ToolServerError("unauthorized", f"{at} needs a token (HTTP 401): {where}")
    if status == 403:
        if facts.token_sent:
            return ToolServerError("forbidden", f"{at} refused the token (HTTP 403): check "
                                                "that it is right and allows these tools.")
        return ToolServerError("forbidden", f"{at} refused the request (HTTP 403) and no token "
                                            "was sent: it may want one, or it may not allow "
                                            "this client's origin (a server made with the MCP "
                                            "SDK for Python refuses other origins unless told "
                                            "to allow them).")
    if facts.error_type == PROTOCOL:
        said = _said(facts.detail, ": ")
        return ToolServerError("failed", f"{at} refused {WHAT[stage]}{said.rstrip('.')} "
                                         f"(JSON-RPC error {facts.jsonrpc_code}).")
    media = facts.content_type.split(";")[0].strip().lower()
    if status in (404, 405, 415) or (status is not None and 200 <= status < 300 and media
                                     and media not in MCP_CONTENT_TYPES):
        shown = f", {media}" if media else ""
        return ToolServerError("not-mcp", f"{url} does not answer as an MCP server (HTTP "
                                          f"{status}{shown}): check the address (it usually "
                                          "ends in /mcp).")
    if facts.error_type == INVALID_REPLY:
        return ToolServerError("malformed", f"{at} sent a reply that is not valid MCP "
                                            f"(JSON-RPC){_said(facts.detail, ': ', '.')}")
    if facts.error_type == CLOSED:
        return ToolServerError("closed", {
            "connect": f"{at} closed the connection.",
            "list": f"{at} went away while listing its tools.",
            "call": f"{at} went away during the call."}[stage])
    if status is not None and status >= 500:
        return ToolServerError("server-error", f"{at} failed (HTTP {status})"
                                               f"{_said(facts.detail, ': ', '.')}")
    shown = f" (HTTP {status})" if status is not None and status >= 400 else ""
    return ToolServerError("failed", f"{at} failed at {WHAT[stage]}{shown}"
                                     f"{_said(facts.detail, ': ', '.')}")


def _said(detail: str, lead: str = "", empty: str = "") -> str:
    """Someone else's words, shown: the first line, cut, ending in one full stop."""
    detail = redact_text(detail or "")
    line = detail.strip().splitlines()[0].strip() if detail.strip() else ""
    if not line:
        return empty
    if len(line) > DETAIL_CHARS:
        line = line[:DETAIL_CHARS - 1].rstrip() + "…"
    return lead + line.rstrip(".") + "."


def _origin(url: str) -> str:
    parts = urlsplit(url)
    host = host_of(url)
    return f"{parts.scheme}://{host}" if parts.scheme and host else url
