"""What one memory pass gathered, and the pure rule that applies it to a session.

A pass (:mod:`py_agent.memory.passes`) gathers a :class:`Pass`: the turns it
compacted, the facts after consolidation and folds, the summary (or None when the
summarizer failed and no fallback was made), and the
:class:`~py_agent.state.CompressionRecord` with every input and reply.
:func:`apply_pass` turns the session's state *as it is now* into the new one:
turns that arrived meanwhile stay, the counters move, and the degraded notice is
set or cleared. It reads nothing else and changes none of its inputs, so every
rule of folds, failure counts and degraded state can be tested on plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..state import CompressionRecord, Fact, FactChange, SessionState, Turn, now_ms


@dataclass
class Pass:
    """What one pass gathers before it commits."""

    record: CompressionRecord
    chosen: list[Turn]            # the turns to compact (none for a facts refresh)
    facts: list[Fact]
    next_fact_id: int
    facts_through: int
    last_turn_id: int
    changes: list[FactChange] = field(default_factory=list)
    summary: str | None = None
    summary_error: str | None = None
    summary_asked: bool = False
    # The user profile: the facts of it the extractor saw, and the turn that said each
    # new fact (see py_agent.memory.profile_rules).
    profile_shown: list[Fact] = field(default_factory=list)
    stated: dict[str, int] = field(default_factory=dict)
    # The summary's marked part (None: unchanged) and whose words it holds.
    untrusted_summary: str | None = None
    untrusted_sources: list[str] = field(default_factory=list)


class StaleSummaryError(Exception):
    """The session's summary is no longer the one the pass started from: another tab or
    process compacted it meanwhile, so this pass must not be applied."""


def apply_pass(current: SessionState, work: Pass, failures: int, *, asked: bool,
               at: float | None = None) -> SessionState:
    """The session after ``work``, applied to ``current`` (the state as it is now).

    ``failures``: summaries failed in a row, this one included; ``asked``: the
    summarizer was asked (or stopped) in this pass, so a fallback says why in its
    words. A summary (model-made or fallback) replaces exactly the compacted turns;
    a failed compaction counts as failed; the degraded notice follows the fallback.
    Raises :class:`StaleSummaryError` if ``current`` was compacted by someone else.
    """
    record = work.record
    if current.summary != record.previous_summary or \
            current.untrusted_summary != record.previous_untrusted_summary:
        raise StaleSummaryError("another tab or process compacted this session meanwhile")
    ok = work.summary is not None
    compaction = record.kind == "compaction"
    updated = current.copy()
    updated.facts, updated.next_fact_id = work.facts, work.next_fact_id
    updated.facts_through = max(current.facts_through, work.facts_through)
    if ok:
        done = set(record.turn_ids)
        updated.recent_turns = [t for t in current.recent_turns if t.id not in done]
        updated.summary = work.summary or ""
        if work.untrusted_summary is not None:
            updated.untrusted_summary = work.untrusted_summary
            updated.untrusted_sources = list(work.untrusted_sources)
        updated.compactions += compaction
    elif compaction:
        updated.failed_compactions += 1
    if compaction:
        updated.consecutive_failures = failures if record.fallback or not ok else 0
        if record.fallback:  # say why, in the model's words when it was asked
            updated.degraded = (degraded_reason(record, failures)
                                if asked or not current.degraded else current.degraded)
        elif ok:
            updated.degraded = ""
    updated.updated_at = now_ms() if at is None else at
    return updated


def degraded_reason(record: CompressionRecord, failures: int) -> str:
    """What the page says about a session whose older turns were kept without the model."""
    why = record.error or "the summarizer failed"
    head = (f"The summarizer failed {failures} time(s) in a row (last: {why})" if failures
            else f"The summarizer could not keep up ({why})")
    return (f"{head}, so older turns are kept as the user's own words, shortened, without tool "
            "output, until it works again. Everything is still in the archive.")
