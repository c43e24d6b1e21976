"""Sync tools in a worker that can be stopped.

Pyodide has no threads: a sync tool runs on the agent's own event loop, and nothing can
interrupt it there (``((9**999)**999)**99`` is one C call; Pyodide's interrupt buffer is
only checked between bytecodes). So in the page, sync tools run in a second worker, the
tool worker: the agent's worker sends it each call and waits with the tool's deadline;
past it (or when the user stops the turn), it terminates the tool worker and starts a
fresh one. A hung tool then costs one timeout, and the agent goes on.

This module is the pure-Python part, with the worker injected, so that CPython tests
drive it: :class:`ToolWorkerClient` on the agent's side, :func:`handle_call` on the tool
worker's. ``py_agent.browser`` supplies the real worker.

Messages (JSON-ready dicts; ``docs/protocols.md`` has every channel's):
  agent -> tool worker  {"type": "call", "id", "tool", "kwargs"}
  tool worker -> agent  {"type": "boot", "phase": "ready"} once it serves calls (and
                        other "boot" phases before it, handed to ``on_boot``);
                        {"type": "result", "id", "ok": true, "text"}: the observation text
                        {"type": "result", "id", "ok": false, "error": {kind, name, message}}
                        with kind "retryable", "crashed" or "raised", or
                        "unavailable" when the tool worker has no such sync tool;
                        {"type": "error", "message"}: it could not start.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Protocol

from ..boundary import describe
from ..events import log
from ..replies import Replies
from ..tools import RetryableToolError, Tool, ToolCrashedError, ToolError
from .tool_runner import SyncRunnerUnavailable, render_output
from ..waiting import DeadlineExceeded, bounded

# A tool worker boots Pyodide and the tool modules: a few seconds, more on a busy machine.
BOOT_TIMEOUT_S = 60.0
# After this many failed boots in a row, no more are tried: sync tools run where the
# agent runs (a browser without nested workers would otherwise pay a boot per call).
MAX_BOOT_FAILURES = 2


class ToolWorkerError(SyncRunnerUnavailable):
    """The tool worker could not start: the call runs where the agent runs instead."""


class WorkerToolError(ToolError):
    """A tool in the tool worker raised; ``raised_as`` is the class of what it raised."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.raised_as = name


class WorkerHandle(Protocol):
    """A started tool worker: ``post`` a message to it, ``terminate`` it at once."""

    def post(self, message: dict[str, Any]) -> None:
        ...

    def terminate(self) -> None:
        ...


# spawn(on_message) starts a tool worker whose messages go to on_message.
Spawn = Callable[[Callable[[dict[str, Any]], None]], WorkerHandle]


