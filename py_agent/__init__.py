"""py-agent: an on-device agent with tool retrieval and memory that never overflows.

The public API: :class:`Agent`, :func:`tool`, :class:`MemoryPolicy`,
:class:`InMemoryStore`; tools from a JSON Schema with :func:`schema_tool`, from a tool
server (MCP) with :func:`load_mcp_tools`, from sources that change on their own in a
:class:`Toolbox`; tools that use the agent through a :class:`RunContext`; tool
modules of your own with :func:`load_tools` (see
:mod:`py_agent.tools.modules`); test doubles live in :mod:`py_agent.testing`.
"""

from .agent import Agent
from .attachments import Attachment, AttachmentError
from .budget import MemoryPolicy, MemoryPolicyError
from .events import AgentEvent
from .kv import InMemoryKeyValueStore, KeyValueStore
from .mcp import ToolServer, ToolServerError, connect_mcp, load_mcp_tools, mcp_server
from .model import (InputNotSupportedError, LanguageModel, MediaSupport, ModelAbortedError,
                    ModelCallError, ModelError, ModelNetworkError, ModelSession,
                    ModelTimeoutError, ModelUnavailableError, Purpose, QuotaExceededError)
from .results import CompactionReport, MemoryState, RunResult, StepTrace
from .state import CompressionRecord, Fact, SessionState, Turn
from .store import InMemoryStore, StateConflictError, StorageError, Store, UnknownSessionError
from .tools import (InvalidToolSchemaError, LoadedTools, RetryableToolError, RunContext,
                    StaticSource, Tool, ToolArgumentError, Toolbox, ToolContext,
                    ToolCrashedError, ToolModuleError, ToolOrigin, ToolSource, ToolTimeoutError,
                    collect_tools, load_tool_modules, load_tools, schema_tool, tool)
from .transfer import SessionBundle, SessionImportError
from .turn.approval import ApprovalRequest
from .turn.policies import StepPolicy, ToolPolicy

__all__ = [
    "Agent", "AgentEvent", "ApprovalRequest", "Attachment", "AttachmentError", "CompactionReport", "CompressionRecord", "Fact",
    "InMemoryKeyValueStore", "InMemoryStore", "InputNotSupportedError", "MediaSupport", "InvalidToolSchemaError", "KeyValueStore",
    "LanguageModel",
    "LoadedTools", "MemoryPolicy", "MemoryPolicyError", "MemoryState", "ModelAbortedError",
    "ModelCallError", "ModelError", "ModelNetworkError", "ModelSession", "ModelTimeoutError",
    "ModelUnavailableError", "Purpose", "QuotaExceededError", "RetryableToolError", "RunResult",
    "RunContext", "SessionBundle", "SessionImportError", "SessionState", "StateConflictError",
    "StaticSource", "StepPolicy", "StepTrace", "StorageError", "Store", "Tool",
    "ToolArgumentError", "Toolbox", "ToolContext", "ToolCrashedError", "ToolModuleError",
    "ToolOrigin", "ToolPolicy", "ToolSource", "ToolTimeoutError", "Turn", "ToolServer",
    "ToolServerError", "UnknownSessionError", "collect_tools", "connect_mcp",
    "load_mcp_tools", "load_tool_modules", "load_tools", "mcp_server", "schema_tool", "tool",
]
__version__ = "0.1.0"
