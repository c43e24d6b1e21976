"""The browser's :class:`~py_agent.openai_compat.transport.HttpTransport`: ``fetch``.

Pyodide has no threads and no sockets, so the worker speaks HTTP through the
browser: ``fetch`` for the request, the body's ``ReadableStream`` reader for the
reply as it streams in, and an ``AbortController`` for every way a request ends
early: a timeout (``asyncio.wait_for`` around each JavaScript promise, since a
promise has none of its own), a cancelled turn, or ``close()``. Aborting is what
makes the server stop generating: the browser drops the connection.

What the browser does not say: a refused connection, an unknown host, a request
blocked by CORS or by the page's Content-Security-Policy all reject with the same
``TypeError: Failed to fetch`` (deliberately: a page must not probe the network),
so the error names every cause. A cross-origin reply shows only the headers the
server exposes to CORS (``Retry-After`` usually is not); same-origin (serve.py's
proxy) shows all.

The JavaScript functions are injected, so CPython tests can drive this class with
fakes; in the worker they default to the global ``fetch`` and ``AbortController``.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable

from ..openai_compat.transport import HttpRequest
from ._js import is_null


def _browser_functions() -> tuple[Callable[..., Any], Callable[[], Any], Callable[[dict], Any]]:
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    def make_init(init: dict) -> Any:
        return to_js(init, dict_converter=js.Object.fromEntries)

    return js.fetch, js.AbortController.new, make_init


def _describe(exc: BaseException) -> str:
    """``Name: message`` of a JavaScript error that reached Python (or any exception)."""
    error = getattr(exc, "js_error", None)
    name = getattr(error, "name", None)
    message = getattr(error, "message", None)
    if name and message is not None:
        return f"{name}: {message}"
    return str(exc) or type(exc).__name__


class FetchTransport:
    """HTTP over ``fetch``; see the module docstring.

    Args:
        origin: this page's origin, named in the error a blocked request gets.
        fetch, new_abort_controller, make_init: the JavaScript side (defaults: the
            worker's globals; ``make_init`` turns the init dict into a JS object).
    """

    def __init__(self, origin: str = "", *, fetch: Callable[..., Any] | None = None,
                 new_abort_controller: Callable[[], Any] | None = None,
                 make_init: Callable[[dict], Any] | None = None) -> None:
        if fetch is None or new_abort_controller is None or make_init is None:
            default_fetch, default_controller, default_init = _browser_functions()
            fetch = fetch or default_fetch
            new_abort_controller = new_abort_controller or default_controller
            make_init = make_init or default_init
        self.origin = origin
        self._fetch = fetch
        self._new_controller = new_abort_controller
        self._make_init = make_init

    async def send(self, request: HttpRequest) -> "FetchResponse":
        controller = self._new_controller()
        init: dict[str, Any] = {
            "method": request.method, "headers": dict(request.headers),
            "signal": controller.signal,
            # No cookies or HTTP auth of this origin go to a model server, and no referrer.
            "credentials": "omit", "referrerPolicy": "no-referrer", "cache": "no-store",
            "mode": "cors",
        }
        if request.body is not None:
            init["body"] = request.body.decode("utf-8")  # our bodies are JSON text
        limit = request.connect_timeout + request.read_timeout
        try:
            response = await asyncio.wait_for(_awaited(self._fetch(request.url,
                                                                   self._make_init(init))),
                                              limit)
        except asyncio.TimeoutError:
            controller.abort()
            raise TimeoutError(f"no reply within {limit:g} s") from None
        except asyncio.CancelledError:
            controller.abort()
            raise
        except Exception as exc:
            controller.abort()
            raise ConnectionError(
                f"the browser could not connect ({_describe(exc)}): the server is not "
                "running, the address is wrong, or the server does not accept requests "
                f"from this page{' (' + self.origin + ')' if self.origin else ''}: it must "
                "allow this origin (CORS), or be reached through serve.py (--model-proxy)"
            ) from None
        return FetchResponse(response, controller, request.read_timeout)


async def _awaited(awaitable: Any) -> Any:
    """A JavaScript promise (or any awaitable) as a coroutine, for ``wait_for``."""
    return await awaitable


class FetchResponse:
    """A ``fetch`` response whose body is read chunk by chunk, each wait bounded."""

    def __init__(self, response: Any, controller: Any, read_timeout: float) -> None:
        self._response = response
        self._controller = controller
        self._read_timeout = read_timeout
        self._finished = False
        self.status = int(response.status)
        self.headers = {str(name).lower(): str(value)
                        for name, value in (tuple(entry) for entry in response.headers.entries())}

    async def chunks(self) -> AsyncIterator[bytes]:
        body = self._response.body
        if self._finished:   # closed: nothing more comes (as with the stdlib transport)
            return
        if is_null(body):
            self._finished = True
            return
        reader = body.getReader()
        try:
            while True:
                try:
                    result = await asyncio.wait_for(_awaited(reader.read()), self._read_timeout)
                except asyncio.TimeoutError:
                    raise TimeoutError(f"no data for {self._read_timeout:g} s") from None
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    raise ConnectionError(f"the reply broke off ({_describe(exc)})") from None
                if result.done:
                    self._finished = True
                    return
                yield bytes(result.value.to_bytes())
        finally:
            if not self._finished:
                await self.close()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def close(self) -> None:
        """Drop the connection now, even mid-body (harmless once the body is read)."""
        if not self._finished:
            self._finished = True
            self._controller.abort()
