"""One OpenAI-compatible server: its URLs, requests, error mapping and retries.

:class:`ChatClient` turns transport failures and HTTP statuses into the typed
errors of :mod:`.errors` (each naming the server and what to do), streams or
fetches one completion, and retries what is worth retrying (429 within the wait
the server asks for, 502/503/504, a refused connection) a bounded number of times.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

from .errors import (MalformedReplyError, RateLimitError, ServerError, ServerFailureError,
                     ServerTimeoutError, ServerUnreachableError, error_for_status)
from .sse import sse_data
from .transport import HttpRequest, HttpResponse, HttpTransport
from .wire import Reply, StreamAccumulator, parse_completion

OnText = Callable[[str], Awaitable[None] | None]
RETRY_STATUSES = (502, 503, 504)


def normalize_base_url(url: str) -> tuple[str, str]:
    """``(base, root)``: the API base ending in ``/v1`` (or what the user gave when it
    has another path) and the server root, where llama.cpp and Ollama keep their own
    endpoints. ``localhost:11434`` and ``http://host:8080/`` get ``/v1`` appended."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    for suffix in ("/chat/completions", "/completions", "/models"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    if not path:
        path = "/v1"
    origin = f"{parts.scheme}://{parts.netloc}"
    root = origin + (path[:-3] if path.endswith("/v1") else path)
    return origin + path, root.rstrip("/")


class EmptyStreamError(ServerFailureError):
    """A stream that ended before its first event: the request is re-sent unstreamed."""


@dataclass
class Timeouts:
    """Seconds. ``read`` bounds each silence while a reply streams in (the first token
    of a long prompt on a CPU can take a while); ``call`` bounds one whole completion."""

    connect: float = 10.0
    read: float = 120.0
    call: float = 600.0
    probe: float = 5.0  # discovery requests: the server answers these at once or never


