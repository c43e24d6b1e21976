# The conversation: messages, sending a turn, stopping or retrying it, rendering the
# events and streamed text of the running turn, and keeping the newest message in view.
#
# Answers are Markdown, rendered by markdown.js (markdown-it's tokens built into DOM nodes,
# never HTML); the user's own messages, errors and tool output stay plain text.
from pyscript import document, window
from pyscript.js_modules import markdown

from ui.app import can_send, emit, model_usable, on, state, turn_of, UNAVAILABLE
from ui.dom import (by_id, clear, clip, keep, listen, make, missing, now_ms, part, seconds,
                    to_js)
from ui.link import request
from ui.memory import compacted_ids
from ui.status import (clear_saved_warning, clear_worker_error, render_status,
                       show_storage_warning)
from ui.streamed_reply import StreamedReply
from ui import trace

messages_el = by_id("messages")
form = by_id("composer")
chat_input = by_id("chat-input")
send_button = by_id("send-button")
stop_button = by_id("stop-button")
jump_button = by_id("jump-latest")
announcer = by_id("answer-announcer")
hint = by_id("chat-hint")
hint_text = hint.textContent

PREVIEW_MS = 80      # the streamed answer is re-rendered at most this often,
PREVIEW_BACKOFF = 5  # and waits at least this many times its last render's cost
# Turns that ended without an answer keep the user's message and say why (py_agent's
# turn statuses; an "interrupted" turn is how the agent archives a turn when it starts).
UNFINISHED = {
    "stopped": "Stopped before answering.",
    "interrupted": "This turn did not finish: the page was closed or reloaded while it ran "
                   "(or it is still running in another tab).",
}
BOTTOM_SLACK = 48    # px: this close to the end still counts as "at the latest message"


# ------------------------------------------------------------------ scrolling
#
# On wide screens the messages list scrolls itself (a chat pane between the status line
# and the composer); on narrow ones the page scrolls, with the composer sticky at the
# bottom (style.css decides; the list's computed overflow says which). New content
# follows the end only when the user was already there; otherwise the view stays put
# and "Jump to latest" appears.

def pane_scrolls():
    return str(window.getComputedStyle(messages_el).overflowY) in ("auto", "scroll")


def distance_from_latest():
    """How far (px) the end of the newest message is below what the user sees."""
    if pane_scrolls():
        return messages_el.scrollHeight - messages_el.scrollTop - messages_el.clientHeight
    return messages_el.getBoundingClientRect().bottom - form.getBoundingClientRect().top


def at_latest():
    return distance_from_latest() <= BOTTOM_SLACK


def scroll_to_latest(event=None):
    if pane_scrolls():
        messages_el.scrollTop = messages_el.scrollHeight
    else:
        gap = distance_from_latest()
        if gap > 0:
            window.scrollBy(0, gap + 12)
    jump_button.hidden = True


def after_change(was_at_latest):
    """Call after adding content, with at_latest() as it was before the change."""
    if was_at_latest:
        scroll_to_latest()
    elif not at_latest():
        jump_button.hidden = False


def on_scroll(event):
    if not jump_button.hidden and at_latest():
        jump_button.hidden = True


def on_jump(event):
    scroll_to_latest()
    # The button hides: keep keyboard focus nearby (not in the textarea, which would
    # pop up a phone's keyboard).
    messages_el.focus(to_js({"preventScroll": True}))


# ------------------------------------------------------------------ messages

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


def show_error(message, text, details=""):
    message.setAttribute("data-state", "error")
    set_answer(message, text, rich=False)
    add_error_details(message, details)
    add_retry(message)


def show_unfinished(message, status_):
    """A turn that ended without an answer: a note saying why, and Retry."""
    message.setAttribute("data-state", status_)
    set_answer(message, UNFINISHED[status_], rich=False)
    add_retry(message)


def render_past_turn(turn, compacted):
    add_user_message(turn.get("user", ""))
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
        render_past_turn(turn, compacted)
    messages_el.setAttribute("data-loading", "false")
    scroll_to_latest()
    flush_queued()


