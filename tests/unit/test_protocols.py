"""docs/protocols.md against the code: every message type and method name that a channel's
code sends or dispatches on is in the catalogue, and everything the catalogue lists is
still sent or handled somewhere.

The names come from the source itself: dispatch tables (``AgentHost``'s handlers, the LLM
host's and the engine worker's ``METHODS``, ``IdbStore``'s method lists), the branches
that route incoming messages (``kind == "reply"``, ``message.type === 'reply'``), and the
messages built for sending (``{"type": "call", ...}``, ``post({type: 'boot', ...})``).
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

from py_agent.events import EventType

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocols.md"

PAGE_AGENT = "Page ↔ agent worker"
LLM_HOST = "Agent worker ↔ LLM host"
TOOL_WORKER = "Agent worker ↔ tool worker"
ENGINE = "Page ↔ engine worker"
IDB = "Agent worker ↔ IndexedDB"

_NAME = r"([A-Za-z_][\w-]*)"


def source(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def found(path: str, *patterns: str) -> set[str]:
    """Every first group of ``patterns`` in the file at ``path``."""
    text = source(path)
    return {match for pattern in patterns for match in re.findall(pattern, text, re.M)}


def catalogue() -> dict[tuple[str, str], set[str]]:
    """(channel, table) -> the names in the first column of that table, where a table is
    named by the ``###`` heading above it, or by its first column's title ("message",
    "method", "event") when the channel has one table of that kind."""
    tables: dict[tuple[str, str], set[str]] = {}
    channel = sub = ""
    current: set[str] | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            channel, sub, current = line[3:].strip(), "", None
        elif line.startswith("### "):
            sub, current = line[4:].strip(), None
        elif line.startswith("| ") and current is None:
            column = line.split("|")[1].strip()
            if column in ("message", "method", "event"):
                current = tables.setdefault((channel, sub or column), set())
        elif line.startswith("|") and current is not None:
            name = re.match(r"\|\s*`([^`]+)`\s*\|", line)
            if name:
                current.add(name.group(1))
        elif not line.startswith("|"):
            current = None
    return tables


def section(channel: str) -> str:
    """The text of a channel's ``##`` section."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(channel)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/protocols.md has no section '## {channel}'"
    return match.group(1)


def method_table(path: str) -> set[str]:
    """The keys of a JavaScript file's ``const METHODS = {...}`` dispatch table."""
    block = re.search(r"^const METHODS = \{\n(.*?)^\};", source(path), re.S | re.M)
    assert block, f"{path} has no METHODS table"
    return set(re.findall(r"^  (?:async )?(\w+)\(", block.group(1), re.M))


def js_list(path: str, name: str) -> set[str]:
    """The strings of ``export const NAME = Object.freeze([...])``."""
    block = re.search(rf"const {name} = Object\.freeze\(\[(.*?)\]\)", source(path), re.S)
    assert block, f"{path} has no {name}"
    return set(re.findall(r"'(\w+)'", block.group(1)))


def agent_host_requests() -> set[str]:
    """The request types ``AgentHost`` dispatches on (its handler table)."""
    for node in ast.walk(ast.parse(source("py_agent/host.py"))):
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "self._handlers":
            assert isinstance(node.value, ast.Dict)
            return {key.value for key in node.value.keys if isinstance(key, ast.Constant)}
    raise AssertionError("py_agent/host.py has no handler table")


def compared(path: str, function: str, variable: str = "kind") -> set[str]:
    """The strings ``variable`` is compared with in ``function`` of the file at ``path``:
    the message types that function routes."""
    tree = ast.parse(source(path))
    body = next((node for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef) and node.name == function), None)
    assert body is not None, f"{path} has no function {function}"
    return {comparator.value for node in ast.walk(body) if isinstance(node, ast.Compare)
            and ast.unparse(node.left) == variable
            for comparator in node.comparators if isinstance(comparator, ast.Constant)}


