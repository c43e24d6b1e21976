"""The worker's Python entry point: connect the bridges, build the agent, serve the page.

The bootstrap (``worker/agent_worker.js``) calls ``await main(boot)``; ``boot``
posts to the page, registers our message handler, imports JS modules and
announces readiness.
"""

from __future__ import annotations

import functools
from typing import Any

from pyodide.ffi import JsException, to_js  # type: ignore[import-not-found]

from ..agent import Agent
from ..kv import InMemoryKeyValueStore, RpcKeyValueStore
from ..model import Purpose
from ..openai_compat import StreamChunk
from ..replies import Replies
from ..rpc import BridgeModel, RpcStore
from ..tools.modules import ToolContext
from ..tools.toolset import ToolSet
from ..turn.policies import StepPolicy, ToolPolicy
from .backends import BackendSwitch
from .page_model import PAGE_MODEL, PageModelBridge, PageModelSource
from .approvals import PageApprovals
from .page_tools import PageTools
from .tool_servers import ToolServers
from .tab_tools import SOURCE as TAB_SOURCE, TabTools
from .fetch_transport import FetchTransport
from .server_model import ServerModel, ServerSettings
from ..turn.remote_tools import ToolWorkerClient
from ._js import to_py as _to_py
from .worker_tool_modules import load_served_tools
from .tool_worker import tool_worker_spawner

IDB_MODULE = "./idb_store.js"   # beside the worker script (so at any path of the site)


def js_error(exc: BaseException) -> dict[str, Any]:
    """``{name, message}`` of a JavaScript exception that reached Python."""
    error = getattr(exc, "js_error", None)
    name = getattr(error, "name", None) or getattr(exc, "name", None)
    message = getattr(error, "message", None)
    if not name:
        text = str(exc)
        name, _, message = text.partition(": ") if ": " in text else ("Error", "", text)
    return {"name": str(name), "message": str(message if message is not None else exc)}


class PageLink:
    """Requests to the page's LLM host, matched to replies by id (docs/protocols.md).

    No timeout here: each call is bounded by the one who awaits it (a step's or a memory
    pass's deadline, the backend switch's wait), which cancels the wait, and the host's
    ``abort`` stops the call on the page."""

    def __init__(self, boot: Any) -> None:
        self.boot = boot
        self._replies = Replies("llm")

    def post(self, message: dict[str, Any]) -> None:
        self.boot.post(to_js(message, dict_converter=_object_from_entries()))

    async def llm(self, method: str, args: list[Any], api: str | None = None) -> dict[str, Any]:
        """Call the LLM host; ``api`` names another API than Chrome's (``page-model``)."""
        def send(request_id: str) -> None:
            message = {"type": "llm", "id": request_id, "method": method, "args": args}
            if api is not None:
                message["api"] = api
            self.post(message)

        return await self._replies.request(send)

    def resolve(self, message: dict[str, Any]) -> bool:
        """Consume the LLM host's messages: results go to their waiting request.

        ``llm-event`` messages (download progress, context overflow) are for the
        page, which gets them from the host directly; the worker ignores them.
        """
        if message.get("type") == "llm-event":
            return True
        if message.get("type") != "llm-result":
            return False
        self._replies.settle(message)
        return True


def _object_from_entries() -> Any:
    import js  # type: ignore[import-not-found]

    return js.Object.fromEntries


async def idb_transport_for(boot: Any):
    """A store transport over ``IdbStore`` (JSON strings both ways, errors as dicts)."""
    try:
        module = await boot.importModule(IDB_MODULE)
        store = await module.IdbStore.open()
        open_error = None
    except JsException as exc:  # storage unusable: the agent still runs, in memory
        store, open_error = None, js_error(exc)

    async def transport(method: str, args: list[Any]) -> dict[str, Any]:
        if store is None:
            return {"ok": False, "error": open_error}
        try:
            # Bytes (a recall blob) go over as a Uint8Array; everything else is JSON text.
            value = await getattr(store, method)(*(to_js(a) if isinstance(a, bytes) else a
                                                   for a in args))
        except JsException as exc:
            return {"ok": False, "error": js_error(exc)}
        return {"ok": True, "value": _to_py(value)}

    return transport, open_error


def deadlines(params: Any) -> dict[str, Any]:
    """The agent's deadlines from the page's URL (``?step_timeout=S&tool_timeout=S``,
    seconds), for slow machines and for tests; the policies' defaults otherwise."""
    params = _to_py(params) or {}
    chosen: dict[str, Any] = {}
    for name, key, policy in (("step_timeout", "step_policy", StepPolicy),
                              ("tool_timeout", "tool_policy", ToolPolicy)):
        try:
            seconds = float(params.get(name, ""))
        except (TypeError, ValueError):
            continue
        if 0 < seconds < 86_400:
            chosen[key] = policy(timeout_s=seconds)
    return chosen


