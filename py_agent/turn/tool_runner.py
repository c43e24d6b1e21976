"""Running one tool call safely: approval for a consequential one, time limit, typed
retries, capped output.

Kept apart from the loop so the loop only ever sees an observation string.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..boundary import cap_text, clean_text, describe
from ..events import log
from ..tools import (RetryableToolError, Tool, ToolArgumentError, ToolCrashedError, ToolError,
                     ToolTimeoutError)
from ..waiting import CancelledInside, Crashed, DeadlineExceeded, bounded, contained
from .approval import ApprovalGate, Approvals
from .policies import ToolPolicy

# Pyodide has no threads: a sync tool there runs inline and cannot be timed out, unless
# the agent has a sync_runner (the page's tool worker, py_agent.turn.remote_tools).
_THREADS = sys.platform != "emscripten"

# sync_runner(tool, kwargs, timeout): runs a sync tool elsewhere, under its deadline
# (TimeoutError past it); its result, or what the tool raised.
SyncRunner = Callable[[Tool, dict[str, Any], float], Awaitable[Any]]


class SyncRunnerUnavailable(ToolError):
    """A sync runner cannot run tools now; the call runs where the agent runs instead."""


@dataclass
class ToolOutcome:
    """The observation a call produced and how it went."""

    observation: str
    ok: bool
    attempts: int
    duration_ms: float
    error: str | None = None


def render_output(value: Any) -> str:
    """Any return value as observation text: strings as they are, the rest as JSON.

    Never raises: a value that cannot be shown (nested past any limit, a broken
    ``__str__``) is described instead. The text is cleaned (valid Unicode).
    """
    if value is None:
        return "(the tool returned nothing)"
    try:
        if isinstance(value, (str, bytes, bytearray)):
            return clean_text(value)
        try:
            return clean_text(json.dumps(value, ensure_ascii=False, default=str))
        except (TypeError, ValueError):
            return clean_text(str(value))
    except RecursionError:
        return f"(the tool returned a {type(value).__name__} nested too deeply to show)"
    except Exception as exc:
        return f"(the tool returned a {type(value).__name__} that cannot be shown: {describe(exc)})"


def _crash(exc: BaseException) -> ToolCrashedError:
    """A tool's ``SystemExit``/``KeyboardInterrupt``/own ``CancelledError``, contained."""
    detail = describe(exc)
    error = ToolCrashedError(f"raised {type(exc).__name__}" + (f": {detail}" if detail else ""))
    error.__cause__ = exc
    return error


async def _call_sync_in_thread(tool: Tool, kwargs: dict[str, Any], timeout: float) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, tool.fn(**kwargs))
        except Exception as exc:  # handed to the loop, never lost
            outcome = (False, exc)
        except BaseException as exc:  # SystemExit & co. must not reach the event loop
            outcome = (False, _crash(exc))
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:
            pass  # the loop closed while a timed-out tool was still running

    # A daemon thread: a tool that hangs forever must not keep the process alive.
    threading.Thread(target=target, name=f"tool-{tool.name}", daemon=True).start()
    return await bounded(future, timeout=timeout)


def _call_inline(tool: Tool, kwargs: dict[str, Any]) -> Any:
    """A sync tool where there are no threads (Pyodide): it cannot be timed out here."""
    try:
        return tool.fn(**kwargs)
    except Exception:
        raise
    except BaseException as exc:
        raise _crash(exc) from None


async def _call_once(tool: Tool, kwargs: dict[str, Any], timeout: float,
                     sync_runner: SyncRunner | None = None) -> Any:
    try:
        if tool.is_async:
            return await bounded(contained(tool.fn(**kwargs)), timeout=timeout)
        # Built-in tools (compact) act on the agent itself: they always run here.
        if sync_runner is not None and not tool.metadata.get("builtin"):
            try:
                return await sync_runner(tool, kwargs, timeout)
            except SyncRunnerUnavailable as exc:
                log.warning("running %s here: %s", tool.name, describe(exc))
        if _THREADS:
            return await _call_sync_in_thread(tool, kwargs, timeout)
        return _call_inline(tool, kwargs)
    except DeadlineExceeded:  # ours, or the sync runner's
        raise ToolTimeoutError(f"{tool.name} did not finish within {timeout:g} s") from None
    except CancelledInside:
        raise _crash(asyncio.CancelledError()) from None
    except Crashed as exc:
        raise _crash(exc.__cause__ or exc) from None


async def run_tool(tool: Tool, tool_input: Any, policy: ToolPolicy,
                   sync_runner: SyncRunner | None = None, *,
                   gate: ApprovalGate | None = None) -> ToolOutcome:
    """Call ``tool`` with the model's input; every failure becomes an observation.
    A sync tool runs in ``sync_runner`` when there is one (see SyncRunner). A
    consequential tool (``tool.confirm``) runs only once ``gate`` lets it: after its
    arguments are checked, before the call (py_agent.turn.approval); without a gate it
    does not run."""
    started = time.perf_counter()

    # A tool may ask for its own deadline and observation room (the page tools: a page
    # summarized part by part takes minutes, and its passages need more than a tool's
    # usual room).
    timeout = float(tool.timeout_s or policy.timeout_s)
    room = int(tool.observation_chars or policy.max_observation_chars)

    def outcome(text: str, ok: bool, attempts: int, error: str | None = None) -> ToolOutcome:
        return ToolOutcome(cap_text(text, room), ok, attempts,
                           (time.perf_counter() - started) * 1000, error)

    try:
        kwargs = tool.bind(tool_input)
    except ToolArgumentError as exc:
        return outcome(f"Error: invalid input for {tool.name}: {describe(exc, 1000)}", False, 0,
                       "arguments")
    except Exception as exc:  # a binding bug must cost an observation, not the turn
        return outcome(f"Error: invalid input for {tool.name}: {type(exc).__name__}: "
                       f"{describe(exc)}", False, 0, "arguments")
    if tool.confirm:
        refusal = await (gate or ApprovalGate("", None, Approvals())).check(tool, kwargs)
        if refusal is not None:
            return outcome(refusal, False, 0, "denied")

    delay = policy.backoff_s
    for attempt in range(1, policy.max_attempts + 1):
        try:
            value = await _call_once(tool, kwargs, timeout, sync_runner)
        except ToolTimeoutError as exc:
            # Not retried: a hang is seldom transient, and the user has waited already.
            return outcome(f"Error: {describe(exc)}.", False, attempt, "timeout")
        except RetryableToolError as exc:
            if attempt == policy.max_attempts:
                return outcome(f"Error: {tool.name} failed after {attempt} attempts: "
                               f"{describe(exc)}", False, attempt, "retryable")
            await asyncio.sleep(delay)
            delay *= policy.backoff_factor
        except ToolCrashedError as exc:
            return outcome(f"Error: {tool.name} crashed: it {describe(exc)}", False, attempt,
                           "crashed")
        except Exception as exc:
            name = getattr(exc, "remote_name", None) or type(exc).__name__
            return outcome(f"Error: {tool.name} raised {name}: {describe(exc)}", False, attempt,
                           name)
        else:
            return outcome(render_output(value), True, attempt)
    raise AssertionError("unreachable")  # pragma: no cover
