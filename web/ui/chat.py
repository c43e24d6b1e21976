# The conversation: messages, sending a turn, stopping it, and rendering the events
# and streamed text of the running turn.
import json

from pyscript import document, window

from ui.app import can_send, emit, model_usable, on, running, state, UNAVAILABLE
from ui.dom import by_id, clear, listen, make, missing, now_ms, part, seconds
from ui.link import request
from ui.memory import compacted_ids
from ui.status import clear_worker_error, render_status, show_storage_warning
from ui import trace

messages_el = by_id("messages")
form = by_id("composer")
chat_input = by_id("chat-input")
send_button = by_id("send-button")
stop_button = by_id("stop-button")


def near_bottom():
    page = document.documentElement
    return window.innerHeight + window.scrollY >= page.scrollHeight - 160


def scroll_down(force=False):
    if force or near_bottom():
        window.scrollTo(0, document.documentElement.scrollHeight)


# ------------------------------------------------------------------ messages

def add_message(role, attrs=None):
    node = make("li", "message", attrs={"data-testid": "message", "data-role": role},
                parent=messages_el)
    if attrs:
        for name in attrs:
            node.setAttribute(name, str(attrs[name]))
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


def set_answer(message, text):
    part(message, ".text").textContent = text


def render_past_turn(turn, compacted):
    add_user_message(turn.get("user", ""))
    message = add_assistant_message(turn.get("id"), open_trace=False)
    trace.render_past_steps(message, turn.get("steps"))
    status_ = turn.get("status") or "answered"
    message.setAttribute("data-state", status_)
    set_answer(message, turn.get("answer") or ("(no answer)" if status_ != "answered" else ""))
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
    scroll_down(force=True)


def on_session_opening(session_id):
    clear(messages_el)
    messages_el.setAttribute("data-session-id", session_id)
    messages_el.setAttribute("data-loading", "true")


def mark_compacted(memory):
    """Flag the shown turns that now live only in the summary."""
    compacted = compacted_ids(memory)
    for node in messages_el.querySelectorAll('[data-role="assistant"][data-turn-id]'):
        turn_id = int(node.getAttribute("data-turn-id"))
        node.setAttribute("data-compacted", "true" if turn_id in compacted else "false")


# ------------------------------------------------------------------ a turn

def send(text):
    text = text.strip()
    if not text or not can_send():
        return
    chat_input.value = ""
    clear_worker_error()
    add_user_message(text)
    message = add_assistant_message()
    session_id = state["session"]
    turn = {"session": session_id, "text": text, "message": message, "step": 0,
            "started": now_ms(), "phase": "Thinking…", "answered": False}
    state["turn"] = turn
    state["note"] = ""
    scroll_down(force=True)
    render_status()
    emit("turn_started", turn)
    request("run", lambda ok, value: on_run_reply(turn, ok, value),
            session_id=session_id, text=text)


def on_run_reply(turn, ok, value):
    message = turn["message"]
    elapsed = now_ms() - turn["started"]
    state["turn"] = None
    if ok:
        result = value
        result_status = result.get("status") or "answered"
        message.setAttribute("data-state", result_status)
        message.setAttribute("data-turn-id", str(result.get("turn_id")))
        if result_status == "aborted":
            set_answer(message, "Stopped before answering.")
            state["note"] = "Stopped after %s" % seconds(elapsed)
        else:
            set_answer(message, result.get("answer") or "(no answer)")
            trace.finish_trace(message, result.get("steps") or [])
            if result_status == "error":
                add_error_details(message, result.get("error") or "", "")
                restore_input(turn["text"])
                state["note"] = "The agent could not answer"
            elif result_status == "incomplete":
                state["note"] = "Gave up after %d steps (%s)" % (len(result.get("steps") or []),
                                                                  seconds(elapsed))
            else:
                state["note"] = "Answered in %s" % seconds(elapsed)
        if not result.get("saved") and result_status != "aborted":
            message.setAttribute("data-saved", "false")
    else:
        error = value
        message.setAttribute("data-state", "error")
        set_answer(message, "Something went wrong: %s: %s" % (
            error.get("name", "Error"), error.get("message", "")))
        add_error_details(message, error.get("message", ""), error.get("traceback") or "")
        restore_input(turn["text"])
        state["note"] = "The request failed"
    trace.hide_if_empty(message)
    render_status()
    emit("turn_finished", turn, ok, value)
    scroll_down()
    if ok and value.get("status") != "error":
        chat_input.focus()


