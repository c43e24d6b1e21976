# The questions before consequential calls: the agent waits (py_agent.turn.approval)
# until the user answers Allow once, Allow for this chat, or Deny. Several can wait at
# once, of any chats (the one shown, a turn of another chat, the browser's agent through
# WebMCP): each is shown with its chat (titled as the sessions list titles it), the tool,
# where it comes from and its arguments, as text (textContent only), and its buttons
# answer that one question by its id (an `approve` request). Where the tool comes from is
# said by its origin's kind: only the page's own tools are "this page"; a tool server is
# named in quotes, on one line, as the server's own words, with its host. The arguments are
# shown with hidden and reordering characters as escapes. A question goes when it is
# answered here, decided by the worker (`approval`), or withdrawn (`approval_withdrawn`:
# its turn was stopped, or it was not answered in time).
#
# Focus: the newest question's first button takes it, unless the user is typing in a
# text field (the message box): then the question is announced instead. A question that
# goes while it has the focus hands it to the newest one left, else to the message box.
import json

from pyscript import document, window

from ui.app import on, state
from ui.dom import by_id, label, listen, make, missing, visible
from ui.link import request

box = by_id("approval")
heading = by_id("approval-title")
questions = by_id("approval-questions")
announcer = by_id("approval-announcer")
QUESTION = '[data-testid="approval-question"]'
BUTTONS = (("once", "approve-once", "Allow once", "primary"),
           ("chat", "approve-chat", "Allow for this chat", None),
           ("deny", "approve-deny", "Deny", None))
_shown = {}   # question id -> its element (their order is the page's)
_asked = {}   # question id -> (its approval_requested data, its chat), while shown


def chat_title(session_id):
    """The chat's title as the sessions list shows it, or None if the list does not show
    it. (ui.sessions starts after the page has painted; a question comes after that.)"""
    try:
        from ui.sessions import session_title
    except ImportError:
        return None
    return session_title(session_id)


def chat_line(session_id):
    title = chat_title(session_id)
    here = session_id == state["session"]
    where = "In this chat" if here else "In another chat"
    if title is None:
        return "%s (%s)" % (where, session_id or "no chat")
    return "%s: “%s”" % (where, title)


def label_chat(node):
    session_id = node.getAttribute("data-session") or ""
    node.setAttribute("data-here", "true" if session_id == state["session"] else "false")
    node.querySelector('[data-testid="approval-chat"]').textContent = chat_line(session_id)


def host_of(url):
    """The host (and port) of a server's address, as the worker gave it (its credentials
    already masked there, and left out here)."""
    rest = str(url or "").split("//", 1)[-1]
    return rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]


def where_from(data):
    """Where the tool comes from, by its origin's kind: (lead, server's name or None,
    tail). Only the page's own tools are "this page"; a tool server never is, whatever it
    calls itself."""
    origin = data.get("origin") or {}
    kind = origin.get("kind") or data.get("source") or ""
    if kind == "page":
        return " from this page", None, ""
    if kind == "mcp":
        host = host_of(origin.get("url"))
        return " from the tool server ", label(data.get("server") or host or "unnamed"), \
            (" at %s" % host if host else "")
    return "", None, ""


def what_node(data, parent, anchor):
    """The question's sentence: the server's name in an element of its own (one line,
    quoted, cut with an ellipsis), so that nothing it says can pass for the page's
    words."""
    lead, server, tail = where_from(data)
    node = make("p", None, attrs={"data-testid": "approval-what", "id": anchor + "-what"},
                parent=parent)
    node.append("The agent wants to run %s%s" % (label(data.get("tool") or "a tool", 128),
                                                  lead))
    if server is not None:
        make("q", "approval-server", server, attrs={"data-testid": "approval-server",
                                                    "title": server}, parent=node)
        node.append(tail)
    node.append(", which can change things for you.")
    return node


