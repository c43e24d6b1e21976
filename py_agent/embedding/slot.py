"""The embedder an agent uses, loaded in the background, and what state it is in.

Loading the default model takes seconds (a 31.7 MB download in the page, 2 s of numpy
in CPython), so nothing waits for it: :meth:`EmbedderSlot.start` begins the load, and
until it is :attr:`~EmbedderStatus.ready` every caller (the tool retriever, recall) goes
on with its lexical signals alone and says so in the trace. A load that fails, or an
embedding that fails later, is a note in :attr:`EmbedderSlot.status`, never an error
for the turn that asked.

A message is embedded once per turn however many parts ask (:meth:`vector` keeps the
last few), and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Awaitable, Callable, Sequence, Union

from .embedder import Embedder, EmbedderError

log = logging.getLogger("py_agent")

# How long a message's embedding may take before the turn goes on without it.
QUERY_TIMEOUT_S = 2.0
# Messages whose vectors are kept (the retriever and recall ask for the same one).
QUERY_CACHE = 16

Loader = Callable[[], Awaitable[Embedder]]
Listener = Callable[["EmbedderStatus"], None]


@dataclass(frozen=True)
class EmbedderStatus:
    """Where the embedder is: ``state`` is "off" (none configured), "loading", "ready"
    or "failed"; ``space`` the embedding space once known; ``note`` what went wrong, in
    words a user can read; ``progress`` a share of a load or of background embedding
    (0 to 1) with what it counts in ``task``."""

    state: str = "off"
    space: str = ""
    note: str = ""
    progress: float = 1.0
    task: str = ""
    load_ms: float = 0.0

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def to_dict(self) -> dict:
        return {"state": self.state, "space": self.space, "note": self.note,
                "progress": round(self.progress, 3), "task": self.task,
                "load_ms": round(self.load_ms, 1)}


class EmbedderSlot:
    """Holds the agent's embedder: given (``Embedder``), to be loaded (a coroutine
    function that returns one), or none (``None``: the dense signal is off)."""

    def __init__(self, embedder: Union[Embedder, Loader, None] = None, *,
                 query_timeout: float = QUERY_TIMEOUT_S) -> None:
        self.query_timeout = query_timeout
        self._embedder: Embedder | None = None
        self._loader: Loader | None = None
        self._loading: asyncio.Task | None = None
        self._listeners: list[Listener] = []
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        if embedder is None:
            self._status = EmbedderStatus()
        elif isinstance(embedder, Embedder):
            self._embedder = embedder
            self._status = EmbedderStatus("ready", embedder.space)
        elif callable(embedder):
            self._loader = embedder
            self._status = EmbedderStatus("loading", progress=0.0, task="load")
        else:
            raise TypeError("embedder must be an Embedder, a coroutine function or None")

    # ------------------------------------------------------------------ state

    @property
    def status(self) -> EmbedderStatus:
        return self._status

    @property
    def embedder(self) -> Embedder | None:
        """The embedder once ready (None before, and when off or failed)."""
        return self._embedder if self._status.ready else None

    @property
    def space(self) -> str:
        return self._status.space if self._status.ready else ""

    def on_change(self, listener: Listener) -> None:
        """Call ``listener(status)`` at every change of state or progress."""
        self._listeners.append(listener)

    def _set(self, status: EmbedderStatus) -> None:
        self._status = status
        for listener in list(self._listeners):
            try:
                listener(status)
            except Exception:
                log.exception("an embedder status listener failed")

    def report(self, progress: float, task: str) -> None:
        """Background work (embedding an archive, a tool list) reports how far it is."""
        if self._status.ready:
            self._set(EmbedderStatus("ready", self._status.space, self._status.note,
                                     max(0.0, min(1.0, progress)), task, self._status.load_ms))

    def use(self, embedder: Embedder | None, note: str = "") -> None:
        """Switch to another embedder now (a server's model was chosen), or to none."""
        self._cache.clear()
        self._embedder = embedder
        self._set(EmbedderStatus("ready", embedder.space) if embedder is not None
                  else EmbedderStatus("off", note=note))

    # ------------------------------------------------------------------ loading

    def start(self) -> None:
        """Begin loading in the background, once (needs a running loop)."""
        if self._loader is not None and self._loading is None:
            self._loading = asyncio.ensure_future(self._load(self._loader))

    async def _load(self, loader: Loader) -> None:
        began = time.perf_counter()
        try:
            embedder = await loader()
            if not isinstance(embedder, Embedder):
                raise EmbedderError("the loader gave no embedder")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a missing or corrupt file, a failed download
            log.warning("the embedder could not be loaded: %s", exc)
            self._set(EmbedderStatus("failed", note=f"the embedding model did not load: {exc}",
                                     task="load"))
            return
        self._embedder = embedder
        self._set(EmbedderStatus("ready", embedder.space,
                                 load_ms=(time.perf_counter() - began) * 1000))

    async def wait_ready(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for a load under way; True if ready."""
        self.start()
        if self._loading is not None and not self._loading.done():
            await asyncio.wait([self._loading], timeout=timeout)
        return self._status.ready

    async def close(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            await asyncio.gather(self._loading, return_exceptions=True)

    # ------------------------------------------------------------------ embedding

    def _failed(self, exc: BaseException) -> None:
        log.warning("embedding failed: %s", exc)
        self._embedder = None
        self._set(EmbedderStatus("failed", self._status.space, f"embedding failed: {exc}"))

    async def vector(self, text: str) -> list[float] | None:
        """The vector of one message, or None when the embedder is not ready, fails, or
        takes longer than ``query_timeout`` (the caller goes on lexically)."""
        embedder = self.embedder
        if embedder is None or not text.strip():
            return None
        key = f"{embedder.space}\0{text}"
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        try:
            [vector] = await asyncio.wait_for(embedder.embed([text]), self.query_timeout)
        except asyncio.TimeoutError:
            log.info("a message's embedding took over %.1f s: left out", self.query_timeout)
            return None
        except Exception as exc:
            self._failed(exc)
            return None
        self._cache[key] = vector
        if len(self._cache) > QUERY_CACHE:
            self._cache.popitem(last=False)
        return vector

    async def vectors(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Vectors of many texts (background work: no time limit of its own), or None
        when the embedder is not ready or fails."""
        embedder = self.embedder
        if embedder is None:
            return None
        try:
            return await embedder.embed(list(texts))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failed(exc)
            return None
