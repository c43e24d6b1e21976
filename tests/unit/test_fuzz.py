"""A sample of the fuzz cases (bench/fuzz_agent.py runs 10,000): hostile model output,
misbehaving models, tools and storage never escape, hang, lose or duplicate a turn,
leave a session that cannot be read and exported, or an archived turn out of the recall
index a reload loads."""

from __future__ import annotations

import logging

from tests.unit.fuzz_agent import run_cases


def test_a_sample_of_fuzz_cases_loses_nothing(caplog):
    caplog.set_level(logging.CRITICAL)
    report = run_cases(range(250))
    assert report.failures == []
    assert (report.escapes, report.hangs, report.unreadable, report.lost,
            report.duplicates, report.unindexed) == (0, 0, 0, 0, 0, 0)
    # The sample really is hostile: every way a turn can end occurs in it.
    assert {"answered", "incomplete", "error", "stopped"} <= set(report.statuses)
    assert report.turns > 500
