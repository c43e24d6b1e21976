"""``python -m py_agent COMMAND``, the same as ``py-agent COMMAND``: see :mod:`py_agent.terminal.commands`."""

import sys

from .terminal.commands import main

sys.exit(main())
