"""The agent's tools as parts it pulls from: :class:`ToolSource` s held by a :class:`Toolbox`.

A source is anything that lists tools: the app's own Python tools, a tool module, the
agent's built-ins, a tool server (MCP), the page's tools (WebMCP), the extension's tab
reader. Each has a key, an origin (where its tools come from), ``async list()``, a
change signal it fires when its list changed, and ``close()``.

The toolbox owns what all of them share, once:

- the one "list again while dirty" loop per source: a change that arrives while a list
  is on its way is read by one more list after it, never lost, never listed twice at
  once;
- name clashes: the app's own tools, tool modules', the built-ins and the tab reader's
  keep their names (in that order of precedence: a later one of the same name is left
  out, and :attr:`ToolboxSnapshot.problems` says why); a server's or a page's tool whose
  name another tool has gets its server's name as a prefix (``everything_echo``);
- a version, raised only when the tools really changed; each turn reads a
  :meth:`Toolbox.snapshot` and rebuilds what depends on the tools only when it did;
- which sources have not listed yet: a turn that starts while a tool server is still
  connecting waits for it, up to a bound (:meth:`Toolbox.settled`), and says which were
  not ready.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Protocol

from .definition import Tool
from .origin import OWN, OriginKind, ToolOrigin

log = logging.getLogger("py_agent.tools")

# Which local kind keeps a name that two local tools want.
_PRECEDENCE = {OriginKind.OWN: 0, OriginKind.MODULE: 1, OriginKind.BUILTIN: 2,
               OriginKind.TAB: 3}


class Signal:
    """A change signal: a source fires it, the toolbox (or anyone) listens."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def connect(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` on every fire; returns a function that disconnects it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners \
            else None

    def fire(self) -> None:
        for listener in list(self._listeners):
            listener()


class ToolSource(Protocol):
    """Something that lists tools (see the module docstring)."""

    key: str
    origin: ToolOrigin
    changed: Signal

    async def list(self) -> list[Tool]:
        """The source's tools now. A source that cannot list raises; the toolbox keeps
        what it listed before and notes why."""

    async def close(self) -> None:
        """Let go of what the source holds (a connection); never waits long."""


class StaticSource:
    """Tools that are known when the source is made (the app's own, a tool module's, the
    built-ins); :meth:`set` replaces them."""

    def __init__(self, key: str, tools: Iterable[Tool] = (), origin: ToolOrigin = OWN) -> None:
        self.key = key
        self.origin = origin
        self.changed = Signal()
        self.tools = list(tools)

    async def list(self) -> list[Tool]:
        return list(self.tools)

    def set(self, tools: Iterable[Tool]) -> None:
        """Replace the tools; the toolbox takes them at once."""
        self.tools = list(tools)
        self.changed.fire()

    async def close(self) -> None:
        return None


@dataclass(frozen=True)
class ToolboxSnapshot:
    """The tools at one moment, with their names resolved.

    Attributes:
        version: raised whenever the tools change.
        tools: every source's tools, in the order the sources were added.
        pending: the keys of sources that have not listed yet (a server connecting).
        problems: tools left out, and why (a name another local tool has).
    """

    version: int
    tools: tuple[Tool, ...]
    pending: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def named(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)


Listener = Callable[[ToolboxSnapshot], None]


