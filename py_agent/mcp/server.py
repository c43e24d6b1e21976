"""One tool server as the agent holds it: a tool source, connected or not, and its tools.

The wire is someone else's: a :class:`Connection` (the ``mcp`` package in CPython,
:mod:`py_agent.mcp.python_client`; the official TypeScript SDK in the page's worker,
``py_agent/browser/tool_servers.py``). Here is what both share: the server's state for
the user (connected, unreachable, refused, failed, and why), its tools made
:class:`~py_agent.tools.Tool` s (:func:`~py_agent.tools.remote.remote_tool`, of origin
``mcp``: untrusted; a tool whose schema cannot be used is skipped with a message), and
calls that report a vanished server.

What a server says about itself is data: its name is shown on one line, without controls,
capped (:func:`~py_agent.boundary.one_line`), and its tools' read-only labels count only
while the user trusts it (:attr:`ToolServer.trusted`, :meth:`ToolServer.set_trusted`).
Its address may hold credentials: they are used to connect and nowhere else (``url``
is the real address; ``shown_url``, the ``key``, the origin of its tools and every
message carry :func:`~py_agent.redaction.redact_url`'s form). A :class:`ToolServer` is a
:class:`~py_agent.tools.ToolSource`: in a :class:`~py_agent.tools.Toolbox`, it is listed
again whenever the server says its tools changed (the toolbox owns that loop), and its
tools are withdrawn when it fails or goes away.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Protocol

from ..boundary import one_line
from ..redaction import host_of, redact_url
from ..tools import InvalidToolSchemaError, OriginKind, Tool, ToolOrigin, Trust
from ..tools.remote import claims_read_only, remote_tool
from ..tools.toolbox import Signal
from .errors import ToolServerError

log = logging.getLogger("py_agent.mcp")

DEFAULT_TIMEOUT_S = 30.0
LIST_BACKSTOP_S = 1.0


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
        trusted: the user trusts its labels: a tool it annotates read-only (well-formed,
            not also destructive) runs without asking; every other tool still asks.
        timeout_s: how long connecting, listing and each call may take.
        on_change: called after every change of state or tools.
    """

    def __init__(self, url: str, connect: Connect, *, trusted: bool = False,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 on_change: Listener | None = None) -> None:
        self.url = url                      # the real address: for connecting only
        self.shown_url = redact_url(url)    # what is shown, stored and logged
        self.key = f"mcp:{self.shown_url}"
        self.connect = connect
        self.trusted = trusted
        self.timeout_s = timeout_s
        self.on_change = on_change
        self.changed = Signal()   # the toolbox lists again when it fires
        self.state = "connecting"
        self.error = ""
        self.kind = ""
        self.name = host_of(url) or self.shown_url
        self.info: dict[str, Any] = {}
        self.tools: list[Tool] = []
        self.listed: list[dict[str, Any]] = []   # the last tools/list, as the server said it
        self.skipped: list[str] = []
        self.connection: Connection | None = None
        self._started = False

    @property
    def origin(self) -> ToolOrigin:
        """The origin of this server's tools: a tool server's, untrusted."""
        return ToolOrigin(kind=OriginKind.MCP, trust=Trust.UNTRUSTED, source=self.key,
                          server=self.name, url=self.shown_url)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> "ToolServer":
        """Connect and list the tools; a failure is kept as the state (never raised)."""
        self._started = True
        self._set("connecting")
        try:
            self.connection = await self.connect(self)
            self.info = dict(self.connection.info or {})
            self.name = one_line(self.info.get("name") or "") or self.name
            await self._list()
        except ToolServerError as exc:
            await self._fail(exc)
        except Exception as exc:   # an SDK bug must cost this server, not the app
            log.exception("tool server %s failed", self.shown_url)
            await self._fail(ToolServerError("failed", f"The tool server at {self.shown_url}: "
                                                       f"{type(exc).__name__}: {exc}"))
        return self

    async def list(self) -> list[Tool]:
        """The server's tools now (a :class:`~py_agent.tools.ToolSource`): connects the
        first time; none while it is failed or closed (a reconnect is the user's)."""
        if not self._started:
            await self.start()
        elif self.connection is not None:
            try:
                await self._list()
            except ToolServerError as exc:
                await self._fail(exc)
            except Exception as exc:
                await self._fail(ToolServerError("failed", f"listing the tools of "
                                                           f"{self.shown_url} failed: {exc}"))
        return list(self.tools)

    async def _fail(self, exc: ToolServerError) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await _quietly(connection.close())
        had_tools = bool(self.tools)
        self.tools, self.kind, self.error = [], exc.kind, str(exc)
        self._set(exc.state)
        if had_tools:
            self.changed.fire()   # its tools go

    async def close(self) -> None:
        """Disconnect (the tools are withdrawn)."""
        connection, self.connection = self.connection, None
        self._started = True
        if connection is not None:
            await _quietly(connection.close())
        had_tools = bool(self.tools)
        self.tools = []
        self._set("closed")
        if had_tools:
            self.changed.fire()

    def _set(self, state: str) -> None:
        self.state = state
        if state in ("connected", "connecting", "closed"):
            self.error, self.kind = "", ""
        if self.on_change is not None:
            self.on_change(self)

    # ------------------------------------------------------------------ tools

    async def _list(self) -> None:
        assert self.connection is not None
        try:
            # The connection bounds the list itself and says what timed out; this is the
            # backstop for one that does not.
            listed = await asyncio.wait_for(self.connection.list_tools(),
                                            self.timeout_s + LIST_BACKSTOP_S)
        except asyncio.TimeoutError:
            raise ToolServerError("timeout", f"The tool server at {self.shown_url} did not "
                                             f"answer tools/list within {self.timeout_s:g} s."
                                  ) from None
        self.listed = [item for item in listed if isinstance(item, dict)]
        self.tools, self.skipped = self._made(getattr(self.connection, "skipped", ()))
        for problem in self.skipped:
            log.warning("%s", problem)
        self._set("connected")

    def _made(self, noted: Any = ()) -> tuple[list[Tool], list[str]]:
        """The last listing's tools, as this server's trust makes them; and what the list
        held that could not be taken as given (``noted``: what the connection took out)."""
        tools = []
        skipped = [f"{self.name}: {why}" for why in noted]
        origin = self.origin
        for item in self.listed:
            name = str(item.get("name", ""))
            try:
                tools.append(remote_tool(
                    name, str(item.get("description") or ""), item.get("inputSchema"),
                    self._call, origin=origin, annotations=item.get("annotations"),
                    trusted=self.trusted, title=str(item.get("title") or ""),
                    timeout_s=self.timeout_s))
            except InvalidToolSchemaError as exc:
                skipped.append(f"{self.name}: skipped {exc}")
        return tools, skipped

    async def set_trusted(self, trusted: bool) -> None:
        """Trust this server's labels, or stop: its tools are made again from the last
        listing at once, and the toolbox that holds it lists them again."""
        trusted = bool(trusted)
        if trusted == self.trusted:
            return
        self.trusted = trusted
        if self.connection is not None:
            kept = self.skipped
            self.tools, _ = self._made()
            self.skipped = kept
            self.changed.fire()
        self._set(self.state)

    @property
    def read_only_claims(self) -> list[str]:
        """The names of the tools that claim, well-formed, to only read (what trusting
        this server would let run without asking)."""
        usable = {t.origin.name for t in self.tools}
        return [str(item.get("name")) for item in self.listed
                if item.get("name") in usable and claims_read_only(item.get("annotations"))]

    def tools_changed(self) -> None:
        """The server said its tool list changed: the toolbox that holds it lists again
        (changes meanwhile are read by one more list)."""
        self.changed.fire()

    def gone(self, error: ToolServerError | None = None) -> None:
        """The connection ended on the server's side: the tools go until a reconnect."""
        if self.connection is None:
            return
        asyncio.ensure_future(self._fail(error or ToolServerError(
            "closed", f"The tool server at {self.shown_url} closed the connection.")))

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        connection = self.connection
        if connection is None:
            raise ToolServerError(self.kind or "closed", self.error or
                                  f"The tool server at {self.shown_url} is not connected.")
        try:
            return await connection.call_tool(name, arguments, self.timeout_s)
        except ToolServerError as exc:
            if exc.kind in ("unreachable", "closed"):
                self.gone(exc)
            raise

    # ------------------------------------------------------------------ for the user

    def describe(self) -> dict[str, Any]:
        """What the Tools panel and the terminal show: its key, address (credentials
        redacted), name, state, error, tools, what its list held that could not be taken
        as given, which tools claim to only read, and whether their claims are trusted."""
        return {"key": self.key, "url": self.shown_url, "name": self.name,
                "state": self.state, "error": self.error, "kind": self.kind,
                "trusted": self.trusted, "protocol": self.info.get("protocolVersion", ""),
                "tools": [t.name for t in self.tools], "skipped": list(self.skipped),
                "read_only_claims": self.read_only_claims}


async def _quietly(awaitable: Awaitable[Any], timeout: float = 5.0) -> None:
    """Await a close; never raise, never wait past ``timeout``."""
    try:
        await asyncio.wait_for(awaitable, timeout)
    except Exception as exc:
        log.debug("closing a tool server: %s", exc)
