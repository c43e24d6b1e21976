"""Offline demo tools for the py-agent page; plain ``@tool`` functions, tested in CPython.

``BASIC_TOOLS`` are stateless. ``demo_tools(kv)`` is the page's full set: those, the
cookbook, the everyday helpers, and the notes and to-do tools kept in ``kv`` (a
:class:`~py_agent.demo.kv.KeyValueStore`: IndexedDB on the page, a dict in tests).
"""

from __future__ import annotations

from ..tools import Tool
from .calculator import calculate
from .dates import add_days, current_datetime, day_of_week, days_between
from .everyday import count_words, pick_random, roll_dice, split_bill
from .kv import InMemoryKeyValueStore, KeyValueStore, RpcKeyValueStore
from .notebook import Notebook, notebook_tools
from .recipes import find_recipes, get_recipe
from .units import convert_units

BASIC_TOOLS = [calculate, convert_units, current_datetime, add_days, days_between, day_of_week]
EVERYDAY_TOOLS = [count_words, split_bill, roll_dice, pick_random]
RECIPE_TOOLS = [find_recipes, get_recipe]


def demo_tools(kv: KeyValueStore | None = None) -> list[Tool]:
    """Every demo tool; notes and to-dos live in ``kv`` (in memory when it is None)."""
    store = kv if kv is not None else InMemoryKeyValueStore()
    return [*BASIC_TOOLS, *RECIPE_TOOLS, *notebook_tools(store), *EVERYDAY_TOOLS]


__all__ = ["BASIC_TOOLS", "EVERYDAY_TOOLS", "InMemoryKeyValueStore", "KeyValueStore",
           "Notebook", "RECIPE_TOOLS", "RpcKeyValueStore", "add_days", "calculate",
           "convert_units", "count_words", "current_datetime", "day_of_week", "days_between",
           "demo_tools", "find_recipes", "get_recipe", "notebook_tools", "pick_random",
           "roll_dice", "split_bill"]
