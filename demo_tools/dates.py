"""Dates and times, from the device's clock; no network needed."""

from __future__ import annotations

import datetime as dt

from py_agent import tool


def _parse_date(text: str) -> dt.date:
    text = text.strip().lower()
    today = dt.date.today()
    if text in ("", "today", "now"):
        return today
    if text == "tomorrow":
        return today + dt.timedelta(days=1)
    if text == "yesterday":
        return today - dt.timedelta(days=1)
    for fmt in ("%Y-%m-%d", "%d/%m/%Y", "%B %d %Y", "%d %B %Y", "%b %d %Y", "%d %b %Y"):
        try:
            return dt.datetime.strptime(text.replace(",", ""), fmt).date()
        except ValueError:
            continue
    raise ValueError(f"cannot read the date {text!r}; use YYYY-MM-DD, 'today' or 'tomorrow'")


@tool
def current_datetime() -> str:
    """Tell today's date, the current local time and the weekday (what day or time it is now)."""
    now = dt.datetime.now()
    return now.strftime("%A %Y-%m-%d %H:%M")


@tool
def add_days(date: str, days: int) -> str:
    """Add (or subtract, with a negative number) days to a date and give the resulting date.

    Args:
        date: a date like 2026-03-14, or "today".
        days: how many days to add; negative to go back.
    """
    result = _parse_date(date) + dt.timedelta(days=days)
    return result.strftime("%A %Y-%m-%d")


@tool
def days_between(start: str, end: str) -> str:
    """Count the days between two dates, e.g. until a birthday or deadline.

    Args:
        start: the first date, like 2026-03-14 or "today".
        end: the second date.
    """
    delta = (_parse_date(end) - _parse_date(start)).days
    return f"{delta} day" if abs(delta) == 1 else f"{delta} days"


@tool
def day_of_week(date: str) -> str:
    """Tell which weekday a date falls on.

    Args:
        date: a date like 2026-12-25.
    """
    return _parse_date(date).strftime("%A")
