"""Events a turn emits as it happens, so a UI can show the agent thinking live."""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Union

from .state import now_ms

log = logging.getLogger("py_agent")

EventType = Literal[
    "turn_started",        # {turn_id, message}
    "tools_retrieved",     # {tools: [{name, score, pinned}]}
    "recalled",            # {source: auto|tool, query, hits: [Hit.to_dict() + title, shown,
                           #  reason], tokens, budget, min_coverage, ms}
    "step_started",        # {index, constraint}
    "thought",             # {index, text}
    "action",              # {index, tool, input}
    "observation",         # {index, tool, text, ok, kind, duration_ms}
    "approval_requested",  # {id, index, tool, arguments, server, source, session_id,
                           #  description}: id is the question's own (ApprovalRequest.id)
    "approval",            # the same and {decision: once|chat|deny, why}
    "answer",              # {turn_id, text, status}
    "turn_saved",          # {turn_id}
    "storage_error",       # {message, kind}
    "compaction_started",  # {turn_ids, trigger}
    "memory_updated",      # {summary, facts, recent_turns, compactions, degraded, record}
    "compaction_failed",   # {error, trigger, degraded, facts, record}
    "prefix_planned",      # {level, tokens, window, scaled, reason, ...}; session_id ""
    "policy_changed",      # {window, level, scaled, reason, before, after}: the memory
                           #  policy in use, planned for the model's window; session_id ""
    "constraint_level",    # {purpose, level, label, refused: [{level, error, lasting}], index?}
    "error",               # {message, kind}
    # the user profile (py_agent.profile): changed by a memory pass of session_id ("by":
    # "memory") or by the user ("user"; session_id: the session a fact came from, or "")
    "profile_updated",     # {version, facts, by, action}
    "session_private",     # {private}
]


@dataclass(frozen=True)
class AgentEvent:
    """Something that happened in a session; ``data`` depends on ``type``."""

    type: EventType
    session_id: str
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=now_ms)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "session_id": self.session_id, "data": self.data, "at": self.at}


EventHandler = Callable[[AgentEvent], Union[None, Awaitable[None]]]
# How a layer reports upward: the agent hands each part one of these.
Emit = Callable[[AgentEvent], Awaitable[None]]


async def deliver(handlers: list[EventHandler | None], event: AgentEvent) -> None:
    """Call each handler; a failing handler is logged, never allowed to break a turn."""
    for handler in handlers:
        if handler is None:
            continue
        try:
            result = handler(event)
            if inspect.isawaitable(result):
                await result
        except Exception:  # a UI bug must not lose the user's turn
            log.exception("event handler failed on %s", event.type)