def add_error_details(message, summary_text, traceback):
    if not summary_text and not traceback:
        return
    box = make("details", "error-trace", attrs={"data-testid": "message-error"}, parent=message)
    make("summary", None, "Details", parent=box)
    make("pre", None, traceback or summary_text, parent=box)


def restore_input(text):
    """Keep the failed message for a retry (unless the user typed something new)."""
    if not chat_input.value.strip():
        chat_input.value = text


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
        show_storage_warning(data.get("message") or "Could not save to this browser's storage.")
        return
    turn = state["turn"]
    if turn is None or turn["session"] != event.get("session_id"):
        return
    message = turn["message"]
    if kind == "turn_started":
        message.setAttribute("data-turn-id", str(data.get("turn_id")))
    elif kind == "tools_retrieved":
        trace.show_offered(message, data.get("tools"))
    elif kind == "step_started":
        index = data.get("index", 1)
        turn["step"] = index
        turn["stream_step"] = index
        step = trace.trace_step(message, index)
        step.setAttribute("data-state", "running")
        turn["step_started"] = now_ms()
        turn["phase"] = "Thinking… (step %d)" % index
        render_status()
        scroll_down()
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
                              data.get("kind") or "tool", data.get("duration_ms") or 0)
        step.setAttribute("data-state", "done")
        scroll_down()
    elif kind == "answer":
        turn["answered"] = True
        if data.get("status") == "answered":
            last = part(message, '.trace-step[data-state="running"]')
            if not missing(last):
                last.setAttribute("data-kind", "answer")
                last.setAttribute("data-state", "done")
        if data.get("text"):
            set_answer(message, data["text"])
        turn["phase"] = "Saving…"
        render_status()
        scroll_down()
    elif kind == "turn_saved":
        message.setAttribute("data-saved", "true")
    elif kind == "error":
        message.setAttribute("data-error-kind", data.get("kind") or "")


# ------------------------------------------------------------------ streaming

def partial_string(text, key):
    """The value of string field ``key`` in a JSON object that is still streaming in,
    as far as it has arrived, or None when the field has not started yet."""
    at = text.find('"%s"' % key)
    if at < 0:
        return None
    rest = text[at + len(key) + 2:].lstrip()
    if not rest.startswith(":"):
        return None
    rest = rest[1:].lstrip()
    if not rest.startswith('"'):
        return None
    rest = rest[1:]
    end = 0
    while True:
        end = rest.find('"', end)
        if end < 0:
            body = rest
            break
        slashes = 0
        while end - slashes - 1 >= 0 and rest[end - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            body = rest[:end]
            break
        end += 1
    # Drop an escape cut in half at the end, then let the JSON parser unescape.
    if (len(body) - len(body.rstrip("\\"))) % 2:
        body = body[:-1]
    else:
        cut = body.rfind("\\u")
        if 0 <= cut and len(body) - cut < 6 and escapes_at(body, cut):
            body = body[:cut]
    try:
        return json.loads('"' + body + '"')
    except Exception:
        return body


def escapes_at(text, index):
    """Does the backslash at ``index`` start an escape (not end an escaped backslash)?"""
    run = 0
    while index - run - 1 >= 0 and text[index - run - 1] == "\\":
        run += 1
    return run % 2 == 0


def on_chunk(event):
    turn = state["turn"]
    if turn is None:
        return
    detail = event.detail
    if str(getattr(detail, "purpose", "")) != "step":
        return
    text = str(detail.text)
    message = turn["message"]
    index = turn.get("stream_step") or 1
    step = trace.trace_step(message, index)
    thought = partial_string(text, "thought")
    if thought:
        trace.set_part(step, ".thought", thought)
    # Preview the answer only from a step that answers (not one that calls a tool).
    answer = partial_string(text, "finalAnswer")
    if answer and partial_string(text, "toolName") == "none":
        set_answer(message, answer)
    scroll_down()


# ------------------------------------------------------------------ controls

def on_controls():
    turn = state["turn"]
    chat_input.disabled = not (state["booted"] and model_usable())
    send_button.disabled = not can_send()
    stop_button.disabled = turn is None or turn.get("stopping", False)
    if state["failed"]:
        chat_input.placeholder = "The agent could not start; see the message above."
    elif not state["booted"]:
        chat_input.placeholder = "Starting the agent…"
    elif state["model"] == UNAVAILABLE:
        chat_input.placeholder = "Chrome's built-in model is not available here (see above)."
    elif state["model"] is None:
        chat_input.placeholder = "Checking Chrome's built-in model…"
    else:
        chat_input.placeholder = "Ask something (Enter sends, Shift+Enter for a new line)"


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
    if llm_host is not None:
        listen(llm_host, "chunk", on_chunk)
