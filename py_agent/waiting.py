"""Waiting with a deadline and a stop button, whatever the awaited code does.

``asyncio.wait_for`` waits for the cancelled task to finish, so a model or tool
that swallows ``CancelledError`` (or blocks after catching it) would keep the
turn waiting forever. :func:`bounded` cancels, gives the task a short grace
period, then abandons it. It also tells apart "we were cancelled" from "the
awaited code raised ``CancelledError`` itself", which ``await`` cannot.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, TypeVar

T = TypeVar("T")

# How long a cancelled call may take to wind down before it is abandoned.
GRACE_S = 0.5


class TurnAborted(Exception):
    """The user stopped the turn."""


class DeadlineExceeded(TimeoutError):
    """The awaited call did not finish within its time limit."""


class CancelledInside(RuntimeError):
    """The awaited code raised ``CancelledError`` without anyone cancelling it."""


class Crashed(RuntimeError):
    """The awaited code raised a ``BaseException`` that is not an ``Exception``
    (``SystemExit``, ``KeyboardInterrupt``...); kept as the ``__cause__``."""


async def contained(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` with ``SystemExit``/``KeyboardInterrupt`` and the like turned
    into :class:`Crashed`: asyncio re-raises those out of the event loop, stopping it."""
    try:
        return await awaitable
    except (Exception, asyncio.CancelledError, GeneratorExit):
        raise
    except BaseException as exc:
        raise Crashed(f"raised {type(exc).__name__}") from exc


def _consume(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" warning


async def _settle(task: asyncio.Future, grace: float) -> None:
    """Wait up to ``grace`` for a cancelled task to end; abandon it if it does not."""
    if not task.done():
        await asyncio.wait({task}, timeout=grace)
    if task.done():
        _consume(task)
    else:
        task.add_done_callback(_consume)


async def bounded(awaitable: Awaitable[T], *, timeout: float | None = None,
                  abort: asyncio.Event | None = None, grace: float = GRACE_S) -> T:
    """Await ``awaitable``; raise :class:`DeadlineExceeded` after ``timeout`` seconds,
    :class:`TurnAborted` once ``abort`` is set, :class:`CancelledInside` if the
    awaited code cancelled itself. Its own exceptions pass through unchanged."""
    if abort is not None and abort.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise TurnAborted()
    task = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(abort.wait()) if abort is not None else None
    try:
        await asyncio.wait({task} if waiter is None else {task, waiter}, timeout=timeout,
                           return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # our caller was cancelled: take the call down too
        task.cancel()
        task.add_done_callback(_consume)
        raise
    finally:
        if waiter is not None:
            waiter.cancel()
    if task.done():
        if task.cancelled():
            raise CancelledInside("the call cancelled itself")
        error = task.exception()
        if error is not None and not isinstance(error, Exception):  # GeneratorExit
            raise Crashed(f"raised {type(error).__name__}") from error
        return task.result()
    task.cancel()
    await _settle(task, grace)
    if abort is not None and abort.is_set():
        raise TurnAborted()
    raise DeadlineExceeded(f"did not finish within {timeout:g} s")
