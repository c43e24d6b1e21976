"""A tool server from CPython, with the official ``mcp`` package (``pip install
'py-agent[mcp]'``).

The SDK's ``Client`` speaks Streamable HTTP in both eras: it probes with
``server/discover`` (the 2026-07-28 revision) and falls back to the ``initialize``
handshake with ``Mcp-Session-Id`` (the 2025 revisions), whichever the server answers.
It is an anyio context manager, which must be entered and left by one task: a
background task owns it for as long as the connection lives, and calls run in the
callers' tasks (cancelling one sends the server ``notifications/cancelled``). A tool
list change arrives as ``notifications/tools/list_changed`` (2025) or on a
``subscriptions/listen`` stream (2026-07-28).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from .errors import ToolServerError
from .tool_lists import is_tools_list, sanitize_body

log = logging.getLogger("py_agent.mcp")

# JSON-RPC codes the SDK raises for the connection itself (mcp_types.jsonrpc).
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001

INSTALL_HINT = ("Tool servers need the MCP SDK for Python: pip install 'py-agent[mcp]' "
                "(or pip install mcp)")


def _unwrap(exc: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def explain(exc: BaseException, url: str, seen: dict[str, Any]) -> ToolServerError:
    """What went wrong talking to ``url``, from the exception and the last HTTP answer."""
    exc = _unwrap(exc)
    if isinstance(exc, ToolServerError):
        return exc
    text = str(exc) or type(exc).__name__
    name = type(exc).__name__
    status, content_type = seen.get("status"), seen.get("content_type", "")
    if status == 401:
        return ToolServerError("unauthorized", f"The tool server at {url} needs a token (HTTP "
                                               "401): give one with headers={'Authorization': "
                                               "'Bearer TOKEN'} (--mcp-token in the terminal).")
    if status == 403:
        return ToolServerError("forbidden", f"The tool server at {url} refused the token "
                                            "(HTTP 403): check that it is right.")
    if name in ("ConnectError", "ConnectTimeout", "ConnectionRefusedError", "gaierror") or (
            status is None and ("connect" in text.lower() or "refused" in text.lower())):
        return ToolServerError("unreachable", f"The tool server at {url} cannot be reached: "
                                              "is it running, and is the address right?")
    if status in (404, 405, 415) or (status and content_type and
                                     not any(k in content_type for k in ("json", "event-stream"))):
        return ToolServerError("not-mcp", f"{url} does not answer as an MCP server (HTTP "
                                          f"{status}{', ' + content_type.split(';')[0] if content_type else ''}"
                                          "): check the address (it usually ends in /mcp).")
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or "timed out" in text.lower() \
            or "timeout" in name.lower():
        return ToolServerError("timeout", f"The tool server at {url} did not answer in time.")
    if name in ("RemoteProtocolError", "ReadError", "ClosedResourceError", "EndOfStream",
                "BrokenResourceError") or "closed" in text.lower():
        return ToolServerError("closed", f"The tool server at {url} went away ({name}).")
    if name in ("ValidationError", "JSONDecodeError") or "json" in text.lower() \
            or "parse" in text.lower():
        return ToolServerError("malformed", f"The tool server at {url} sent a reply that is "
                                            f"not valid MCP (JSON-RPC): {text.splitlines()[0][:300]}")
    if status and status >= 500:
        return ToolServerError("server-error", f"The tool server at {url} failed (HTTP "
                                               f"{status}): {text[:300]}")
    return ToolServerError("failed", f"The tool server at {url}: {name}: {text[:300]}")


class PythonConnection:
    """One open session with a tool server (see the module docstring)."""

    def __init__(self, url: str, *, headers: dict[str, str] | None, timeout_s: float,
                 on_tools_changed: Callable[[], None] | None = None,
                 on_closed: Callable[[ToolServerError], None] | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.on_tools_changed = on_tools_changed
        self.on_closed = on_closed
        self.info: dict[str, Any] = {}
        self.client: Any = None
        self.seen: dict[str, Any] = {}
        self.skipped: list[str] = []   # tools taken out of tools/list replies, and why
        self._stop = asyncio.Event()
        self._owner: asyncio.Task | None = None
        self._closing = False

    async def open(self) -> "PythonConnection":
        """Connect (at most ``timeout_s``); :class:`ToolServerError` says why not."""
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeout_s)
        except asyncio.TimeoutError:
            await self.close()
            raise ToolServerError("timeout", f"The tool server at {self.url} did not answer "
                                             f"within {self.timeout_s:g} s.") from None
        except BaseException:
            await self.close()
            raise
        return self

    async def _own(self, ready: asyncio.Future) -> None:
        """Hold the SDK's client open until close(); tell how it ended."""
        try:
            import httpx2
            from mcp.client.client import Client
            from mcp.client.streamable_http import streamable_http_client
        except ImportError:
            ready.set_exception(ToolServerError("missing-sdk", INSTALL_HINT))
            return

        async def note(response: Any) -> None:
            self.seen["status"] = response.status_code
            self.seen["content_type"] = response.headers.get("content-type", "")

        try:
            async with httpx2.AsyncClient(headers=self.headers,
                                          timeout=httpx2.Timeout(self.timeout_s, read=300),
                                          transport=_listing_transport(httpx2, self.skipped),
                                          event_hooks={"response": [note]}) as http:
                transport = streamable_http_client(self.url, http_client=http)
                async with Client(transport, mode="auto", message_handler=self._on_message,
                                  read_timeout_seconds=self.timeout_s,
                                  raise_exceptions=False) as client:
                    self.client = client
                    info = client.server_info
                    self.info = {"name": getattr(info, "name", "") or "",
                                 "title": getattr(info, "title", "") or "",
                                 "version": getattr(info, "version", "") or "",
                                 "protocolVersion": client.protocol_version or ""}
                    ready.set_result(None)
                    await self._hold(client)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and self._closing:
                return
            error = explain(exc, self.url, self.seen)
            if not ready.done():
                ready.set_exception(error)
            elif not self._closing and self.on_closed is not None:
                self.on_closed(error)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            if not self._closing and self.on_closed is not None:
                self.on_closed(ToolServerError("closed", f"The tool server at {self.url} "
                                                         "closed the connection."))

    async def _hold(self, client: Any) -> None:
        """Wait for close(); on a 2026-07-28 session, listen for tool list changes."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
        capabilities = getattr(client, "server_capabilities", None)
        tools = getattr(capabilities, "tools", None)
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS and \
                getattr(tools, "list_changed", False) and self.on_tools_changed:
            stop = asyncio.ensure_future(self._stop.wait())
            listen = asyncio.ensure_future(self._listen(client))
            await asyncio.wait({stop, listen}, return_when=asyncio.FIRST_COMPLETED)
            for task in (stop, listen):
                task.cancel()
            return
        await self._stop.wait()

    async def _listen(self, client: Any) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    if self.on_tools_changed is not None:
                        self.on_tools_changed()
        except Exception as exc:   # the stream is a nicety: the tools stay as listed
            log.warning("tool list changes of %s are not followed: %s", self.url, exc)
            await self._stop.wait()

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None),
                                                             "method", None)
        if method == "notifications/tools/list_changed" and self.on_tools_changed:
            self.on_tools_changed()

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every page of ``tools/list`` (at most 100 pages); ``skipped`` says which tools
        the replies held that could not be used, and why."""
        self.skipped.clear()
        tools: list[dict[str, Any]] = []
        cursor = None
        try:
            for _page in range(100):
                page, cursor = await self._list_page(cursor)
                tools.extend(page)
                if not cursor:
                    break
        except Exception as exc:
            raise explain(exc, self.url, self.seen) from None
        return tools

    async def _list_page(self, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        result = await self.client.list_tools(cursor=cursor, cache_mode="refresh")
        return ([t.model_dump(by_alias=True, exclude_none=True) for t in result.tools],
                result.next_cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """``tools/call``; the result as a plain dict."""
        try:
            result = await self.client.call_tool(name, arguments,
                                                 read_timeout_seconds=timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            inner = _unwrap(exc)
            code = getattr(getattr(inner, "error", None), "code", None)
            if code == CONNECTION_CLOSED:
                raise ToolServerError("closed", f"The tool server at {self.url} went away "
                                                "during the call.") from None
            if code == REQUEST_TIMEOUT:
                raise ToolServerError("timeout", f"The tool server at {self.url} did not "
                                                 f"answer within {timeout_s:g} s.") from None
            if type(inner).__name__ == "MCPError" and self.seen.get("status") in (None, 200, 202):
                # the server answered the call with a JSON-RPC error (an unknown tool, bad
                # arguments): the model reads it
                return {"content": [{"type": "text", "text": str(inner)}], "isError": True}
            raise explain(exc, self.url, self.seen) from None
        return result.model_dump(by_alias=True, exclude_none=True)

    async def close(self) -> None:
        """End the session (the SDK sends DELETE for a 2025 session); never waits long."""
        self._closing = True
        self._stop.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 5)
            except (asyncio.TimeoutError, Exception):
                owner.cancel()


def _listing_transport(httpx2: Any, skipped: list[str]) -> Any:
    """An HTTP transport that takes unusable tools out of tools/list replies
    (py_agent.mcp.tool_lists), noting them in ``skipped``."""

    class ListingTransport(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            response = await super().handle_async_request(request)
            if request.method != "POST" or not is_tools_list(request.content):
                return response
            body = await response.aread()
            kind = response.headers.get("content-type", "")
            headers = [(k, v) for k, v in response.headers.items()
                       if k.lower() not in ("content-length", "content-encoding",
                                            "transfer-encoding")]
            return httpx2.Response(response.status_code, headers=headers,
                                   content=sanitize_body(body, kind, skipped),
                                   request=request, extensions=response.extensions)

    return ListingTransport()


async def python_connection(url: str, *, headers: dict[str, str] | None = None,
                            timeout_s: float = 30.0,
                            on_tools_changed: Callable[[], None] | None = None,
                            on_closed: Callable[[ToolServerError], None] | None = None,
                            ) -> PythonConnection:
    """Open a connection to the tool server at ``url``."""
    if not url.startswith(("http://", "https://")):
        raise ToolServerError("address", f"{url}: a tool server is reached over http or "
                                         "https (an address like http://host:port/mcp).")
    return await PythonConnection(url, headers=headers, timeout_s=timeout_s,
                                  on_tools_changed=on_tools_changed,
                                  on_closed=on_closed).open()
