"""The in-page model (llama.cpp in WebAssembly, ``web/page_model/``) as the agent's model.

The page downloads and loads the GGUF file the user chose (``serve.py --gguf`` offers
them; the manifest lists them as ``page_models``) and hands it to its LLM host under the
name ``page-model``. This is the worker's end: a :class:`~py_agent.rpc.BridgeModel`
whose transport names that API in every request (so the same host serves Chrome's
Prompt API and this model side by side), plus what the model says about itself once
loaded (its name, window and threads), for the status line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import (MEDIA_KINDS, InputNotSupportedError, MediaSupport, Message, ModelError,
                     Purpose)
from ..rpc import BridgeModel, BridgeSession, Transport

PAGE_MODEL = "page-model"   # the backend's name, and the LLM host's name for its API


@dataclass(frozen=True)
class PageModelSource:
    """One GGUF file the page offers (a ``page_models`` entry of the manifest)."""

    url: str
    name: str
    size: int | None = None
    sha256: str | None = None

    @classmethod
    def from_manifest(cls, entries: Any) -> tuple["PageModelSource", ...]:
        """The well-formed entries of the manifest's ``page_models`` list."""
        found = []
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                continue
            size = entry.get("size")
            found.append(cls(url=entry["url"],
                             name=str(entry.get("name") or entry["url"].rsplit("/", 1)[-1]),
                             size=size if isinstance(size, int) and size > 0 else None,
                             sha256=entry.get("sha256") or None))
        return tuple(found)

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "name": self.name, "size": self.size, "sha256": self.sha256}


class PageModelBridge(BridgeModel):
    """The in-page model over the LLM host. ``transport`` must name the ``page-model``
    API in its requests (``PageLink.llm(..., api=PAGE_MODEL)`` in the worker).

    ``info`` is the engine's description of the loaded model (``PageModel.info`` on the
    page: name, contextWindow, threads, multiThreaded, crossOriginIsolated, fileSize), or
    None until the page has loaded it; :meth:`refresh` asks for it again.
    """

    def __init__(self, source: PageModelSource, transport: Transport, *,
                 stream_purposes: frozenset[Purpose] = frozenset()) -> None:
        super().__init__(transport, stream_purposes=stream_purposes)
        self.source = source
        self.info: dict[str, Any] | None = None

    async def refresh(self) -> dict[str, Any] | None:
        """Ask the page what the loaded model is (None while it is not loaded)."""
        value = await self.call("info", [])
        self.info = value if isinstance(value, dict) else None
        window = (self.info or {}).get("contextWindow")
        if isinstance(window, int) and window > 0 and self.context_window is None:
            self.context_window = window
        return self.info

    @property
    def label(self) -> str:   # type: ignore[override]
        return f"{(self.info or {}).get('name') or self.source.name} (in this page)"

    async def media_support(self) -> MediaSupport:
        """Text only: llama.cpp in the page runs no image or audio projector."""
        return MediaSupport(frozenset(), {kind: f"{self.label} reads text only: it cannot "
                                          f"take {'images' if kind == 'image' else 'sounds'}."
                                          for kind in MEDIA_KINDS}, self.label)

    async def create(self, *, initial_prompts: list[Message],
                     purpose: Purpose = Purpose.STEP,
                     expected_inputs: tuple[str, ...] = ()) -> BridgeSession:
        if expected_inputs:
            support = await self.media_support()
            raise InputNotSupportedError(support.reason(expected_inputs[0]),
                                         kinds=frozenset(expected_inputs), model=self.label)
        session = await super().create(initial_prompts=initial_prompts, purpose=purpose)
        if self.info is None:   # loaded by now: learn what it is, for the status line
            try:
                await self.refresh()
            except ModelError:
                pass
        return session

    def describe(self) -> dict[str, Any]:
        """What the status line and the model menu say about this backend."""
        info = self.info or {}
        threads = info.get("threads")
        return {
            "backend": PAGE_MODEL,
            "name": info.get("name") or self.source.name,
            "file": self.source.name,
            "url": self.source.url,
            "size": self.source.size or info.get("fileSize"),
            "context_window": self.context_window or info.get("contextWindow"),
            "window_source": "the model file" if info else None,
            "threads": threads if isinstance(threads, int) else None,
            "multi_threaded": info.get("multiThreaded") if info else None,
            "cross_origin_isolated": info.get("crossOriginIsolated") if info else None,
            "structured_output": "JSON schema (llama.cpp grammar)",
            "loaded": bool(info),
            "error": None,
        }
