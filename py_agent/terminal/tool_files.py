"""The ``--tools`` modules a terminal user names, loaded through the page's own door.

Shared by the command line (:mod:`py_agent.terminal.cli`, which checks the paths before
anything starts) and the chat loop (:mod:`py_agent.terminal.chat`, which loads them
with the chat's key-value store). In a terminal the user named these modules on
purpose, so any that cannot be used is an error, not a warning.
"""

from __future__ import annotations

from ..kv import KeyValueStore
from ..tools.modules import ToolContext, load_tool_modules
from ..tools.definition import Tool


class ToolFileError(Exception):
    """``--tools`` modules that cannot be loaded; the message says which and why."""


def load_tool_files(paths: list[str], kv: KeyValueStore | None = None) -> list[Tool]:
    """The tools of each ``--tools`` module (a .py file or a package folder), loaded
    through the same door as the page's (:func:`py_agent.tools.modules.load_tool_modules`).

    ``kv`` is the tools' own key-value store (the chat's SQLite database). In a terminal
    the user named these modules on purpose, so any that cannot be used is an error.
    """
    loaded = load_tool_modules(paths, ToolContext(kv=kv) if kv is not None else None)
    if loaded.errors:
        raise ToolFileError("\n".join(f"--tools: {error}" for error in loaded.errors))
    return loaded.tools
