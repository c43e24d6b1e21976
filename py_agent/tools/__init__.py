"""Tools: what a tool is, and the doors through which tools reach an agent.

- ``definition``: :class:`Tool` and :class:`ToolParam`, the ``@tool`` decorator, and how a
  model's ``toolInput`` becomes arguments (or an error the model reads);
- ``errors``: what can go wrong calling a tool, as types the tool runner tells apart;
- ``schema``: tools from a JSON Schema (a name, a description, a parameters schema and a
  callable), the door for tools not written as typed Python functions;
- ``modules``: tool modules, an app's tools in Python files or packages, loaded by path
  (the page's worker and the terminal both load them through here).
"""

from .definition import Tool, ToolParam, tool
from .errors import (RetryableToolError, ToolArgumentError, ToolCrashedError, ToolError,
                     ToolTimeoutError)
from .modules import (LoadedTools, ToolContext, ToolModuleError, collect_tools,
                      load_tool_modules, load_tools)
from .schema import InvalidToolSchemaError, schema_tool

__all__ = ["InvalidToolSchemaError", "LoadedTools", "RetryableToolError", "Tool",
           "ToolArgumentError", "ToolContext", "ToolCrashedError", "ToolError",
           "ToolModuleError", "ToolParam", "ToolTimeoutError", "collect_tools",
           "load_tool_modules", "load_tools", "schema_tool", "tool"]