# ------------------------------------------------------------------ the catalogue's shape

def test_the_catalogue_has_every_channel_and_its_tables():
    tables = catalogue()
    for key in [(PAGE_AGENT, "Requests"), (PAGE_AGENT, "Messages from the worker"),
                (PAGE_AGENT, "Agent events"), (LLM_HOST, "Messages"), (LLM_HOST, "Methods"),
                (TOOL_WORKER, "message"), (ENGINE, "Messages"), (ENGINE, "Methods"),
                (IDB, "method")]:
        assert tables.get(key), f"docs/protocols.md lists nothing under {key}"
    for channel in (PAGE_AGENT, LLM_HOST, TOOL_WORKER, ENGINE, IDB):
        text = section(channel)
        for part in ("**Errors.**", "**Timeouts"):
            assert part in text, f"'{channel}' does not say {part}"


def test_every_message_row_names_its_direction_and_reply():
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines()
            if re.match(r"\|\s*`[^`]+`\s*\|", line)]
    assert rows
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 4 and all(cells), f"a row without its 4 cells: {row}"
        assert "→" in cells[1], f"a row without a direction: {row}"


# ------------------------------------------------------------------ page ↔ agent worker

def module_requests(path: str) -> set[str]:
    """The strings of a module's ``REQUESTS = (...)`` or ``REQUEST = "..."``: the page
    requests it serves before BackendSwitch sees them (py_agent/browser/main.py)."""
    block = re.search(r"^REQUESTS? = (\(.*?\)|\"\w+\")", source(path), re.S | re.M)
    assert block, f"{path} has no REQUESTS"
    return set(re.findall(r'"(\w+)"', block.group(1)))


def routed(*parts: str) -> set[str]:
    """The message types the worker's one routing table sends to ``parts``."""
    from py_agent.browser.routes import ROUTES
    return {route.kind for route in ROUTES if route.to in parts}


def test_the_routing_table_is_the_handlers_own():
    """py_agent/browser/routes.py names each message once: the agent's requests are
    AgentHost's handler table, the switch's own are those BackendSwitch.handle answers,
    the tool servers' and the approvals' those their modules serve, and only the
    switch's routes wait while the model switches."""
    from py_agent.browser.routes import AGENT_REQUESTS, ROUTES, SWITCH
    kinds = [route.kind for route in ROUTES]
    assert len(kinds) == len(set(kinds))
    assert set(AGENT_REQUESTS) == agent_host_requests()
    assert routed(SWITCH) == set(AGENT_REQUESTS) | compared("py_agent/browser/backends.py",
                                                            "handle")
    assert routed("tool-servers") == module_requests("py_agent/browser/tool_servers.py")
    assert routed("approvals") == module_requests("py_agent/browser/approvals.py")
    assert {r.kind for r in ROUTES if r.wait_for_switch} == routed(SWITCH)
    assert "approve" not in routed(SWITCH)   # an answer never waits behind a switch


def test_page_requests_are_the_ones_the_worker_handles():
    handled = routed("approvals", "tool-servers", "switch")
    sent = (found("web/agent.js", r"this\._request\('(\w+)'")
            | {name for path in sorted((ROOT / "web" / "ui").glob("*.py"))
               for name in re.findall(r"\brequest\(\"(\w+)\"", path.read_text(encoding="utf-8"))})
    assert "run" in sent and "use_model" in sent       # the scan finds both pages' requests
    assert sent - handled == set(), "requests the page sends that the worker does not handle"
    assert catalogue()[(PAGE_AGENT, "Requests")] == handled


