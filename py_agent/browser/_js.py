"""JS values as Python, for the browser glue (the agent's worker and the tool worker)."""

from __future__ import annotations

from typing import Any


def is_null(value: Any) -> bool:
    """True for None and JS null/undefined (Pyodide's ``jsnull`` and undefined)."""
    return value is None or type(value).__name__ in ("JsNull", "JsUndefined")


def to_py(value: Any) -> Any:
    """A JS value as Python (deeply); JS null and undefined become None."""
    if is_null(value):
        return None
    return value.to_py() if hasattr(value, "to_py") else value


def object_from_entries() -> Any:
    """``Object.fromEntries``: what ``to_js`` makes of a dict, as a plain JS object."""
    import js  # type: ignore[import-not-found]

    return js.Object.fromEntries
