"""What can go wrong with a tool server, said so that the user knows what to do.

:class:`ToolServerError` is what both homes raise; which kind, and its words, are decided
in one place from the facts of the failure (:mod:`py_agent.mcp.failures`)."""

from __future__ import annotations

# The kinds of failure, and the state a server they happen to is in (the Tools panel
# shows it): refused (it answered, but not to us: a token, CORS, this page's CSP),
# unreachable (nothing answered, or it went away), failed (what answered is not MCP).
STATE_OF_KIND = {
    "unauthorized": "refused", "forbidden": "refused", "cors": "refused", "csp": "refused",
    "unreachable": "unreachable", "timeout": "unreachable", "closed": "unreachable",
    "not-mcp": "failed", "malformed": "failed", "address": "failed", "server-error": "failed",
    "failed": "failed", "missing-sdk": "failed", "cancelled": "failed",
}


class ToolServerError(Exception):
    """A tool server could not be used; ``kind`` says how (``unreachable``, ``cors``,
    ``csp``, ``unauthorized``, ``forbidden``, ``not-mcp``, ``malformed``, ``timeout``,
    ``closed``, ``address``, ``missing-sdk``...), ``str()`` what to do about it."""

    # The tool runner names this in an observation: "<tool> raised a tool server error".
    raised_as = "a tool server error"

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def state(self) -> str:
        """The state of a server this happened to: refused, unreachable or failed."""
        return STATE_OF_KIND.get(self.kind, "failed")
