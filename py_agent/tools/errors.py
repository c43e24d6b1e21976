"""What can go wrong when a tool is called, as types the tool runner tells apart.

A tool raises :class:`RetryableToolError` for a transient failure worth another try;
everything else a tool raises is reported to the model as it is.
"""

from __future__ import annotations


class ToolError(Exception):
    """Base class for errors raised while calling a tool."""


class ToolArgumentError(ToolError, ValueError):
    """The model's ``toolInput`` does not match the tool's parameters."""


class RetryableToolError(ToolError):
    """Raise this from a tool for a transient failure worth trying again."""


class ToolTimeoutError(RetryableToolError, TimeoutError):
    """The tool did not finish within its time limit."""


class ToolCrashedError(ToolError):
    """The tool raised something no tool should: ``SystemExit``, ``KeyboardInterrupt``,
    or ``CancelledError`` without being cancelled. Contained as an observation; the
    original exception is the ``__cause__``."""
