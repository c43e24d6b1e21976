"""Tool servers: the Model Context Protocol over Streamable HTTP.

- ``errors``: :class:`ToolServerError`, what went wrong and what to do about it;
- ``server``: :class:`ToolServer`, one server's state and tools, whatever speaks the wire;
- ``python_client``: the wire in CPython, with the official ``mcp`` package (an extra:
  ``pip install 'py-agent[mcp]'``); the page's worker uses the TypeScript SDK instead
  (``py_agent/browser/tool_servers.py``).

In Python, :func:`load_mcp_tools` is the door: a server's tools as ``Tool`` s any
:class:`~py_agent.Agent` takes. A server whose tools change while it runs is a tool
source: put :func:`mcp_server` (or a :func:`connect_mcp` result) in the agent's
:class:`~py_agent.tools.Toolbox`, which follows its list.
"""

from __future__ import annotations

from typing import Any

from ..tools import Tool
from .errors import ToolServerError
from .server import DEFAULT_TIMEOUT_S, ToolServer


def mcp_server(url: str, *, headers: dict[str, str] | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, trusted: bool = False,
               on_change: Any = None) -> ToolServer:
    """The tool server at ``url``, not connected yet: a tool source for a
    :class:`~py_agent.tools.Toolbox`, which connects it, lists its tools and lists again
    whenever the server says they changed (a turn that starts while it connects waits
    for it a few seconds). ``on_change(server)`` is called after every change of its
    state or tools. ``trusted``: its read-only labels are believed (see
    :func:`load_mcp_tools`; ``server.set_trusted()`` changes it)."""
    from .python_client import python_connection

    async def connect(server: ToolServer):
        return await python_connection(url, headers=headers, timeout_s=timeout_s,
                                       on_tools_changed=server.tools_changed,
                                       on_closed=server.gone)

    return ToolServer(url, connect, trusted=trusted, timeout_s=timeout_s, on_change=on_change)


async def connect_mcp(url: str, *, headers: dict[str, str] | None = None,
                      timeout_s: float = DEFAULT_TIMEOUT_S, trusted: bool = False,
                      on_change: Any = None) -> ToolServer:
    """Connect to the tool server at ``url`` and list its tools; the :class:`ToolServer`
    (its ``state`` says whether that worked, its ``error`` why not). Its ``tools`` are
    the list as read; in a :class:`~py_agent.tools.Toolbox` they follow the server's
    changes."""
    return await mcp_server(url, headers=headers, timeout_s=timeout_s, trusted=trusted,
                            on_change=on_change).start()


async def load_mcp_tools(url: str, *, headers: dict[str, str] | None = None,
                         timeout_s: float = DEFAULT_TIMEOUT_S,
                         trusted: bool = False) -> list[Tool]:
    """The tools of the MCP server at ``url`` (Streamable HTTP), ready for an Agent.

    Args:
        url: the server's endpoint, e.g. ``http://localhost:3001/mcp``.
        headers: HTTP headers for every request, e.g. ``{"Authorization": "Bearer T"}``.
        timeout_s: how long connecting, listing and each call may take.
        trusted: believe the server's labels: a tool it annotates read-only (well-formed,
            not also destructive) runs without asking. By default every tool asks the
            user before each call: the MCP specification asks a client to treat a
            server's annotations as untrusted unless the user trusts that server.

    The connection stays open while the event loop runs. A tool keeps its server's name
    (an Agent prefixes the server's name to one whose name another tool has); a tool
    whose schema cannot be used is left out, with a warning logged.

    Raises:
        ToolServerError: the server cannot be used; its message says why and what to do.
    """
    server = await connect_mcp(url, headers=headers, timeout_s=timeout_s, trusted=trusted)
    if server.state != "connected":
        raise ToolServerError(server.kind or "failed", server.error)
    return list(server.tools)


__all__ = ["ToolServer", "ToolServerError", "connect_mcp", "load_mcp_tools", "mcp_server"]
