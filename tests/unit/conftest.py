"""Unit-test fixtures; the helpers themselves live in tests/unit/support.py."""

from tests.unit.support import event_loop_per_test, make_agent  # noqa: F401  (fixtures)

import os

# The default agent loads USE-m3 in the background where the `embed` extra is installed
# (the test venv has it): most tests keep to the lexical signals, deterministic and
# without 80 MB per worker; the embedder's own tests pass theirs explicitly.
os.environ.setdefault("PY_AGENT_EMBEDDER", "off")
