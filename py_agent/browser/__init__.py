"""Browser glue: the only part of py_agent that imports ``js``/``pyodide``.

The agent worker's entry point is :func:`py_agent.browser.main.main` (the tool worker's,
:func:`py_agent.browser.tool_worker.main`); CPython never imports those. What they wire
together (the RPC model and store, the host, the backend switch, the fetch transport
with its JavaScript functions injected) is plain Python tested there.
"""
