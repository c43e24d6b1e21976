"""What the next prompt of a session will carry, gathered for the memory inspector.

It reads every part the Agent builds (the session table, the base sessions, the memory
engine, the accountant, the recall index) and changes none, so it sits beside the Agent
in the top layer rather than inside any one part.
"""

from __future__ import annotations

from .bases import BaseSessions
from .budget import Budget, MemoryAccountant
from .memory.engine import MemoryEngine
from .model import Purpose
from .recall.archive import ArchiveRecall
from .results import MemoryState
from .sessions import SessionTable
from .state import SessionState
from .turn.recalled import described


def estimated_budget(state: SessionState, bases: BaseSessions, accountant: MemoryAccountant,
                     memory: MemoryEngine) -> Budget:
    """The budget as it would be, computed without any model session: the window is the
    model's ``context_window`` if it has one as a plain attribute, else
    :data:`~py_agent.bases.DEFAULT_CONTEXT_WINDOW`, with the prefix and policy planned
    for it as a session would be."""
    plan = bases.estimate()
    planned = MemoryAccountant(plan.policy, accountant.counter)
    return planned.budget(state, plan.window, plan.tokens, memory.profile_facts(state))


async def memory_report(session_id: str, sessions: SessionTable, bases: BaseSessions,
                        accountant: MemoryAccountant, memory: MemoryEngine,
                        recall: ArchiveRecall | None) -> MemoryState:
    """The session's memory as the next prompt will carry it; raises for unknown sessions.
    The budget is measured on the base session once one exists, else estimated, so the
    page can show a meter without creating a session (which could start a download)."""
    state = await sessions.open(session_id, create=False)
    window = bases.window(Purpose.STEP)
    profile = memory.profile_facts(state)
    budget = (accountant.budget(state, *window, profile) if window is not None
              else estimated_budget(state, bases, accountant, memory))
    recalled = ([] if recall is None else
                [described(hit, recall.title) for hit in recall.last_recalled(session_id)])
    return MemoryState(session_id=session_id, title=state.title, summary=state.summary,
                       facts=list(state.facts), recent_turns=list(state.recent_turns),
                       budget=budget, compactions=state.compactions,
                       failed_compactions=state.failed_compactions,
                       unsaved_turns=sessions.unsaved(session_id),
                       detached=sessions.is_detached(session_id),
                       compacting=memory.running(session_id), degraded=state.degraded,
                       prefix=(bases.plan or bases.estimate()).to_dict(),
                       consecutive_failures=state.consecutive_failures,
                       budget_estimated=window is None, profile=profile,
                       private=state.private, recalled=recalled,
                       untrusted_summary=state.untrusted_summary,
                       untrusted_sources=list(state.untrusted_sources))