async def main(boot: Any) -> None:
    import js  # type: ignore[import-not-found]

    link = PageLink(boot)
    bridge = BridgeModel(link.llm, stream_purposes=frozenset({Purpose.STEP}))
    transport, storage_problem = await idb_transport_for(boot)
    # Tools keep their data (the demo's notes and to-dos) in IndexedDB's kv store; without
    # IndexedDB, in memory (the tools still work, for as long as this worker runs).
    kv = InMemoryKeyValueStore() if storage_problem else RpcKeyValueStore(transport)
    params = _to_py(boot.params) or {}
    manifest = _to_py(boot.manifest) or {}
    # Sync tools run in a tool worker that is terminated when a call passes its deadline
    # (Pyodide cannot interrupt a tool running here). The bootstrap started it alongside
    # this worker, so the first tool call rarely waits for it. ?tool_worker=off runs
    # them here instead (for measurements).
    tool_worker = (None if params.get("tool_worker") == "off"
                   or manifest.get("tool_worker") is False
                   else ToolWorkerClient(tool_worker_spawner(boot), on_boot=lambda phase:
                                         link.post({**phase, "type": "tool-worker"})))
    if tool_worker:
        tool_worker.start()
    loaded = await load_served_tools(boot, manifest, params.get("tools"), ToolContext(kv=kv))
    store = RpcStore(transport)
    origin = str(js.location.origin)
    fetch = FetchTransport(origin)

    def on_chunk(chunk: StreamChunk) -> None:
        # The worker holds the server's stream: relay the step's pieces to the page's LLM
        # host, which hands them to the page as it does the Prompt API's (a 'chunk' event).
        if chunk.purpose == Purpose.STEP.value:
            link.post({"type": "llm-event", "event": "chunk", "sessionId": "",
                       "requestId": chunk.request_id, "purpose": chunk.purpose,
                       "conversationId": chunk.conversation_id, "chunk": chunk.delta,
                       "text": chunk.text, "offset": len(chunk.text) - len(chunk.delta)})

    # The agent's tools: the tool modules', the page's (web/page_tools.js) and the tool
    # servers'; each change reaches the agent in use from its next turn, and the page.
    toolset = ToolSet(loaded.tools)
    # In the extension's side panel, the tab reader's raw tools (source 'tab') become the
    # page tools of py_agent.page (tab_tools.py), summarizing with the model in use.
    tab_tools = TabTools(toolset, lambda: switch.agent.model if switch.agent else None)
    page_tools = PageTools(link.post, toolset, held={TAB_SOURCE: tab_tools.listed})
    tab_tools.host = page_tools

    def tools_changed(tools: list) -> None:
        if switch.agent is not None:
            switch.agent.set_tools(tools)
        link.post({"type": "event", "event": {"type": "tools_changed", "session_id": None,
                                              "data": {"count": len(tools)}}})

    toolset.subscribe(tools_changed)
    tool_servers = ToolServers(boot, toolset, link.post, (manifest.get("mcp") or {}).get("client"))
    approvals = PageApprovals(link.post)   # the page asks the user before consequential calls
    settings = ServerSettings.from_manifest(manifest.get("model_server"), origin)
    agent_options = deadlines(params)
    switch = BackendSwitch(
        bridge, settings,
        make_server_model=lambda name: ServerModel(settings, fetch, wanted=name,
                                                   on_chunk=on_chunk),
        make_agent=lambda model, policy: Agent(
            model=model, store=store, tools=toolset.tools(), memory=policy,
            sync_tool_runner=tool_worker.call if tool_worker else None, approve=approvals,
            **agent_options),
        post=link.post,
        page_models=PageModelSource.from_manifest(manifest.get("page_models")),
        make_page_model=lambda source: PageModelBridge(
            source, functools.partial(link.llm, api=PAGE_MODEL),
            stream_purposes=frozenset({Purpose.STEP})))

    def on_message(data: Any) -> None:
        message = _to_py(data)
        if not isinstance(message, dict) or link.resolve(message) or \
                page_tools.resolve(message) or tool_servers.handle(message) or \
                approvals.handle(message):
            return
        switch.handle(message)

    boot.onMessage(on_message)   # before start(): it asks the page's LLM host
    model = await switch.start(params.get("backend"), params.get("model"))
    agent = switch.agent
    details = {"tools": [t.name for t in agent.tools],
               "tool_storage": "memory" if storage_problem else "indexeddb",
               "tool_modules": loaded.modules,
               "tool_errors": [error.to_dict() for error in loaded.errors],
               "model": model}
    if storage_problem:
        details["storage_error"] = storage_problem
    boot.ready(to_js(details, dict_converter=_object_from_entries()))
    tool_servers.start(manifest.get("mcp_servers") or [])
