# The question before a consequential call: the agent waits (py_agent.turn.approval)
# until the user answers Allow once, Allow for this chat, or Deny. The tool, where it
# comes from and its arguments are shown as text (textContent only). The answer goes to
# the worker as an `approve` request; the question closes when answered, or when its
# turn ends some other way (Stop).
import json

from ui.app import on
from ui.dom import by_id, listen
from ui.link import request

dialog = by_id("approval")
what = by_id("approval-what")
arguments = by_id("approval-arguments")
asking = {"session": None}


def show(data, session_id):
    tool = data.get("tool") or "a tool"
    server = data.get("server") or ""
    where = " from %s" % ("this page" if server == "page" else server) if server else ""
    what.textContent = "The agent wants to run %s%s, which can change things for you." % (
        tool, where)
    arguments.textContent = json.dumps(data.get("arguments") or {})
    dialog.setAttribute("data-tool", tool)
    dialog.setAttribute("data-session", session_id or "")
    asking["session"] = session_id
    dialog.hidden = False
    by_id("approve-once").focus()


def hide():
    asking["session"] = None
    dialog.hidden = True


def answer(decision):
    session_id = asking["session"]
    if session_id is None:
        return
    hide()
    request("approve", None, session_id=session_id, decision=decision)


def on_agent_event(event):
    kind = event.get("type")
    session_id = event.get("session_id")
    if kind == "approval_requested":
        show(event.get("data") or {}, session_id)
    elif kind in ("approval", "answer", "error") and session_id == asking["session"]:
        hide()


def start():
    listen(by_id("approve-once"), "click", lambda event: answer("once"))
    listen(by_id("approve-chat"), "click", lambda event: answer("chat"))
    listen(by_id("approve-deny"), "click", lambda event: answer("deny"))
    on("agent_event", on_agent_event)