def typing():
    """The user is typing in a text field (the message box, a rename): a new question
    must not take the focus from it."""
    active = document.activeElement
    if missing(active):
        return False
    tag = str(active.tagName).upper()
    if tag == "TEXTAREA" or (tag == "INPUT" and str(active.type) in (
            "text", "search", "url", "email", "password", "tel", "number")):
        return bool(active.value)
    return bool(active.isContentEditable)


def add(data, session_id):
    question_id = data.get("id")
    if not question_id or question_id in _shown:
        return
    tool = data.get("tool") or "a tool"
    anchor = "approval-%s" % question_id
    node = make("div", "approval-question", attrs={
        "data-testid": "approval-question", "data-question": question_id,
        "data-session": session_id or "", "data-tool": tool, "role": "group",
        "aria-labelledby": anchor + "-chat", "aria-describedby": anchor + "-what"})
    make("p", "approval-chat", attrs={"data-testid": "approval-chat", "id": anchor + "-chat"},
         parent=node)
    what_node(data, node, anchor)
    make("pre", "approval-arguments", visible(json.dumps(data.get("arguments") or {})),
         attrs={"data-testid": "approval-arguments"}, parent=node)
    buttons = make("div", "approval-buttons", parent=node)
    for decision, testid, text, cls in BUTTONS:
        make("button", cls, text, attrs={"type": "button", "data-testid": testid,
                                         "data-decision": decision}, parent=buttons)
    label_chat(node)
    questions.append(node)
    _shown[question_id] = node
    _asked[question_id] = (data, session_id)
    refresh()
    if typing():
        announcer.textContent = "%s, the agent asks to run %s: the questions are above " \
            "the message box." % (chat_line(session_id or ""), tool)
    else:
        node.querySelector("button").focus()


def newest():
    last = questions.lastElementChild
    return None if missing(last) else last


def remove(question_id):
    node = _shown.pop(question_id, None)
    _asked.pop(question_id, None)
    if node is None:
        return
    active = document.activeElement
    had_focus = not missing(active) and node.contains(active)
    node.remove()
    refresh()
    if had_focus:
        left = newest()
        target = left.querySelector("button") if left is not None else by_id("chat-input")
        if not missing(target) and not target.disabled:
            target.focus()


def refresh():
    """The box as its questions are: hidden without any; the newest one's tool and chat
    on the box itself (hooks for one question)."""
    count = len(_shown)
    box.hidden = count == 0
    heading.textContent = "Allow this action?" if count < 2 else \
        "Allow these actions? (%d waiting)" % count
    last = newest()
    if last is None:
        box.removeAttribute("data-tool")
        box.removeAttribute("data-session")
        announcer.textContent = ""
        return
    box.setAttribute("data-tool", last.getAttribute("data-tool"))
    box.setAttribute("data-session", last.getAttribute("data-session"))


def answer(question_id, decision):
    node = _shown.get(question_id)
    if node is None:
        return
    asked = _asked[question_id]
    remove(question_id)

    def replied(ok, value):
        if not ok:   # refused: the question still waits, so it is shown again
            window.console.warn("[approval] the answer was refused:", str(value))
            add(*asked)
    request("approve", replied, question_id=question_id, decision=decision)


def on_click(event):
    button = event.target.closest("button[data-decision]")
    if missing(button):
        return
    node = button.closest(QUESTION)
    if missing(node):
        return
    answer(node.getAttribute("data-question"), button.getAttribute("data-decision"))


def on_agent_event(event):
    kind = event.get("type")
    data = event.get("data") or {}
    if kind == "approval_requested":
        add(data, event.get("session_id"))
    elif kind in ("approval", "approval_withdrawn"):
        remove(data.get("id"))


def on_session_opening(session_id):
    for node in questions.querySelectorAll(QUESTION):
        label_chat(node)


def start():
    listen(questions, "click", on_click)
    on("agent_event", on_agent_event)
    on("session_opening", on_session_opening)
