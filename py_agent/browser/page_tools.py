"""The page's tools, in the worker: listed and called through the page tools host
(``web/page_tools.js``) on the main thread, where they run.

:class:`PageToolsHost` is the worker's end of the host: one ``list`` at a time (sources
that list at once share it), calls with cancellation, and the host's "tools changed"
event as a :class:`~py_agent.tools.toolbox.Signal`. Two tool sources read it:
:class:`PageToolSource` (``page``: the page's own and its WebMCP tools, untrusted, each
made a :class:`~py_agent.tools.Tool` through :func:`~py_agent.tools.remote.remote_tool`)
and the extension's tab reader (``tab``: py_agent/browser/tab_tools.py). A call waits for
the host's reply; when the turn stops or the call times out, the host is told to abort
it. The messages are in docs/protocols.md ("Agent worker ↔ page tools host").
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..replies import Replies
from ..tools import InvalidToolSchemaError, OriginKind, Tool, ToolError, ToolOrigin, Trust
from ..tools.remote import remote_tool
from ..tools.toolbox import Signal

log = logging.getLogger("py_agent.browser")

LIST_WAIT_S = 10.0      # the host answers a list at once, unless the page is gone
SOURCE = "page"
# The page's own tools and its WebMCP tools: the page's words, untrusted.
PAGE_ORIGIN = ToolOrigin(kind=OriginKind.PAGE, trust=Trust.UNTRUSTED, source=SOURCE,
                         server="page")


class PageToolError(ToolError):
    """The page's tool failed, or the page could not run it; ``str()`` says why and
    ``raised_as`` names what the page's tool threw."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message") or "the page tool failed"))
        self.raised_as = str(error.get("name") or "Error")


class PageToolsHost:
    """The worker's end of the page tools host (see the module docstring)."""

    def __init__(self, post: Callable[[dict[str, Any]], None]) -> None:
        self.post = post
        self.changed = Signal()          # the host said its tools changed
        self._replies = Replies("pt")    # the host's replies, by id (docs/protocols.md)
        self._listing: asyncio.Future | None = None

    async def _request(self, method: str, timeout: float | None = None,
                       **fields: Any) -> Any:
        pending = self._replies.expect()
        self.post({"type": "page-tools", "id": pending.id, "method": method, **fields})
        try:
            reply = await pending.wait(timeout)
        except asyncio.CancelledError:
            if method == "call":   # the turn stopped, or the call's deadline passed
                self.post({"type": "page-tools", "method": "cancel", "callId": pending.id})
            raise
        if not reply.get("ok"):
            raise PageToolError(reply.get("error") or {})
        return reply.get("value")

    def resolve(self, message: dict[str, Any]) -> bool:
        """Consume the host's messages (replies, change events); False for any other."""
        kind = message.get("type")
        if kind == "page-tools-event":
            self.changed.fire()
            return True
        if kind != "page-tools-result":
            return False
        self._replies.settle(message)
        return True

    async def describe(self) -> list[dict[str, Any]]:
        """Every tool the host offers, as described (WebMCP's shape, with its ``source``);
        lists that are asked for while one is on its way share it."""
        if self._listing is None or self._listing.done():
            self._listing = asyncio.ensure_future(self._request("list", LIST_WAIT_S))
        described = await asyncio.shield(self._listing)
        return [item for item in described if isinstance(item, dict)] \
            if isinstance(described, list) else []

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run the host's tool ``name`` on the main thread; its result."""
        return await self._request("call", name=name, input=arguments)


class PageToolSource:
    """The page's tools (source ``page``): what the host lists but the tab reader's raw
    tools, each a :class:`~py_agent.tools.Tool` of untrusted origin."""

    key = SOURCE
    origin = PAGE_ORIGIN

    def __init__(self, host: PageToolsHost, *, apart: frozenset[str] = frozenset({"tab"})) -> None:
        """``apart``: the host's sources that are not offered as they are (the
        extension's tab reader, which py_agent/browser/tab_tools.py makes tools of)."""
        self.host = host
        self.apart = apart
        self.changed = host.changed
        self.skipped: list[str] = []    # why a page tool could not be used, per tool

    async def list(self) -> list[Tool]:
        tools, skipped = [], []
        for item in await self.host.describe():
            if item.get("source") in self.apart:
                continue
            try:
                tools.append(remote_tool(
                    str(item.get("name")), str(item.get("description") or ""),
                    _object_or_none(item.get("inputSchema")), self.host.call,
                    origin=PAGE_ORIGIN, title=str(item.get("title") or ""),
                    annotations=_object_or_none(item.get("annotations")),
                    # The page holds the agent: its labels are its own (a script of the
                    # page could as well answer the approval dialog); malformed ones
                    # still count as consequential.
                    trusted=True))
            except InvalidToolSchemaError as exc:
                skipped.append(f"page tool skipped: {exc}")
        self.skipped = skipped
        for problem in skipped:
            log.warning("%s", problem)
        return tools

    async def close(self) -> None:
        return None


def _object_or_none(value: Any) -> Any:
    """JS null (Pyodide's ``jsnull``, which a deep conversion keeps) as None."""
    return None if value is None or type(value).__name__ in ("JsNull", "JsUndefined") else value
