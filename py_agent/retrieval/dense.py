"""The tools' sentence vectors: one document per tool, embedded once per tool list.

A tool's document is what a person would read to choose it: its name in words, its
description, keywords, example requests and parameters. The vectors are made in the
background when a tool list first meets a ready embedder, and kept by document text
and embedding space (:class:`ToolVectorCache`), so a new version of the list (a tool
server's relist, a page tool added) embeds only the tools that changed: 500 tools from
tool servers are embedded once, not once per version.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from typing import Sequence

from dataclasses import dataclass

from ..embedding import EmbedderSlot
from ..tools import Tool
from .small_talk import SMALL_TALK

# Tools embedded per call: small enough for the page's one thread to answer in between.
BATCH = 8
# Documents whose vectors are kept (across versions of the tool list).
KEPT = 4000

_NAME_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_.\-/]+")


def tool_document(tool: Tool) -> str:
    """A tool as one text for an embedder: name in words, description, keywords,
    examples and parameters."""
    name = _NAME_BREAK.sub(" ", tool.name).strip().lower()
    parts = [f"{name}: {tool.description}".strip()]
    if tool.keywords:
        parts.append("Keywords: " + ", ".join(tool.keywords) + ".")
    if tool.examples:
        parts.append("Examples: " + " | ".join(tool.examples))
    params = [f"{p.name.replace('_', ' ')}: {p.description}" if p.description
              else p.name.replace("_", " ") for p in tool.params]
    if params:
        parts.append("Parameters: " + "; ".join(params))
    return "\n".join(parts)


@dataclass(frozen=True)
class ToolVectors:
    """What :meth:`ToolRetriever.use_vectors` takes: one list per tool, in order."""

    space: str
    documents: list[list[float]]
    examples: list[list[list[float]]]
    small_talk: list[list[float]]


class ToolVectorCache:
    """Tool documents' vectors by embedding space and text, the oldest dropped first."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._vectors: OrderedDict[tuple[str, str], list[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._vectors)

    async def vectors(self, tools: Sequence[Tool], slot: EmbedderSlot) -> ToolVectors | None:
        """The tools' vectors (documents, example requests) and the small-talk ones,
        embedding the texts not kept yet a few at a time; None if the embedder is not
        ready or fails meanwhile."""
        embedder = slot.embedder
        if embedder is None:
            return None
        space = embedder.space
        documents = [tool_document(t) for t in tools]
        examples = [list(t.examples) for t in tools]
        texts = documents + [e for group in examples for e in group] + list(SMALL_TALK)
        missing = list(dict.fromkeys(t for t in texts if (space, t) not in self._vectors))
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            made = await slot.vectors(batch)
            if made is None or slot.space != space:
                return None
            for text, vector in zip(batch, made):
                self._vectors[(space, text)] = vector
            await asyncio.sleep(0)
        for text in texts:
            self._vectors.move_to_end((space, text))
        while len(self._vectors) > max(self.kept, len(texts)):
            self._vectors.popitem(last=False)

        def vector(text: str) -> list[float]:
            return self._vectors[(space, text)]
        return ToolVectors(space, [vector(d) for d in documents],
                           [[vector(e) for e in group] for group in examples],
                           [vector(t) for t in SMALL_TALK])
