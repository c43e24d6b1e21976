"""The Python half of the worker's bootstrap (``worker/agent_worker.js``).

It runs the entry point, reports exceptions that escape asyncio tasks (which would
otherwise only be printed to the console), and notes what a boot from the memory
snapshot imported that the snapshot did not hold. The snapshot is taken after
:func:`py_agent.browser.snapshot.preload` imported everything a boot needs before
"ready"; a module imported between the restore and "ready" is read and compiled again
on every boot, which is what the start-up budget (docs/startup.md) forbids. The boot
says which ones in its ``ready`` phase (``imported_after_restore``), and
``tests/e2e/test_boot_budget.py`` holds it to none.

This module is held by the snapshot too (``preload`` imports it), so running it costs
no import.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import traceback
from typing import Any

# The modules a memory snapshot holds, noted just before it is taken; a restored
# interpreter finds it set, a fresh one None.
held: frozenset[str] | None = None


def note_held() -> None:
    """Note the modules imported now: called last before the snapshot is taken."""
    global held
    held = frozenset(sys.modules)


def imported_after_restore() -> list[str] | None:
    """The modules imported since the restore that the snapshot did not hold, sorted;
    None when this boot restored no snapshot."""
    if held is None:
        return None
    return sorted(name for name in list(sys.modules) if name not in held)


def post_error(where: str, exc: BaseException | None = None,
               message: str | None = None) -> None:
    """Tell the page about an exception (``{type: 'error', where, message, traceback}``)."""
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    if exc is not None:
        message = "".join(traceback.format_exception_only(exc)).strip()
        trace = "".join(traceback.format_exception(exc))
    else:
        trace = ""
    js.postMessage(to_js({"type": "error", "where": where, "message": message,
                          "traceback": trace}, dict_converter=js.Object.fromEntries))


def _on_loop_exception(loop: Any, context: dict[str, Any]) -> None:
    post_error("python:asyncio", context.get("exception"), context.get("message"))


async def run_entry(spec: str, boot: Any) -> None:
    """Import the entry point ``module:function`` and run ``function(boot)``."""
    asyncio.get_event_loop().set_exception_handler(_on_loop_exception)
    module_name, _, function_name = spec.partition(":")
    module = importlib.import_module(module_name)
    function = getattr(module, function_name or "main")
    result = function(boot)
    if inspect.isawaitable(result):
        await result
