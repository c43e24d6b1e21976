# The conversation's messages as DOM: a user message, an agent message with its trace
# and answer, errors and unfinished turns with Retry, and a session's whole transcript.
#
# Answers are Markdown, rendered by markdown.js (markdown-it's tokens built into DOM nodes,
# never HTML); the user's own messages, errors and tool output stay plain text.
from pyscript import window
from pyscript.js_modules import markdown

from ui.app import can_send, emit, state
from ui.dom import by_id, clear, clip, make, missing, part
from ui.link import request
from ui.memory import compacted_ids
from ui.scrolling import hide_jump, scroll_to_latest
from ui import page_quotes, trace

messages_el = by_id("messages")
announcer = by_id("answer-announcer")

# Turns that ended without an answer keep the user's message and say why (py_agent's
# turn statuses; an "interrupted" turn is how the agent archives a turn when it starts).
UNFINISHED = {
    "stopped": "Stopped before answering.",
    "interrupted": "This turn did not finish: the page was closed or reloaded while it ran "
                   "(or it is still running in another tab).",
}


def add_message(role, attrs=None):
    fields = {"data-testid": "message", "data-role": role}
    fields.update(attrs or {})
    node = make("li", "message", attrs=fields, parent=messages_el)
    make("div", "role", "You" if role == "user" else "Agent", parent=node)
    return node


def add_user_message(text):
    node = add_message("user")
    make("div", "text", text, parent=node)
    return node


def add_attachments(node, items, session_id=None):
    """A sent message's pictures and sounds under its text: ``items`` are the page's own
    (JS objects with their Blob, just sent) or a transcript's records (dicts: a kept
    picture is asked of the worker and drawn from its bytes; one not kept says so)."""
    box = make("ul", "message-attachments", parent=node,
               attrs={"data-testid": "message-attachments"})
    for item in items:
        record = isinstance(item, dict)
        kind = str(item.get("type", "").split("/")[0] if record else item.kind)
        name = str(item.get("name") if record else item.name)
        chip = make("li", "attachment-chip", parent=box,
                    attrs={"data-testid": "message-attachment", "data-kind": kind,
                           "data-name": name})
        if kind == "image":
            thumb = make("img", None, parent=chip,
                         attrs={"alt": "", "data-testid": "attachment-thumb"})
            if not record:
                thumb.src = window.URL.createObjectURL(item.blob)
                thumb.setAttribute("data-width", str(item.width))
                thumb.setAttribute("data-height", str(item.height))
            elif item.get("kept") and session_id:
                _load_thumb(thumb, session_id, item.get("id"))
        else:
            make("span", None, "♪", parent=chip, attrs={"aria-hidden": "true"})
        make("span", "attachment-name", name, parent=chip)
        said = (item.get("description") or item.get("note") or "") if record else \
            str(item.note or "")
        if record and not item.get("kept"):
            said = item.get("note") or "not kept"
            chip.setAttribute("data-kept", "false")
        if said:
            make("span", "attachment-note", said, parent=chip)
    return box


def _load_thumb(thumb, session_id, attachment_id):
    def loaded(ok, value):
        if not ok or missing(value):
            thumb.setAttribute("data-state", "missing")
            return
        options = window.Object.new()
        options.type = value.type
        blob = window.Blob.new(window.Array.of(value.data), options)
        thumb.src = window.URL.createObjectURL(blob)
        thumb.setAttribute("data-width", str(value.width))
        thumb.setAttribute("data-height", str(value.height))
        thumb.setAttribute("data-state", "shown")

    request("attachment", loaded, raw_reply=True, session_id=session_id,
            attachment_id=attachment_id)


def add_assistant_message(turn_id=None, open_trace=True):
    attrs = {"data-state": "pending"}
    if turn_id is not None:
        attrs["data-turn-id"] = turn_id
    node = add_message("assistant", attrs)
    trace.add_trace(node, open_trace)
    make("div", "text", parent=node)
    return node


def set_answer(message, text, rich=True, streaming=False):
    """The message's answer: Markdown rendered as DOM nodes, or (rich=False: errors,
    notices) plain text. While it streams, only what the rest can still change is
    rebuilt."""
    node = part(message, ".text")
    if rich:
        try:
            (markdown.preview if streaming else markdown.render)(text, node)
            node.classList.add("markdown")
            if not streaming:
                page_quotes.mark(node)
            return
        except Exception as error:   # never lose an answer to a rendering bug
            window.console.warn("[page] Markdown rendering failed:", str(error))
    node.textContent = text
    node.classList.remove("markdown")