def test_every_message_on_the_agent_workers_port_is_listed():
    """The agent worker's port carries three channels: the page's, the LLM host's and the
    page tools host's."""
    not_nested = r'(?<!"event": \{)"type": "([\w-]+)"'
    worker_sends = (found("py_agent/host.py", not_nested)
                    | found("py_agent/browser/backends.py", not_nested)
                    | found("py_agent/browser/main.py", not_nested)
                    | found("py_agent/browser/page_tools.py", not_nested)
                    | found("py_agent/browser/approvals.py", not_nested)
                    | found("worker/agent_worker.js", r"post\(\{type: '([\w-]+)'", not_nested)
                    | found("worker/boot_snapshot.js", r"post\(\{type: '([\w-]+)'"))
    worker_handles = routed("llm", "page-tools")
    llm_messages = re.search(r"LLM_MESSAGES = \(([^)]*)\)", source("web/ui/link.py"))
    assert llm_messages
    page_handles = (found("web/ui/link.py", r'kind == "([\w-]+)"')
                    | set(re.findall(r'"([\w-]+)"', llm_messages.group(1)))
                    | found("web/agent.js", r"message\.type === '([\w-]+)'")
                    | found("web/llm_host.js", r"msg\.type === '([\w-]+)'"))
    page_sends = (found("web/llm_host.js", r"type: '(llm-[\w-]+)'")
                  | found("web/page_tools.js", r"type: '(page-tools-[\w-]+)'"))
    worker_handles |= found("py_agent/browser/page_tools.py", r'kind [!=]= "([\w-]+)"')
    assert worker_handles == found("py_agent/browser/page_tools.py", r'kind [!=]= "([\w-]+)"') \
        | found("py_agent/browser/main.py", r'\.get\("type"\) [!=]= "([\w-]+)"')
    in_code = worker_sends | worker_handles | page_handles | page_sends
    assert {"reply", "boot", "llm", "llm-result"} <= in_code   # the scan sees both channels
    tables = catalogue()
    listed = tables[(PAGE_AGENT, "Messages from the worker")] | tables[(LLM_HOST, "Messages")] \
        | tables[("Agent worker ↔ page tools host", "Page tools messages")]
    assert in_code == listed


def test_agent_events_are_listed():
    in_code = set(typing.get_args(EventType)) | {
        name for path in ("py_agent/browser/backends.py", "py_agent/browser/main.py",
                          "py_agent/browser/tool_servers.py", "py_agent/browser/approvals.py")
        for name in found(path, r'"event": \{"type": "(\w+)"')}
    assert {"model", "turn_started", "approval_withdrawn"} <= in_code
    assert catalogue()[(PAGE_AGENT, "Agent events")] == in_code


# ------------------------------------------------------------------ agent worker ↔ LLM host

def test_llm_host_methods_are_listed_and_every_call_is_one():
    methods = method_table("web/llm_host.js")
    called = (found("py_agent/rpc.py", r'\.call\("(\w+)"', r'transport\("(\w+)"')
              | found("py_agent/browser/page_model.py", r'\.call\("(\w+)"'))
    assert {"prompt", "abort", "info"} <= called
    assert called - methods == set(), "methods the worker calls that the host does not have"
    assert catalogue()[(LLM_HOST, "Methods")] == methods


def test_llm_host_events_are_described():
    events = (found("web/llm_host.js", r"_emit\('(\w+)'")
              | found("py_agent/browser/main.py", r'"event": "(\w+)"'))
    assert events == {"chunk", "downloadprogress", "contextoverflow"}
    text = section(LLM_HOST)
    assert [name for name in sorted(events) if f"'{name}'" not in text
            and f"`{name}`" not in text] == []


# ------------------------------------------------------------------ agent worker ↔ tool worker

def test_tool_worker_messages_are_listed():
    in_code = (compared("py_agent/turn/remote_tools.py", "_on_message")
               | found("py_agent/turn/remote_tools.py", r'"type": "(\w+)"')
               | found("py_agent/browser/tool_worker.py", r'\.get\("type"\) == "(\w+)"',
                       r'on_message\(\{"type": "(\w+)"')
               | found("worker/agent_worker.js", r"post\(\{type: '([\w-]+)'"))
    assert {"call", "result"} <= in_code
    assert catalogue()[(TOOL_WORKER, "message")] == in_code


