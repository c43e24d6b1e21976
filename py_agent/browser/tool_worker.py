"""The page's tool worker: sync tools run here, in a Web Worker of their own, so that the
agent's worker can terminate it when a call passes its deadline (see
:mod:`py_agent.turn.remote_tools`, which holds the protocol and both ends' logic).

The tool worker is the agent worker's bootstrap (``worker/agent_worker.js``) started
from the agent's worker with ``entry=py_agent.browser.tool_worker:main``: same Pyodide,
same py_agent wheel, same tool modules, loaded the same way. :class:`JsToolWorker`
starts one (the agent's worker does once it is ready: "ready" needs none, and a second
boot beside its own slowed that on small machines); :func:`main` is its entry point.
"""

from __future__ import annotations

from typing import Any, Callable

import js  # type: ignore[import-not-found]
from pyodide.ffi import create_proxy, to_js  # type: ignore[import-not-found]

from ..kv import InMemoryKeyValueStore
from ..turn.remote_tools import handle_call
from ..tools.modules import ToolContext
from ._js import to_py as _to_py
from .worker_tool_modules import load_served_tools

ENTRY = "py_agent.browser.tool_worker:main"


def _to_js(message: dict[str, Any]) -> Any:
    return to_js(message, dict_converter=js.Object.fromEntries)


class JsToolWorker:
    """A tool worker (a module Web Worker) started now, as ``remote_tools.WorkerHandle``:
    this worker's own URL and query (``tools=``, ``snapshot=``...) with the tool entry.
    ``remote_tools.Spawn`` for the agent's worker."""

    def __init__(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        url = js.URL.new(js.location.href)
        url.searchParams.set("entry", ENTRY)
        self._worker = js.Worker.new(url.href, _to_js({"type": "module",
                                                       "name": "py-agent tools"}))

        def message(event: Any) -> None:
            data = _to_py(event.data)
            if isinstance(data, dict):
                on_message(data)

        def error(event: Any) -> None:  # the script failed to load or threw at top level
            event.preventDefault()
            on_message({"type": "error", "message": str(getattr(event, "message", "") or
                                                        "the tool worker failed")})

        self._proxies = [create_proxy(message), create_proxy(error)]
        self._worker.onmessage, self._worker.onerror = self._proxies

    def post(self, message: dict[str, Any]) -> None:
        self._worker.postMessage(_to_js(message))

    def terminate(self) -> None:
        self._worker.terminate()
        self._worker.onmessage = self._worker.onerror = None
        for proxy in self._proxies:
            proxy.destroy()
        self._proxies = []


async def main(boot: Any) -> None:
    """The tool worker's entry: load the tool modules, then run each call it is sent.

    Calls run one at a time and block this worker while they run: that is the point;
    the agent's worker stops a call that takes too long by terminating this worker.
    Tools get an in-memory key-value store: only sync tools run here, and a sync tool
    cannot await the (asynchronous) stores the agent's worker has.
    """
    params = _to_py(boot.params) or {}
    loaded = await load_served_tools(boot, _to_py(boot.manifest), params.get("tools"),
                                     ToolContext(kv=InMemoryKeyValueStore()))
    tools = {t.name: t for t in loaded.tools if not t.is_async}

    def on_message(data: Any) -> None:
        message = _to_py(data)
        if isinstance(message, dict) and message.get("type") == "call":
            boot.post(_to_js(handle_call(tools, message)))

    boot.onMessage(on_message)
    boot.ready(_to_js({"tools": sorted(tools)}))
