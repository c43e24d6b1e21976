"""Sentence vectors from an OpenAI-compatible server's ``POST /v1/embeddings`` (Ollama,
llama.cpp's server, vLLM and LM Studio have it), as an :class:`~py_agent.embedding.Embedder`.

Chosen with the server's model: ``OpenAIEmbedder(client, "nomic-embed-text")`` over the
same :class:`~.client.ChatClient` (URL, key, transport, timeouts). The embedding space is
the server's URL and the model's name, so vectors of another server or model are made
again. The dimension is learnt from the first reply; vectors come back as the server
gives them and are made unit length here. A text is cut to ``max_chars`` first (a
server may refuse a text longer than its model's context).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..embedding import EmbedderError, cut
from .client import ChatClient
from .errors import ServerError

# What a server embeds per request; servers cap their batch (llama.cpp: its slots).
BATCH = 32


class OpenAIEmbedder:
    """An embedding model on an OpenAI-compatible server."""

    def __init__(self, client: ChatClient, model: str, *, max_chars: int = 2000,
                 dimension: int = 0) -> None:
        self.client, self.model, self.max_chars = client, model, max_chars
        self.dimension = dimension
        self.space = f"openai-compatible:{client.base_url}#{model}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = [cut(t, self.max_chars) or " " for t in texts[start:start + BATCH]]
            try:
                reply = await self.client.get_json("/embeddings",
                                                   body={"model": self.model, "input": batch})
            except (ServerError, OSError) as exc:
                raise EmbedderError(f"{self.model} on {self.client.base_url}: {exc}") from exc
            out += self._vectors(reply, len(batch))
        return out

    def _vectors(self, reply: Any, count: int) -> list[list[float]]:
        rows = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(rows, list) or len(rows) != count:
            raise EmbedderError(f"{self.model}: the server's reply has no vector per text")
        rows = sorted(rows, key=lambda r: r.get("index", 0) if isinstance(r, dict) else 0)
        vectors = []
        for row in rows:
            values = row.get("embedding") if isinstance(row, dict) else None
            if not isinstance(values, list) or not values or \
                    not all(isinstance(x, (int, float)) for x in values):
                raise EmbedderError(f"{self.model}: a vector of the server's reply is not numbers")
            if self.dimension and len(values) != self.dimension:
                raise EmbedderError(f"{self.model}: vectors of {len(values)} values, "
                                    f"not {self.dimension}")
            self.dimension = len(values)
            norm = math.sqrt(math.fsum(float(x) * float(x) for x in values)) or 1.0
            vectors.append([float(x) / norm for x in values])
        return vectors
