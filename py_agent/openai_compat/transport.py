"""How requests reach the server: a small async HTTP protocol and its CPython transport.

The backend never touches sockets itself; it hands an :class:`HttpRequest` to an
:class:`HttpTransport`. In CPython that is :class:`StdlibTransport` (``http.client``
on a daemon thread per request, so the event loop never blocks; in
:mod:`.stdlib_transport`, imported only when used, as Pyodide lacks ``ssl`` and
threads). In Pyodide the browser's ``fetch`` implements the same protocol (in
``py_agent.browser``, the one subpackage that may import ``js``).

The contract a transport keeps:

- ``send`` returns once the status line and headers arrived, or raises
  ``ConnectionError`` (``ConnectionRefusedError`` when nothing listens) or
  ``TimeoutError``; it never raises for an HTTP error status.
- ``HttpResponse.chunks()`` yields the body as it arrives; ``read()`` returns all
  of it. Both raise ``TimeoutError`` when no byte comes for ``read_timeout``
  seconds and ``ConnectionError`` when the connection breaks mid-body.
- ``close()`` releases the connection at once, even mid-body (it is how a
  cancelled turn stops the generation on the server).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AsyncIterator, Mapping, Protocol


@dataclass
class HttpRequest:
    """One HTTP request; ``read_timeout`` bounds each wait for bytes, not the whole reply."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold the key
    body: bytes | None = field(default=None, repr=False)
    connect_timeout: float = 10.0
    read_timeout: float = 120.0


class HttpResponse(Protocol):
    status: int
    headers: Mapping[str, str]  # names in lower case

    def chunks(self) -> AsyncIterator[bytes]:
        ...

    async def read(self) -> bytes:
        ...

    async def close(self) -> None:
        ...


class HttpTransport(Protocol):
    async def send(self, request: HttpRequest) -> HttpResponse:
        ...
