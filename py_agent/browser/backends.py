"""Which model answers the page, and the agent built around it.

The page has up to three kinds of model: Chrome's Prompt API (through the LLM host on
the main thread; the default where Gemini Nano is available), the OpenAI-compatible
server ``serve.py --model-url`` names, and the GGUF files ``serve.py --gguf`` offers,
run in the page by llama.cpp (also through the LLM host: py_agent/browser/page_model.py).
:class:`BackendSwitch` starts with the one asked for (the page's saved choice), or picks:
Gemini Nano unless Chrome says it is unavailable and a server is configured. An in-page
model is never picked for the user (it is a download): the page offers it. The page
switches with a ``use_model`` request (``backend``, and ``model``: the server's model
name, or the in-page model's URL), after it has loaded an in-page model.

An :class:`~py_agent.Agent` caches its sessions' state, so two agents must never work
on one store at once: a switch first lets running turns and background compactions
of the current agent finish (page messages that arrive meanwhile wait their turn),
then builds a new agent (same store, same tools, a memory policy sized for the new
model's window) and a new host for it. The same happens, once, when a server that was
unreachable at start tells its real window: memory budgets follow the window.

Messages to the page: the reply to ``use_model``/``model_info`` (``{type: 'reply', id,
ok, value}``, the value as :meth:`BackendSwitch.describe` gives it) and, whenever what
it says changes, ``{type: 'event', event: {type: 'model', session_id: None, data}}``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..agent import Agent
from ..host import AgentHost
from ..memory import MemoryPolicy
from ..model import LanguageModel
from ..openai_compat import ServerError
from ..replies import error_of, reply
from .page_model import PAGE_MODEL, PageModelBridge, PageModelSource
from .server_model import ServerModel, ServerSettings

log = logging.getLogger("py_agent.browser")

PROMPT_API = "prompt-api"
SERVER = "server"
AVAILABILITY_WAIT_S = 5.0   # the LLM host answers at once, unless the page is gone
CONNECT_WAIT_S = 8.0        # first contact with the server; a turn tries again later
IDLE_WAIT_S = 60.0          # running turns and compactions before a switch

Post = Callable[[dict[str, Any]], None]
MakeAgent = Callable[[LanguageModel, MemoryPolicy], Agent]
MakeServerModel = Callable[[Any], ServerModel]
MakePageModel = Callable[[PageModelSource], PageModelBridge]
BACKENDS = (PROMPT_API, SERVER, PAGE_MODEL)


class BackendSwitch:
    """Routes the page's messages to the current agent's host; see the module docstring.

    Args:
        prompt_api: the Prompt API bridge (``BridgeModel``).
        server_settings: the configured server, or None.
        make_server_model: a :class:`ServerModel` for the wanted model name (None: the
            configured one).
        make_agent: an Agent over a model with a memory policy (same store and tools).
        post: sends a message to the page.
        page_models: the GGUF files the page offers (the manifest's ``page_models``).
        make_page_model: the in-page model for one of them.
    """

    def __init__(self, prompt_api: Any, server_settings: ServerSettings | None,
                 make_server_model: MakeServerModel, make_agent: MakeAgent, post: Post, *,
                 page_models: tuple[PageModelSource, ...] = (),
                 make_page_model: MakePageModel | None = None) -> None:
        self.prompt_api = prompt_api
        self.server_settings = server_settings
        self.make_server_model = make_server_model
        self.make_agent = make_agent
        self.post = post
        self.page_models = tuple(page_models) if make_page_model is not None else ()
        self.make_page_model = make_page_model
        self.backend = PROMPT_API
        self.server: ServerModel | None = None
        self.page_model: PageModelBridge | None = None
        self.agent: Agent | None = None
        self.host: AgentHost | None = None
        self._policy_window: int | None = None
        self._busy: set[asyncio.Task] = set()
        self._queue: list[dict[str, Any]] = []
        self._switching = True      # until start() has built the first agent
        self._shown: dict[str, Any] | None = None
        self._listed: tuple[str, ...] = ()   # the server's models, as last seen

    # ----------------------------------------------------------------- starting

    async def start(self, backend: str | None = None, model: str | None = None) -> dict[str, Any]:
        """Build the first agent, for ``backend`` if it can be had, else the default."""
        try:
            if backend not in BACKENDS or (backend == SERVER and self.server_settings is None) \
                    or (backend == PAGE_MODEL and self._offered(model) is None):
                backend, model = await self._default_backend(), None
            await self._build(backend, model)
        finally:
            self._switching = False
        self._replay()
        self._shown = self.describe()
        return self._shown

    async def _default_backend(self) -> str:
        if self.server_settings is None:
            return PROMPT_API
        try:
            availability = await asyncio.wait_for(self.prompt_api.availability(),
                                                  AVAILABILITY_WAIT_S)
        except Exception as exc:  # no LLM host, or no answer: Chrome's model is not there
            log.warning("Prompt API availability unknown (%s)", exc)
            availability = "unavailable"
        return SERVER if availability == "unavailable" else PROMPT_API

    def _offered(self, url: Any) -> PageModelSource | None:
        """The offered in-page model at ``url``, or None."""
        return next((source for source in self.page_models if source.url == url), None)

    async def _build(self, backend: str, model_name: str | None) -> None:
        server: ServerModel | None = None
        page_model: PageModelBridge | None = None
        if backend == PAGE_MODEL:
            source = self._offered(model_name)
            assert source is not None and self.make_page_model is not None
            page_model = self.make_page_model(source)
            await self._refresh(page_model)   # the page has loaded it (at start: maybe not yet)
            agent = self.make_agent(page_model, MemoryPolicy())
        elif backend == SERVER:
            server = self.make_server_model(model_name)
            try:
                await asyncio.wait_for(server.connect(), CONNECT_WAIT_S)
            except (ServerError, asyncio.TimeoutError) as exc:   # said in describe(); turns retry
                if isinstance(exc, asyncio.TimeoutError):
                    server.error = (f"The model server at {server.settings.shown_url} did not "
                                    f"answer within {CONNECT_WAIT_S:g} s.")
            # The agent fits its prefix and memory sizes to the server's window itself.
            agent = self.make_agent(server, MemoryPolicy())
        else:
            agent = self.make_agent(self.prompt_api, MemoryPolicy())
        self.backend, self.server, self.page_model, self.agent = backend, server, page_model, agent
        self._policy_window = server.context_window if server else None
        self.host = AgentHost(agent, self.post)

    # ----------------------------------------------------------------- messages

    def handle(self, message: dict[str, Any]) -> None:
        """Handle one page message (requests for the agent, or for the switch itself)."""
        if self._switching:
            self._queue.append(message)
            return
        kind = message.get("type")
        if kind == "use_model":
            self._switch(message, message.get("backend"), message.get("model"))
        elif kind == "model_info":
            task = asyncio.ensure_future(self._model_info(message.get("id")))
            self._busy.add(task)
            task.add_done_callback(self._busy.discard)
        elif kind == "run" and self._window_changed():
            # The server told its window after the agent was made: size memory to it.
            self._queue.append(message)
            self._switch(None, self.backend, self.server.name if self.server else None)
        else:
            assert self.host is not None
            task = self.host.handle(message)
            self._busy.add(task)
            task.add_done_callback(self._finished)

    async def _model_info(self, request_id: Any) -> None:
        """Reply with describe(), after asking the in-page model what it is (the page
        asks once it has loaded the model this agent started with)."""
        if self.page_model is not None:
            await self._refresh(self.page_model)
        self._reply(request_id, True, self.describe())
        self._announce()

    @staticmethod
    async def _refresh(page_model: PageModelBridge) -> None:
        try:
            await asyncio.wait_for(page_model.refresh(), AVAILABILITY_WAIT_S)
        except Exception as exc:  # not loaded yet, or the page is gone: said as unknown
            log.warning("the in-page model did not describe itself (%s)", exc)

    def _window_changed(self) -> bool:
        return (self.server is not None and self.server.context_window is not None
                and self.server.context_window != self._policy_window)

    def _finished(self, task: asyncio.Task) -> None:
        self._busy.discard(task)
        self._announce()

    def _switch(self, request: dict[str, Any] | None, backend: Any, model: Any) -> None:
        self._switching = True
        task = asyncio.ensure_future(self._use(request, backend, model))
        self._busy.add(task)
        task.add_done_callback(self._busy.discard)

    async def _use(self, request: dict[str, Any] | None, backend: Any, model: Any) -> None:
        request_id = request.get("id") if request else None
        try:
            if backend not in BACKENDS:
                raise ValueError(f"unknown model backend {backend!r}")
            if backend == SERVER and self.server_settings is None:
                raise ValueError("no model server is configured: start serve.py with --model-url")
            if model is not None and not isinstance(model, str):
                raise ValueError("model must be a model name")
            if backend == PAGE_MODEL and self._offered(model) is None:
                raise ValueError(f"this page offers no in-page model {model!r} (serve.py "
                                 "--gguf offers them)")
            old = self.agent
            try:
                # Decided here: inside wait_for, CPython < 3.12 runs _idle as another task.
                others = [t for t in self._busy if t is not asyncio.current_task()]
                await asyncio.wait_for(self._idle(others), IDLE_WAIT_S)
            except asyncio.TimeoutError:
                raise RuntimeError("the current model is still busy (a turn or a memory "
                                   "compaction); try again when it has finished") from None
            await self._build(backend, model or None)
            if old is not None:
                await old.close()
        except Exception as exc:
            if request is not None:
                self._reply(request_id, False, error_of(exc))
            else:
                log.exception("rebuilding the agent failed")
        else:
            if request is not None:
                self._reply(request_id, True, self.describe())
        finally:
            self._switching = False
            self._announce()
            self._replay()

    async def _idle(self, others: list[asyncio.Task]) -> None:
        if others:
            await asyncio.gather(*others, return_exceptions=True)
        if self.agent is not None:
            await self.agent.wait_idle()

    def _replay(self) -> None:
        queued, self._queue = self._queue, []
        for index, message in enumerate(queued):
            if self._switching:   # a queued message started another switch
                self._queue.extend(queued[index:])
                return
            self.handle(message)

    def _reply(self, request_id: Any, ok: bool, value: Any) -> None:
        self.post(reply(request_id, value) if ok else reply(request_id, error=value))

    # ----------------------------------------------------------------- status

    def describe(self) -> dict[str, Any]:
        """Which model answers (``backend``, ``name``, ``url``, ``context_window``,
        ``window_source``, ``error``; an in-page model also its threads) and what the page
        may switch to (``server``, ``page_models``)."""
        if self.server is not None:
            info = self.server.describe()
        elif self.page_model is not None:
            info = self.page_model.describe()
        else:
            info = {"backend": PROMPT_API, "name": "Gemini Nano", "url": None,
                    "context_window": getattr(self.prompt_api, "context_window", None),
                    "window_source": "Chrome", "structured_output": "responseConstraint",
                    "error": None}
        settings = self.server_settings
        if settings is not None:
            if self.server is not None and self.server.listed:
                self._listed = self.server.listed
            info["server"] = {"url": settings.shown_url, "model": settings.model,
                              "models": list(self._listed), "proxied": settings.proxied}
        else:
            info["server"] = None
        info["page_models"] = [source.to_dict() for source in self.page_models]
        return info

    def _announce(self) -> None:
        """Tell the page when what it shows about the model changed (window learned,
        server back or gone)."""
        if self._switching:
            return
        now = self.describe()
        if now != self._shown:
            self._shown = now
            self.post({"type": "event", "event": {"type": "model", "session_id": None,
                                                  "data": now}})
