# The tools panel: every tool the agent has (from the worker's `tools` request, after
# boot), with its signature and description, grouped by where it comes from, each keyed
# by its origin (data-origin: kind, source, name there), and which of them the retriever
# offered the model for the running or last turn. Tool modules the worker could not load are
# named in a notice above the chat (the other tools work).
from ui.app import on, state, turn_of
from ui.dom import by_id, clear, label, make, plural
from ui.link import request

panel = by_id("tools-panel")
tools_list = by_id("tools-list")
tools_count = by_id("tools-count")
tool_errors = by_id("tool-errors")


def show_tool_errors(errors):
    clear(tool_errors)
    for error in errors:
        make("p", "tool-error", error.get("message") or "a tool module failed to load",
             attrs={"data-module": error.get("module") or ""}, parent=tool_errors)
    if errors:
        make("p", "tool-error-note", "The agent works without %s; fix it and reload the page."
             % ("it" if len(errors) == 1 else "them"), parent=tool_errors)
    tool_errors.hidden = not errors


def group_of(tool):
    """The heading a tool is listed under, from where it comes from (its origin's kind: a
    tool server is never shown as this page): (key, title), or None for the app's own.
    A tool server's tools are grouped by its key (its address), never by the name it
    gives itself."""
    origin = tool.get("origin") or {}
    kind = origin.get("kind") or tool.get("source") or ""
    if kind == "page":
        return ("page", "From this page")
    if kind == "mcp":
        server = label(tool.get("server") or tool.get("url") or "a tool server")
        return (origin.get("source") or "mcp:" + (tool.get("url") or server),
                "From the tool server “%s”" % server)
    return None


def identity_of(tool):
    """What a decision about a tool is kept under (ToolOrigin.identity): its kind, its
    source and its name there, never its shown name alone."""
    identity = tool.get("identity") or ["", "", tool.get("name", "")]
    return "|".join(str(part) for part in identity)


def render_tools(tools):
    clear(tools_list)
    group = None
    for tool in tools:
        name = tool.get("name", "")
        server = label(tool.get("server") or "")
        heading = group_of(tool)
        key = heading[0] if heading else None
        if key != group:   # a tool server's (or the page's) tools, under its name
            group = key
            if heading:
                make("li", "tool-group", heading[1],
                     attrs={"data-testid": "tool-group", "data-server": heading[0]
                            if heading[0] == "page" else server, "data-source": heading[0]},
                     parent=tools_list)
        item = make("li", "tool", attrs={"data-testid": "tool", "data-tool-name": name,
                                         "data-origin": identity_of(tool),
                                         "data-pinned": "true" if tool.get("pinned") else "false",
                                         "data-server": server,
                                         "data-confirm": "true" if tool.get("confirm") else "false"},
                    parent=tools_list)
        head = make("div", "tool-head", parent=item)
        make("code", "tool-signature", tool.get("signature") or name + "()", parent=head)
        if tool.get("pinned"):
            make("span", "tool-badge", "always offered", parent=head)
        if tool.get("confirm"):
            make("span", "tool-badge asks", "asks first", parent=head)
        make("p", "tool-description", tool.get("description") or "", parent=item)
    tools_count.textContent = "(%d)" % len(tools)
    panel.setAttribute("data-state", "ready")
    panel.setAttribute("data-count", str(len(tools)))


def load_tools(details=None):
    if details is not None:
        show_tool_errors(details.get("tool_errors") or [])

    def done(ok, value):
        if ok and isinstance(value, list):
            render_tools(value)
        else:
            clear(tools_list)
            message = value.get("message", "") if isinstance(value, dict) else str(value)
            make("li", "tool-error", "Could not list the tools: %s" % message,
                 parent=tools_list)
            panel.setAttribute("data-state", "error")
    request("tools", done)


def mark_offered(names):
    """Highlight the tools the retriever offered for this turn."""
    for item in tools_list.querySelectorAll("[data-tool-name]"):
        offered = item.getAttribute("data-tool-name") in names
        item.setAttribute("data-offered", "true" if offered else "false")
    panel.setAttribute("data-offered", plural(len(names), "tool"))


def on_agent_event(event):
    if event.get("type") == "tools_changed":   # a page tool or a tool server's tools
        tools = (event.get("data") or {}).get("tools")
        if isinstance(tools, list):
            render_tools(tools)
        else:
            load_tools()
        return
    if event.get("type") != "tools_retrieved" or turn_of(event) is None:
        return
    data = event.get("data") or {}
    mark_offered([tool.get("name", "") for tool in data.get("tools") or []])


def start():
    """Called once the page is painted (main.py): catch up if the agent is up already."""
    on("booted", load_tools)
    if state["booted"]:
        load_tools(state.get("boot_details"))
    on("agent_event", on_agent_event)
    on("session_opening", lambda session_id: mark_offered([]))
