# The questions before consequential calls: the agent waits (py_agent.turn.approval)
# until the user answers Allow once, Allow for this chat, or Deny. Several can wait at
# once, of any chats (the one shown, a turn of another chat, the browser's agent through
# WebMCP): each is shown with its chat (titled as the sessions list titles it), the tool,
# where it comes from and its arguments, as text (textContent only), and its buttons
# answer that one question by its id (an `approve` request). A question goes when it is
# answered here, decided by the worker (`approval`), or withdrawn (`approval_withdrawn`:
# its turn was stopped, or it was not answered in time).
#
# Focus: the newest question's first button takes it, unless the user is typing in a
# text field (the message box): then the question is announced instead. A question that
# goes while it has the focus hands it to the newest one left, else to the message box.
import json

from pyscript import document, window

from ui.app import on, state
from ui.dom import by_id, listen, make, missing
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


def what_text(data):
    tool = data.get("tool") or "a tool"
    # Where it comes from, by its origin's kind: only the page's own tools are "this page".
    kind, server = data.get("source") or "", data.get("server") or ""
    where = " from this page" if kind == "page" else (" from %s" % server if server else "")
    return "The agent wants to run %s%s, which can change things for you." % (tool, where)


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
    make("p", None, what_text(data), attrs={"data-testid": "approval-what",
                                            "id": anchor + "-what"}, parent=node)
    make("pre", "approval-arguments", json.dumps(data.get("arguments") or {}),
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
