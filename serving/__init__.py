"""serve.py's helpers: the py_agent wheel (wheel), the tool modules (tool_modules), and
what they share (common). Part of the app, not of the library: never in the wheel."""
