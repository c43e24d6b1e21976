"""Offline demo tools for the py-agent page; plain ``@tool`` functions, tested in CPython."""

from .calculator import calculate
from .dates import add_days, current_datetime, days_between, day_of_week
from .units import convert_units

BASIC_TOOLS = [calculate, convert_units, current_datetime, add_days, days_between, day_of_week]

__all__ = ["BASIC_TOOLS", "add_days", "calculate", "convert_units", "current_datetime",
           "day_of_week", "days_between"]
