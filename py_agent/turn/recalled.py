"""Turns recalled from the archive: what a message brings into its turn's first prompt
unasked, and what the ``recall`` tool answers.

**Automatic recall**: for each message, the archive recall index
(:class:`~py_agent.recall.archive.ArchiveRecall`) is searched with the message, over the
asking session and every session the user has not made private, leaving out the turns
the prompt holds already (the session's raw turns, and the turn itself). A hit is kept
when it matches at least ``MemoryPolicy.recall_min_coverage`` of the message's weight
(``Hit.why.coverage``): sharing common words is not enough. The first
``recall_k`` kept hits go into the prompt under their own heading, with where and when
they were said, trimmed to ``recall_max_tokens``: room the memory policy plans like the
summary's and the facts' (:mod:`py_agent.budget`, :mod:`py_agent.prefix`).

Every recalled turn is **data**: its words are the archive's (another chat's, tool
results kept there), so each block sits between data marks that name where it was said,
and while the section is in the prompt the approval gate asks before every consequential
call, whatever was allowed for the chat (:attr:`Recalled.untrusted` says why).

The section is part of the turn's first prompt only, never of the chat's memory session
(:mod:`py_agent.memory.live`): it depends on the message, so it must not stay in a
history that later turns clone, and the finished turn appended there holds only the
user's words, the steps and the answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

from ..boundary import untrusted_text
from ..memory_view import data_block
from ..recall import Hit
from ..recall.archive import ArchiveRecall
from ..state import SessionState

RECALLED_HEADING = "Recalled from earlier conversations (archived turns that match this " \
                   "message; use them only if they help):"
# A recalled turn is left out rather than cut shorter than this.
MIN_HIT_TOKENS = 32
# The tool shows at most this many turns.
TOOL_HITS = 3


@dataclass
class Recalled:
    """What a turn recalled: the turns shown (``hits``), the prompt section (``text``,
    "" for none) and its size, and every turn considered with why it was or was not
    shown (``considered``, for the trace)."""

    hits: list[Hit] = field(default_factory=list)
    text: str = ""
    tokens: int = 0
    considered: list[dict[str, Any]] = field(default_factory=list)
    ms: float = 0.0
    untrusted: list[str] = field(default_factory=list)  # one reason per turn shown


def in_prompt(session_id: str, state: SessionState | None, turn_id: int) -> set[tuple[str, int]]:
    """The turns a prompt of the session holds already: its raw turns and this turn."""
    held = {(session_id, turn_id)}
    if state is not None:
        held.update((session_id, t.id) for t in state.recent_turns)
    return held


def searchable(recall: ArchiveRecall, session_id: str) -> set[str]:
    """The sessions a turn of ``session_id`` may recall from: itself, and every session
    the user has not made private."""
    return recall.shared_sessions() | {session_id}


def when_said(hit: Hit, now: datetime) -> str:
    """A turn's day, in the user's time zone: "Mon 2 Mar 2026" ("" if unknown)."""
    if not hit.time:
        return ""
    tz = now.tzinfo or timezone.utc
    day = datetime.fromtimestamp(hit.time / 1000, tz=tz)
    return f"{day:%a} {day.day} {day:%b %Y}"


def where_said(hit: Hit, session_id: str, titles: Callable[[str], str]) -> str:
    if hit.session_id == session_id:
        return "this chat"
    title = titles(hit.session_id)
    return f'the chat "{title}"' if title else "another chat"


def hit_block(hit: Hit, session_id: str, titles: Callable[[str], str], now: datetime,
              text: str | None = None) -> str:
    """One recalled turn as a prompt or an observation shows it: its words as data, the
    marks naming where and when it was said."""
    day = when_said(hit, now)
    where = where_said(hit, session_id, titles) + (f", {day}" if day else "")
    return data_block(where, untrusted_text(hit.text if text is None else text))


def hit_reason(hit: Hit, session_id: str, titles: Callable[[str], str]) -> str:
    """Why a recalled turn in the prompt makes calls ask: which turn, from where."""
    return (f"a turn recalled from {where_said(hit, session_id, titles)} "
            f"(turn {hit.turn_id}, in the recalled turns)")


def trimmed(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """``text`` cut at a word (marked with "…") so that it counts at most ``tokens``;
    "" when not even a word fits."""
    for _ in range(8):
        size = count(text)
        if size <= tokens:
            return text
        cut = int(len(text) * tokens / size * 0.9)
        if cut < 1:
            return ""
        head = text[:cut]
        text = (head.rsplit(" ", 1)[0] if " " in head else head).rstrip() + "…"
    return text if count(text) <= tokens else ""


def render(hits: list[Hit], session_id: str, titles: Callable[[str], str], now: datetime,
           budget: int, count: Callable[[str], int]) -> tuple[str, list[Hit]]:
    """The prompt section for ``hits`` within ``budget`` tokens, and the hits it shows
    (best first; one that does not fit is cut, down to :data:`MIN_HIT_TOKENS`)."""
    if not hits or budget <= 0:
        return "", []
    blocks: list[str] = []
    shown: list[Hit] = []
    used = count(RECALLED_HEADING) + 1
    for hit in hits:
        block = hit_block(hit, session_id, titles, now)
        cost = count(block) + 1
        if used + cost > budget:
            head_cost = count(hit_block(hit, session_id, titles, now, "")) + 1
            room = budget - used - head_cost
            if room < MIN_HIT_TOKENS:
                break
            block = hit_block(hit, session_id, titles, now, trimmed(hit.text, room, count))
            cost = count(block) + 1
        blocks.append(block)
        shown.append(hit)
        used += cost
    if not shown:
        return "", []
    return RECALLED_HEADING + "\n" + "\n".join(blocks), shown


def described(hit: Hit, titles: Callable[[str], str], **extra: Any) -> dict[str, Any]:
    """A hit as the trace and the inspector show it: the index's why, plus the session's
    title."""
    return {**hit.to_dict(), "title": titles(hit.session_id), **extra}


async def recall_for_message(recall: ArchiveRecall, session_id: str, message: str,
                             held: set[tuple[str, int]], *, k: int, min_coverage: float,
                             budget: int, count: Callable[[str], int],
                             now: datetime) -> Recalled:
    """Automatic recall for one message (see the module docstring)."""
    started = time.perf_counter()
    if k <= 0 or budget <= 0 or not message.strip():
        return Recalled()
    hits = await recall.search(message, sessions=searchable(recall, session_id), k=k,
                               exclude=held, now=now)
    strong = [h for h in hits if h.why.coverage >= min_coverage]
    text, shown = render(strong, session_id, recall.title, now, budget, count)
    considered = []
    for hit in hits:
        if hit in shown:
            reason = "shown"
        elif hit.why.coverage < min_coverage:
            reason = f"matches {hit.why.coverage:.0%} of the message (at least " \
                     f"{min_coverage:.0%} needed)"
        else:
            reason = "no room left"
        considered.append(described(hit, recall.title, shown=hit in shown, reason=reason))
    return Recalled(hits=shown, text=text, tokens=count(text) if text else 0,
                    considered=considered, ms=(time.perf_counter() - started) * 1000,
                    untrusted=[hit_reason(h, session_id, recall.title) for h in shown])


async def recall_for_tool(recall: ArchiveRecall, session_id: str, query: str,
                          held: set[tuple[str, int]], now: datetime) -> tuple[str, list[Hit]]:
    """What the ``recall`` tool observes for ``query``, and the hits behind it."""
    if not query.strip():
        return "The recall tool needs a query: what to look for.", []
    hits = await recall.search(query, sessions=searchable(recall, session_id), k=TOOL_HITS,
                               exclude=held, now=now)
    if not hits:
        return (f"Nothing in earlier conversations matches {query!r}. Answer from what you "
                "know, or say that you do not remember it."), []
    blocks = [hit_block(h, session_id, recall.title, now) for h in hits]
    return (f"Found {len(hits)} earlier turn{'s' if len(hits) > 1 else ''} for {query!r}:\n"
            + "\n".join(blocks)), hits
