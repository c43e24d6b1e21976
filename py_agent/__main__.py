"""``python -m py_agent COMMAND``, the same as ``py-agent COMMAND``: see :mod:`py_agent.commands`."""

import sys

from .commands import main

sys.exit(main())
