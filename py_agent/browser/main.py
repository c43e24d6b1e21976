"""The worker's Python entry point: connect the bridges, build the agent, serve the page.

The bootstrap (``worker/agent_worker.js``) calls ``await main(boot)``; ``boot``
posts to the page, registers our message handler, imports JS modules and
announces readiness.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from typing import Any

from pyodide.ffi import JsException, to_js  # type: ignore[import-not-found]

from ..agent import Agent
from ..attachments import Attachment, Scaler
from ..embedding import EmbedderSlot
from ..host import describe_tools
from ..kv import InMemoryKeyValueStore, RpcKeyValueStore
from ..model import Purpose
from ..openai_compat import StreamChunk
from ..replies import Replies
from ..rpc import BridgeModel, RpcStore
from ..tools import LoadedTools, Toolbox, ToolboxSnapshot
from ..tools.modules import ToolContext
from ..turn.policies import StepPolicy, ToolPolicy
from ..turn.remote_tools import ToolWorkerClient
from ._js import to_py as _to_py
from .approvals import PageApprovals
from .backends import BackendSwitch
from .embedder import PageEmbedderLoader
from .fetch_transport import FetchTransport
from .page_model import PAGE_MODEL, PageModelBridge, PageModelSource
from .page_tools import PageToolsHost, PageToolSource
from .routes import APPROVALS, LLM, PAGE_TOOLS, SWITCH, TOOL_SERVERS, Router
from .server_model import ServerModel, ServerSettings
from .tab_tools import TabToolSource
from .tool_servers import ToolServers
from .tool_worker import JsToolWorker
from .worker_tool_modules import load_served_tools

SCALE_MODULE = "./image_scale.js"   # beside the worker script; imported the first time a picture is scaled


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
    """A store transport over ``IdbStore`` (JSON strings both ways, errors as dicts): the
    one the bootstrap began opening while Pyodide loaded (``boot.openStore()``)."""
    try:
        store = await boot.openStore()
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


def worker_scaler(boot: Any) -> Scaler:
    """A picture scaled down in this worker (``worker/image_scale.js``: createImageBitmap,
    OffscreenCanvas), the module imported on first use."""
    loaded: dict[str, Any] = {}

    async def scale(attachment: Attachment, factor: float) -> Attachment:
        if "module" not in loaded:
            loaded["module"] = await boot.importModule(SCALE_MODULE)
        result = await loaded["module"].scale(to_js(attachment.content or b""),
                                              attachment.type or "", factor)
        data = result.bytes
        data = data.to_bytes() if hasattr(data, "to_bytes") else bytes(data)
        return Attachment(content=data, name=attachment.label).loaded()

    return scale


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


@dataclass
class WorkerTools:
    """The worker's tools and the parts that keep them: the toolbox, the page tools host,
    the tool servers and the tool worker."""

    toolbox: Toolbox
    page_tools: PageToolsHost
    servers: ToolServers
    loaded: LoadedTools
    tool_worker: ToolWorkerClient | None


async def worker_tools(boot: Any, link: PageLink, manifest: dict[str, Any],
                       params: dict[str, Any], kv: Any) -> WorkerTools:
    """The toolbox: the tool modules' tools, the page's (web/page_tools.js) and the tab
    reader's (the extension), and the tool servers (MCP) of the manifest. Sources that
    must be listed are added pending and listed once the page is ready
    (:meth:`~py_agent.tools.Toolbox.start`); a turn that starts before waits for them a
    few seconds. Every change of the tools is told to the page."""
    # Sync tools run in a tool worker that is terminated when a call passes its deadline
    # (Pyodide cannot interrupt a tool running here). It is started once this worker is
    # ready (main()); a tool call before it is up waits for it. ?tool_worker=off runs
    # them here instead (for measurements).
    tool_worker = (None if params.get("tool_worker") == "off"
                   or manifest.get("tool_worker") is False
                   else ToolWorkerClient(JsToolWorker, on_boot=lambda phase:
                                         link.post({**phase, "type": "tool-worker"})))
    loaded = await load_served_tools(boot, manifest, params.get("tools"), ToolContext(kv=kv))
    host = PageToolsHost(link.post)
    toolbox = Toolbox(sources=loaded.sources())
    toolbox.add(PageToolSource(host), list_now=False)
    toolbox.add(TabToolSource(host), list_now=False)
    servers = ToolServers(boot, toolbox, link.post, (manifest.get("mcp") or {}).get("client"))
    servers.add(manifest.get("mcp_servers") or [])
    shown = {"version": toolbox.version}

    def tell_page(snapshot: ToolboxSnapshot) -> None:
        if snapshot.version != shown["version"]:
            shown["version"] = snapshot.version
            link.post({"type": "event", "event": {"type": "tools_changed", "session_id": None,
                                                  "data": {"tools": describe_tools(
                                                      list(snapshot.tools))}}})

    toolbox.subscribe(tell_page)
    return WorkerTools(toolbox, host, servers, loaded, tool_worker)


def page_embedder(boot: Any, link: PageLink, manifest: dict[str, Any],
                  params: dict[str, Any], ready: asyncio.Event) -> EmbedderSlot:
    """The agents' embedder (py_agent/browser/embedder.py), loaded once ``ready`` is set;
    none with ``?embedder=off`` or a manifest without one. Its status goes to the page
    as ``{type: 'embedder', ...}`` messages."""
    entry = manifest.get("embedder")
    if params.get("embedder") == "off" or not entry:
        return EmbedderSlot(None)
    last = {"at": 0.0}

    def progress(loaded: int, total: int, from_cache: bool) -> None:
        now = time.monotonic()
        if now - last["at"] >= 0.25 or loaded == total:
            last["at"] = now
            link.post({"type": "embedder", "state": "loading", "task": "download",
                       "loaded": loaded, "total": total, "from_cache": from_cache})
    loader = PageEmbedderLoader(boot, entry, ready, progress)
    slot = EmbedderSlot(loader)
    slot.on_change(lambda status: link.post({"type": "embedder", **status.to_dict(),
                                             "timings": loader.timings}))
    return slot


def model_switch(link: PageLink, tools: WorkerTools, store: RpcStore, approvals: PageApprovals,
                 manifest: dict[str, Any], params: dict[str, Any],
                 embedder: EmbedderSlot | None = None) -> BackendSwitch:
    """The backend switch: which model answers (Gemini Nano, a server, an in-page model),
    and the agent built around it, over the one toolbox and store."""
    import js  # type: ignore[import-not-found]

    origin = str(js.location.origin)
    fetch = FetchTransport(origin)
    bridge = BridgeModel(link.llm, stream_purposes=frozenset({Purpose.STEP}))

    def on_chunk(chunk: StreamChunk) -> None:
        # The worker holds the server's stream: relay the step's pieces to the page's LLM
        # host, which hands them to the page as it does the Prompt API's (a 'chunk' event).
        if chunk.purpose == Purpose.STEP.value:
            link.post({"type": "llm-event", "event": "chunk", "sessionId": "",
                       "requestId": chunk.request_id, "purpose": chunk.purpose,
                       "conversationId": chunk.conversation_id, "chunk": chunk.delta,
                       "text": chunk.text, "offset": len(chunk.text) - len(chunk.delta)})

    settings = ServerSettings.from_manifest(manifest.get("model_server"), origin)
    agent_options = deadlines(params)
    runner = tools.tool_worker.call if tools.tool_worker else None
    scaler = worker_scaler(link.boot)
    switch = BackendSwitch(
        bridge, settings,
        make_server_model=lambda name: ServerModel(settings, fetch, wanted=name,
                                                   on_chunk=on_chunk),
        make_agent=lambda model, policy: Agent(
            model=model, store=store, tools=tools.toolbox, memory=policy,
            sync_tool_runner=runner, approve=approvals, image_scaler=scaler,
            embedder=embedder, **agent_options),
        post=link.post,
        page_models=PageModelSource.from_manifest(manifest.get("page_models")),
        make_page_model=lambda source: PageModelBridge(
            source, functools.partial(link.llm, api=PAGE_MODEL),
            stream_purposes=frozenset({Purpose.STEP})))
    return switch


async def main(boot: Any) -> None:
    """Connect the bridges, build the tools and the agent, serve the page (every message
    through one table: py_agent/browser/routes.py), then say ready."""
    link = PageLink(boot)
    transport, storage_problem = await idb_transport_for(boot)
    # Tools keep their data (the demo's notes and to-dos) in IndexedDB's kv store; without
    # IndexedDB, in memory (the tools still work, for as long as this worker runs).
    kv = InMemoryKeyValueStore() if storage_problem else RpcKeyValueStore(transport)
    params = _to_py(boot.params) or {}
    manifest = _to_py(boot.manifest) or {}
    tools = await worker_tools(boot, link, manifest, params, kv)
    approvals = PageApprovals(link.post)   # the page asks the user before consequential calls
    # The embedder loads after "ready" (never on the boot path) and nothing waits for it.
    ready = asyncio.Event()
    embedder = page_embedder(boot, link, manifest, params, ready)
    switch = model_switch(link, tools, RpcStore(transport), approvals, manifest, params,
                          embedder)
    router = Router({LLM: link.resolve, PAGE_TOOLS: tools.page_tools.resolve,
                     APPROVALS: approvals.handle, TOOL_SERVERS: tools.servers.handle,
                     SWITCH: switch.handle}, link.post)
    boot.onMessage(lambda data: router.dispatch(_to_py(data)))   # before start(): it asks the LLM host
    model = await switch.start(params.get("backend"), params.get("model"))
    details = {"tools": [t.name for t in tools.toolbox.tools],
               "tool_storage": "memory" if storage_problem else "indexeddb",
               "tool_modules": tools.loaded.modules,
               "tool_errors": [error.to_dict() for error in tools.loaded.errors],
               "model": model}
    if storage_problem:
        details["storage_error"] = storage_problem
    boot.ready(to_js(details, dict_converter=_object_from_entries()))
    # After ready, what ready does not need: the tool worker's boot (a second Pyodide),
    # the page's tools and the tool servers, listed, and the embedder's download and load.
    if tools.tool_worker:
        tools.tool_worker.start()
    tools.toolbox.start()
    ready.set()
    embedder.start()
