"""The demo's tools as the page gets them: loaded through the tool-module door."""

from __future__ import annotations

from pathlib import Path

from py_agent import InMemoryKeyValueStore, KeyValueStore, Tool, ToolContext, load_tools

DEMO_TOOLS = Path(__file__).resolve().parents[2] / "demo_tools"


def demo_tools(kv: KeyValueStore | None = None) -> list[Tool]:
    """Every demo tool, as the worker loads them; notes and to-dos live in ``kv``."""
    return load_tools(DEMO_TOOLS, ToolContext(kv=kv if kv is not None else InMemoryKeyValueStore()))
