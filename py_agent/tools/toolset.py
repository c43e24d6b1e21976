"""The tools an agent has when they come from several places that change on their own.

The app's own tools (Python, loaded once), a page's tools (which come and go), and each
tool server's (whose list may change while it runs): :class:`ToolSet` keeps one list per
source and tells its listeners the whole list whenever one changes, so the app can hand
it to its agent (:meth:`~py_agent.Agent.set_tools`, which also resolves name clashes).
"""

from __future__ import annotations

from typing import Callable, Iterable

from .definition import Tool

Listener = Callable[[list[Tool]], None]


class ToolSet:
    """Named sources of tools, in order: ``own`` first, then each source as it was added."""

    def __init__(self, own: Iterable[Tool] = ()) -> None:
        self._sources: dict[str, list[Tool]] = {"own": list(own)}
        self._listeners: list[Listener] = []

    def tools(self) -> list[Tool]:
        """Every source's tools, in order (names may clash: the agent resolves them)."""
        return [t for tools in self._sources.values() for t in tools]

    def source(self, key: str) -> list[Tool]:
        """One source's tools (none if it is not there)."""
        return list(self._sources.get(key, ()))

    def set_source(self, key: str, tools: Iterable[Tool]) -> None:
        """Replace (or add) source ``key``'s tools, and tell the listeners."""
        self._sources[key] = list(tools)
        self._changed()

    def remove_source(self, key: str) -> bool:
        """Withdraw source ``key``'s tools; True if it was there."""
        if key == "own" or key not in self._sources:
            return False
        del self._sources[key]
        self._changed()
        return True

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(tools)`` on every change; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self) -> None:
        tools = self.tools()
        for listener in list(self._listeners):
            listener(tools)
