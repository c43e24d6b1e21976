"""Every message the agent worker serves, in one table: its type, the part that serves
it, and whether it waits while the model is switched.

The worker's port carries three channels (docs/protocols.md): the page's requests, the
LLM host's replies and events, and the page tools host's. :data:`ROUTES` names each
message type once. A route that does not ``wait_for_switch`` is served at once, even
while the backend switch waits for the agent to be idle before it builds a new one:
replies to the worker's own requests must be (a turn waits for them), and so must the
page's answer to an approval question (a switch waiting for idle and a turn waiting for
approval would otherwise wait for each other until the switch times out). The others
go to the backend switch, which queues them until the new agent is up.

Pure Python: the tests read the table, and docs/protocols.md lists the same names.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..replies import reply

log = logging.getLogger("py_agent.browser")

# The parts that serve messages (the handlers main.py gives the router).
LLM = "llm"                    # the LLM host's replies and events (PageLink)
PAGE_TOOLS = "page-tools"      # the page tools host's (PageToolsHost)
APPROVALS = "approvals"        # the page's answers to approval questions (PageApprovals)
TOOL_SERVERS = "tool-servers"  # the Tools panel's tool servers (ToolServers)
SWITCH = "switch"              # the model in use, and the agent's own requests (BackendSwitch)


@dataclass(frozen=True)
class Route:
    """One message type: who serves it, and whether it waits while the model switches."""

    kind: str
    to: str
    wait_for_switch: bool = False


# The agent's own requests (py_agent.host.AgentHost), served by the agent in use.
AGENT_REQUESTS = ("run", "stop", "memory", "compact", "sessions", "transcript",
                  "rename_session", "delete_session", "tools", "export", "import",
                  "save_recall", "recall", "call_tool", "profile", "edit_profile_fact",
                  "forget_profile_fact", "set_private", "confirm_profile_fact", "attachment",
                  "model_inputs")

ROUTES: tuple[Route, ...] = (
    Route("llm-result", LLM), Route("llm-event", LLM),
    Route("page-tools-result", PAGE_TOOLS), Route("page-tools-event", PAGE_TOOLS),
    Route("approve", APPROVALS),
    Route("tool_servers", TOOL_SERVERS), Route("connect_tool_server", TOOL_SERVERS),
    Route("disconnect_tool_server", TOOL_SERVERS), Route("trust_tool_server", TOOL_SERVERS),
    Route("use_model", SWITCH, wait_for_switch=True),
    Route("model_info", SWITCH, wait_for_switch=True),
    *(Route(kind, SWITCH, wait_for_switch=True) for kind in AGENT_REQUESTS),
)

Handler = Callable[[dict[str, Any]], Any]


class Router:
    """Hands each message to the part that serves it (see :data:`ROUTES`); a request of
    an unknown type gets an error reply through ``post``."""

    def __init__(self, handlers: Mapping[str, Handler], post: Callable[[dict[str, Any]], None],
                 routes: tuple[Route, ...] = ROUTES) -> None:
        missing = {route.to for route in routes} - set(handlers)
        if missing:
            raise ValueError(f"no handler for {', '.join(sorted(missing))}")
        for route in routes:   # only the switch can hold a message back while it switches
            if route.wait_for_switch != (route.to == SWITCH):
                raise ValueError(f"route {route.kind!r}: only the switch's routes wait")
        self.routes = {route.kind: route for route in routes}
        self.handlers = dict(handlers)
        self.post = post

    def dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            log.warning("a message that is not an object was dropped")
            return
        route = self.routes.get(message.get("type"))  # type: ignore[arg-type]
        if route is None:
            if message.get("id") is not None:
                self.post(reply(message.get("id"), error={
                    "name": "ValueError",
                    "message": f"unknown request type {message.get('type')!r}"}))
            else:
                log.warning("a message of unknown type %r was dropped", message.get("type"))
            return
        self.handlers[route.to](message)