class ToolWorkerClient:
    """Runs sync tools in a tool worker, restarting it when a call passes its deadline.

    Use :meth:`call` as the agent's ``sync_tool_runner``. The worker is started on the
    first call, or at once with :meth:`start` (so its boot overlaps the agent's).
    ``on_boot`` gets each "boot" message of the current worker (how it started, e.g.
    from a memory snapshot), to show the user.
    """

    def __init__(self, spawn: Spawn, *, boot_timeout_s: float = BOOT_TIMEOUT_S,
                 on_boot: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._spawn = spawn
        self.boot_timeout_s = boot_timeout_s
        self._on_boot = on_boot
        self._worker: WorkerHandle | None = None
        self._ready: asyncio.Future[bool] | None = None
        self._replies = Replies("t")   # calls waiting for their result, by id
        self._generation = 0
        self.restarts = 0
        self.boot_failures = 0           # in a row; reset by a worker that boots
        self.boot_ms: list[float] = []   # how long each worker took to become ready

    # ------------------------------------------------------------------ the worker

    def start(self) -> None:
        """Start a tool worker unless one is running or starting."""
        if self._worker is not None:
            return
        self._generation += 1
        generation, started = self._generation, time.perf_counter()
        self._ready = asyncio.get_running_loop().create_future()

        def on_message(message: dict[str, Any]) -> None:
            if generation == self._generation:  # a terminated worker's late replies: dropped
                self._on_message(message, started)

        try:
            self._worker = self._spawn(on_message)
        except Exception as exc:
            self._ready.set_exception(ToolWorkerError(f"the tool worker could not start: "
                                                      f"{describe(exc)}"))
            self._ready.exception()  # retrieved here; raised again to each caller

    def restart(self, reason: str) -> None:
        """Terminate the tool worker (whatever it is doing) and start a fresh one."""
        worker, self._worker = self._worker, None
        self.restarts += 1
        log.warning("restarting the tool worker: %s", reason)
        if worker is not None:
            try:
                worker.terminate()
            except Exception as exc:
                log.warning("could not terminate the tool worker: %s", describe(exc))
        self._replies.fail_all(WorkerToolError(
            "ToolWorkerRestarted", f"the tool worker was restarted ({reason})"))
        self.start()

    def close(self) -> None:
        """Terminate the tool worker, if any, failing the calls it was running; the
        next call starts a new one."""
        worker, self._worker = self._worker, None
        self._generation += 1
        self._replies.fail_all(WorkerToolError("ToolWorkerClosed", "the tool worker was closed"))
        if worker is not None:
            try:
                worker.terminate()
            except Exception as exc:
                log.warning("could not terminate the tool worker: %s", describe(exc))

    def _on_message(self, message: dict[str, Any], started: float) -> None:
        kind = message.get("type")
        ready = self._ready
        if kind == "boot":
            if message.get("phase") == "ready" and ready is not None and not ready.done():
                self.boot_ms.append((time.perf_counter() - started) * 1000)
                ready.set_result(True)
            if self._on_boot is not None:
                try:
                    self._on_boot(message)
                except Exception as exc:   # showing it must not stop the worker's use
                    log.warning("on_boot failed: %s", describe(exc))
        elif kind == "error":
            text = str(message.get("message") or "unknown error")
            if ready is not None and not ready.done():
                ready.set_exception(ToolWorkerError(f"the tool worker could not start: {text}"))
                ready.exception()
            else:
                log.warning("the tool worker reported: %s", text)
        elif kind == "result":
            self._replies.settle(message)

    async def _wait_ready(self) -> None:
        if self.boot_failures >= MAX_BOOT_FAILURES:
            raise ToolWorkerError(f"the tool worker failed to start {self.boot_failures} "
                                  "times; not trying again")
        if self._worker is None:
            self.start()
        assert self._ready is not None
        try:
            await bounded(asyncio.shield(self._ready), timeout=self.boot_timeout_s)
        except DeadlineExceeded:
            self.boot_failures += 1
            self.close()  # the next call tries a fresh one
            raise ToolWorkerError(f"the tool worker did not start within "
                                  f"{self.boot_timeout_s:g} s") from None
        except ToolWorkerError:
            self.boot_failures += 1
            self.close()
            raise
        self.boot_failures = 0

    # ------------------------------------------------------------------ calls

    async def call(self, tool: Tool, kwargs: dict[str, Any], timeout: float) -> str:
        """Run sync ``tool`` with ``kwargs`` in the tool worker; its observation text.

        Raises what the tool raised (as :class:`WorkerToolError`, or
        :class:`RetryableToolError` and :class:`ToolCrashedError` as they were),
        ``DeadlineExceeded`` past ``timeout`` (the worker is restarted then, and when the
        turn is cancelled meanwhile), :class:`ToolWorkerError` if no worker could start
        (the tool runner then runs the tool where the agent runs).
        """
        await self._wait_ready()
        assert self._worker is not None
        pending = self._replies.expect()
        try:
            self._worker.post({"type": "call", "id": pending.id, "tool": tool.name,
                               "kwargs": kwargs})
            reply = await pending.wait(timeout)
        except DeadlineExceeded:  # raised on: the tool runner reports the timeout
            self.restart(f"{tool.name} did not finish within {timeout:g} s")
            raise
        except asyncio.CancelledError:  # the turn was stopped
            if not pending.settled:   # no result came: the tool may still run there
                self.restart(f"{tool.name} was stopped")
            raise
        finally:
            self._replies.discard(pending.id)   # also when posting it failed
        return _decode(reply)


def _decode(reply: dict[str, Any]) -> str:
    if reply.get("ok"):
        return str(reply.get("text", ""))
    error = reply.get("error") or {}
    kind, message = error.get("kind"), str(error.get("message") or "")
    if kind == "retryable":
        raise RetryableToolError(message)
    if kind == "crashed":
        raise ToolCrashedError(message)
    if kind == "unavailable":
        raise ToolWorkerError(message)
    raise WorkerToolError(str(error.get("name") or "Error"), message)


def handle_call(tools: dict[str, Tool], message: dict[str, Any]) -> dict[str, Any]:
    """The tool worker's side: run one call message, return its result message."""
    call_id = message.get("id")
    tool = tools.get(str(message.get("tool")))

    def failed(kind: str, name: str, text: str) -> dict[str, Any]:
        return {"type": "result", "id": call_id, "ok": False,
                "error": {"kind": kind, "name": name, "message": text}}

    if tool is None:  # e.g. its module failed to load there: the agent runs it itself
        return failed("unavailable", "LookupError",
                      f"the tool worker has no sync tool named {message.get('tool')!r}")
    try:
        value = tool.fn(**(message.get("kwargs") or {}))
    except RetryableToolError as exc:
        return failed("retryable", type(exc).__name__, describe(exc))
    except ToolCrashedError as exc:
        return failed("crashed", type(exc).__name__, describe(exc))
    except Exception as exc:
        return failed("raised", type(exc).__name__, describe(exc))
    except BaseException as exc:  # SystemExit & co.: contained, as in the agent's worker
        detail = describe(exc)
        return failed("crashed", type(exc).__name__,
                      f"raised {type(exc).__name__}" + (f": {detail}" if detail else ""))
    return {"type": "result", "id": call_id, "ok": True, "text": render_output(value)}
