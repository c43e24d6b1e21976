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


@tool(keywords=["clock", "now", "today", "current year", "month",
                "hora", "fecha", "hoy", "heure", "aujourd'hui", "Uhrzeit", "Datum", "heute", "spät"])
def current_datetime() -> str:
    """Tell today's date, the current local time and the weekday (what day or time it is now).

    Examples:
        what time is it right now?
        what's the date today
        which year are we in
        is it the weekend yet?
        what month is it
        what day is it today?
    """
    now = dt.datetime.now()
    return now.strftime("%A %Y-%m-%d %H:%M")


@tool(keywords=["from now", "later", "ago", "deadline", "weeks", "future date",
                "días", "jours", "Tage"])
def add_days(date: str, days: int) -> str:
    """Add (or subtract, with a negative number) days to a date and give the resulting date.

    Args:
        date: a date like 2026-03-14, or "today".
        days: how many days to add; negative to go back.

    Examples:
        what's the date 45 days from now
        which date is two weeks after March 3
        when is 100 days before my exam on 2026-06-20
        if I start today, when do 30 days end
        what will the date be in 3 weeks
    """
    result = _parse_date(date) + dt.timedelta(days=days)
    return result.strftime("%A %Y-%m-%d")


@tool(keywords=["countdown", "until", "since", "how long", "how many days",
                "cuántos días", "combien de jours", "wie viele Tage"])
def days_between(start: str, end: str) -> str:
    """Count the days between two dates, e.g. until a birthday or deadline.

    Args:
        start: the first date, like 2026-03-14 or "today".
        end: the second date.

    Examples:
        how many days until Christmas?
        how long is it until my birthday on 12 May
        days between 2026-01-15 and 2026-03-01
        how many days ago was New Year's Day
        how many weeks left until the holidays
        how many nights from check-in on the 3rd to check-out on the 9th
    """
    delta = (_parse_date(end) - _parse_date(start)).days
    return f"{delta} day" if abs(delta) == 1 else f"{delta} days"


@tool(keywords=["weekday", "day of the week", "Monday", "Friday", "Sunday",
                "día de la semana", "jour de la semaine", "Wochentag"])
def day_of_week(date: str) -> str:
    """Tell which weekday a date falls on.

    Args:
        date: a date like 2026-12-25.

    Examples:
        what weekday was 14 July 1989?
        is New Year's Day 2027 a Monday
        which day of the week does my birthday fall on next year
        was 2001-09-01 a weekend
        is 4 July a weekday this year
    """
    return _parse_date(date).strftime("%A")
