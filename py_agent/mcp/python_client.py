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

The address (credentials and all) goes to the SDK, which must use it; what httpx2 and the
SDK log of it is redacted by a filter on their loggers
(:func:`~py_agent.redaction.redact_library_logs`), put there once they are imported.
"""

from __future__ import annotations

import asyncio
import dataclasses
import codecs
import contextvars
import json
import logging
from dataclasses import dataclass
from typing import Any, Callable

from ..redaction import redact_library_logs, redact_url
from ..tools.remote import RemoteToolError
from .errors import ToolServerError
from .failures import (CLOSED, INSTALL_HINT, INVALID_REPLY, MISSING_SDK, PROTOCOL,
                       FailureFacts, explain, failure)
from .tool_lists import clean_tools_list, nests_deeper, rpc_request

log = logging.getLogger("py_agent.mcp")

__all__ = ["INSTALL_HINT", "PythonConnection", "python_connection"]   # the terminal's hint



@dataclass
class Wire:
    """What the HTTP transport saw for the last JSON-RPC request of one operation (a
    connection's start, one list, one call): the facts a failure is explained from."""

    status: int | None = None
    content_type: str = ""
    network_error: bool = False
    rpc_error: int | None = None   # the code of a JSON-RPC error the server sent
    refused: str = ""              # why its reply was not read (tool_lists rule 1)

    def answered(self, status: int, content_type: str) -> None:
        self.status, self.content_type = status, content_type
        self.network_error, self.rpc_error, self.refused = False, None, ""


# The operation a request belongs to. The SDK runs each request's HTTP exchange in the
# context of the task that sent it (its streams carry the sender's context), so the
# transport finds the right Wire here even with calls running side by side.
_WIRE: contextvars.ContextVar[Wire | None] = contextvars.ContextVar("py_agent_mcp_wire",
                                                                    default=None)


def _unwrap(exc: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def facts_of(exc: BaseException, url: str, stage: str, wire: Wire,
             timeout_s: float | None) -> FailureFacts:
    """The facts of a failure in CPython: the SDK's and httpx2's typed errors, the
    JSON-RPC error codes of ``mcp_types``, and what the transport saw (``wire``)."""
    import anyio
    import httpx2
    import pydantic
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, PARSE_ERROR, REQUEST_TIMEOUT

    exc = _unwrap(exc)
    error_type, code, timed_out, network = "", None, False, wire.network_error
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, MCPError):
        code = exc.code
        if wire.rpc_error is not None and wire.rpc_error == code:
            error_type = PROTOCOL           # the server's own answer, as the wire carried it
        elif code == REQUEST_TIMEOUT:
            timed_out = True
        elif code == CONNECTION_CLOSED:
            error_type = CLOSED
        elif code == PARSE_ERROR:
            error_type = INVALID_REPLY
            detail = wire.refused or detail
        # any other code the SDK made up from the HTTP answer: wire.status says it
    elif isinstance(exc, httpx2.ConnectError):
        network = True
    elif isinstance(exc, (httpx2.TimeoutException, TimeoutError)):
        timed_out = True
    elif isinstance(exc, (httpx2.NetworkError, httpx2.RemoteProtocolError,
                          anyio.ClosedResourceError, anyio.BrokenResourceError,
                          anyio.EndOfStream)):
        error_type = CLOSED
    elif isinstance(exc, (pydantic.ValidationError, httpx2.DecodingError, ValueError)):
        error_type = INVALID_REPLY
    elif isinstance(exc, OSError):
        network = True
    return FailureFacts(url=url, stage=stage, http_status=wire.status,
                        content_type=wire.content_type, network_error=network,
                        timed_out=timed_out, timeout_s=timeout_s if timed_out else None,
                        jsonrpc_code=code, error_type=error_type, detail=detail)


def _import_sdk() -> tuple[Any, Any, Any]:
    """The MCP SDK's pieces a connection uses; ImportError when it is not installed."""
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    return httpx2, Client, streamable_http_client


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
        self.wire = Wire()                 # the connection's own requests (start, listen)
        self.skipped: list[str] = []       # tools taken out of tools/list replies, and why
        self._stop = asyncio.Event()
        self._owner: asyncio.Task | None = None
        self._closing = False

    def _explain(self, exc: BaseException, stage: str, wire: Wire,
                 timeout_s: float | None = None) -> Exception:
        """What to raise for ``exc`` (py_agent.mcp.failures decides from its facts)."""
        inner = _unwrap(exc)
        if isinstance(inner, (ToolServerError, RemoteToolError)):
            return inner
        facts = facts_of(inner, self.url, stage, wire, timeout_s)
        sent = any(k.lower() == "authorization" for k in self.headers)
        return failure(dataclasses.replace(facts, token_sent=sent))

    async def open(self) -> "PythonConnection":
        """Connect (at most ``timeout_s``); :class:`ToolServerError` says why not."""
        # The SDK is imported before the clock starts: its first import takes seconds on a
        # busy machine, and that is not the server being slow.
        try:
            sdk = _import_sdk()
        except ImportError:
            raise explain(FailureFacts(url=self.url, error_type=MISSING_SDK)) from None
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own(ready, sdk))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeout_s)
        except asyncio.TimeoutError:
            # nothing was opened that a goodbye could close: stop at once
            await self._abandon()
            raise explain(FailureFacts(url=self.url, stage="connect", timed_out=True,
                                       timeout_s=self.timeout_s)) from None
        except BaseException:
            await self.close()
            raise
        return self

    async def _abandon(self) -> None:
        self._closing = True
        owner = self._owner
        if owner is not None and not owner.done():
            owner.cancel()
            try:
                await asyncio.wait_for(owner, 1)
            except (asyncio.CancelledError, asyncio.TimeoutError, Exception):
                pass

    async def _own(self, ready: asyncio.Future, sdk: tuple[Any, Any, Any]) -> None:
        """Hold the SDK's client open until close(); tell how it ended."""
        httpx2, Client, streamable_http_client = sdk
        redact_library_logs()   # their loggers exist now: none logs a credential
        _WIRE.set(self.wire)
        try:
            async with httpx2.AsyncClient(headers=self.headers,
                                          timeout=httpx2.Timeout(self.timeout_s, read=300),
                                          transport=_watching_transport(httpx2, self.skipped)
                                          ) as http:
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
            # the connection's own exchange failed: at its start, or later (it ended)
            error = self._explain(exc, "connect", self.wire, self.timeout_s)
            if not ready.done():
                ready.set_exception(error)
            elif not self._closing and self.on_closed is not None:
                self.on_closed(error)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            if not self._closing and self.on_closed is not None:
                self.on_closed(explain(FailureFacts(url=self.url, error_type=CLOSED)))

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
        _WIRE.set(Wire())   # its long request is not the connection's start
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    if self.on_tools_changed is not None:
                        self.on_tools_changed()
        except Exception as exc:   # the stream is a nicety: the tools stay as listed
            log.warning("tool list changes of %s are not followed: %s", redact_url(self.url), exc)
            await self._stop.wait()

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None),
                                                             "method", None)
        if method == "notifications/tools/list_changed" and self.on_tools_changed:
            self.on_tools_changed()

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every page of ``tools/list`` (at most 100 pages), all within ``timeout_s``;
        ``skipped`` says which tools the replies held that could not be used, and why."""
        self.skipped.clear()
        tools: list[dict[str, Any]] = []
        cursor = None
        wire = Wire()
        token = _WIRE.set(wire)
        deadline = self.timeout_s
        limit = asyncio.timeout(deadline)
        try:
            async with limit:
                for _page in range(100):
                    page, cursor = await self._list_page(cursor)
                    tools.extend(page)
                    if not cursor:
                        break
        except Exception as exc:
            if isinstance(exc, TimeoutError) and limit.expired():   # this limit's, not another's
                raise explain(FailureFacts(url=self.url, stage="list", timed_out=True,
                                           timeout_s=deadline)) from None
            raise self._explain(exc, "list", wire, deadline) from None
        finally:
            _WIRE.reset(token)
        return tools

    async def _list_page(self, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        result = await self.client.list_tools(cursor=cursor, cache_mode="refresh")
        return ([t.model_dump(by_alias=True, exclude_none=True) for t in result.tools],
                result.next_cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """``tools/call``; the result as a plain dict. A JSON-RPC error the server answers
        with is the tool's error (:class:`~py_agent.tools.remote.RemoteToolError`)."""
        wire = Wire()
        token = _WIRE.set(wire)
        try:
            result = await self.client.call_tool(name, arguments,
                                                 read_timeout_seconds=timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._explain(exc, "call", wire, timeout_s) from None
        finally:
            _WIRE.reset(token)
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


def _note_rpc_error(data: str, wire: Wire) -> None:
    """Note the code of a JSON-RPC error in one reply (JSON text), as the wire carried it."""
    if nests_deeper(data):
        return   # the SDK refuses it (and its error is not the server's)
    try:
        message = json.loads(data)
    except ValueError:
        return
    for item in message if isinstance(message, list) else [message]:
        error = item.get("error") if isinstance(item, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, int) and not isinstance(code, bool):
            wire.rpc_error = code


def _watching_transport(httpx2: Any, skipped: list[str]) -> Any:
    """An HTTP transport that notes, for each JSON-RPC request, what answered it (into the
    sending operation's :class:`Wire`), and takes unusable tools out of tools/list
    replies (py_agent.mcp.tool_lists), noting them in ``skipped``."""

    class ObservedEvents(httpx2.AsyncByteStream):
        """A server-sent-events body passed through unchanged, its events' JSON-RPC errors
        noted on the way (a call's reply streams: it is not held back)."""

        MAX_PENDING = 2_000_000   # an event longer than this is the SDK's to refuse

        def __init__(self, stream: Any, wire: Wire) -> None:
            self.stream = stream
            self.wire = wire
            self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
            self.pending = ""

        async def __aiter__(self):
            async for chunk in self.stream:
                self._feed(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self.stream.aclose()

        def _feed(self, chunk: bytes) -> None:
            self.pending = (self.pending + self.decoder.decode(chunk)).replace("\r\n", "\n")
            *events, self.pending = self.pending.split("\n\n")
            if len(self.pending) > self.MAX_PENDING:
                self.pending = ""
            for event in events:
                data = "\n".join(line[6:] if line.startswith("data: ") else line[5:]
                                 for line in event.split("\n") if line.startswith("data:"))
                if data:
                    _note_rpc_error(data, self.wire)

    class WatchingTransport(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            wire = _WIRE.get()
            rpc = rpc_request(request.content) if request.method == "POST" else None
            if rpc is None or wire is None:   # notifications, the GET stream, DELETE
                return await super().handle_async_request(request)
            request_id, method = rpc
            try:
                response = await super().handle_async_request(request)
            except httpx2.ConnectError:
                wire.network_error = True
                raise
            content_type = response.headers.get("content-type", "")
            wire.answered(response.status_code, content_type)
            media = content_type.split(";")[0].strip().lower()
            headers = [(k, v) for k, v in response.headers.items()
                       if k.lower() not in ("content-length", "content-encoding",
                                            "transfer-encoding")]
            if media == "text/event-stream" and method != "tools/list":
                return httpx2.Response(response.status_code, headers=headers,
                                       stream=ObservedEvents(response.stream, wire),
                                       request=request, extensions=response.extensions)
            if media not in ("application/json", "text/event-stream"):
                return response
            body = await response.aread()
            if method == "tools/list" and response.is_success:
                body, content_type, wire.refused = clean_tools_list(
                    body, content_type, request_id, skipped)
                headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
                headers.append(("content-type", content_type))
            if not wire.refused:
                _note_rpc_error(body.decode("utf-8", "replace"), wire)
            return httpx2.Response(response.status_code, headers=headers, content=body,
                                   request=request, extensions=response.extensions)

    return WatchingTransport()


async def python_connection(url: str, *, headers: dict[str, str] | None = None,
                            timeout_s: float = 30.0,
                            on_tools_changed: Callable[[], None] | None = None,
                            on_closed: Callable[[ToolServerError], None] | None = None,
                            ) -> PythonConnection:
    """Open a connection to the tool server at ``url``."""
    if not url.startswith(("http://", "https://")):
        raise explain(FailureFacts(url=url, error_type="address"))
    return await PythonConnection(url, headers=headers, timeout_s=timeout_s,
                                  on_tools_changed=on_tools_changed,
                                  on_closed=on_closed).open()
