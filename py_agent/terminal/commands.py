"""``py-agent``, the installed command (pyproject.toml's ``[project.scripts]``), and
``python -m py_agent``: ``chat`` and ``sessions`` (:mod:`py_agent.terminal.cli`), ``replay``
(:mod:`py_agent.replay`, with its own command line).

A module of its own so that neither of the two imports the other: replay's command line
is handed its arguments before the chat's parser sees them.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["replay"]:
        from ..replay import main as replay
        return replay(argv[1:])
    from .cli import main as chat_and_sessions
    return chat_and_sessions(argv)
