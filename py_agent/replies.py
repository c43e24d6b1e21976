"""Requests over a message channel, matched to their replies by id.

The worker's Python asks other threads things by message: the page's LLM host
(``py_agent.browser.main``) and the tool worker (``py_agent.turn.remote_tools``).
Each request carries an id of this table's issue and waits for the message that
carries the same id back; ``docs/protocols.md`` lists the channels and their
messages. ``web/replies.js`` is the same table for JavaScript.

A request waits at most its timeout (None: something else bounds it, such as a turn's
deadline cancelling the wait) and leaves the table however its wait ends, so a late
reply finds nothing and is dropped. :meth:`Replies.fail_all` and :meth:`Replies.close`
never wait: they fail every waiting request at once.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Callable

from .waiting import bounded

Reply = dict[str, Any]


class ChannelClosedError(RuntimeError):
    """The channel was closed: no reply can come."""


class PendingReply:
    """One request's wait for its reply: ``id`` goes into the request message."""

    def __init__(self, table: "Replies", request_id: str,
                 future: asyncio.Future[Reply]) -> None:
        self.id = request_id
        self._table = table
        self._future = future

    @property
    def settled(self) -> bool:
        """Whether its reply came, or the table failed it (the other side is gone): a wait
        cancelled after that leaves nothing running over there to stop."""
        return self._future.done() and not self._future.cancelled()

    async def wait(self, timeout: float | None) -> Reply:
        """The reply message; :class:`~py_agent.waiting.DeadlineExceeded` after
        ``timeout`` seconds (None: no limit), or the error the table failed it with."""
        try:
            if timeout is None:
                return await self._future
            return await bounded(self._future, timeout=timeout)
        finally:
            self._table.discard(self.id)


class Replies:
    """The requests of one channel that wait for their replies, by id.

    ``prefix`` starts every id (``"llm1"``, ``"llm2"``...); a reply is any message whose
    ``id`` is one of them (see :meth:`settle`).
    """

    def __init__(self, prefix: str = "r") -> None:
        self.prefix = prefix
        self._count = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Reply]] = {}
        self._closed: BaseException | None = None

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._waiting

    def expect(self) -> PendingReply:
        """Register a new request: its id, and the wait for its reply."""
        if self._closed is not None:
            raise self._closed
        request_id = f"{self.prefix}{next(self._count)}"
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        return PendingReply(self, request_id, future)

    async def request(self, send: Callable[[str], None], *,
                      timeout: float | None = None) -> Reply:
        """Send one request (``send(id)`` posts it) and return its reply message."""
        pending = self.expect()
        try:
            send(pending.id)
        except BaseException:
            self.discard(pending.id)
            raise
        return await pending.wait(timeout)

    def settle(self, message: Reply) -> bool:
        """Hand ``message`` to the request its ``id`` names; False if none waits for it
        (a reply after its timeout, or to another table)."""
        future = self._waiting.pop(str(message.get("id")), None)
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    def discard(self, request_id: str) -> None:
        """Stop waiting for ``request_id``'s reply (its wait ended some other way)."""
        future = self._waiting.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()

    def fail_all(self, error: BaseException) -> None:
        """Fail every waiting request with ``error`` (the other side is gone)."""
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(error)
                future.exception()   # retrieved here; raised again to its waiter

    def close(self, error: BaseException | None = None) -> None:
        """Fail every waiting request, and every later one at once."""
        self._closed = error or ChannelClosedError("the channel was closed")
        self.fail_all(self._closed)


def reply(request_id: Any, value: Any = None, *,
          error: BaseException | dict[str, Any] | None = None) -> Reply:
    """The one reply a request gets, on every channel the worker serves:
    ``{type: 'reply', id, ok: true, value}`` or ``{type: 'reply', id, ok: false, error}``,
    the error always ``{name, message, ...}`` (see :func:`error_of`)."""
    if error is None:
        return {"type": "reply", "id": request_id, "ok": True, "value": value}
    return {"type": "reply", "id": request_id, "ok": False,
            "error": error if isinstance(error, dict) else error_of(error)}


def error_of(exc: BaseException, **extra: Any) -> dict[str, Any]:
    """An exception as a reply's error: ``{name, message}`` and any ``extra`` fields."""
    return {"name": type(exc).__name__, "message": str(exc), **extra}


__all__ = ["ChannelClosedError", "PendingReply", "Replies", "error_of", "reply"]