class ChatClient:
    """Requests to one server. ``api_key`` goes only into the Authorization header."""

    def __init__(self, base_url: str, model: str, transport: HttpTransport, *,
                 api_key: str | None = None, timeouts: Timeouts | None = None,
                 max_retries: int = 2, max_retry_wait: float = 30.0) -> None:
        self.base_url, self.root_url = normalize_base_url(base_url)
        self.model = model
        self.transport = transport
        self.timeouts = timeouts or Timeouts()
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._api_key = api_key or None
        self.sleep = asyncio.sleep  # tests replace it to keep retries instant

    def __repr__(self) -> str:  # never shows the key
        return f"ChatClient({self.base_url!r}, model={self.model!r})"

    def _headers(self, body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream"}
        if body:
            headers["Content-Type"] = "application/json"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _request(self, method: str, url: str, body: Any, read_timeout: float) -> HttpRequest:
        data = None if body is None else json.dumps(body).encode()
        return HttpRequest(method, url, self._headers(data is not None), data,
                           connect_timeout=self.timeouts.connect, read_timeout=read_timeout)

    async def _send(self, request: HttpRequest) -> HttpResponse:
        try:
            return await self.transport.send(request)
        except ConnectionRefusedError:
            raise ServerUnreachableError(
                f"Nothing is listening at {self.base_url}: is the model server running? "
                "Start it, or check the base URL and port.") from None
        except TimeoutError:
            raise ServerTimeoutError(
                f"The model server at {self.base_url} did not answer within "
                f"{request.read_timeout:g} s. It may be busy or still loading the model; try "
                "again or allow it a longer timeout.") from None
        except ConnectionError as exc:
            raise ServerUnreachableError(f"Could not reach the model server at "
                                         f"{self.base_url}: {exc}") from None

    async def _check(self, response: HttpResponse) -> None:
        if 200 <= response.status < 300:
            return
        try:
            body = await response.read()
        except (ConnectionError, TimeoutError):
            body = b""
        raise error_for_status(response.status, body, response.headers, url=self.base_url,
                               model=self.model)

    async def get_json(self, path: str, *, root: bool = False, body: Any = None) -> Any:
        """GET (or POST with ``body``) a JSON endpoint, for discovery; typed errors."""
        url = (self.root_url if root else self.base_url) + path
        request = self._request("POST" if body is not None else "GET", url, body,
                                self.timeouts.probe)
        response = await self._send(request)
        try:
            await self._check(response)
            data = await response.read()
        except (ConnectionError, TimeoutError) as exc:
            raise ServerUnreachableError(f"{url}: {exc}") from None
        finally:
            await response.close()
        try:
            return json.loads(data)
        except ValueError:
            raise MalformedReplyError(f"{url} did not return JSON") from None

    async def complete(self, body: dict[str, Any], on_text: OnText | None = None) -> Reply:
        """One completion, retried when that can help; bounded by ``timeouts.call``."""
        attempt = 0
        while True:
            delivered = False

            async def deliver(text: str) -> None:
                nonlocal delivered
                delivered = True
                if on_text is not None:
                    result = on_text(text)
                    if result is not None:
                        await result

            try:
                return await asyncio.wait_for(self._complete_once(body, deliver),
                                              self.timeouts.call)
            except EmptyStreamError:
                # llama-cpp-python, for one, answers 200 and closes an empty stream when
                # the request fails (a prompt too long for the window); asked again
                # without streaming, it says what is wrong.
                body = {k: v for k, v in body.items() if k != "stream_options"}
                body["stream"] = False
                continue
            except asyncio.TimeoutError:
                raise ServerTimeoutError(
                    f"The model server at {self.base_url} took longer than "
                    f"{self.timeouts.call:g} s for one reply.") from None
            except ServerError as exc:
                wait = self._retry_wait(exc, attempt, delivered)
                if wait is None:
                    raise
            attempt += 1
            await self.sleep(wait)

    def _retry_wait(self, exc: ServerError, attempt: int, delivered: bool) -> float | None:
        """Seconds to wait before trying again, or None to give up now."""
        if delivered or attempt >= self.max_retries:
            return None
        backoff = 0.5 * 2 ** attempt
        if isinstance(exc, RateLimitError):
            wait = exc.retry_after if exc.retry_after is not None else backoff
            return wait if wait <= self.max_retry_wait else None
        if isinstance(exc, ServerFailureError) and exc.status in RETRY_STATUSES:
            return backoff
        if isinstance(exc, ServerUnreachableError) and exc.status is None and attempt == 0:
            return backoff  # a server restarting; once is enough
        return None

    async def _complete_once(self, body: dict[str, Any],
                             deliver: Callable[[str], Awaitable[None]]) -> Reply:
        request = self._request("POST", self.base_url + "/chat/completions", body,
                                self.timeouts.read)
        response = await self._send(request)
        try:
            await self._check(response)
            if not body.get("stream"):
                return parse_completion(await response.read(), url=self.base_url,
                                        model=self.model)
            return await self._read_stream(response, deliver)
        except TimeoutError:
            raise ServerTimeoutError(
                f"The model server at {self.base_url} went silent for "
                f"{self.timeouts.read:g} s in the middle of a reply.") from None
        except ConnectionError:
            raise ServerFailureError(
                f"The model server at {self.base_url} closed the connection in the middle of "
                "the reply (it may have crashed or restarted); try again.") from None
        finally:
            await response.close()

    async def _read_stream(self, response: HttpResponse,
                           deliver: Callable[[str], Awaitable[None]]) -> Reply:
        content_type = response.headers.get("content-type", "").lower()
        if content_type and "event-stream" not in content_type and "json" not in content_type:
            raise MalformedReplyError(f"The model server at {self.base_url} answered with "
                                      f"{content_type.split(';')[0]} instead of an event stream; "
                                      "is the base URL that of the API?")
        if "event-stream" not in content_type and "json" in content_type:
            # A server that ignores "stream": a whole reply at once.
            reply = parse_completion(await response.read(), url=self.base_url, model=self.model)
            if reply.content:
                await deliver(reply.content)
            return reply
        stream = StreamAccumulator(url=self.base_url, model=self.model)
        events = 0
        async for data in sse_data(response.chunks()):
            events += 1
            text = stream.feed(data)
            if text:
                await deliver(text)
            if stream.done:
                break
        if events == 0:
            raise EmptyStreamError(f"The model server at {self.base_url} sent an empty stream.")
        if not stream.complete:
            raise ServerFailureError(f"The model server at {self.base_url} ended the stream "
                                     "before the reply was complete; try again.")
        return stream.reply
