"""A page's chunks, searchable: the archive recall index (:mod:`py_agent.recall`) over
the chunks of one page instead of the turns of a conversation.

Each chunk is indexed as a turn whose user words are the chunk's text; the signals that
make sense only in a conversation (the previous message, the next turn, recency, a
session's title) are switched off, so a chunk ranks by BM25F over its words, the related
words of the query and its names and figures.
"""

from __future__ import annotations

from ..recall.index import RecallIndex, RecallSettings
from ..state import Turn
from .text import Chunk

PAGE_SETTINGS = RecallSettings(context_weight=0.0, recency=0.0, recency_preferred=0.0,
                               lead_weight=0.0, title_weight=0.0, text_chars=200)
_SESSION = "page"


class PageIndex:
    """The chunks of one page, found by a query with :meth:`search`."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self._index = RecallIndex(PAGE_SETTINGS)
        for chunk in chunks:
            self._index.add(_SESSION, Turn(id=chunk.number, user=chunk.text, answer="",
                                           created_at=0.0))

    def search(self, query: str, k: int = 5) -> list[Chunk]:
        """The ``k`` chunks that best match ``query``, best first (none for a query
        without a searchable word)."""
        if not query.strip():
            return []
        try:
            hits = self._index.search(query, sessions=[_SESSION], k=k)
        except ValueError:
            return []
        by_number = {c.number: c for c in self.chunks}
        return [by_number[h.turn_id] for h in hits if h.turn_id in by_number]
