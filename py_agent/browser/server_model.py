"""The page's OpenAI-compatible server as a ``LanguageModel``: which URL, which model.

``serve.py --model-url URL [--model NAME]`` tells the worker (in the manifest) where
the server is; :class:`ServerModel` makes the :class:`~py_agent.openai_compat.OpenAIModel`
on first contact, picking the model the page asked for, else the one ``serve.py``
named, else the first the server lists, so a server that was down when the page
opened is used as soon as it is up (each turn tries again and fails clearly until then).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..model import MEDIA_KINDS, MediaSupport, Message, Purpose
from ..openai_compat import (ChatClient, ModelNotFoundError, OpenAIModel, OpenAISession,
                             ServerError, Timeouts)
from ..openai_compat.discovery import model_ids
from ..openai_compat.model import DEFAULT_CONTEXT_WINDOW, ChunkHandler
from ..openai_compat.transport import HttpTransport


@dataclass(frozen=True)
class ServerSettings:
    """Where the page's model server is, from the manifest's ``model_server`` entry.

    ``url`` is where requests go: the server itself, or ``serve.py``'s same-origin
    proxy (``/model/v1``), which adds the API key the page never sees. ``shown_url``
    is the server's own address, for the status line.
    """

    url: str
    shown_url: str
    model: str | None = None
    context_window: int | None = None
    proxied: bool = False

    @classmethod
    def from_manifest(cls, entry: Any, origin: str) -> "ServerSettings | None":
        if not isinstance(entry, dict) or not entry.get("url"):
            return None
        url = str(entry["url"])
        if url.startswith("/"):
            url = origin.rstrip("/") + url
        window = entry.get("context_window")
        return cls(url=url, shown_url=str(entry.get("shown_url") or url),
                   model=str(entry["model"]) if entry.get("model") else None,
                   context_window=int(window) if isinstance(window, int) and window > 0 else None,
                   proxied=bool(entry.get("proxied")))


class ServerModel:
    """A :class:`~py_agent.model.LanguageModel` over the configured server; see the module."""

    def __init__(self, settings: ServerSettings, transport: HttpTransport, *,
                 wanted: str | None = None, on_chunk: ChunkHandler | None = None,
                 timeouts: Timeouts | None = None) -> None:
        self.settings = settings
        self.wanted = wanted or settings.model
        self.transport = transport
        self.on_chunk = on_chunk
        self.timeouts = timeouts or Timeouts()
        self.model: OpenAIModel | None = None
        self.listed: tuple[str, ...] = ()
        self.error: str | None = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str | None:
        return self.model.name if self.model is not None else self.wanted

    @property
    def context_window(self) -> int | None:
        """The window once known (configured, or told by the server), else None."""
        if self.model is not None and self.model.facts is not None:
            return self.model.window
        return self.settings.context_window

    @property
    def window(self) -> int:
        return self.context_window or DEFAULT_CONTEXT_WINDOW

    async def connect(self) -> OpenAIModel:
        """Reach the server (once; again after a failure) and make the model.

        Raises the typed :class:`~py_agent.openai_compat.ServerError` saying what is wrong.
        """
        async with self._lock:
            try:
                if self.model is None:
                    name = self.wanted or await self._first_listed()
                    self.model = OpenAIModel(
                        self.settings.url, name, context_window=self.settings.context_window,
                        transport=self.transport, on_chunk=self.on_chunk, timeouts=self.timeouts)
                facts = await self.model.connect()
            except ServerError as exc:
                self.error = str(exc)
                raise
            self.listed = facts.models
            self.error = None
            return self.model

    async def _first_listed(self) -> str:
        client = ChatClient(self.settings.url, "", self.transport, timeouts=self.timeouts)
        self.listed = model_ids(await client.get_json("/models"))
        if not self.listed:
            raise ModelNotFoundError(
                f"The model server at {self.settings.shown_url} lists no models: start "
                "serve.py with --model NAME.")
        return self.listed[0]

    async def availability(self) -> str:
        try:
            await self.connect()
        except ServerError:
            return "unavailable"
        return "available"

    async def media_support(self) -> MediaSupport:
        """What the server's model takes (see :meth:`OpenAIModel.media_support`); text only
        while the server cannot be reached, saying so."""
        try:
            model = await self.connect()
        except ServerError as exc:
            return MediaSupport(frozenset(), {kind: str(exc) for kind in MEDIA_KINDS},
                                self.name or "the model server")
        return await model.media_support()

    async def create(self, *, initial_prompts: list[Message],
                     purpose: Purpose = Purpose.STEP,
                     expected_inputs: tuple[str, ...] = ()) -> OpenAISession:
        model = await self.connect()
        return await model.create(initial_prompts=initial_prompts, purpose=purpose,
                                  expected_inputs=expected_inputs)

    def describe(self) -> dict[str, Any]:
        """Which model answers, for the page's status line."""
        info: dict[str, Any] = {"backend": "server", "name": self.name,
                                "url": self.settings.shown_url,
                                "context_window": self.context_window, "window_source": None,
                                "structured_output": None, "error": self.error}
        if self.model is not None and self.model.facts is not None:
            info.update(window_source=self.model.window_source,
                        structured_output=self.model.schema_mode)
        elif self.settings.context_window:
            info["window_source"] = "configured"
        return info
