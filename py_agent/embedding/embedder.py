"""What an embedder is: texts in, unit vectors out, in one named embedding space.

Vectors of different spaces cannot be compared, so everything that keeps vectors keeps
the space's id with them and makes them again when the embedder in use has another.
A text longer than the embedder's input limit is cut (:func:`cut`), never refused: a
turn's vector stands for its beginning, which is where a turn says what it is about.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable


class EmbedderError(Exception):
    """The embedder cannot embed now: its files failed to load, or its server failed.

    Never fails a turn: whoever asked goes on without the dense signal and says why.
    """


@runtime_checkable
class Embedder(Protocol):
    """Texts in, unit vectors out.

    ``space``: the embedding space's id (model, version, weights); two embedders with
    the same id give the same vector for the same text, within a tested tolerance.
    ``dimension``: the length of each vector. ``max_chars``: the input limit; longer
    texts are cut to it before embedding.
    """

    space: str
    dimension: int
    max_chars: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order; raises :class:`EmbedderError`."""
        ...


def cut(text: str, max_chars: int) -> str:
    """``text`` within ``max_chars`` characters, cut at a word boundary when one is near."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    space = head.rfind(" ", max_chars * 3 // 4)
    return head[:space] if space > 0 else head
