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
from enum import Enum
from typing import Any, Awaitable, Callable

from ..boundary import cap_text, clean_text, describe
from ..events import log
from ..attachments import Attachment
from ..tools import (RetryableToolError, RunContext, Tool, ToolArgumentError,
                     ToolCrashedError, ToolError, ToolOutput, ToolTimeoutError)
from ..tools.remote import RemoteToolError
from ..waiting import CancelledInside, Crashed, DeadlineExceeded, bounded, contained
from .approval import ApprovalEmit, ApprovalGate
from .policies import ToolPolicy

# Pyodide has no threads: a sync tool there runs inline and cannot be timed out, unless
# the agent has a sync_runner (the page's tool worker, py_agent.turn.remote_tools).
_THREADS = sys.platform != "emscripten"

# sync_runner(tool, kwargs, timeout): runs a sync tool elsewhere, under its deadline
# (TimeoutError past it); its result, or what the tool raised.
SyncRunner = Callable[[Tool, dict[str, Any], float], Awaitable[Any]]


class SyncRunnerUnavailable(ToolError):
    """A sync runner cannot run tools now; the call runs where the agent runs instead."""


class OutcomeKind(str, Enum):
    """How a call went, for every decision that follows it (never the observation's
    words)."""

    OK = "ok"
    ARGUMENTS = "arguments"          # the model's input did not fit the tool
    DENIED = "denied"                # the user (or nobody) did not allow it
    TIMEOUT = "timeout"
    RETRIES_EXHAUSTED = "retryable"  # it failed transiently every time
    CRASHED = "crashed"              # SystemExit, KeyboardInterrupt, its own cancellation
    REMOTE_ERROR = "remote-error"    # a remote tool answered with an error result
    RAISED = "raised"                # it raised anything else


@dataclass
class ToolOutcome:
    """The observation a call produced and how it went (``error``: what was raised, as
    the observation names it)."""

    observation: str
    ok: bool
    attempts: int
    duration_ms: float
    error: str | None = None
    kind: OutcomeKind = OutcomeKind.OK
    # Pictures or sounds the tool returned (a ToolOutput's), for a model that can see.
    media: tuple[Attachment, ...] = ()


def render_output(value: Any) -> str:
    """Any return value as observation text: strings as they are, the rest as JSON.

    Never raises: a value that cannot be shown (nested past any limit, a broken
    ``__str__``) is described instead. The text is cleaned (valid Unicode).
    """
    if value is None:
        return "(the tool returned nothing)"
    if isinstance(value, ToolOutput):
        return clean_text(value.text)
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


async def _call_sync_in_thread(tool: Tool, kwargs: dict[str, Any], timeout: float,
                               context: RunContext) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, tool.invoke(context, kwargs))
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


def _call_inline(tool: Tool, kwargs: dict[str, Any], context: RunContext) -> Any:
    """A sync tool where there are no threads (Pyodide): it cannot be timed out here."""
    try:
        return tool.invoke(context, kwargs)
    except Exception:
        raise
    except BaseException as exc:
        raise _crash(exc) from None


def runs_elsewhere(tool: Tool) -> bool:
    """Whether a sync runner (the page's tool worker) may run ``tool``: a sync tool
    that needs no context (a context cannot cross to another thread)."""
    return not tool.is_async and not tool.takes_context


async def _call_once(tool: Tool, kwargs: dict[str, Any], timeout: float,
                     sync_runner: SyncRunner | None, context: RunContext) -> Any:
    try:
        if tool.is_async:
            return await bounded(contained(tool.invoke(context, kwargs)), timeout=timeout)
        if sync_runner is not None and runs_elsewhere(tool):
            try:
                return await sync_runner(tool, kwargs, timeout)
            except SyncRunnerUnavailable as exc:
                log.warning("running %s here: %s", tool.name, describe(exc))
        if _THREADS:
            return await _call_sync_in_thread(tool, kwargs, timeout, context)
        return _call_inline(tool, kwargs, context)
    except DeadlineExceeded:  # ours, or the sync runner's
        raise ToolTimeoutError(f"{tool.name} did not finish within {timeout:g} s") from None
    except CancelledInside:
        raise _crash(asyncio.CancelledError()) from None
    except Crashed as exc:
        raise _crash(exc.__cause__ or exc) from None


