"""One tool server as the agent holds it: connected or not, its tools, kept in step.

The wire is someone else's: a :class:`Connection` (the ``mcp`` package in CPython,
:mod:`py_agent.mcp.python_client`; the official TypeScript SDK in the page's worker,
``py_agent/browser/tool_servers.py``). Here is what both share: the server's state for
the user (connected, unreachable, refused, failed, and why), its tools made
:class:`~py_agent.tools.Tool` s (:func:`~py_agent.tools.remote.remote_tool`, source
``mcp``; a tool whose schema cannot be used is skipped with a message), the list read
again when the server says it changed, and calls that report a vanished server.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Protocol
from urllib.parse import urlsplit

from ..tools import InvalidToolSchemaError, Tool
from ..tools.remote import remote_tool
from .errors import ToolServerError

log = logging.getLogger("py_agent.mcp")

DEFAULT_TIMEOUT_S = 30.0


class Connection(Protocol):
    """An open session with one tool server."""

    info: dict[str, Any]     # name, title, version, protocolVersion, era
    skipped: list[str]       # tools the last list held that the SDK could not take, and why

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (all pages of ``tools/list``): name, title, description,
        inputSchema, annotations."""

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """``tools/call``; the result as a plain ``CallToolResult`` dict. Cancelling the
        awaiting task cancels the call on the server."""

    async def close(self) -> None:
        """End the session (never waits long)."""


Connect = Callable[["ToolServer"], Awaitable[Connection]]
Listener = Callable[["ToolServer"], None]


class ToolServer:
    """A tool server's state, tools and calls; see the module docstring.

    Args:
        url: the server's Streamable HTTP endpoint (``http://host:port/mcp``).
        connect: opens a :class:`Connection` to it (raising :class:`ToolServerError`).
        trusted: the user trusts it: an unannotated tool does not ask before each call.
        timeout_s: how long connecting, listing and each call may take.
        on_change: called after every change of state or tools.
    """

    def __init__(self, url: str, connect: Connect, *, trusted: bool = False,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 on_change: Listener | None = None) -> None:
        self.url = url
        self.connect = connect
        self.trusted = trusted
        self.timeout_s = timeout_s
        self.on_change = on_change
        self.state = "connecting"
        self.error = ""
        self.kind = ""
        self.name = urlsplit(url).netloc or url
        self.info: dict[str, Any] = {}
        self.tools: list[Tool] = []
        self.skipped: list[str] = []
        self.connection: Connection | None = None
        self._refreshing: asyncio.Task | None = None
        self._dirty = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> "ToolServer":
        """Connect and list the tools; a failure is kept as the state (never raised)."""
        self._set("connecting")
        try:
            self.connection = await self.connect(self)
            self.info = dict(self.connection.info or {})
            self.name = str(self.info.get("name") or self.name)
            await self._list()
        except ToolServerError as exc:
            await self._fail(exc)
        except Exception as exc:   # an SDK bug must cost this server, not the app
            log.exception("tool server %s failed", self.url)
            await self._fail(ToolServerError("failed", f"The tool server at {self.url}: "
                                                       f"{type(exc).__name__}: {exc}"))
        return self

    async def _fail(self, exc: ToolServerError) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await _quietly(connection.close())
        self.tools, self.kind, self.error = [], exc.kind, str(exc)
        self._set(exc.state)

    async def close(self) -> None:
        """Disconnect (the tools are withdrawn)."""
        connection, self.connection = self.connection, None
        if self._refreshing is not None:
            self._refreshing.cancel()
        if connection is not None:
            await _quietly(connection.close())
        self.tools = []
        self._set("closed")

    def _set(self, state: str) -> None:
        self.state = state
        if state in ("connected", "connecting", "closed"):
            self.error, self.kind = "", ""
        if self.on_change is not None:
            self.on_change(self)

    # ------------------------------------------------------------------ tools

    async def _list(self) -> None:
        assert self.connection is not None
        listed = await asyncio.wait_for(self.connection.list_tools(), self.timeout_s)
        tools = []
        skipped = [f"{self.name}: {why}" for why in getattr(self.connection, "skipped", ())]
        for item in listed:
            name = str(item.get("name", ""))
            try:
                tools.append(remote_tool(
                    name, str(item.get("description") or ""), item.get("inputSchema"),
                    self._call, source="mcp", server=self.name,
                    annotations=item.get("annotations"), trusted=self.trusted,
                    title=str(item.get("title") or ""), extra={"url": self.url}))
            except InvalidToolSchemaError as exc:
                skipped.append(f"{self.name}: skipped {exc}")
        for problem in skipped:
            log.warning("%s", problem)
        self.tools, self.skipped = tools, skipped
        for tool in tools:
            tool.timeout_s = self.timeout_s
        self._set("connected")

    def tools_changed(self) -> None:
        """The server said its tool list changed: list again (in the background; changes
        meanwhile are read by one more list)."""
        self._dirty = True
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._relist())

    async def _relist(self) -> None:
        while self._dirty and self.connection is not None:
            self._dirty = False
            try:
                await self._list()
            except ToolServerError as exc:
                await self._fail(exc)
            except Exception as exc:
                await self._fail(ToolServerError("failed", f"listing the tools of {self.url} "
                                                           f"failed: {exc}"))

    def gone(self, error: ToolServerError | None = None) -> None:
        """The connection ended on the server's side: the tools go until a reconnect."""
        if self.connection is None:
            return
        asyncio.ensure_future(self._fail(error or ToolServerError(
            "closed", f"The tool server at {self.url} closed the connection.")))

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        connection = self.connection
        if connection is None:
            raise ToolServerError(self.kind or "closed", self.error or
                                  f"The tool server at {self.url} is not connected.")
        try:
            return await connection.call_tool(name, arguments, self.timeout_s)
        except ToolServerError as exc:
            if exc.kind in ("unreachable", "closed"):
                self.gone(exc)
            raise

    # ------------------------------------------------------------------ for the user

    def describe(self) -> dict[str, Any]:
        """What the Tools panel shows: url, name, state, error, tools, skipped tools."""
        return {"url": self.url, "name": self.name, "state": self.state, "error": self.error,
                "kind": self.kind, "trusted": self.trusted,
                "protocol": self.info.get("protocolVersion", ""),
                "tools": [t.name for t in self.tools], "skipped": list(self.skipped)}


async def _quietly(awaitable: Awaitable[Any], timeout: float = 5.0) -> None:
    """Await a close; never raise, never wait past ``timeout``."""
    try:
        await asyncio.wait_for(awaitable, timeout)
    except Exception as exc:
        log.debug("closing a tool server: %s", exc)
