"""Running one tool call safely: time limit, typed retries, capped output.

Kept apart from the loop so the loop only ever sees an observation string.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from .tools import RetryableToolError, Tool, ToolArgumentError, ToolTimeoutError

# Pyodide has no threads: a sync tool there runs inline and cannot be timed out.
_THREADS = sys.platform != "emscripten"


@dataclass(frozen=True)
class ToolPolicy:
    """How tool calls are guarded. Defaults suit small, local tools."""

    timeout_s: float = 3.0
    max_attempts: int = 3
    backoff_s: float = 0.25
    backoff_factor: float = 2.0
    max_observation_chars: int = 1500

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("ToolPolicy.timeout_s must be positive")
        if self.max_attempts < 1:
            raise ValueError("ToolPolicy.max_attempts must be at least 1")
        if self.max_observation_chars < 100:
            raise ValueError("ToolPolicy.max_observation_chars must be at least 100")


@dataclass
class ToolOutcome:
    """The observation a call produced and how it went."""

    observation: str
    ok: bool
    attempts: int
    duration_ms: float
    error: str | None = None


def render_output(value: Any) -> str:
    """Any return value as observation text: strings as they are, the rest as JSON."""
    if value is None:
        return "(the tool returned nothing)"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def cap_text(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    marker = f" … [truncated {len(text) - limit} characters]"
    return text[: max(0, limit - len(marker))] + marker


async def _call_sync_in_thread(tool: Tool, kwargs: dict[str, Any], timeout: float) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def target() -> None:
        try:
            outcome = (True, tool.fn(**kwargs))
        except BaseException as exc:  # handed to the loop, never lost
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:
            pass  # the loop closed while a timed-out tool was still running

    # A daemon thread: a tool that hangs forever must not keep the process alive.
    threading.Thread(target=target, name=f"tool-{tool.name}", daemon=True).start()
    return await asyncio.wait_for(future, timeout)


async def _call_once(tool: Tool, kwargs: dict[str, Any], timeout: float) -> Any:
    try:
        if tool.is_async:
            return await asyncio.wait_for(tool.fn(**kwargs), timeout)
        if _THREADS:
            return await _call_sync_in_thread(tool, kwargs, timeout)
        return tool.fn(**kwargs)
    except asyncio.TimeoutError:
        raise ToolTimeoutError(f"{tool.name} did not finish within {timeout:g} s") from None


async def run_tool(tool: Tool, tool_input: Any, policy: ToolPolicy) -> ToolOutcome:
    """Call ``tool`` with the model's input; every failure becomes an observation."""
    started = time.perf_counter()

    def outcome(text: str, ok: bool, attempts: int, error: str | None = None) -> ToolOutcome:
        return ToolOutcome(cap_text(text, policy.max_observation_chars), ok, attempts,
                           (time.perf_counter() - started) * 1000, error)

    try:
        kwargs = tool.bind(tool_input)
    except ToolArgumentError as exc:
        return outcome(f"Error: invalid input for {tool.name}: {exc}", False, 0, "arguments")

    delay = policy.backoff_s
    for attempt in range(1, policy.max_attempts + 1):
        try:
            value = await _call_once(tool, kwargs, policy.timeout_s)
        except RetryableToolError as exc:
            if attempt == policy.max_attempts:
                kind = "timeout" if isinstance(exc, ToolTimeoutError) else "retryable"
                return outcome(f"Error: {tool.name} failed after {attempt} attempts: {exc}",
                               False, attempt, kind)
            await asyncio.sleep(delay)
            delay *= policy.backoff_factor
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            name = type(exc).__name__
            return outcome(f"Error: {tool.name} raised {name}: {exc}", False, attempt, name)
        else:
            return outcome(render_output(value), True, attempt)
    raise AssertionError("unreachable")  # pragma: no cover
