"""Tools: what a tool is, and the doors through which tools reach an agent.

- ``definition``: :class:`Tool` and :class:`ToolParam`, the ``@tool`` decorator, and how a
  model's ``toolInput`` becomes arguments (or an error the model reads);
- ``origin``: :class:`ToolOrigin`, where a tool comes from, set when it is made;
- ``run_context``: :class:`RunContext`, what a tool that asks for it gets with each call;
- ``output``: :class:`ToolOutput`, a result that holds pictures or sounds besides text;
- ``errors``: what can go wrong calling a tool, as types the tool runner tells apart;
- ``schema``: tools from a JSON Schema (a name, a description, a parameters schema and a
  callable), the door for tools not written as typed Python functions;
- ``remote``: tools that live elsewhere (a tool server's, a page's), and their results;
- ``modules``: tool modules, an app's tools in Python files or packages, loaded by path
  (the page's worker and the terminal both load them through here);
- ``toolbox``: :class:`Toolbox`, the agent's tool sources, kept in step.
"""

from .definition import Tool, ToolParam, tool
from .errors import (RetryableToolError, ToolArgumentError, ToolCrashedError, ToolError,
                     ToolTimeoutError)
from .modules import (LoadedTools, ToolContext, ToolModuleError, collect_tools,
                      load_tool_modules, load_tools)
from .origin import OriginKind, ToolOrigin, Trust
from .output import ToolOutput, media_note
from .run_context import MemoryAccess, ModelAccess, RunContext
from .schema import InvalidToolSchemaError, schema_tool
from .toolbox import StaticSource, ToolSource, Toolbox, ToolboxSnapshot

__all__ = ["InvalidToolSchemaError", "LoadedTools", "MemoryAccess", "ModelAccess",
           "OriginKind", "RetryableToolError", "RunContext", "StaticSource", "Tool",
           "ToolArgumentError", "ToolContext", "ToolCrashedError", "ToolError",
           "ToolModuleError", "ToolOrigin", "ToolParam", "ToolSource", "ToolTimeoutError",
           "Toolbox", "ToolboxSnapshot", "ToolOutput", "Trust", "collect_tools", "load_tool_modules",
           "load_tools", "media_note", "schema_tool", "tool"]
