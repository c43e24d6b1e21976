"""Time in a recall query: "last week", "yesterday", "two days ago", "in March", "on Tuesday".

:func:`read_time` finds such phrases in a query, resolves them against ``now`` on the
calendar of ``now``'s time zone (a day starts at local midnight, a week on Monday) and
returns a :class:`TimeHint`: the window the user points at, which words said it (the
index drops them from the query, so "week" does not match every turn that mentions a
week), and whether the user wants the newest or the oldest of several matches
("lately", "the latest" / "originally", "at first").

A window is a soft preference, never a cut: people misremember by a few days, and "last
week" is said of nine days ago. :meth:`TimeHint.closeness` is 1 inside the window and
falls off outside it, in proportion to the window's width.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Literal

DAY_MS = 86_400_000.0
# "The start of the month" and "the end of March": this many days.
_MONTH_PART = 5

Preference = Literal["newest", "oldest"] | None

_MONTHS = {name: i + 1 for i, names in enumerate(
    ("january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
     "august aug", "september sep sept", "october oct", "november nov", "december dec"))
    for name in names.split()}
_WEEKDAYS = {name: i for i, names in enumerate(
    ("monday mon", "tuesday tue tues", "wednesday wed", "thursday thu thur thurs",
     "friday fri", "saturday sat", "sunday sun")) for name in names.split()}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "couple": 2, "a couple": 2, "a couple of": 2, "couple of": 2, "few": 3, "a few": 3,
            "several": 4}

_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
# Bare weekdays only by their full names ("sun", "sat" and "wed" are words too).
_FULL_WEEKDAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WEEKDAY = _FULL_WEEKDAY + "|tues|tue|thurs|thur|thu|fri"
_COUNT = r"\d{1,3}|a couple(?: of)?|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_UNIT = r"days?|weeks?|months?|years?"

# Each pattern's name says how to resolve it; the longest phrases are tried first, and a
# phrase's words are removed from the text before shorter patterns look at it.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [(name, re.compile(rx, re.IGNORECASE)) for name, rx in [
    ("part_of_month", rf"\b(?:at\s+the\s+|in\s+the\s+|towards?\s+the\s+)?(start|beginning|end|middle)\s+of\s+"
                      rf"(?:the\s+|this\s+)?(month|last\s+month|{_MONTH})\b"),
    ("mid_month", rf"\bmid-?\s*({_MONTH})\b"),
    ("iso", r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"),
    ("month_day", rf"\b(?:on\s+)?({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?"),
    ("day_month", rf"\b(?:on\s+)?(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s*(\d{{4}}))?"),
    ("ago", rf"\b({_COUNT})\s+({_UNIT})\s+(?:ago|back|earlier)\b"),
    ("day_before_yesterday", r"\b(?:the\s+)?day\s+before\s+yesterday\b"),
    ("yesterday", r"\b(?:yesterday|last\s+night)(?:\s+(?:morning|afternoon|evening|night))?\b"),
    ("today", r"\b(?:earlier\s+)?today\b|\b(?:this|earlier\s+this)\s+(?:morning|afternoon|evening)\b|\btonight\b"),
    ("weekend", r"\b(?:last|this|over\s+the|on\s+the|past)\s+weekend\b"),
    ("last_weekday", rf"\blast\s+({_WEEKDAY})\b"),
    ("on_weekday", rf"\b(?:on|this\s+past|this)\s+({_WEEKDAY})\b"),
    ("weekday", rf"\b({_FULL_WEEKDAY})(?:'s)?\b(?!\s+(?:of|the)\b)"),
    ("last_unit", r"\b(?:last|previous|past)\s+(week|month|year)\b"),
    ("this_unit", r"\bthis\s+(week|month|year)\b|\bearlier\s+this\s+(week|month|year)\b"),
    ("other_day", r"\bthe\s+other\s+day\b"),
    ("in_month", rf"\b(?:in|during|back\s+in|early|late|mid|around|since|from|last)\s+({_MONTH})\b\.?(?:\s+(\d{{4}}))?(?!\s+\d)"),
    ("in_year", r"\b(?:in|during|back\s+in)\s+((?:19|20)\d{2})\b"),
]]

_NEWEST = re.compile(r"\b(?:recently|lately|latest|most\s+recent(?:ly)?|last\s+time|these\s+days|"
                     r"now|current(?:ly)?|anymore|any\s+more|updated?|changed?)\b",
                     re.IGNORECASE)
_OLDEST = re.compile(r"\b(?:originally|at\s+first|initially|first\s+time|at\s+the\s+(?:start|beginning)(?!\s+of)|"
                     r"in\s+the\s+beginning(?!\s+of)|the\s+first|a\s+(?:long\s+)?while\s+ago|long\s+ago|"
                     r"back\s+then|used\s+to|before\s+(?:I|we|you)\s+changed)\b", re.IGNORECASE)


@dataclass(frozen=True)
class TimeHint:
    """What a query says about time.

    ``start``/``end``: the window pointed at, in epoch milliseconds (``end`` exclusive),
    or None when the query names no time; ``label`` is what was read ("last week"),
    ``spans`` the character spans of the phrases (to drop from the query), ``prefer``
    whether the newest or the oldest match is wanted when several say the same.
    """

    start: float | None = None
    end: float | None = None
    label: str = ""
    spans: tuple[tuple[int, int], ...] = ()
    prefer: Preference = None

    @property
    def window(self) -> bool:
        return self.start is not None and self.end is not None

    def closeness(self, time_ms: float) -> float:
        """1 inside the window, decaying outside it with a scale of half its width (at
        least a day); 1 when there is no window."""
        if self.start is None or self.end is None:
            return 1.0
        if self.start <= time_ms < self.end:
            return 1.0
        distance = self.start - time_ms if time_ms < self.start else time_ms - self.end
        scale = max(DAY_MS, (self.end - self.start) / 2)
        return math.exp(-distance / scale)

    def strip(self, query: str) -> str:
        """``query`` without the phrases that said the time."""
        out, last = [], 0
        for a, b in sorted(self.spans):
            out.append(query[last:a])
            out.append(" ")
            last = max(last, b)
        out.append(query[last:])
        return "".join(out)


def to_datetime(now: datetime | float | None) -> datetime:
    """``now`` as an aware datetime: a naive one is taken as UTC, a number as epoch ms."""
    if now is None:
        return datetime.now(timezone.utc)
    if isinstance(now, datetime):
        return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)
    return datetime.fromtimestamp(float(now) / 1000.0, timezone.utc)


def read_time(query: str, now: datetime | float | None = None) -> TimeHint:
    """The time ``query`` points at, resolved against ``now`` (see the module docstring)."""
    moment = to_datetime(now)
    zone = moment.tzinfo or timezone.utc
    today = moment.date()
    spans: list[tuple[int, int]] = []
    labels: list[str] = []
    windows: list[tuple[date, date]] = []
    masked = query
    for name, pattern in _PATTERNS:
        for match in pattern.finditer(masked):
            window = _resolve(name, match, today)
            if window is None:
                continue
            windows.append(window)
            spans.append(match.span())
            labels.append(" ".join(match.group(0).split()))
            masked = masked[:match.start()] + " " * (match.end() - match.start()) + masked[match.end():]
    prefer: Preference = None
    if _OLDEST.search(masked):
        prefer = "oldest"
    elif _NEWEST.search(masked):
        prefer = "newest"
    if not windows:
        return TimeHint(label="", spans=(), prefer=prefer)
    # Several phrases: the window that holds them all (rare: "on Tuesday, last week").
    first = min(w[0] for w in windows)
    last = max(w[1] for w in windows)
    return TimeHint(_ms(first, zone), _ms(last, zone), ", ".join(labels), tuple(spans), prefer)


def _ms(day: date, zone: tzinfo) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=zone).timestamp() * 1000.0


def _count(text: str) -> int:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _NUMBERS.get(text, 1)


def _month_window(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    end = date(year + (month == 12), month % 12 + 1, 1)
    return start, end


def _latest_month(month: int, today: date) -> tuple[date, date]:
    """The most recent ``month`` that has begun (this year's, or last year's)."""
    year = today.year if month <= today.month else today.year - 1
    return _month_window(year, month)


def _day(year: int | None, month: int, day: int, today: date) -> tuple[date, date] | None:
    try:
        if year is None:
            chosen = date(today.year, month, day)
            if chosen > today:
                chosen = date(today.year - 1, month, day)
        else:
            chosen = date(year, month, day)
    except ValueError:
        return None
    return chosen, chosen + timedelta(days=1)


def _resolve(name: str, match: re.Match[str], today: date) -> tuple[date, date] | None:
    """The calendar days [start, end) a matched phrase points at."""
    groups = [g.lower() if isinstance(g, str) else g for g in match.groups()]
    monday = today - timedelta(days=today.weekday())
    if name == "part_of_month":
        part, which = groups[0], " ".join(groups[1].split())
        if which == "month":
            start, end = date(today.year, today.month, 1), None
        elif which == "last month":
            index = today.year * 12 + today.month - 2
            start, end = _month_window(index // 12, index % 12 + 1)
        else:
            start, end = _latest_month(_MONTHS[which], today)
        if end is None:
            end = _month_window(start.year, start.month)[1]
        if part in ("start", "beginning"):
            return start, start + timedelta(days=_MONTH_PART)
        if part == "end":
            return end - timedelta(days=_MONTH_PART), end
        return start + timedelta(days=10), start + timedelta(days=20)
    if name == "mid_month":
        start, _ = _latest_month(_MONTHS[groups[0]], today)
        return start + timedelta(days=10), start + timedelta(days=20)
    if name == "iso":
        return _day(int(groups[0]), int(groups[1]), int(groups[2]), today)
    if name == "month_day":
        return _day(int(groups[2]) if groups[2] else None, _MONTHS[groups[0]], int(groups[1]), today)
    if name == "day_month":
        return _day(int(groups[2]) if groups[2] else None, _MONTHS[groups[1]], int(groups[0]), today)
    if name == "ago":
        n, unit = _count(groups[0]), groups[1].rstrip("s")
        if unit == "day":
            day = today - timedelta(days=n)
            return day, day + timedelta(days=1)
        if unit == "week":
            center = today - timedelta(days=7 * n)
            return center - timedelta(days=3), center + timedelta(days=4)
        if unit == "month":
            month_index = today.year * 12 + today.month - 1 - n
            return _month_window(month_index // 12, month_index % 12 + 1)
        return date(today.year - n, 1, 1), date(today.year - n + 1, 1, 1)
    if name == "day_before_yesterday":
        return today - timedelta(days=2), today - timedelta(days=1)
    if name == "yesterday":
        return today - timedelta(days=1), today
    if name == "today":
        return today, today + timedelta(days=1)
    if name == "weekend":
        saturday = monday - timedelta(days=2)
        if "this" in match.group(0).lower() and today.weekday() >= 5:
            saturday = monday + timedelta(days=5)
        return saturday, saturday + timedelta(days=2)
    if name in ("last_weekday", "on_weekday", "weekday"):
        weekday = _WEEKDAYS[groups[0]]
        back = (today.weekday() - weekday) % 7 or 7
        day = today - timedelta(days=back)
        return day, day + timedelta(days=1)
    if name == "last_unit":
        unit = groups[0]
        if unit == "week":
            return monday - timedelta(days=7), monday
        if unit == "month":
            index = today.year * 12 + today.month - 2
            return _month_window(index // 12, index % 12 + 1)
        return date(today.year - 1, 1, 1), date(today.year, 1, 1)
    if name == "this_unit":
        unit = groups[0] or groups[1]
        if unit == "week":
            return monday, today + timedelta(days=1)
        if unit == "month":
            return date(today.year, today.month, 1), today + timedelta(days=1)
        return date(today.year, 1, 1), today + timedelta(days=1)
    if name == "other_day":
        return today - timedelta(days=7), today
    if name == "in_month":
        month = _MONTHS[groups[0]]
        if groups[0] == "may" and not match.group(0).lower().startswith(("in", "during", "back", "since", "from", "last")):
            return None
        if groups[1]:
            return _month_window(int(groups[1]), month)
        if match.group(0).lower().startswith("last"):
            return _month_window(today.year - (month >= today.month), month)
        return _latest_month(month, today)
    if name == "in_year":
        year = int(groups[0])
        return date(year, 1, 1), date(year + 1, 1, 1)
    return None
