"""Time phrases in recall queries, resolved against a fixed "now"."""

from datetime import date, datetime, timedelta, timezone

import pytest

from py_agent.recall import read_time
from py_agent.recall.dates import DAY_MS

# Wednesday 18 March 2026, 15:00 UTC.
NOW = datetime(2026, 3, 18, 15, 0, tzinfo=timezone.utc)


def day(d: date, zone=timezone.utc) -> float:
    return datetime(d.year, d.month, d.day, tzinfo=zone).timestamp() * 1000


def window(query: str, now=NOW) -> tuple[date, date]:
    hint = read_time(query, now)
    assert hint.window, f"no time read from {query!r}"
    zone = now.tzinfo
    start = datetime.fromtimestamp(hint.start / 1000, zone).date()
    end = datetime.fromtimestamp(hint.end / 1000, zone).date()
    return start, end


@pytest.mark.parametrize("query, start, end", [
    ("what did we talk about yesterday?", date(2026, 3, 17), date(2026, 3, 18)),
    ("the recipe from last night", date(2026, 3, 17), date(2026, 3, 18)),
    ("what did I say earlier today", date(2026, 3, 18), date(2026, 3, 19)),
    ("that thing from this morning", date(2026, 3, 18), date(2026, 3, 19)),
    ("the day before yesterday we planned a trip", date(2026, 3, 16), date(2026, 3, 17)),
    ("two days ago you gave me a number", date(2026, 3, 16), date(2026, 3, 17)),
    ("what did we decide 3 days ago", date(2026, 3, 15), date(2026, 3, 16)),
    ("a couple of weeks ago", date(2026, 3, 1), date(2026, 3, 8)),
    # Monday 9 to Sunday 15 March is last week; this week began Monday the 16th.
    ("what did we decide last week?", date(2026, 3, 9), date(2026, 3, 16)),
    ("earlier this week", date(2026, 3, 16), date(2026, 3, 19)),
    ("last month's budget", date(2026, 2, 1), date(2026, 3, 1)),
    ("the plan from a month ago", date(2026, 2, 1), date(2026, 3, 1)),
    ("in March", date(2026, 3, 1), date(2026, 4, 1)),
    ("back in November", date(2025, 11, 1), date(2025, 12, 1)),  # the latest November
    ("in May 2025", date(2025, 5, 1), date(2025, 6, 1)),
    ("on Tuesday", date(2026, 3, 17), date(2026, 3, 18)),
    ("on Wednesday", date(2026, 3, 11), date(2026, 3, 12)),  # today is Wednesday: a week ago
    ("last Friday", date(2026, 3, 13), date(2026, 3, 14)),
    ("over the weekend", date(2026, 3, 14), date(2026, 3, 16)),
    ("on March 3rd", date(2026, 3, 3), date(2026, 3, 4)),
    ("the 5th of January", date(2026, 1, 5), date(2026, 1, 6)),
    ("on December 24", date(2025, 12, 24), date(2025, 12, 25)),  # not yet this year
    ("on 2026-02-14", date(2026, 2, 14), date(2026, 2, 15)),
    ("in 2025", date(2025, 1, 1), date(2026, 1, 1)),
])
def test_phrases_resolve_to_calendar_windows(query, start, end):
    assert window(query) == (start, end)


@pytest.mark.parametrize("query", [
    "what book did you recommend?", "you may want to remind me", "march on with the plan",
    "the sun was out", "what time is it", "remind me what my password rules were",
    "we sat and ate", "wed or not",
])
def test_no_time_is_read_where_none_is_said(query):
    assert not read_time(query, NOW).window


def test_days_begin_at_local_midnight_in_the_zone_of_now():
    # 01:30 on the 18th in UTC+5 is still the 17th in UTC: "yesterday" differs.
    plus5 = timezone(timedelta(hours=5))
    local = datetime(2026, 3, 18, 1, 30, tzinfo=plus5)
    assert window("yesterday", local) == (date(2026, 3, 17), date(2026, 3, 18))
    hint = read_time("yesterday", local)
    assert hint.start == day(date(2026, 3, 17), plus5)
    utc = local.astimezone(timezone.utc)
    assert window("yesterday", utc) == (date(2026, 3, 16), date(2026, 3, 17))


def test_now_may_be_epoch_milliseconds_or_naive():
    ms = NOW.timestamp() * 1000
    assert read_time("yesterday", ms).start == read_time("yesterday", NOW).start
    assert read_time("yesterday", NOW.replace(tzinfo=None)).start == read_time("yesterday", NOW).start


def test_closeness_is_one_inside_and_falls_off_outside():
    hint = read_time("last week", NOW)
    inside = hint.start + DAY_MS
    assert hint.closeness(inside) == 1.0
    day_before = hint.start - DAY_MS
    week_before = hint.start - 7 * DAY_MS
    assert 0.5 < hint.closeness(day_before) < 1.0
    assert hint.closeness(week_before) < hint.closeness(day_before)
    assert hint.closeness(hint.end + DAY_MS) == hint.closeness(day_before)
    assert read_time("no time here", NOW).closeness(0.0) == 1.0


def test_the_phrase_is_stripped_from_the_query():
    hint = read_time("what did we decide last week about the trip?", NOW)
    assert hint.label == "last week"
    assert "week" not in hint.strip("what did we decide last week about the trip?")
    assert "trip" in hint.strip("what did we decide last week about the trip?")


@pytest.mark.parametrize("query, prefer", [
    ("what is my budget now?", "newest"), ("the latest plan", "newest"),
    ("what did I originally say my budget was?", "oldest"), ("at first we chose Rome", "oldest"),
    ("what is my budget?", None),
])
def test_newest_or_oldest_is_read_from_the_wording(query, prefer):
    assert read_time(query, NOW).prefer == prefer