class Toolbox:
    """The tool sources of an agent (or of several agents that take turns, as the page's
    models do); see the module docstring.

    ``Toolbox([my_tool, other_tool])`` holds the app's own tools as source ``own``;
    ``Toolbox(sources=[...])`` holds other sources; :meth:`add` adds one later.
    """

    def __init__(self, tools: Iterable[Tool] = (), *,
                 sources: Iterable[ToolSource] = ()) -> None:
        self._sources: dict[str, ToolSource] = {}
        self._lists: dict[str, list[Tool]] = {}
        self._pending: set[str] = set()
        self._dirty: set[str] = set()
        self._listing: dict[str, asyncio.Task] = {}
        self._disconnect: dict[str, Callable[[], None]] = {}
        self._failures: dict[str, str] = {}
        self._listeners: list[Listener] = []
        self._snapshot = ToolboxSnapshot(0, ())
        self._signature: tuple = ()
        own = list(tools)
        if own:
            self.add(StaticSource("own", own))
        for source in sources:
            self.add(source)

    # ------------------------------------------------------------------ sources

    def add(self, source: ToolSource, *, list_now: bool = True) -> None:
        """Add ``source`` (replacing one with the same key). A :class:`StaticSource`'s
        tools are taken at once; any other is pending until it has listed, which starts
        now (``list_now=False``: at :meth:`start` or the next :meth:`settled`)."""
        old = self._sources.get(source.key)
        if old is not None and old is not source:
            self._forget(source.key)
        self._sources[source.key] = source
        if source.key not in self._disconnect:
            key = source.key
            self._disconnect[key] = source.changed.connect(lambda: self._changed(key))
        if isinstance(source, StaticSource):
            self._lists[source.key] = list(source.tools)
            self._pending.discard(source.key)
            self._resolve()
            return
        self._pending.add(source.key)
        self._dirty.add(source.key)
        self._resolve()
        if list_now:
            self._kick(source.key)

    def start(self) -> None:
        """List every source that waits for it (added with ``list_now=False``)."""
        for key in list(self._dirty):
            self._kick(key)

    def remove(self, key: str) -> bool:
        """Withdraw source ``key`` and its tools (the source is not closed: its owner
        closes it); True if it was there."""
        if key not in self._sources:
            return False
        self._forget(key)
        self._resolve()
        return True

    def _forget(self, key: str) -> None:
        self._sources.pop(key, None)
        self._lists.pop(key, None)
        self._pending.discard(key)
        self._dirty.discard(key)
        self._failures.pop(key, None)
        disconnect = self._disconnect.pop(key, None)
        if disconnect is not None:
            disconnect()
        task = self._listing.pop(key, None)
        if task is not None and not task.done():
            task.cancel()

    def source(self, key: str) -> ToolSource | None:
        return self._sources.get(key)

    @property
    def sources(self) -> list[ToolSource]:
        return list(self._sources.values())

    # ------------------------------------------------------------------ listing

    def _changed(self, key: str) -> None:
        if key in self._sources:
            self._dirty.add(key)
            if isinstance(self._sources[key], StaticSource):
                self._dirty.discard(key)
                self._lists[key] = list(self._sources[key].tools)  # type: ignore[attr-defined]
                self._resolve()
                return
            self._kick(key)

    def _kick(self, key: str) -> None:
        """List ``key`` again in the background, unless a list of it is on its way (that
        one lists once more when it is done)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return   # no loop yet (an agent made outside async code): the first turn lists
        task = self._listing.get(key)
        if task is None or task.done():
            self._listing[key] = loop.create_task(self._list_while_dirty(key))

    async def _list_while_dirty(self, key: str) -> None:
        while key in self._dirty and key in self._sources:
            self._dirty.discard(key)
            source = self._sources[key]
            try:
                tools = list(await source.list())
            except asyncio.CancelledError:
                raise
            except Exception as exc:   # the source keeps what it listed before
                log.warning("the tools of %s could not be listed: %s", key, exc)
                self._failures[key] = f"{key}: the tools could not be listed ({exc})"
                tools = self._lists.get(key, [])
            else:
                self._failures.pop(key, None)
            if self._sources.get(key) is not source:
                return   # removed or replaced meanwhile
            self._lists[key] = tools
            self._pending.discard(key)
            self._resolve()

    async def listed(self, key: str) -> ToolboxSnapshot:
        """The snapshot once source ``key`` has listed (now, if it waits for that); the
        source bounds its own list (a tool server's timeout)."""
        if key in self._dirty:
            self._kick(key)
        task = self._listing.get(key)
        if task is not None and not task.done():
            await asyncio.shield(task)
        return self._snapshot

    async def settled(self, timeout: float) -> ToolboxSnapshot:
        """The snapshot once every source has listed (a list asked for by a change
        included), or after ``timeout`` seconds, whichever comes first (a turn starts
        with it; :attr:`ToolboxSnapshot.pending` names the sources that were not ready)."""
        self.start()
        waiting = [task for task in self._listing.values() if not task.done()]
        if waiting and timeout > 0:
            await asyncio.wait(waiting, timeout=timeout)
        return self._snapshot

    # ------------------------------------------------------------------ the tools

    def snapshot(self) -> ToolboxSnapshot:
        """The tools now, with their names resolved, and the version."""
        return self._snapshot

    @property
    def tools(self) -> list[Tool]:
        return list(self._snapshot.tools)

    @property
    def version(self) -> int:
        return self._snapshot.version

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(snapshot)`` whenever the tools or the pending sources change;
        returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners \
            else None

    def _resolve(self) -> None:
        tools, problems = resolve_names([self._lists.get(key, []) for key in self._sources])
        problems = [*problems, *self._failures.values()]
        signature = tuple(_signature(t) for t in tools)
        pending = tuple(key for key in self._sources if key in self._pending)
        current = self._snapshot
        if signature == self._signature and pending == current.pending \
                and tuple(problems) == current.problems:
            return
        version = current.version + (signature != self._signature)
        if signature == self._signature:
            tools = list(current.tools)   # the same tools: keep the objects in use
        self._signature = signature
        self._snapshot = ToolboxSnapshot(version, tuple(tools), pending, tuple(problems))
        for listener in list(self._listeners):
            try:
                listener(self._snapshot)
            except Exception:
                log.exception("a toolbox listener failed")

    async def close(self) -> None:
        """Stop listing and close every source (each bounded by the source itself)."""
        for key in list(self._sources):
            source = self._sources[key]
            self._forget(key)
            try:
                await source.close()
            except Exception as exc:
                log.warning("closing the tool source %s failed: %s", key, exc)
        self._resolve()


# ------------------------------------------------------------------ names

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def server_label(name: str) -> str:
    """A server's name as a tool-name prefix: letters, digits, ``_``, ``.``, ``-``."""
    label = _UNSAFE.sub("_", str(name)).strip("_.-")
    return label[:40] or "server"


def resolve_names(lists: Iterable[Iterable[Tool]]) -> tuple[list[Tool], list[str]]:
    """Every list's tools with unique names, in order, and the tools left out and why.

    A local tool (the app's own, a module's, a built-in, the tab reader's) keeps its
    name; when two local tools want one, the one of higher precedence (own, module,
    built-in, tab; then the earlier) keeps it and the other is left out. A server's or
    a page's tool whose name any other tool has gets its server's name as a prefix.
    """
    items = [t for tools in lists for t in tools]
    counts: dict[str, int] = {}
    for t in items:
        counts[t.name] = counts.get(t.name, 0) + 1
    keeper: dict[str, Tool] = {}
    for t in sorted((t for t in items if t.origin.local),
                    key=lambda t: _PRECEDENCE.get(t.origin.kind, 9)):
        keeper.setdefault(t.name, t)
    taken = set(counts)
    out: list[Tool] = []
    problems: list[str] = []
    for t in items:
        if t.origin.local:
            if keeper[t.name] is t:
                out.append(t)
            else:
                kept = keeper[t.name].origin
                problems.append(f"tool {t.name!r} of {t.origin.source or t.origin.kind.value} "
                                f"left out: {kept.source or kept.kind.value} has a tool of "
                                "that name")
            continue
        if counts[t.name] == 1:
            out.append(t)
            continue
        base = f"{server_label(t.origin.server or t.origin.kind.value)}_{t.name}"[:128]
        name, n = base, 2
        while name in taken:
            name, n = f"{base[:120]}_{n}", n + 1
        taken.add(name)
        out.append(replace(t, name=name))
    return out, problems


def _signature(t: Tool) -> tuple:
    """What makes two tools the same to the agent (not their function objects)."""
    return (t.name, t.description, json.dumps(t.input_schema(), sort_keys=True, default=str),
            tuple(t.examples), tuple(t.keywords), t.origin, t.confirm, t.pinned,
            t.timeout_s, t.observation_chars, t.takes_context, id(t.fn) if t.origin.local
            else None)
