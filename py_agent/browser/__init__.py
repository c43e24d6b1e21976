"""Browser glue: the only part of py_agent that imports ``js``/``pyodide``.

CPython never imports this subpackage; everything it wires together (the RPC
model and store, the host) is plain Python tested there.
"""

from .main import main

__all__ = ["main"]