# ------------------------------------------------------------------ page ↔ engine worker

def test_engine_worker_messages_and_methods_are_listed():
    client, worker = "web/page_model/language_model.js", "web/page_model/engine_worker.js"
    messages = (found(client, r"postMessage\(\{ type: '(\w+)'", r"message\?\.type === '(\w+)'")
                | found(worker, r"post\(\{ type: '(\w+)'", r"message\?\.type [!=]== '(\w+)'"))
    assert {"call", "result", "abort", "event"} <= messages
    tables = catalogue()
    assert tables[(ENGINE, "Messages")] == messages
    methods = method_table(worker)
    called = found(client, r"call\('(\w+)'")
    assert {"load", "prompt", "unload"} <= called
    assert called - methods == set(), "methods the page calls that the engine worker lacks"
    assert tables[(ENGINE, "Methods")] == methods
    events = found(worker, r"event: '(\w+)'")
    assert events == {"chunk", "downloadprogress", "contextoverflow"}
    assert [name for name in sorted(events) if f"'{name}'" not in section(ENGINE)] == []


# ------------------------------------------------------------------ agent worker ↔ IndexedDB

def test_indexeddb_methods_are_listed_and_defined():
    path = "worker/idb_store.js"
    methods = js_list(path, "STORE_METHODS") | js_list(path, "KV_METHODS")
    defined = found(path, r"^  async (\w+)\(")
    assert methods - defined == set(), "methods listed for RPC that IdbStore does not define"
    called = found("py_agent/rpc.py", r'_call\("(\w+)"') | found("py_agent/kv.py", r'_call\("(\w+)"')
    assert {"commitTurn", "kvList"} <= called
    assert called - methods == set(), "calls the Python side makes that IdbStore does not offer"
    assert catalogue()[(IDB, "method")] == methods


# ------------------------------------------------------------------ agent worker ↔ page tools host

def test_page_tools_messages_are_listed():
    worker_sends = found("py_agent/browser/page_tools.py", r'"type": "([\w-]+)"')
    worker_handles = found("py_agent/browser/page_tools.py", r'kind [!=]= "([\w-]+)"')
    page_sends = found("web/page_tools.js", r"type: '(page-tools[\w-]*)'")
    page_handles = found("web/page_tools.js", r"message\.type !== '([\w-]+)'")
    in_code = worker_sends | worker_handles | page_sends | page_handles
    assert {"page-tools", "page-tools-result", "page-tools-event"} == in_code
    assert catalogue()[("Agent worker ↔ page tools host", "Page tools messages")] == in_code
    ui = re.search(r"PAGE_TOOLS_MESSAGES = \(([^)]*)\)", source("web/ui/link.py"))
    assert ui and set(re.findall(r'"([\w-]+)"', ui.group(1))) == worker_sends


# ------------------------------------------------------------------ agent worker ↔ MCP client

MCP_CLIENT = "Agent worker ↔ MCP client"


def test_mcp_client_methods_and_failure_facts_are_listed():
    import dataclasses

    from py_agent.mcp.failures import FailureFacts

    text = section(MCP_CLIENT)
    for part in ("**Errors.**", "**Timeouts"):
        assert part in text
    path = "worker/mcp_client.js"
    defined = found(path, r"^export async function (\w+)\(", r"^    (?:async )?(\w+)\([^)]*\) \{")
    assert catalogue()[(MCP_CLIENT, "method")] == defined
    called = found("py_agent/browser/tool_servers.py", r"\.handle\.(\w+)\(", r"_module\.(\w+)\(")
    assert called - {"importModule"} <= defined and {"connect", "callTool"} <= called
    facts = set(re.findall(r"^\| `(\w+)` \| mcp_client\.js → Python \|", text, re.M))
    assert facts == {f.name for f in dataclasses.fields(FailureFacts)}