def on_session_opening(session_id):
    clear(messages_el)
    messages_el.setAttribute("data-session-id", session_id)
    messages_el.setAttribute("data-loading", "true")
    jump_button.hidden = True


def mark_compacted(memory):
    """Flag the shown turns that now live only in the summary."""
    compacted = compacted_ids(memory)
    for node in messages_el.querySelectorAll('[data-role="assistant"][data-turn-id]'):
        turn_id = int(node.getAttribute("data-turn-id"))
        node.setAttribute("data-compacted", "true" if turn_id in compacted else "false")


# ------------------------------------------------------------------ a turn

def session_shown():
    """A session is open and its transcript shown: a turn sent now lands in it (and is
    not wiped by a transcript still on its way)."""
    return state["session"] is not None and \
        messages_el.getAttribute("data-loading") == "false"


def send(text, from_input=True):
    text = text.strip()
    if text and from_input and not state["failed"] and \
            (not state["booted"] or not session_shown()):
        return queue_until_ready(text)
    if not text or not can_send():
        return False
    if from_input:
        chat_input.value = ""
    clear_worker_error()
    add_user_message(text)
    message = add_assistant_message()
    message.setAttribute("aria-busy", "true")
    session_id = state["session"]
    turn = {"session": session_id, "text": text, "message": message, "step": 0,
            "started": now_ms(), "phase": "Thinking…",
            "preview": None, "timer": None, "quiet_until": 0, "final": False,
            "streamed": None, "reply": None, "answering": False}
    state["turn"] = turn
    state["note"] = ""
    scroll_to_latest()   # the user's own message: always shown
    render_status()
    emit("turn_started", turn)
    request("run", lambda ok, value: on_run_reply(turn, ok, value),
            session_id=session_id, text=text)
    return True


# ------------------------------------------------------------------ the early message
#
# The message box takes text from the first paint on, long before the agent is up: a
# message sent while it starts (or while a session's transcript loads) waits in the box
# (read-only) and goes out by itself once the agent is ready, its model usable and the
# session's transcript shown.

QUEUED_NOTE = "Your message is queued: it is sent as soon as the agent is ready."


def queue_until_ready(text):
    state["queued"] = text
    chat_input.readOnly = True
    form.setAttribute("data-queued", "true")
    hint.textContent = QUEUED_NOTE
    return True


def release_queued(send_it):
    """Send the queued message (or, when it cannot be sent, leave it in the box)."""
    text = state.get("queued")
    if text is None:
        return
    state["queued"] = None
    chat_input.readOnly = False
    form.removeAttribute("data-queued")
    hint.textContent = hint_text
    if send_it:
        send(text)


def flush_queued():
    if state.get("queued") is None:
        return
    if state["failed"] or (state["model"] == UNAVAILABLE and not model_usable()):
        release_queued(False)   # no model to answer it: it stays in the box
    elif can_send() and session_shown():
        release_queued(True)


def finish_answer(turn, text, rich=True):
    """The answer is final: no more previews of it."""
    turn["final"] = True
    if turn["timer"] is not None:
        window.clearTimeout(turn["timer"])
        turn["timer"] = None
    if rich and turn.get("shown") == text:
        return
    turn["shown"] = text if rich else None
    set_answer(turn["message"], text, rich)


