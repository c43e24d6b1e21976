"""``python -m py_agent COMMAND``: see :mod:`py_agent.cli`."""

import sys

from .cli import main

sys.exit(main())
