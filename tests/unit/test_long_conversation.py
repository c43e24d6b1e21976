import statistics

from tests.unit.support import run
from tests.unit.long_chat import long_chat


def test_a_320_turn_conversation_never_overflows_and_keeps_everything():
    report = run(long_chat(turns=320))
    # No prompt ever overflowed the 9,216-token window.
    assert report.quota_errors == 0 and report.overflow_events == 0
    assert report.max_fill < 0.9
    # Every turn is in the archive.
    assert report.archived == 320
    # Compaction kept up, and prompt size stays flat once it starts.
    assert report.compactions >= 10 and report.failed == 0
    later = [report.tokens_per_turn[t] for t in range(100, 321)]
    middle = [report.tokens_per_turn[t] for t in range(60, 100)]
    assert max(later) < report.window * 0.75
    assert statistics.mean(later) < statistics.mean(middle) * 1.35
    # A preference from turn 1 still shapes the prompt at turn 320.
    assert "[preference] The user is vegetarian" in report.final_prompt
    print(f"\nmax fill {report.max_fill:.3f}; tokens/turn at 10,100,300: "
          f"{report.tokens_per_turn[10]}, {report.tokens_per_turn[100]}, "
          f"{report.tokens_per_turn[300]}; compactions {report.compactions}; "
          f"compaction calls per 100 turns {report.compaction_calls * 100 / report.turns:.1f}")
