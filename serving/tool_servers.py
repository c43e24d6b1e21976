"""``--mcp URL``: tool servers (MCP over Streamable HTTP) the page connects to at start.

The agent worker reaches each one itself (fetch), so each server's origin joins the
``connect-src`` of the Content-Security-Policy, and the manifest lists them for the
worker (``mcp_servers``). Servers the user adds in the Tools panel must be on one of
these origins (or the page's own): the policy allows no others.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from .common import PrepareError


@dataclass(frozen=True)
class ToolServers:
    """The ``--mcp`` URLs, checked."""

    urls: tuple[str, ...] = ()

    def origins(self) -> list[str]:
        return sorted({f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in self.urls})

    def connect_sources(self) -> list[str]:
        """Extra ``connect-src`` sources: each server's origin."""
        return self.origins()

    def manifest_entries(self) -> list[dict]:
        return [{"url": url} for url in self.urls]


def tool_servers_from_args(urls: list[str]) -> ToolServers:
    """The ``--mcp`` values as :class:`ToolServers`; :class:`PrepareError` for one that is
    not an http(s) address."""
    checked = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PrepareError(f"--mcp {url}: a tool server's address is http(s)://host:port/path "
                               "(the reference server's is http://localhost:3001/mcp)")
        if url not in checked:
            checked.append(url)
    return ToolServers(tuple(checked))
