"""The CPython :class:`~.transport.HttpTransport`: ``http.client`` on a daemon thread.

Imported only when a model is made without a transport: Pyodide has neither threads
nor (without loading it) ``ssl``, and uses the browser's ``fetch`` instead.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
import threading
from typing import Any, AsyncIterator
from urllib.parse import urlsplit

from .transport import HttpRequest, HttpResponse

READ_SIZE = 65536


class _Exchange:
    """One request on its own daemon thread, reporting to the event loop through a queue.

    The thread connects, sends, reads the head, then reads the body as it arrives
    (a chat reply is small, so no back-pressure is needed). ``close`` shuts the
    socket down, which wakes a thread blocked in ``recv``.
    """

    def __init__(self, request: HttpRequest, loop: asyncio.AbstractEventLoop) -> None:
        self.request = request
        self.loop = loop
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.closed = False
        parts = urlsplit(request.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectionError(f"not an http(s) URL: {request.url!r}")
        target = parts.path or "/"
        self.target = target + (f"?{parts.query}" if parts.query else "")
        if parts.scheme == "https":
            self.conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=request.connect_timeout,
                context=ssl.create_default_context())
        else:
            self.conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                                   timeout=request.connect_timeout)
        self.thread = threading.Thread(target=self._run, name="py-agent-http", daemon=True)

    def _post(self, kind: str, value: Any = None) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            self.closed = True

    def _run(self) -> None:
        request = self.request
        try:
            self.conn.connect()
            self.conn.sock.settimeout(request.read_timeout)
            self.conn.request(request.method, self.target, body=request.body,
                              headers=request.headers)
            response = self.conn.getresponse()
            headers = {k.lower(): v for k, v in response.getheaders()}
            self._post("head", (response.status, headers))
            while not self.closed:
                data = response.read1(READ_SIZE)
                if not data:
                    break
                self._post("data", data)
            self._post("end")
        except BaseException as exc:  # reported to the waiting coroutine, never lost
            if not self.closed:
                self._post("error", exc)
        finally:
            self.conn.close()

    def shutdown(self) -> None:
        self.closed = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    async def next(self, timeout: float) -> tuple[str, Any]:
        try:
            kind, value = await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            self.shutdown()
            raise TimeoutError(f"no reply within {timeout:g} s") from None
        if kind == "error":
            raise _as_transport_error(value)
        return kind, value


def _as_transport_error(exc: BaseException) -> Exception:
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return TimeoutError(str(exc) or "timed out")
    if isinstance(exc, ConnectionError):
        return exc
    if isinstance(exc, http.client.IncompleteRead):
        return ConnectionError("the connection closed in the middle of the reply")
    if isinstance(exc, (OSError, http.client.HTTPException)):
        return ConnectionError(f"{type(exc).__name__}: {exc}")
    return ConnectionError(f"{type(exc).__name__}: {exc}")


class _StdlibResponse:
    def __init__(self, exchange: _Exchange, status: int, headers: dict[str, str]) -> None:
        self._exchange = exchange
        self.status = status
        self.headers = headers
        self._done = False

    async def chunks(self) -> AsyncIterator[bytes]:
        timeout = self._exchange.request.read_timeout + 1.0  # the socket times out first
        try:
            while not self._done:
                kind, value = await self._exchange.next(timeout)
                if kind == "end":
                    self._done = True
                elif kind == "data":
                    yield value
        finally:
            if not self._done:
                await self.close()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def close(self) -> None:
        self._done = True
        self._exchange.shutdown()


class StdlibTransport:
    """:class:`HttpTransport` over ``http.client``, one daemon thread per request.

    Daemon threads (not the loop's default executor) so a request stuck in a
    dead server can never keep the process from exiting.
    """

    async def send(self, request: HttpRequest) -> HttpResponse:
        exchange = _Exchange(request, asyncio.get_running_loop())
        exchange.thread.start()
        try:
            _, (status, headers) = await exchange.next(request.connect_timeout
                                                       + request.read_timeout + 1.0)
        except BaseException:
            exchange.shutdown()
            raise
        return _StdlibResponse(exchange, status, headers)
