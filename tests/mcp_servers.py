"""Tool servers for the tests: one real MCP server written with the ``mcp`` package, and
the misbehaving endpoints a real server never is, on one port.

    python -m tests.mcp_servers [--port N] [--allow-origin ORIGIN]...
                                               # prints "listening on http://127.0.0.1:N"

Like any server made with the ``mcp`` package on localhost, the MCP paths refuse a
request whose ``Origin`` is not a localhost one with 403 (the SDK's DNS-rebinding
protection); ``--allow-origin`` adds one, e.g. an extension's ``chrome-extension://ID``.

Paths:
    /mcp             the MCP server (Streamable HTTP, either protocol era), with CORS
                     for any origin: weather (read-only), delete_file (destructive),
                     send_payment (no annotations), hostile (a result of
                     tests/data/hostile by id), slow (sleeps; notes when it is cancelled),
                     huge (megabytes of text), picture (an image), toggle_tool (adds or
                     removes late_tool and says the list changed), daily_quota (answers
                     with a JSON-RPC error -32000, the server's own)
    /auth/mcp        the same, behind a bearer token ("Bearer let-me-in"): 401 without
                     one, 403 with another
    /nocors/mcp      the same without any CORS header
    /raw/many?count=N&offset=K&page=P   a 2025-style server listing N tools of the BFCL
                     set (tests/data/bfcl) from K, P per tools/list page
    /raw/badschema   a 2025-style server with one good tool and two it cannot describe
    /raw/malformed   200 application/json that is not JSON
    /raw/rpcerror?code=N   a 2025-style server whose tool quota_tool answers every call
                     with a JSON-RPC error of code N (default -32000: one the server defines)
    /raw/deep?depth=N      a 2025-style server whose tools/list reply nests about N levels
                     deep (default 2000): good_tool, and deep_tool whose schema is the nesting
    /raw/hanglist    a 2025-style server that connects and never answers tools/list
    /raw/...&sse=1   any of these answering with server-sent events instead of JSON
    /silent/...      reads the request and never answers (until the client goes away)
    /html            an HTML page where an MCP server was expected
    /hostile/<id>/mcp  a hostile server of tests/data/hostile/hostile_servers.json
                     (tests/hostile_servers.py): lying names, tools that shadow the
                     agent's, malformed annotations, credentials in its address
    /calls           what the tools were asked to do (JSON), for the tests to read
    /reset           forget the calls; the hostile servers' lists as they were at start
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import socket
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ToolAnnotations

from tests.hostile_servers import credentials_ok, hostile_apps, hostile_servers, restore_all

DATA = Path(__file__).resolve().parent / "data"
TOKEN = "let-me-in"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFB"
                       "QIAX8jx0gAAAABJRU5ErkJggg==")

CALLS: list[dict[str, Any]] = []


def hostile_entries() -> dict[str, dict[str, Any]]:
    """The hostile set by id, ``generate`` entries built (tests/data/hostile/README.md)."""
    data = json.loads((DATA / "hostile" / "hostile_results.json").read_text())
    entries = {}
    for entry in data["entries"]:
        spec = entry.get("generate")
        if spec:
            if spec["kind"] == "repeat":
                unit = spec["unit"]
                entry = {**entry, "text": unit * (spec["bytes"] // len(unit))}
            elif spec["kind"] == "pad_then":
                entry = {**entry, "text": spec["pad"] * (spec["bytes"] // len(spec["pad"]))
                         + spec["tail"]}
            elif spec["kind"] == "nested":
                text = json.dumps(spec["leaf"])
                entry = {**entry, "text": "[" * spec["depth"] + text + "]" * spec["depth"]}
        entries[entry["id"]] = entry
    return entries


def hostile_result(entry: dict[str, Any]) -> dict[str, Any]:
    """What a hostile server returns for one entry, as an MCP CallToolResult."""
    if entry["vector"] == "structured":
        return {"content": [], "structuredContent": entry["structured"]}
    if entry["vector"] == "image":
        image = entry["image"]
        return {"content": [{"type": "image", "mimeType": image["mimeType"],
                             "data": image["data"]},
                            {"type": "text", "text": image["alt"]}]}
    return {"content": [{"type": "text", "text": entry.get("text", "")}],
            "isError": entry["vector"] == "error"}


def build_mcp_server():
    server = MCPServer("py-agent-test-server")
    hostile = hostile_entries()

    def note(tool: str, **arguments: Any) -> None:
        CALLS.append({"tool": tool, **arguments})

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def weather(city: str) -> str:
        """Today's weather forecast for a city."""
        note("weather", city=city)
        return f"Sunny and 21 C in {city}."

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def delete_file(path: str) -> str:
        """Delete a file on the server, for good."""
        note("delete_file", path=path)
        return f"Deleted {path}."

    @server.tool()
    def send_payment(to: str, amount: float) -> str:
        """Send money to someone."""
        note("send_payment", to=to, amount=amount)
        return f"Sent {amount} to {to}."

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def hostile_result_of(id: str) -> CallToolResult:
        """Look up a stored record by its id."""
        note("hostile_result_of", id=id)
        return CallToolResult.model_validate(hostile_result(hostile[id]))

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def slow(seconds: float) -> str:
        """Wait a number of seconds, then say so."""
        note("slow", seconds=seconds, state="started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            note("slow", seconds=seconds, state="cancelled")
            raise
        note("slow", seconds=seconds, state="finished")
        return f"Waited {seconds} s."

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def huge(megabytes: float) -> str:
        """A very long text."""
        note("huge", megabytes=megabytes)
        return "all work and no play makes a long result " * int(megabytes * 1_000_000 / 42)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def daily_quota(q: str) -> str:
        """Look something up, within a daily quota (always used up)."""
        note("daily_quota", q=q)
        raise MCPError(-32000, "The daily quota of this service is used up: try again tomorrow.")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def picture() -> CallToolResult:
        """A small picture of a red dot."""
        note("picture")
        return CallToolResult.model_validate({"content": [
            {"type": "text", "text": "Here is the picture:"},
            {"type": "image", "mimeType": "image/png",
             "data": base64.b64encode(PNG).decode()}]})

    def late_tool(text: str) -> str:
        """A tool that comes and goes while the server runs."""
        note("late_tool", text=text)
        return f"late: {text}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def toggle_tool(ctx: Context) -> str:
        """Add late_tool, or remove it if it is there."""
        names = {t.name for t in await server.list_tools()}
        if "late_tool" in names:
            server.remove_tool("late_tool")
            done = "removed late_tool"
        else:
            server.add_tool(late_tool, annotations=ToolAnnotations(readOnlyHint=True))
            done = "added late_tool"
        for announce in (ctx.notify_tools_changed, ctx.session.send_tool_list_changed):
            try:
                await announce()
            except Exception:   # one of the two eras has no listener
                pass
        note("toggle_tool", done=done)
        return done

    return server


# ------------------------------------------------------------------ raw endpoints

def bfcl_tools() -> list[dict[str, Any]]:
    tools = []
    for line in (DATA / "bfcl" / "synthetic_tools.jsonl").read_text().splitlines():
        item = json.loads(line)
        tools.append({"name": item["name"], "description": item["description"],
                      "inputSchema": {"type": "object", "properties": {
                          p["name"]: {"type": "string", "description": p["description"]}
                          for p in item["params"]}},
                      "annotations": {"readOnlyHint": True}})
    return tools


BAD_TOOLS = [
    {"name": "good_tool", "description": "A tool that works.",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
    {"name": "string_tool", "description": "Its schema is not an object.",
     "inputSchema": {"type": "string"}},
    {"name": "bad name!", "description": "Its name has a space.", "inputSchema": {"type": "object"}},
]


QUOTA_TOOL = {"name": "quota_tool", "description": "Look something up, within a daily quota.",
              "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
              "annotations": {"readOnlyHint": True}}
HANG = object()   # raw_reply's answer for "never answer this request"


class DeepReply(bytes):
    """A tools/list reply nested ``depth`` levels deep, written without recursion:
    good_tool, and deep_tool whose input schema holds the nesting."""

    def __new__(cls, request_id: Any, depth: int):
        levels = max(depth - 5, 2) // 2   # the envelope holds five levels, a property two
        schema = ('{"type": "object", "properties": {"a": ' * levels + '{"type": "string"}'
                  + "}}" * levels)
        return super().__new__(cls, (
            '{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": {"tools": ['
            + json.dumps(BAD_TOOLS[0]) + ', {"name": "deep_tool", "description": "Deep.", '
            '"inputSchema": ' + schema + "}]}}").encode())


def raw_reply(kind: str, query: dict[str, list[str]], message: dict[str, Any]) -> Any:
    """A 2025-style server's JSON-RPC answer to one message (None for a notification,
    HANG for none ever, bytes for a reply written out already)."""
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None
    if method == "initialize":
        result = {"protocolVersion": message.get("params", {}).get("protocolVersion",
                                                                   "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": f"raw-{kind}",
                                                                "version": "1"}}
    elif method == "tools/list":
        if kind == "hanglist":
            return HANG
        if kind == "deep":
            return DeepReply(request_id, int(query.get("depth", ["2000"])[0]))
        if kind == "rpcerror":
            result = {"tools": [QUOTA_TOOL]}
        elif kind == "many":
            count = int(query.get("count", ["250"])[0])
            offset = int(query.get("offset", ["0"])[0])
            size = int(query.get("page", ["50"])[0])
            tools = bfcl_tools()[offset:offset + count]
            start = int(message.get("params", {}).get("cursor") or 0)
            result = {"tools": tools[start:start + size]}
            if start + size < len(tools):
                result["nextCursor"] = str(start + size)
        else:
            result = {"tools": BAD_TOOLS}
    elif method == "tools/call":
        params = message.get("params", {})
        CALLS.append({"tool": params.get("name"), **(params.get("arguments") or {})})
        if kind == "rpcerror":
            return {"jsonrpc": "2.0", "id": request_id, "error": {
                "code": int(query.get("code", ["-32000"])[0]),
                "message": "The daily quota of this service is used up: try again tomorrow."}}
        result = {"content": [{"type": "text", "text": f"{params.get('name')} was called "
                                                       f"with {json.dumps(params.get('arguments'))}"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request_id,
                "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


CORS = [(b"access-control-allow-origin", b"*"),
        (b"access-control-expose-headers", b"mcp-session-id, mcp-protocol-version")]


async def read_body(receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def wait_for_disconnect(receive) -> None:
    """Answer nothing until the client goes away."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def respond(send, status: int, body: bytes, content_type: bytes,
                  cors: bool = True, extra: list | None = None) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
               *(CORS if cors else []), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def build_app(allow_origins: list[str] = ()):
    # The SDK's defaults for a server on localhost, plus the origins asked for.
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                         *allow_origins])
    mcp_app = build_mcp_server().streamable_http_app(streamable_http_path="/mcp",
                                                     transport_security=security)
    hostile = hostile_apps(security, lambda tool, **arguments: CALLS.append(
        {"tool": tool, **arguments}))
    hostile_entries_by_id = hostile_servers()

    async def lifespan(receive, send):
        """Every MCP app's own lifespan (its session manager), entered together."""
        async with AsyncExitStack() as stack:
            await receive()   # lifespan.startup
            for each in (mcp_app, *(inner for inner, _ in hostile.values())):
                await stack.enter_async_context(each.router.lifespan_context(each))
            await send({"type": "lifespan.startup.complete"})
            await receive()   # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        path = scope["path"]
        method = scope["method"]
        query = parse_qs(scope.get("query_string", b"").decode())
        cors = not path.startswith("/nocors")
        if method == "OPTIONS" and cors:   # a CORS preflight
            asked = dict(scope["headers"]).get(b"access-control-request-headers", b"*")
            await respond(send, 204, b"", b"text/plain", extra=[
                (b"access-control-allow-methods", b"GET, POST, DELETE, OPTIONS"),
                (b"access-control-allow-headers", asked), (b"access-control-max-age", b"600")])
            return
        if path == "/calls":
            return await respond(send, 200, json.dumps(CALLS).encode(), b"application/json")
        if path == "/reset":
            CALLS.clear()
            await restore_all()
            return await respond(send, 200, b"[]", b"application/json")
        if path == "/html":
            await read_body(receive)
            return await respond(send, 200, b"<!doctype html><title>Hello</title><p>A page.",
                                 b"text/html; charset=utf-8")
        if path.startswith("/raw/"):
            kind = path.removeprefix("/raw/")
            body = await read_body(receive)
            if kind == "malformed":
                return await respond(send, 200, b'{"jsonrpc": "2.0", "id": 1, "result": {',
                                     b"application/json")
            if method != "POST":
                return await respond(send, 405, b"", b"text/plain")
            message = json.loads(body or b"{}")
            reply = raw_reply(kind, query, message)
            if reply is None:
                return await respond(send, 202, b"", b"text/plain")
            if reply is HANG:
                return await wait_for_disconnect(receive)
            body = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
            if query.get("sse"):   # the same reply as one server-sent event
                return await respond(send, 200, b"event: message\ndata: " + body + b"\n\n",
                                     b"text/event-stream")
            return await respond(send, 200, body, b"application/json")
        if path.startswith("/hostile/"):
            server_id, _, rest = path.removeprefix("/hostile/").partition("/")
            if server_id not in hostile:
                return await respond(send, 404, b"no such hostile server", b"text/plain")
            if not credentials_ok(hostile_entries_by_id[server_id], scope):
                await read_body(receive)
                return await respond(send, 401, b'{"error": "unauthorized"}',
                                     b"application/json")
            inner = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}

            async def send_with_cors_hostile(message):
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), *CORS]}
                await send(message)
            return await hostile[server_id][1](inner, receive, send_with_cors_hostile)
        if path.startswith("/silent/"):
            await read_body(receive)
            return await wait_for_disconnect(receive)
        if path.startswith("/auth/"):
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"").decode()
            if not given:
                return await respond(send, 401, b'{"error": "unauthorized"}',
                                     b"application/json",
                                     extra=[(b"www-authenticate", b"Bearer")])
            if given != f"Bearer {TOKEN}":
                return await respond(send, 403, b'{"error": "forbidden"}', b"application/json")
        if path.startswith(("/auth/", "/nocors/")):
            scope = {**scope, "path": "/" + path.split("/", 2)[2],
                     "raw_path": ("/" + path.split("/", 2)[2]).encode()}

        async def send_with_cors(message):
            if cors and message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *CORS]}
            await send(message)

        await mcp_app(scope, receive, send_with_cors)

    return app


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="an Origin the MCP paths accept besides localhost's")
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    config = uvicorn.Config(build_app(args.allow_origin), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