def answer_text(message):
    """What a screen reader should hear of the answer."""
    node = part(message, ".text")
    text = node.innerText
    return str(node.textContent if missing(text) else text).strip()


def announce(message):
    """The finished answer, once, to the polite live region (streamed chunks are not
    announced: the message list is not a live region)."""
    role = "Agent"
    if message.getAttribute("data-state") == "error":
        role = "Agent, error"
    announcer.replaceChildren(make("p", text="%s: %s" % (role, answer_text(message))))


def previous_user_text(message):
    """The text of the user message this assistant message answers."""
    node = message.previousElementSibling
    while not missing(node) and node.getAttribute("data-role") != "user":
        node = node.previousElementSibling
    if missing(node):
        return ""
    return str(part(node, ".text").textContent or "")


def add_retry(message, text=None):
    """A Retry button that sends the same message again as a new turn."""
    text = text if text is not None else previous_user_text(message)
    if not text:
        return None
    actions = make("div", "message-actions", parent=message)
    button = make("button", "retry", "Retry",
                  attrs={"type": "button", "data-testid": "retry-button",
                         "aria-label": "Retry: " + clip(text, 80),
                         "title": "Send this message again"}, parent=actions)
    button.disabled = not can_send()
    return button


def add_error_details(message, text):
    if not text:
        return
    box = make("details", "error-trace", attrs={"data-testid": "message-error"}, parent=message)
    make("summary", None, "Details", parent=box)
    make("pre", None, text, parent=box)


def show_error(message, text, details=""):
    message.setAttribute("data-state", "error")
    set_answer(message, text, rich=False)
    add_error_details(message, details)
    button = add_retry(message)
    if details.startswith("InputNotSupportedError") and button is not None:
        # The model refused the pictures or sounds: the text may go alone.
        text_only = make("button", "retry", "Send without the attachments",
                         attrs={"type": "button", "data-testid": "send-text-only",
                                "title": "Send the same words again, without what was attached"},
                         parent=button.parentElement)
        text_only.disabled = not can_send()


def show_unfinished(message, status_):
    """A turn that ended without an answer: a note saying why, and Retry."""
    message.setAttribute("data-state", status_)
    set_answer(message, UNFINISHED[status_], rich=False)
    add_retry(message)


def render_past_turn(turn, compacted, session_id=None):
    user = add_user_message(turn.get("user", ""))
    if turn.get("attachments"):
        add_attachments(user, turn["attachments"], session_id)
    message = add_assistant_message(turn.get("id"), open_trace=False)
    trace.render_past_steps(message, turn.get("steps"))
    status_ = turn.get("status") or "answered"
    message.setAttribute("data-state", status_)
    answer = turn.get("answer") or ("(no answer)" if status_ != "answered" else "")
    if status_ == "error":
        show_error(message, answer)
    elif status_ in UNFINISHED:
        show_unfinished(message, status_)
    else:
        set_answer(message, answer, rich=status_ == "answered")
    message.setAttribute("data-compacted", "true" if turn.get("id") in compacted else "false")
    return message


def show_transcript(session_id, turns, memory):
    """Replace the messages with a session's whole transcript."""
    compacted = compacted_ids(memory)
    clear(messages_el)
    messages_el.setAttribute("data-session-id", session_id)
    for turn in turns or []:
        render_past_turn(turn, compacted, session_id)
    messages_el.setAttribute("data-loading", "false")
    messages_el.setAttribute("aria-busy", "false")
    scroll_to_latest()
    emit("transcript_shown", session_id)


def session_shown():
    """A session is open and its transcript shown: a turn sent now lands in it (and is
    not wiped by a transcript still on its way)."""
    return state["session"] is not None and \
        messages_el.getAttribute("data-loading") == "false"


def retry_buttons():
    return messages_el.querySelectorAll('[data-testid="retry-button"]')


def on_session_opening(session_id):
    clear(messages_el)
    messages_el.setAttribute("data-session-id", session_id)
    messages_el.setAttribute("data-loading", "true")
    messages_el.setAttribute("aria-busy", "true")
    hide_jump()


def mark_compacted(memory):
    """Flag the shown turns that now live only in the summary."""
    compacted = compacted_ids(memory)
    for node in messages_el.querySelectorAll('[data-role="assistant"][data-turn-id]'):
        turn_id = int(node.getAttribute("data-turn-id"))
        node.setAttribute("data-compacted", "true" if turn_id in compacted else "false")
