# Tool servers (MCP) in the tools panel: connect one (address, optional token), see each
# server's state (connected, unreachable, refused, failed: and why), which of its tools
# say they only read, and disconnect it. The servers the user connected are remembered in
# this browser (localStorage) and connected again at each start; those serve.py --mcp
# names connect by themselves. The worker does the connecting
# (py_agent/browser/tool_servers.py).
#
# Trust is the user's, per server: a server's read-only labels count only once the user
# trusts that server here ("Trust its labels", shown with the tools that claim to only
# read), remembered in this browser by the server's key (its address, credentials
# redacted) and applied again at each start, until "Stop trusting".
import json

from pyscript import window

from ui.app import on, state
from ui.dom import by_id, clear, label, listen, make
from ui.link import request

STORAGE_KEY = "py-agent.tool-servers"
TRUST_KEY = "py-agent.trusted-tool-servers"
STATE_TEXT = {"connected": "connected", "connecting": "connecting…",
              "unreachable": "unreachable", "refused": "refused", "failed": "failed",
              "closed": "disconnected"}

servers_list = by_id("tool-servers")
form = by_id("tool-server-form")
url_input = by_id("tool-server-url")
token_input = by_id("tool-server-token")
connect_button = by_id("tool-server-connect")


def _load(key, default):
    try:
        return json.loads(window.localStorage.getItem(key) or default)
    except Exception:   # storage off or damaged: nothing remembered
        return json.loads(default)


def _store(key, value):
    try:
        window.localStorage.setItem(key, json.dumps(value))
    except Exception:   # storage turned off: remembered for this page only
        pass


def remembered():
    saved = _load(STORAGE_KEY, "[]")
    return [s for s in saved if isinstance(s, dict) and isinstance(s.get("url"), str)]


def remember(url, token, key=None):
    """Keep a server the user connected (a new one last; one known already in its place,
    its token and key brought up to date)."""
    servers = remembered()
    entry = next((s for s in servers if s["url"] == url), None)
    if entry is None:
        entry = {"url": url}
        servers.append(entry)
    entry["token"] = token
    if key:
        entry["key"] = key
    _store(STORAGE_KEY, servers)


def forget(key):
    _store(STORAGE_KEY, [s for s in remembered()
                         if s.get("key") != key and "mcp:" + s["url"] != key])


def trusted_keys():
    keys = _load(TRUST_KEY, "[]")
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def set_trust(key, trusted):
    """The user's decision: remember it, and tell the worker."""
    keys = [k for k in trusted_keys() if k != key]
    if trusted:
        keys.append(key)
    _store(TRUST_KEY, keys)
    request("trust_tool_server", lambda ok, value: load(), key=key, trusted=trusted)


def claims_note(server):
    """Which tools say they only read, and what trusting that changes."""
    claims = server.get("read_only_claims") or []
    names = ", ".join(claims)
    if server.get("trusted"):
        return "You trust its labels: %s run without asking; its other tools ask first." \
            % names
    return ("%d of its tools say they only read (%s). Until you trust its labels, each call "
            "asks you first." % (len(claims), names))


def render(servers):
    clear(servers_list)
    for server in servers:
        url = server.get("url", "")
        key = server.get("key") or ("mcp:" + url)
        trusted = bool(server.get("trusted"))
        item = make("li", "tool-server", attrs={
            "data-testid": "tool-server", "data-url": url, "data-key": key,
            "data-state": server.get("state", ""), "data-kind": server.get("kind", ""),
            "data-trusted": "true" if trusted else "false"},
            parent=servers_list)
        head = make("div", "tool-server-head", parent=item)
        make("strong", "name", label(server.get("name") or url),
             attrs={"data-testid": "tool-server-name"}, parent=head)
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
        buttons = make("div", "tool-server-buttons", parent=item)
        if server.get("read_only_claims") and server.get("state") == "connected":
            make("p", "claims", claims_note(server),
                 attrs={"data-testid": "tool-server-claims"}, parent=item)
            trust = make("button", None, "Stop trusting" if trusted else "Trust its labels",
                         attrs={"type": "button", "data-testid": "tool-server-distrust"
                                if trusted else "tool-server-trust"}, parent=buttons)
            listen(trust, "click", lambda event, key=key, trusted=trusted:
                   set_trust(key, not trusted))
        button = make("button", None, "Disconnect",
                      attrs={"type": "button", "data-testid": "tool-server-disconnect"},
                      parent=buttons)
        listen(button, "click", lambda event, key=key: disconnect(key))
    servers_list.setAttribute("data-count", str(len(servers)))
    catch_up_trust(servers)


def catch_up_trust(servers):
    """A server the user trusts that the worker does not (yet) trust: a --mcp server
    listed after this page asked, or one connected again."""
    keys = trusted_keys()
    for server in servers:
        if server.get("key") in keys and not server.get("trusted") and \
                server.get("state") == "connected":
            request("trust_tool_server", None, key=server["key"], trusted=True)


def load():
    request("tool_servers", lambda ok, value: render(value) if ok else None)


def connect(url, token=""):
    connect_button.disabled = True

    def done(ok, value):
        connect_button.disabled = False
        if not ok:
            message = value.get("message", "") if isinstance(value, dict) else str(value)
            render([{"url": url, "state": "failed", "error": message}])
        elif isinstance(value, dict) and value.get("key"):
            remember(url, token, value["key"])
        load()
    trusted = any(s.get("url") == url and s.get("key") in trusted_keys()
                  for s in remembered())
    request("connect_tool_server", done, url=url, token=token, trusted=trusted)


def disconnect(key):
    forget(key)
    request("disconnect_tool_server", lambda ok, value: load(), key=key)


def on_submit(event):
    event.preventDefault()
    url = (url_input.value or "").strip()
    if not url:
        return
    token = token_input.value or ""
    remember(url, token)
    url_input.value = ""
    token_input.value = ""
    connect(url, token)


def on_agent_event(event):
    if event.get("type") == "tool_servers":
        render((event.get("data") or {}).get("servers") or [])


def on_booted(details=None):
    # the servers the user trusts, at once (a --mcp server is there already): before a
    # turn of this page can ask about their read-only tools
    for key in trusted_keys():
        request("trust_tool_server", None, key=key, trusted=True)
    for server in remembered():
        connect(server["url"], server.get("token") or "")
    load()


def start():
    listen(form, "submit", on_submit)
    on("agent_event", on_agent_event)
    on("booted", on_booted)
    if state["booted"]:
        on_booted()
