"""The demo page's offline tools: a tool module like any user's (see py_agent.tools.modules).

``serve.py`` serves it first among the ``--tools`` modules and the page's worker loads
it through the same door. Its stateless tools are listed in ``__all__``; the notes and
to-do tools keep their records in the app's key-value store, so ``make_tools(context)``
builds them around ``context.kv`` (IndexedDB on the page, a dict in tests).
"""

from __future__ import annotations

from py_agent import Tool, ToolContext

from .calculator import calculate
from .dates import add_days, current_datetime, day_of_week, days_between
from .everyday import count_words, pick_random, roll_dice, split_bill
from .notebook import Notebook, notebook_tools
from .recipes import find_recipes, get_recipe
from .units import convert_units

BASIC_TOOLS = [calculate, convert_units, current_datetime, add_days, days_between, day_of_week]
EVERYDAY_TOOLS = [count_words, split_bill, roll_dice, pick_random]
RECIPE_TOOLS = [find_recipes, get_recipe]

# The loader collects the tools named here, in this order, then make_tools(context)'s.
__all__ = ["calculate", "convert_units", "current_datetime", "add_days", "days_between",
           "day_of_week", "find_recipes", "get_recipe", "count_words", "split_bill",
           "roll_dice", "pick_random", "make_tools"]


def make_tools(context: ToolContext) -> list[Tool]:
    """The notes and to-do tools, kept in the app's key-value store."""
    return notebook_tools(context.kv)

