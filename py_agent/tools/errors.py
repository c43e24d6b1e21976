"""What can go wrong when a tool is called, as types the tool runner tells apart.

A tool raises :class:`RetryableToolError` for a transient failure worth another try;
everything else a tool raises is reported to the model as it is.
"""

from __future__ import annotations


class ToolError(Exception):
    """Base class for errors raised while calling a tool.

    ``raised_as`` is what an observation calls it ("<tool> raised <raised_as>: ..."):
    the class name of what a tool raised elsewhere (in the tool worker, in the page), or
    a phrase ("an error"); empty: the exception's own class name. It is only ever shown,
    never compared: what kind of failure it was is the exception's type.
    """

    raised_as: str = ""


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