def on_run_reply(turn, ok, value):
    message = turn["message"]
    elapsed = now_ms() - turn["started"]
    state["turn"] = None
    was_at_latest = at_latest()
    message.removeAttribute("aria-busy")
    if ok:
        result = value
        result_status = result.get("status") or "answered"
        message.setAttribute("data-state", result_status)
        message.setAttribute("data-turn-id", str(result.get("turn_id")))
        if result_status in UNFINISHED:
            finish_answer(turn, "", rich=False)
            show_unfinished(message, result_status)
            state["note"] = "Stopped after %s" % seconds(elapsed)
        else:
            trace.finish_trace(message, result.get("steps") or [],
                               result.get("tools_offered") or [])
            if result_status == "error":
                trace.mark_failed(message, result.get("steps") or [])
                finish_answer(turn, "", rich=False)
                show_error(message, result.get("answer") or "The agent could not answer.",
                           result.get("error") or "")
                state["note"] = "The agent could not answer"
            else:
                finish_answer(turn, result.get("answer") or "(no answer)",
                              rich=result_status == "answered")
                if result_status == "incomplete":
                    state["note"] = "Gave up after %d steps (%s)" % (
                        len(result.get("steps") or []), seconds(elapsed))
                else:
                    state["note"] = "Answered in %s" % seconds(elapsed)
        if not result.get("saved"):
            message.setAttribute("data-saved", "false")
    else:
        error = value
        trace.mark_failed(message, [])
        finish_answer(turn, "", rich=False)
        show_error(message, "Something went wrong: %s: %s" % (
            error.get("name", "Error"), error.get("message", "")),
            error.get("traceback") or error.get("message", ""))
        state["note"] = "The request failed"
    trace.hide_if_empty(message)
    announce(message)
    render_status()
    emit("turn_finished", turn, ok, value)
    after_change(was_at_latest)
    if ok and value.get("status") != "error":
        chat_input.focus()


def add_error_details(message, text):
    if not text:
        return
    box = make("details", "error-trace", attrs={"data-testid": "message-error"}, parent=message)
    make("summary", None, "Details", parent=box)
    make("pre", None, text, parent=box)


def on_messages_click(event):
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
    if turn is None or turn.get("stopping"):
        return
    turn["stopping"] = True
    turn["phase"] = "Stopping…"
    render_status()
    request("stop", None, session_id=turn["session"])


def on_agent_event(event):
    kind = event.get("type")
    data = event.get("data") or {}
    if kind == "storage_error":
        show_storage_warning(data.get("message") or "Could not save to this browser's storage.",
                             until_saved=data.get("unsaved") is not None)
        return
    if kind == "turn_saved" and not data.get("unsaved"):
        clear_saved_warning()
    turn = turn_of(event)
    if turn is None:
        return
    message = turn["message"]
    was_at_latest = at_latest()
    if kind == "turn_started":
        message.setAttribute("data-turn-id", str(data.get("turn_id")))
    elif kind == "tools_retrieved":
        trace.show_offered(message, data.get("tools"))
    elif kind == "step_started":
        index = data.get("index", 1)
        turn["step"] = index
        step = trace.trace_step(message, index)
        step.setAttribute("data-state", "running")
        turn["phase"] = "Thinking… (step %d)" % index
        render_status()
    elif kind == "thought":
        step = trace.trace_step(message, data.get("index", turn["step"]))
        trace.set_part(step, ".thought", data.get("text") or "")
    elif kind == "action":
        step = trace.trace_step(message, data.get("index", turn["step"]))
        trace.set_action(step, data.get("tool") or "", data.get("input") or "")
        step.setAttribute("data-kind", "tool")
        turn["phase"] = "Running %s… (step %d)" % (data.get("tool") or "a tool", turn["step"])
        render_status()
    elif kind == "observation":
        step = trace.trace_step(message, data.get("index", turn["step"]))
        trace.set_observation(step, data.get("text") or "", data.get("ok", True),
                              data.get("kind") or "tool", data.get("duration_ms") or 0,
                              data.get("tool") or "")
        step.setAttribute("data-state", "done")
    elif kind == "answer":
        answer_status = data.get("status")
        if answer_status == "answered":
            last = part(message, '.trace-step[data-state="running"]')
            if not missing(last):
                last.setAttribute("data-kind", "answer")
                last.setAttribute("data-state", "done")
        if data.get("text") and answer_status in ("answered", "incomplete"):
            finish_answer(turn, data["text"], rich=answer_status == "answered")
        turn["phase"] = "Saving…"
        render_status()
    elif kind == "turn_saved":
        message.setAttribute("data-saved", "true")
        return
    elif kind == "error":
        message.setAttribute("data-error-kind", data.get("kind") or "")
        return
    else:
        return
    after_change(was_at_latest)


# ------------------------------------------------------------------ streaming

