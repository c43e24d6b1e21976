"""The page's tools, in the worker: listed and called through the page tools host
(``web/page_tools.js``) on the main thread, where they run.

The host describes each tool as WebMCP does (name, description, input schema,
annotations); each becomes a :class:`~py_agent.tools.Tool` through
:func:`~py_agent.tools.remote.remote_tool` (source ``page`` or ``webmcp``), and the
tool set's ``page`` source is replaced whenever the host says its tools changed. A call
waits for the host's reply; when the turn stops or the call times out, the host is told
to abort it. The messages are in docs/protocols.md ("Agent worker ↔ page tools host").
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..replies import Replies
from ..tools import InvalidToolSchemaError, Tool
from ..tools.remote import remote_tool
from ..tools.toolset import ToolSet
from ..waiting import DeadlineExceeded

log = logging.getLogger("py_agent.browser")

LIST_WAIT_S = 10.0      # the host answers a list at once, unless the page is gone
SOURCE = "page"


class PageToolError(RuntimeError):
    """The page's tool failed, or the page could not run it; ``str()`` says why."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message") or "the page tool failed"))
        self.remote_name = str(error.get("name") or "Error")


class PageTools:
    """The worker's end of the page tools host; keeps ``toolset``'s ``page`` source."""

    def __init__(self, post: Callable[[dict[str, Any]], None], toolset: ToolSet, *,
                 held: dict[str, Callable[[list[dict[str, Any]]], None]] | None = None) -> None:
        """``held``: sources whose tools are not offered as they are, but handed (as
        described, on every list) to a callback that makes tools of them (the
        extension's tab reader, source ``tab``: py_agent/browser/tab_tools.py)."""
        self.post = post
        self.toolset = toolset
        self.held = dict(held or {})
        self.skipped: list[str] = []    # why a page tool could not be used, per tool
        self._replies = Replies("pt")   # the host's replies, by id (docs/protocols.md)
        self._refreshing: asyncio.Task | None = None
        self._dirty = False

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
            self.refresh_soon()
            return True
        if kind != "page-tools-result":
            return False
        self._replies.settle(message)
        return True

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run page tool ``name`` on the main thread; its result."""
        return await self._request("call", name=name, input=arguments)

    async def refresh(self) -> list[Tool]:
        """List the page's tools again and put them in the tool set."""
        try:
            described = await self._request("list", LIST_WAIT_S)
        except (DeadlineExceeded, PageToolError) as exc:
            log.warning("the page's tools could not be listed: %s", exc)
            return self.toolset.source(SOURCE)
        tools, skipped = [], []
        apart: dict[str, list[dict[str, Any]]] = {source: [] for source in self.held}
        for item in described if isinstance(described, list) else []:
            if not isinstance(item, dict):
                continue
            if item.get("source") in apart:
                apart[str(item.get("source"))].append(item)
                continue
            try:
                tools.append(remote_tool(
                    str(item.get("name")), str(item.get("description") or ""),
                    _object_or_none(item.get("inputSchema")), self.call,
                    source=str(item.get("source") or SOURCE),
                    server="page", title=str(item.get("title") or ""),
                    annotations=_object_or_none(item.get("annotations"))))
            except InvalidToolSchemaError as exc:
                skipped.append(f"page tool skipped: {exc}")
        self.skipped = skipped
        for problem in skipped:
            log.warning("%s", problem)
        self.toolset.set_source(SOURCE, tools)
        for source, items in apart.items():
            self.held[source](items)
        return tools

    def refresh_soon(self) -> None:
        """List again in the background (the host said its tools changed); changes that
        come while a list is on its way are read by one more list after it."""
        self._dirty = True
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._refresh_while_dirty())

    async def _refresh_while_dirty(self) -> None:
        while self._dirty:
            self._dirty = False
            await self.refresh()


def _object_or_none(value: Any) -> Any:
    """JS null (Pyodide's ``jsnull``, which a deep conversion keeps) as None."""
    return None if value is None or type(value).__name__ in ("JsNull", "JsUndefined") else value
