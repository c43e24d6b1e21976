"""Where a tool comes from: :class:`ToolOrigin`, set when the tool is made and never changed.

Security decisions read it and nothing else: whether a tool's results are data to be
marked and whether they make later consequential calls ask again (:attr:`ToolOrigin.trust`),
which question a user answered ("allow for this chat" is kept per :meth:`ToolOrigin.identity`),
and how the Tools panel, the trace and the approval question say where a tool comes from
(:attr:`ToolOrigin.kind`: a tool server is never shown as "this page").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class OriginKind(str, Enum):
    """What made the tool."""

    OWN = "own"          # a Python tool handed to the Agent by the app
    MODULE = "module"    # a tool module (``serve.py --tools``, ``py-agent chat --tools``)
    BUILTIN = "builtin"  # the agent's own: ``compact``, ``recall``
    MCP = "mcp"          # a tool server's (Model Context Protocol)
    PAGE = "page"        # the web page's (``web/page_tools.js``, WebMCP)
    TAB = "tab"          # the extension's readers of the tab the user is on (py_agent.page)


class Trust(str, Enum):
    """How far the tool's results may be believed."""

    OWN = "own"              # the app's own code: its results are the app's words
    UNTRUSTED = "untrusted"  # a server's or a page's words: data, never instructions
    PAGE_TEXT = "page-text"  # the app's code reading a page: delimited data from the page


# The kinds whose tools keep their names when another tool has the same one; the others
# (a server's, a page's) get their server's name as a prefix instead.
LOCAL_KINDS = frozenset({OriginKind.OWN, OriginKind.MODULE, OriginKind.BUILTIN, OriginKind.TAB})


@dataclass(frozen=True)
class ToolOrigin:
    """Where one tool comes from.

    Attributes:
        kind: what made it (see :class:`OriginKind`).
        trust: how its results are read (see :class:`Trust`).
        source: the key of the tool source it came through (``"mcp:http://…"``,
            ``"module:demo_tools"``, ``"page"``…); "" for a tool made on its own.
        server: the server's (or module's) name as shown to the user; "" for the app's own.
        url: the server's address, for the Tools panel; "" when there is none.
        name: the tool's name at its source (a clash prefix changes ``Tool.name``, never
            this).
    """

    kind: OriginKind = OriginKind.OWN
    trust: Trust = Trust.OWN
    source: str = ""
    server: str = ""
    url: str = ""
    name: str = ""

    @property
    def untrusted(self) -> bool:
        """Its results are someone else's words (a server's or a page's)."""
        return self.trust is not Trust.OWN

    @property
    def local(self) -> bool:
        """It keeps its name when another tool has the same one."""
        return self.kind in LOCAL_KINDS

    def identity(self, tool_name: str) -> tuple[str, str, str]:
        """What a user's decision about this tool is kept under: its kind, its source and
        its name there (two servers' ``send_email`` are two tools)."""
        return (self.kind.value, self.source, self.name or tool_name)

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "trust": self.trust.value, "source": self.source,
                "server": self.server, "url": self.url, "name": self.name}


OWN = ToolOrigin()
BUILTIN = ToolOrigin(kind=OriginKind.BUILTIN, source="builtin")
