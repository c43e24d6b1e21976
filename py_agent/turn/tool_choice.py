"""Which tools a message is offered: the retriever of the toolbox's version, with the
tools' sentence vectors once the embedder is ready.

The retriever is rebuilt only when the toolbox's version changes. Its tools' vectors are
made in the background (:class:`~py_agent.retrieval.dense.ToolVectorCache`) as soon as
both the tool list and the embedder are there; until then, and whenever the embedder is
loading, failed or off, the lexical signals rank alone, and :class:`Offer` says which
signals ranked (``dense``) for the trace. Nothing here makes a turn wait for vectors.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Sequence

from ..embedding import EmbedderSlot, EmbedderStatus
from ..retrieval import PreviousTurn, ScoredTool, ToolRetriever
from ..retrieval.dense import ToolVectorCache
from ..tools import ToolboxSnapshot

log = logging.getLogger("py_agent")


@dataclass(frozen=True)
class Offer:
    """The tools offered for a message, and whether sentence vectors ranked them
    (``dense``: "used", or why not: "loading", "failed", "off", "tools not embedded yet")."""

    tools: list[ScoredTool]
    dense: str


class ToolChoice:
    """The retriever per toolbox version and its vectors; see the module docstring."""

    def __init__(self, top_k: int, embedder: EmbedderSlot | None = None) -> None:
        self.top_k = top_k
        self.embedder = embedder
        self._retriever: tuple[int, ToolRetriever] | None = None
        self._cache = ToolVectorCache()
        self._embedding: asyncio.Task | None = None
        if embedder is not None:
            embedder.on_change(self._embedder_changed)

    def retriever(self, snapshot: ToolboxSnapshot) -> ToolRetriever:
        """The retriever over ``snapshot``'s tools, rebuilt only when the tools changed."""
        if self._retriever is None or self._retriever[0] != snapshot.version:
            self._retriever = (snapshot.version, ToolRetriever(snapshot.tools, top_k=self.top_k))
            self._embed_tools()
        return self._retriever[1]

    def _embedder_changed(self, status: EmbedderStatus) -> None:
        if status.ready and status.task in ("", "load"):
            self._embed_tools()

    def _embed_tools(self) -> None:
        """Make the current retriever's tool vectors in the background (once per version
        and space)."""
        slot, current = self.embedder, self._retriever
        if slot is None or current is None or not slot.status.ready:
            return
        retriever = current[1]
        if retriever.dense_ready(slot.space):
            return
        if self._embedding is not None and not self._embedding.done():
            self._embedding.cancel()
        try:
            self._embedding = asyncio.ensure_future(self._vectors(retriever, slot))
        except RuntimeError:  # no running loop (a retriever built outside a turn)
            self._embedding = None

    async def _vectors(self, retriever: ToolRetriever, slot: EmbedderSlot) -> None:
        try:
            made = await self._cache.vectors(retriever.tools, slot)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the tools' vectors could not be made")
            return
        if made is not None:
            retriever.use_vectors(made.space, made.documents, made.examples, made.small_talk)
            slot.report(1.0, "tools embedded")

    async def offer(self, snapshot: ToolboxSnapshot, message: str,
                    previous: PreviousTurn | None) -> Offer:
        """The tools for ``message`` (never waits for the embedder's load)."""
        retriever = self.retriever(snapshot)
        slot = self.embedder
        if slot is not None:
            slot.start()  # the first turn begins the load; it never waits for it
        vector: Sequence[float] | None = None
        if slot is None:
            dense = "off"
        elif not slot.status.ready:
            dense = slot.status.state
        elif not retriever.dense_ready(slot.space):
            dense = "tools not embedded yet"
        else:
            vector = await slot.vector(message)
            dense = "used" if vector is not None else slot.status.state
            if vector is not None and not retriever.dense_ready(slot.space):
                vector, dense = None, "tools not embedded yet"  # the space changed meanwhile
        return Offer(retriever.retrieve(message, previous=previous, vector=vector), dense)

    async def settled(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the tools' vectors under way (tests,
        benches); True if none are left to make."""
        task = self._embedding
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=timeout)
        return task is None or task.done()

    async def close(self) -> None:
        if self._embedding is not None and not self._embedding.done():
            self._embedding.cancel()
            await asyncio.gather(self._embedding, return_exceptions=True)
