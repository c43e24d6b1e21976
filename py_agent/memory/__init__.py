"""The memory engine: what keeps a conversation's memory small and right, in the background.

Layered bottom up; each module imports only those below it (and nothing of the turn
or the agent):

- :mod:`~py_agent.memory.fact_rules`, :mod:`~py_agent.memory.facts`,
  :mod:`~py_agent.memory.summary`: the judgements made without the model, and the
  prompts and checks of the fact extractor and the summarizer;
- :mod:`~py_agent.memory.steps`: the model steps of a pass behind an ``ask``
  callable (shared with :mod:`py_agent.replay`);
- :mod:`~py_agent.memory.outcome`: a pass's result and the pure ``apply_pass``;
- :mod:`~py_agent.memory.live`: live memory sessions (a model session per chat
  that has read the memory);
- :mod:`~py_agent.memory.passes` (what a pass does) and
  :mod:`~py_agent.memory.engine` (when passes run): built from the session table
  and the base sessions, never from an agent.

The memory policy and the budget arithmetic that every layer reads live below all
of them, in :mod:`py_agent.budget`; their names are exported here too.
"""

from ..budget import Budget, MemoryAccountant, MemoryPolicy, MemoryPolicyError

__all__ = ["Budget", "MemoryAccountant", "MemoryPolicy", "MemoryPolicyError"]
