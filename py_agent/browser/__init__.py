"""Browser glue: the only part of py_agent that imports ``js``/``pyodide``.

CPython never imports the glue itself (``main``, imported on first use); what it
wires together (the RPC model and store, the host, the backend switch, the fetch
transport with its JavaScript functions injected) is plain Python tested there.
"""

__all__ = ["main"]


def __getattr__(name: str):
    if name == "main":   # the worker's entry point: imports pyodide
        from .main import main
        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
