"""The turn: from a user's message to an answer, and what it leaves in the session.

- :mod:`~py_agent.turn.context`: :class:`TurnContext`, what one turn carries down
  to every call it makes (its chat, message, stop button, id, offered tools),
  exported here;
- :mod:`~py_agent.turn.policies`: the public knobs (:class:`StepPolicy`,
  :class:`ToolPolicy`), exported here;
- :mod:`~py_agent.turn.tool_runner`: one tool call, guarded;
- :mod:`~py_agent.turn.compact_tool`: the built-in ``compact`` tool;
- :mod:`~py_agent.turn.loop`: the ReAct loop, every bad reply an observation;
- :mod:`~py_agent.turn.first_prompt`: the first prompt of a turn, from data;
- :mod:`~py_agent.turn.opener`: which model session the steps run on;
- :mod:`~py_agent.turn.runner`: a turn top to bottom (open, retrieve, make room,
  loop, save, schedule memory upkeep).
"""

from .compact_tool import COMPACT_TOOL, compact_tool
from .context import TurnContext
from .policies import StepPolicy, ToolPolicy

__all__ = ["COMPACT_TOOL", "StepPolicy", "ToolPolicy", "TurnContext", "compact_tool"]