def preview_answer(turn, reply):
    """Show the answer of ``reply`` (a StreamedReply) as it streams: at most every
    PREVIEW_MS, and never more than a sixth of the time (a long answer that is slow to
    render is shown less often, so the page stays responsive however long it gets)."""
    turn["preview"] = reply
    if turn["timer"] is not None:
        return
    wait = turn["quiet_until"] - now_ms()
    if wait <= 0:
        flush_preview()
    else:
        turn["timer"] = window.setTimeout(_flush_proxy, wait)


def flush_preview():
    turn = state["turn"]
    if turn is None:
        return
    turn["timer"] = None
    reply = turn["preview"]
    turn["preview"] = None
    if reply is None or turn["final"]:
        return
    started = now_ms()
    was_at_latest = at_latest()
    set_answer(turn["message"], reply.answer(), streaming=True)
    after_change(was_at_latest)
    ended = now_ms()
    turn["quiet_until"] = ended + max(PREVIEW_MS, PREVIEW_BACKOFF * (ended - started))


_flush_proxy = keep(flush_preview)


def show_streamed_thought(turn, thought):
    """The thought of the step streaming now, as far as it has arrived. Its trace line
    is looked up once per step (chunks come fast), and written only when it changed."""
    index = turn["step"] or 1
    streamed = turn["streamed"]   # (step index, its thought line, the text shown)
    if streamed is None or streamed[0] != index:
        node = part(trace.trace_step(turn["message"], index), ".thought")
    elif streamed[2] == thought:
        return
    else:
        node = streamed[1]
    turn["streamed"] = (index, node, thought)
    was_at_latest = at_latest()
    node.textContent = thought
    node.hidden = False
    after_change(was_at_latest)


def on_chunk(event):
    """A streamed delta of a model call: the step's thought and, from a step that answers
    (not one that calls a tool), its answer. Only the delta is read (the text so far
    would be a copy of the whole reply per chunk)."""
    turn = state["turn"]
    if turn is None or turn["final"]:
        return
    detail = event.detail
    if str(getattr(detail, "purpose", "")) != "step":
        return
    reply = turn["reply"]
    offset = int(detail.offset)
    if reply is None or offset != reply.size:   # a new model call (or a gap): start over
        reply = turn["reply"] = StreamedReply()
        turn["answering"] = False
        if offset:   # joined mid-call: catch up once
            reply.feed(str(detail.text)[:offset])
    had_answer = reply.parts is not None
    reply.feed(str(detail.chunk))
    if not had_answer:
        thought = reply.field("thought")
        if thought:
            show_streamed_thought(turn, thought)
        turn["answering"] = reply.parts is not None and reply.field("toolName") == "none"
    if turn["answering"]:
        preview_answer(turn, reply)


# ------------------------------------------------------------------ controls

def on_controls():
    turn = state["turn"]
    booting = not state["booted"] and not state["failed"]
    chat_input.disabled = not (booting or model_usable())
    send_button.disabled = not (can_send() or (booting and state.get("queued") is None))
    stop_button.disabled = turn is None or turn.get("stopping", False)
    for button in messages_el.querySelectorAll('[data-testid="retry-button"]'):
        button.disabled = not can_send()
    if state["failed"]:
        chat_input.placeholder = "The agent could not start; see the message above."
    elif not state["booted"]:
        chat_input.placeholder = "Ask something; the agent is starting and gets it once ready"
    elif state["model"] == UNAVAILABLE and state["server"] is None:
        chat_input.placeholder = "Chrome's built-in model is not available here (see above)."
    elif state["model"] is None and state["server"] is None:
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
    on("agent_event", on_agent_event)
    on("session_opening", on_session_opening)
    on("memory_refreshed", mark_compacted)
    listen(form, "submit", on_submit)
    listen(chat_input, "keydown", on_key)
    listen(stop_button, "click", on_stop)
    listen(messages_el, "click", on_messages_click)
    listen(messages_el, "scroll", on_scroll)
    listen(document, "scroll", on_scroll)   # the page's own scrolling (phones)
    listen(jump_button, "click", on_jump)
    if llm_host is not None:
        listen(llm_host, "chunk", on_chunk)
    window.pyAgentUIUp = True
    if getattr(window, "pyAgentEarlySend", None) is True:   # sent before we listened
        send(chat_input.value)
