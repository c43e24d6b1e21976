# Tool servers (MCP) in the tools panel: connect one (address, optional token, trusted or
# not), see each server's state (connected, unreachable, refused, failed: and why), and
# disconnect it. The servers the user connected are remembered in this browser
# (localStorage) and connected again at each start; those serve.py --mcp names connect
# by themselves. The worker does the connecting (py_agent/browser/tool_servers.py).
import json

from pyscript import window

from ui.app import on, state
from ui.dom import by_id, clear, listen, make
from ui.link import request

STORAGE_KEY = "py-agent.tool-servers"
STATE_TEXT = {"connected": "connected", "connecting": "connecting…",
              "unreachable": "unreachable", "refused": "refused", "failed": "failed",
              "closed": "disconnected"}

servers_list = by_id("tool-servers")
form = by_id("tool-server-form")
url_input = by_id("tool-server-url")
token_input = by_id("tool-server-token")
trusted_input = by_id("tool-server-trusted")
connect_button = by_id("tool-server-connect")


def remembered():
    try:
        saved = json.loads(window.localStorage.getItem(STORAGE_KEY) or "[]")
    except Exception:   # storage off or damaged: nothing remembered
        return []
    return [s for s in saved if isinstance(s, dict) and isinstance(s.get("url"), str)]


def _store(servers):
    try:
        window.localStorage.setItem(STORAGE_KEY, json.dumps(servers))
    except Exception:   # storage turned off: remembered for this page only
        pass


def remember(url, token, trusted):
    servers = [s for s in remembered() if s["url"] != url]
    servers.append({"url": url, "token": token, "trusted": trusted})
    _store(servers)


def forget(url):
    _store([s for s in remembered() if s["url"] != url])


def render(servers):
    clear(servers_list)
    for server in servers:
        url = server.get("url", "")
        item = make("li", "tool-server", attrs={
            "data-testid": "tool-server", "data-url": url,
            "data-state": server.get("state", ""), "data-kind": server.get("kind", "")},
            parent=servers_list)
        head = make("div", "tool-server-head", parent=item)
        make("strong", "name", server.get("name") or url, parent=head)
        make("span", "state", STATE_TEXT.get(server.get("state"), server.get("state", "")),
             attrs={"data-testid": "tool-server-state"}, parent=head)
        make("p", "address", url, parent=item)
        if server.get("error"):
            make("p", "error", server["error"], attrs={"data-testid": "tool-server-error",
                                                       "role": "alert"}, parent=item)
        for problem in server.get("skipped") or []:
            make("p", "skipped", problem, attrs={"data-testid": "tool-server-skipped"},
                 parent=item)
        if server.get("state") == "connected":
            make("p", "tools-note", "%d tools" % len(server.get("tools") or []), parent=item)
        button = make("button", None, "Disconnect",
                      attrs={"type": "button", "data-testid": "tool-server-disconnect"},
                      parent=item)
        listen(button, "click", lambda event, url=url: disconnect(url))
    servers_list.setAttribute("data-count", str(len(servers)))


def load():
    request("tool_servers", lambda ok, value: render(value) if ok else None)


def connect(url, token="", trusted=False):
    connect_button.disabled = True

    def done(ok, value):
        connect_button.disabled = False
        if not ok:
            message = value.get("message", "") if isinstance(value, dict) else str(value)
            render([{"url": url, "state": "failed", "error": message}])
        load()
    request("connect_tool_server", done, url=url, token=token, trusted=trusted)


def disconnect(url):
    forget(url)
    request("disconnect_tool_server", lambda ok, value: load(), url=url)


def on_submit(event):
    event.preventDefault()
    url = (url_input.value or "").strip()
    if not url:
        return
    token = token_input.value or ""
    trusted = bool(trusted_input.checked)
    remember(url, token, trusted)
    url_input.value = ""
    token_input.value = ""
    trusted_input.checked = False
    connect(url, token, trusted)


def on_agent_event(event):
    if event.get("type") == "tool_servers":
        render((event.get("data") or {}).get("servers") or [])


def reconnect_remembered(details=None):
    for server in remembered():
        connect(server["url"], server.get("token") or "", bool(server.get("trusted")))
    load()


def start():
    listen(form, "submit", on_submit)
    on("agent_event", on_agent_event)
    on("booted", reconnect_remembered)
    if state["booted"]:
        reconnect_remembered()