async def run_tool(tool: Tool, tool_input: Any, policy: ToolPolicy,
                   sync_runner: SyncRunner | None = None, *, gate: ApprovalGate | None = None,
                   context: RunContext | None = None,
                   tell: ApprovalEmit | None = None) -> ToolOutcome:
    """Call ``tool`` with the model's input; every failure becomes an observation.
    A module's sync tool runs in ``sync_runner`` when there is one (see SyncRunner). A
    consequential tool (``tool.confirm``) runs only once the turn's ``gate`` lets it:
    after its arguments are checked, before the call (py_agent.turn.approval), with the
    question and answer told through ``tell``; without a gate it does not run. A tool
    that takes a context gets ``context`` (an empty one if None)."""
    started = time.perf_counter()

    # A tool may ask for its own deadline and observation room (the page tools: a page
    # summarized part by part takes minutes, and its passages need more than a tool's
    # usual room).
    timeout = float(tool.timeout_s or policy.timeout_s)
    room = int(tool.observation_chars or policy.max_observation_chars)

    def outcome(text: str, kind: OutcomeKind, attempts: int,
                error: str | None = None) -> ToolOutcome:
        return ToolOutcome(cap_text(text, room), kind is OutcomeKind.OK, attempts,
                           (time.perf_counter() - started) * 1000, error or
                           (None if kind is OutcomeKind.OK else kind.value), kind)

    try:
        kwargs = tool.bind(tool_input)
    except ToolArgumentError as exc:
        return outcome(f"Error: invalid input for {tool.name}: {describe(exc, 1000)}",
                       OutcomeKind.ARGUMENTS, 0)
    except Exception as exc:  # a binding bug must cost an observation, not the turn
        return outcome(f"Error: invalid input for {tool.name}: {type(exc).__name__}: "
                       f"{describe(exc)}", OutcomeKind.ARGUMENTS, 0)
    if tool.confirm:
        refusal = (await gate.check(tool, kwargs, tell) if gate is not None else
                   f"{tool.name} was not called: it needs the user's approval, and no one "
                   "can be asked here.")
        if refusal is not None:
            return outcome(refusal, OutcomeKind.DENIED, 0)
    context = context or RunContext(tool_name=tool.name)

    delay = policy.backoff_s
    for attempt in range(1, policy.max_attempts + 1):
        try:
            value = await _call_once(tool, kwargs, timeout, sync_runner, context)
        except ToolTimeoutError as exc:
            # Not retried: a hang is seldom transient, and the user has waited already.
            return outcome(f"Error: {describe(exc)}.", OutcomeKind.TIMEOUT, attempt)
        except RetryableToolError as exc:
            if attempt == policy.max_attempts:
                return outcome(f"Error: {tool.name} failed after {attempt} attempts: "
                               f"{describe(exc)}", OutcomeKind.RETRIES_EXHAUSTED, attempt)
            await asyncio.sleep(delay)
            delay *= policy.backoff_factor
        except ToolCrashedError as exc:
            return outcome(f"Error: {tool.name} crashed: it {describe(exc)}",
                           OutcomeKind.CRASHED, attempt)
        except Exception as exc:
            # What the observation calls it (a tool server's error, a page tool's own
            # error class); only shown: the outcome's kind is from the exception's type.
            name = str(getattr(exc, "raised_as", "") or type(exc).__name__)
            kind = OutcomeKind.REMOTE_ERROR if isinstance(exc, RemoteToolError) \
                else OutcomeKind.RAISED
            return outcome(f"Error: {tool.name} raised {name}: {describe(exc)}", kind, attempt,
                           name)
        else:
            done = outcome(render_output(value), OutcomeKind.OK, attempt)
            if isinstance(value, ToolOutput):
                done.media = tuple(value.media)
            return done
    raise AssertionError("unreachable")  # pragma: no cover
