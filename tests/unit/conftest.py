"""Unit-test fixtures; the helpers themselves live in tests/unit/support.py."""

from tests.unit.support import event_loop_per_test, make_agent  # noqa: F401  (fixtures)
