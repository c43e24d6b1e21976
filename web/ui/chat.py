# The composer: sending a message as a turn (or queueing it while the agent starts),
# the worker's reply that ends the turn, Stop and Retry, and which of the chat's
# controls can be used now.
#
# What a turn looks like while it runs is ui/turn_view.py's; the messages themselves are
# ui/messages.py's; keeping the newest in view is ui/scrolling.py's.
from pyscript import window

from ui.app import PAGE_MODEL, can_send, emit, model_usable, no_model, nothing_answers, on, state
from ui.dom import by_id, listen, missing
from ui.link import request
from ui.messages import (add_assistant_message, add_user_message, announce,
                         mark_compacted, on_session_opening, previous_user_text,
                         retry_buttons, session_shown)
from ui.scrolling import after_change, at_latest, scroll_to_latest
from ui.status import clear_worker_error, render_status
from ui.turn_view import RunningTurn
from ui import messages, scrolling, trace, turn_view

form = by_id("composer")
chat_input = by_id("chat-input")
send_button = by_id("send-button")
stop_button = by_id("stop-button")
hint = by_id("chat-hint")
# The hint's two texts are index.html's: its own, and the one for a queued message (which
# index.html's script may show before this module is even imported).
QUEUED_NOTE = hint.getAttribute("data-queued-text")
hint_text = hint.getAttribute("data-idle-text")
if missing(hint_text):
    hint_text = hint.textContent


def send(text, from_input=True, with_attachments=True):
    text = text.strip()
    if text and from_input and not state["failed"] and \
            (not state["booted"] or not session_shown()):
        return queue_until_ready(text)
    if not text or not can_send():
        return False
    raw, items = None, []
    if with_attachments and state["attachments"]:
        from ui import attach   # loaded after the first paint (main.py's start_later)
        blocked = attach.refusal()
        if blocked:   # the model cannot take them: nothing is sent, the text stays
            attach.show_note("%s Your message and attachments stay here: choose a model "
                             "that takes them, or remove them to send the text alone."
                             % blocked)
            return False
        payload, items = attach.take()
        raw = {"attachments": payload}
    if from_input:
        chat_input.value = ""
    clear_worker_error()
    user = add_user_message(text)
    if items:
        messages.add_attachments(user, items)
    message = add_assistant_message()
    message.setAttribute("aria-busy", "true")
    turn = RunningTurn(state["session"], text, message)
    state["turn"] = turn
    state["note"] = ""
    scroll_to_latest()   # the user's own message: always shown
    render_status()
    emit("turn_started", turn)
    request("run", lambda ok, value: on_run_reply(turn, ok, value), raw=raw,
            session_id=turn.session, text=text)
    return True


def on_run_reply(turn, ok, value):
    state["turn"] = None
    was_at_latest = at_latest()
    state["note"] = turn.show_outcome(ok, value)
    trace.hide_if_empty(turn.message)
    announce(turn.message)
    render_status()
    emit("turn_finished", turn, ok, value)
    after_change(was_at_latest)
    if ok and value.get("status") != "error":
        chat_input.focus()


# ------------------------------------------------------------------ the early message
#
# The message box takes text from the first paint on, long before the agent is up: a
# message sent while it starts (or while a session's transcript loads) waits in the box
# (read-only) and goes out by itself once the agent is ready, its model usable and the
# session's transcript shown.


def queue_until_ready(text):
    state["queued"] = text
    chat_input.readOnly = True
    form.setAttribute("data-queued", "true")
    hint.textContent = QUEUED_NOTE
    return True


def release_queued(send_it):
    """Send the queued message (or, when it cannot be sent, leave it in the box)."""
    text = state["queued"]
    if text is None:
        return
    state["queued"] = None
    chat_input.readOnly = False
    form.removeAttribute("data-queued")
    hint.textContent = hint_text
    if send_it:
        send(text)


def flush_queued(*args):
    """Send the queued message once it can be answered, in the session shown; give it
    back (in the box) when nothing will answer it. Which model answers is the worker's
    to say (ui/model_choice.py), whatever backend it is: until it has, neither."""
    if state["queued"] is None:
        return
    if state["failed"] or nothing_answers():
        release_queued(False)   # no model to answer it: it stays in the box
    elif can_send() and session_shown():
        release_queued(True)


# ------------------------------------------------------------------ Stop and Retry

def on_messages_click(event):
    text_only = event.target.closest('[data-testid="send-text-only"]')
    if not missing(text_only) and not text_only.disabled and can_send():
        message = text_only.closest('[data-testid="message"]')
        if send(previous_user_text(message), from_input=False, with_attachments=False):
            message.setAttribute("data-retried", "true")
            text_only.closest(".message-actions").remove()
        return
    button = event.target.closest('[data-testid="retry-button"]')
    if missing(button) or button.disabled or not can_send():
        return
    message = button.closest('[data-testid="message"]')
    text = previous_user_text(message)
    if send(text, from_input=False):
        message.setAttribute("data-retried", "true")
        button.closest(".message-actions").remove()


def on_stop(event):
    turn = state["turn"]
    if turn is None or turn.stopping:
        return
    turn.stopping = True
    turn.phase = "Stopping…"
    render_status()
    request("stop", None, session_id=turn.session)


# ------------------------------------------------------------------ controls

def on_controls():
    turn = state["turn"]
    booting = not state["booted"] and not state["failed"]
    chat_input.disabled = not (booting or model_usable())
    send_button.disabled = not (can_send() or (booting and state["queued"] is None))
    stop_button.disabled = turn is None or turn.stopping
    for button in retry_buttons():
        button.disabled = not can_send()
    if state["failed"]:
        chat_input.placeholder = "The agent could not start; see the message above."
    elif not state["booted"]:
        chat_input.placeholder = "Ask something; the agent is starting and gets it once ready"
    elif no_model():
        chat_input.placeholder = "Chrome's built-in model is not available here (see above)."
    elif state["backend"] == PAGE_MODEL and not model_usable():
        chat_input.placeholder = ("The model in this page could not be loaded (see above)."
                                  if nothing_answers() else
                                  "The model is loading into this page…")
    elif not model_usable():
        chat_input.placeholder = "Checking Chrome's built-in model…"
    else:
        chat_input.placeholder = "Ask something (Enter sends, Shift+Enter for a new line)"
    flush_queued()


def on_submit(event):
    event.preventDefault()
    send(chat_input.value)


def on_key(event):
    if event.key == "Enter" and not event.shiftKey and not event.isComposing:
        event.preventDefault()
        send(chat_input.value)


def start(llm_host):
    on("controls", on_controls)
    on("agent_event", turn_view.on_agent_event)
    on("session_opening", on_session_opening)
    on("transcript_shown", flush_queued)
    on("memory_refreshed", mark_compacted)
    listen(form, "submit", on_submit)
    listen(chat_input, "keydown", on_key)
    listen(stop_button, "click", on_stop)
    listen(messages.messages_el, "click", on_messages_click)
    scrolling.start()
    if llm_host is not None:
        listen(llm_host, "chunk", turn_view.on_chunk)
    window.pyAgentUIUp = True
    if getattr(window, "pyAgentEarlySend", None) is True:   # sent before we listened
        send(chat_input.value)
