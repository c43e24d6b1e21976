"""``python -m py_agent.replay``: see :mod:`py_agent.replay.harness`."""

import sys

from .harness import main

sys.exit(main())
