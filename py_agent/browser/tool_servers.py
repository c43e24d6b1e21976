"""The page's tool servers (MCP), from the agent worker, with the official TypeScript SDK.

``worker/mcp_client.js`` speaks the wire (it imports the SDK bundle the manifest names:
``mcp.client``); each server is a :class:`~py_agent.mcp.ToolServer`, a tool source of
the agent's toolbox (``mcp:<url>``). Servers come from ``serve.py --mcp`` (the
manifest's ``mcp_servers``: added before the page is ready, connected right after it,
so a turn that starts meanwhile waits for them a few seconds) and from the user (the
Tools panel, which remembers them in this browser and asks again at each start).

Requests from the page (each gets one ``{type: 'reply', id, ok, value|error}``):
``tool_servers`` (every server described), ``connect_tool_server`` (``url``, ``token``,
``trusted``: replies once the first attempt is over, whatever its outcome, with the
server described), ``disconnect_tool_server`` (``key``, or ``url``),
``trust_tool_server`` (``key`` or ``url``, ``trusted``: believe its read-only labels, or
stop; replies with the server described, or null for a server it does not have). A
server is named by its ``key`` (``mcp:`` and its address with credentials redacted, as
``describe()`` gives it); the page never gets the address's credentials back. Every
change of a server's state or tools is posted as ``{type: 'event', event: {type:
'tool_servers', session_id: null, data: {servers: [...]}}}``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Callable

from pyodide.ffi import JsException, create_proxy, to_js  # type: ignore[import-not-found]

from ..mcp import ToolServer, ToolServerError
from ..mcp.failures import facts_from, failure
from ..redaction import redact_url
from ..replies import reply
from ..tools import Toolbox
from ._js import to_py

log = logging.getLogger("py_agent.browser")

CLIENT_MODULE = "./mcp_client.js"   # beside the worker script
REQUESTS = ("tool_servers", "connect_tool_server", "disconnect_tool_server",
            "trust_tool_server")


def _object_from_entries() -> Any:
    import js  # type: ignore[import-not-found]
    return js.Object.fromEntries


def _server_error(exc: BaseException) -> Exception:
    """A JavaScript failure of mcp_client.js, explained by py_agent.mcp.failures from the
    facts it carries (``error.facts``): a ToolServerError, or the tool's own error for a
    call the server answered with a JSON-RPC error. An error without facts (a fault in
    mcp_client.js or the SDK) is a plain failure, its words shown."""
    error = getattr(exc, "js_error", exc)
    facts = to_py(getattr(error, "facts", None))
    if not isinstance(facts, dict):
        message = getattr(error, "message", None) or str(exc)
        facts = {"detail": str(message), "in_page": True}
    return failure(facts_from(facts))


class BrowserConnection:
    """A :class:`~py_agent.mcp.server.Connection` over worker/mcp_client.js."""

    _ids = itertools.count(1)

    def __init__(self, handle: Any, proxies: list[Any]) -> None:
        self.handle = handle
        self.proxies = proxies
        self.info = to_py(handle.info) or {}

    @property
    def skipped(self) -> list[str]:
        return [str(s) for s in (to_py(self.handle.skipped) or [])]

    async def list_tools(self) -> list[dict[str, Any]]:
        try:
            return to_py(await self.handle.listTools()) or []
        except JsException as exc:
            raise _server_error(exc) from None

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        call_id = f"mcp{next(self._ids)}"
        try:
            return to_py(await self.handle.callTool(
                name, to_js(arguments, dict_converter=_object_from_entries()), call_id,
                int(timeout_s * 1000)))
        except asyncio.CancelledError:   # Stop, or the tool runner's deadline
            self.handle.cancel(call_id)
            raise
        except JsException as exc:
            raise _server_error(exc) from None

    async def close(self) -> None:
        try:
            await self.handle.close()
        finally:
            for proxy in self.proxies:
                proxy.destroy()
            self.proxies = []


class ToolServers:
    """The page's tool servers, sources of ``toolbox``; their states told to the page
    through ``post``."""

    def __init__(self, boot: Any, toolbox: Toolbox, post: Callable[[dict[str, Any]], None],
                 client_url: str | None) -> None:
        self.boot = boot
        self.toolbox = toolbox
        self.post = post
        self.client_url = client_url
        self.servers: dict[str, ToolServer] = {}   # by key (its address, redacted)
        self._module: Any = None
        self._tasks: set[asyncio.Task] = set()

    def add(self, entries: list[dict[str, Any]]) -> None:
        """Add the manifest's servers to the toolbox, not connected yet: the toolbox
        connects them when it is started (after "ready": boot does not wait for them,
        but a turn does, a few seconds)."""
        for entry in entries or []:
            url = entry.get("url") if isinstance(entry, dict) else None
            if isinstance(url, str) and url.strip():
                server = self._server(url.strip(), str(entry.get("token") or ""),
                                      bool(entry.get("trusted")))
                self.toolbox.add(server, list_now=False)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connection(self, server: ToolServer, token: str) -> BrowserConnection:
        if self.client_url is None:
            raise ToolServerError("missing-sdk", "This site was prepared without the MCP "
                                                 "client: run serve.py again.")
        if self._module is None:
            self._module = await self.boot.importModule(CLIENT_MODULE)
        changed = create_proxy(lambda *_: server.tools_changed())
        closed = create_proxy(lambda *_: server.gone())
        options = to_js({"token": token, "timeoutMs": int(server.timeout_s * 1000),
                         "onToolsChanged": changed, "onClosed": closed},
                        dict_converter=_object_from_entries())
        try:
            handle = await self._module.connect(self.boot.siteURL(self.client_url),
                                                server.url, options)
        except JsException as exc:
            changed.destroy()
            closed.destroy()
            raise _server_error(exc) from None
        return BrowserConnection(handle, [changed, closed])

    def _server(self, url: str, token: str, trusted: bool) -> ToolServer:
        server = ToolServer(url, lambda s: self._connection(s, token), trusted=trusted,
                            on_change=self._changed)
        self.servers[server.key] = server
        return server

    @staticmethod
    def key_of(message: dict[str, Any]) -> str:
        """The server a request names: its ``key``, or the key of its ``url``."""
        key = message.get("key")
        if isinstance(key, str) and key:
            return key
        url = message.get("url")
        return f"mcp:{redact_url(url.strip())}" if isinstance(url, str) and url.strip() else ""

    async def connect(self, url: str, token: str = "", trusted: bool = False) -> dict[str, Any]:
        """Connect (again) to ``url``, as a source of the toolbox; the server described
        once the attempt is over."""
        url = url.strip()
        old = self.servers.pop(self.key_of({"url": url}), None)
        if old is not None:
            self.toolbox.remove(old.key)
            await old.close()
        server = self._server(url, token, trusted)
        self.toolbox.add(server)
        await self.toolbox.listed(server.key)
        return server.describe()

    async def disconnect(self, key: str) -> bool:
        server = self.servers.pop(key, None)
        if server is None:
            return False
        self.toolbox.remove(server.key)
        await server.close()
        self._announce()
        return True

    async def trust(self, key: str, trusted: bool) -> dict[str, Any] | None:
        """Believe the read-only labels of server ``key``, or stop (the user's decision,
        in the Tools panel); the server described, or None if there is none."""
        server = self.servers.get(key)
        if server is None:
            return None
        await server.set_trusted(trusted)
        return server.describe()

    def describe(self) -> list[dict[str, Any]]:
        return [server.describe() for server in self.servers.values()]

    def _changed(self, server: ToolServer) -> None:
        self._announce()

    def _announce(self) -> None:
        self.post({"type": "event", "event": {"type": "tool_servers", "session_id": None,
                                              "data": {"servers": self.describe()}}})

    # ------------------------------------------------------------------ page requests

    def handle(self, message: dict[str, Any]) -> bool:
        """Serve one of REQUESTS (False for any other message)."""
        kind = message.get("type")
        if kind not in REQUESTS:
            return False
        self._spawn(self._serve(kind, message))
        return True

    async def _serve(self, kind: str, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        try:
            if kind == "tool_servers":
                value: Any = self.describe()
            elif kind == "connect_tool_server":
                url = message.get("url")
                if not isinstance(url, str) or not url.strip():
                    raise ValueError("url is required: the tool server's address")
                value = await self.connect(url, str(message.get("token") or ""),
                                           bool(message.get("trusted")))
            elif kind == "trust_tool_server":
                if not isinstance(message.get("trusted"), bool):
                    raise ValueError("trusted is required: true or false")
                value = await self.trust(self.key_of(message), message["trusted"])
            else:
                value = await self.disconnect(self.key_of(message))
        except Exception as exc:
            self.post(reply(request_id, error=exc))
        else:
            self.post(reply(request_id, value))
