# The page's Python (MicroPython via PyScript): the chat UI.
#
# It takes over the agent worker that index.html started, shows the boot phases, then
# drives the chat: it posts requests ({type, id, ...}) to the worker, matches the
# replies by id, and renders the events a turn streams (thought, action, observation,
# answer, memory). The agent itself runs in the worker; nothing here thinks.
#
# Every piece of model or tool text goes into the page through textContent, never as
# HTML. Messages from the worker are turned into plain Python values once, through
# JSON, so the rest of this file deals with dicts and lists only.
import json
import sys

from pyscript import document, window
from pyscript.ffi import create_proxy, is_none

# Give up waiting when the worker says nothing for this long during boot.
SILENCE_LIMIT_MS = 60_000
SESSION_KEY = "py-agent.session"   # localStorage: the session shown last
UNAVAILABLE = "unavailable"


def by_id(testid):
    return document.querySelector('[data-testid="%s"]' % testid)


status = by_id("status")
phases = by_id("boot-phases")
error_box = by_id("boot-error")
error_details = by_id("error-details")
guide = by_id("model-guide")
storage_warning = by_id("storage-warning")
messages_el = by_id("messages")
form = by_id("composer")
chat_input = by_id("chat-input")
send_button = by_id("send-button")
stop_button = by_id("stop-button")
new_session_button = by_id("new-session-button")
session_list = by_id("session-list")
memory_panel = by_id("memory-panel")
memory_summary = by_id("memory-summary")
memory_facts = by_id("memory-facts")
memory_info = by_id("memory-info")
compact_button = by_id("compact-button")

runtime = "%s %s" % (sys.implementation.name,
                     ".".join(str(n) for n in sys.implementation.version[:3]))
status.setAttribute("data-ui-runtime", runtime)
status.setAttribute("data-ui-ms", str(int(window.performance.now())))  # UI is up

state = {
    "booted": False, "failed": False, "watchdog": None, "last": "start",
    "boot_ms": 0, "worker": None,
    "model": None, "model_reason": None, "download": None,   # Prompt API availability
    "session": None,        # the session shown
    "sessions": [],         # rows of the session list, newest first
    "turn": None,           # the running turn (see send)
    "compacting": False,    # a manual compaction was asked for and has not replied
    "memory": None,         # the last memory state of the shown session
    "note": "",             # the last turn's outcome, for the status line
    "worker_error": None,   # an error the worker reported after boot: (where, message)
}


def now_ms():
    return int(window.performance.now())


def from_js(value):
    """A JS value as plain Python (dicts, lists, str, numbers, None)."""
    if value is None or is_none(value):
        return None
    text = window.JSON.stringify(value)
    if text is None or is_none(text):
        return None
    return json.loads(text)


def to_js(value):
    return window.JSON.parse(json.dumps(value))


def make(tag, cls=None, text=None, attrs=None, parent=None):
    node = document.createElement(tag)
    if cls:
        node.className = cls
    if text is not None:
        node.textContent = text
    if attrs:
        for name in attrs:
            node.setAttribute(name, str(attrs[name]))
    if parent is not None:
        parent.append(node)
    return node


def clear(node):
    node.replaceChildren()


def clip(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def seconds(ms):
    if ms >= 1000:
        return "%.1f s" % (ms / 1000)
    return "%d ms" % int(ms) if ms >= 1 else "<1 ms"


def near_bottom():
    page = document.documentElement
    return window.innerHeight + window.scrollY >= page.scrollHeight - 160


def scroll_down(force=False):
    if force or near_bottom():
        window.scrollTo(0, document.documentElement.scrollHeight)


# ------------------------------------------------------------------ status line

def set_status(kind, text):
    status.setAttribute("data-state", kind)
    status.textContent = text


def model_usable():
    return state["model"] is not None and state["model"] != UNAVAILABLE


def model_clause():
    """What the status line says about Chrome's model, once booted."""
    model = state["model"]
    if model is None:
        return "Checking Chrome's built-in model…"
    if model == UNAVAILABLE:
        if state["model_reason"] == "unsupported":
            why = "this browser has no Prompt API (LanguageModel)"
        else:
            why = state["model_reason"] or "Chrome reports the model as unavailable on this device"
        return ("but Chrome's built-in model is not available here (%s), so the agent "
                "cannot answer. See below how to turn it on." % why)
    if state["download"] is not None:
        return "Downloading the on-device model… %d%% (first use only)." % state["download"]
    if model in ("downloadable", "downloading"):
        return ("The on-device model (Gemini Nano) will download on first use; "
                "the first answer may take a few minutes.")
    return "Gemini Nano runs on this device; nothing leaves it."


def render_status():
    if state["failed"]:
        return
    if not state["booted"]:
        return
    turn = state["turn"]
    if turn is not None:
        text = turn["phase"]
        if state["download"] is not None:
            text += " Downloading the on-device model… %d%%." % state["download"]
        set_status("busy", text)
    elif state["worker_error"] is not None:
        where, message = state["worker_error"]
        set_status("error", "Error in %s: %s" % (where, message))
    else:
        head = "Ready (agent started in %.1f s)" % (state["boot_ms"] / 1000)
        if state["model"] == UNAVAILABLE:
            text = "%s, %s" % (head, model_clause())
        else:
            text = "%s. %s" % (state["note"] or head, model_clause())
        set_status("ready", text)
    status.setAttribute("data-model", state["model"] or "unknown")
    update_controls()


def update_controls():
    """Enable exactly what can be used now."""
    running = state["turn"] is not None
    can_send = state["booted"] and not state["failed"] and model_usable() and not running
    chat_input.disabled = not (state["booted"] and model_usable())
    send_button.disabled = not can_send
    stop_button.disabled = not running or state["turn"].get("stopping", False)
    new_session_button.disabled = running or not state["booted"]
    session_list.setAttribute("aria-disabled", "true" if running else "false")
    for button in session_list.querySelectorAll("button"):
        button.disabled = running
    compact_button.disabled = (running or state["compacting"] or not state["booted"]
                               or not model_usable() or state["memory"] is None)
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


def show_error(where, message, traceback):
    """A worker or page error: readable on the status line, details expandable."""
    if not state["booted"]:
        state["failed"] = True
        stop_watchdog()
    else:   # the agent may well go on working: keep the error up until the next turn
        state["worker_error"] = (where, message)
    set_status("error", "Error in %s: %s" % (where, message))
    status.setAttribute("data-where", where)
    error_box.textContent = traceback or message
    error_box.hidden = False
    error_details.hidden = False
    error_details.open = not state["booted"]   # boot failures show it all at once
    update_controls()


# ------------------------------------------------------------------ boot

def on_silence():
    state["watchdog"] = None
    if not state["booted"] and not state["failed"]:
        show_error("page", "the agent worker has been silent for %d s after '%s'"
                   % (SILENCE_LIMIT_MS // 1000, state["last"]), "")


_on_silence = create_proxy(on_silence)


def stop_watchdog():
    if state["watchdog"] is not None:
        window.clearTimeout(state["watchdog"])
        state["watchdog"] = None


def restart_watchdog():
    stop_watchdog()
    state["watchdog"] = window.setTimeout(_on_silence, SILENCE_LIMIT_MS)


def on_boot_phase(data, received_ms):
    name = data["phase"]
    state["last"] = name
    make("li", text="%s  %d ms (+%d)" % (name, data["ms"], data["took"]),
         attrs={"data-phase": name, "data-ms": data["ms"], "data-took": data["took"],
                "data-page-ms": received_ms}, parent=phases)
    if name == "ready":
        state["booted"] = True
        state["boot_ms"] = data["ms"]
        stop_watchdog()
        details = data.get("details") or {}
        problem = details.get("storage_error")
        if problem:
            show_storage_warning("Saving is not available (%s: %s); this conversation will "
                                 "not be kept after you close the page."
                                 % (problem.get("name", "Error"), problem.get("message", "")))
        render_status()
        start_session()
    else:
        restart_watchdog()
        set_status("booting", "Starting the agent… %s after %.1f s" % (name, data["ms"] / 1000))


def show_storage_warning(text):
    storage_warning.textContent = text
    storage_warning.hidden = False


# ------------------------------------------------------------------ requests

pending = {}            # request id -> callback(ok, value_or_error)
counter = [0]


def request(kind, callback=None, **fields):
    counter[0] += 1
    request_id = "ui%d" % counter[0]
    message = {"type": kind, "id": request_id}
    message.update(fields)
    pending[request_id] = callback
    state["worker"].postMessage(to_js(message))
    return request_id


def on_reply(data):
    callback = pending.pop(data.get("id"), None)
    if callback is None:
        return
    if data.get("ok"):
        callback(True, data.get("value"))
    else:
        callback(False, data.get("error") or {"name": "Error", "message": "unknown error"})


def on_message(event):
    data = from_js(event.data)
    if not isinstance(data, dict):
        return
    kind = data.get("type")
    if kind == "reply":
        on_reply(data)
    elif kind == "event":
        on_agent_event(data.get("event") or {})
    elif kind == "boot":
        # The event's own time stamp: early events are handled later than they came.
        on_boot_phase(data, int(event.timeStamp))
    elif kind == "error":
        show_error(data.get("where") or "worker", data.get("message") or "unknown error",
                   data.get("traceback") or "")
    elif kind in ("llm", "llm-result", "llm-event"):
        pass   # the LLM host's business
    else:
        window.console.log("[page] worker message", event.data)


def on_worker_error(event):
    # A module worker that cannot even load (404, CSP, syntax error) lands here,
    # usually with no message of its own.
    event.preventDefault()
    # A bare Event has no .message (and MicroPython raises for missing JS attributes).
    message = getattr(event, "message", None) or \
        "the worker script failed to load (see the browser console)"
    show_error("worker-script", message, "")


def take_over_worker():
    """index.html started the worker before PyScript was up (to overlap the two
    starts) and kept its events; handle those, then listen directly."""
    glue = getattr(window, "pyAgentWorker", None)
    if glue is None or is_none(glue):
        show_error("page", "index.html did not start the agent worker", "")
        return None
    worker = glue.worker
    state["worker"] = worker
    worker.onmessage = create_proxy(on_message)
    worker.onerror = create_proxy(on_worker_error)
    early = glue.early
    for index in range(early.length):
        event = early[index]
        if event.type == "message":
            on_message(event)
        else:
            on_worker_error(event)
    early.length = 0
    return worker


# ------------------------------------------------------------------ Chrome's model

def on_availability(result):
    info = from_js(result) or {}
    state["model"] = info.get("availability") or UNAVAILABLE
    state["model_reason"] = info.get("reason")
    show_model_state()


def on_availability_failed(error):
    state["model"] = UNAVAILABLE
    state["model_reason"] = str(getattr(error, "message", None) or error)
    show_model_state()


def show_model_state():
    guide.hidden = state["model"] != UNAVAILABLE
    render_status()
    update_controls()


def on_download_progress(event):
    detail = from_js(event.detail) or {}
    loaded = detail.get("loaded") or 0
    state["download"] = int(round(loaded * 100)) if loaded < 1 else None
    if state["download"] is None and state["model"] in ("downloadable", "downloading"):
        state["model"] = "available"
    render_status()


_on_availability = create_proxy(on_availability)
_on_availability_failed = create_proxy(on_availability_failed)


def check_model():
    host = getattr(window, "pyAgentLLM", None)
    if host is None or is_none(host):
        on_availability_failed("the page's LLM host did not start")
        return
    host.availability().then(_on_availability, _on_availability_failed)


def listen_to_llm_host():
    host = getattr(window, "pyAgentLLM", None)
    if host is None or is_none(host):
        return
    host.addEventListener("chunk", create_proxy(on_chunk))
    host.addEventListener("downloadprogress", create_proxy(on_download_progress))


# ------------------------------------------------------------------ sessions

def new_session_id():
    base = "s-%d" % int(window.Date.now())
    known = [row["session_id"] for row in state["sessions"]] + [state["session"]]
    candidate, n = base, 2
    while candidate in known:
        candidate = "%s-%d" % (base, n)
        n += 1
    return candidate


def remember_session(session_id):
    try:
        window.localStorage.setItem(SESSION_KEY, session_id)
    except Exception:   # storage may be off; the page still works
        pass


def stored_session():
    try:
        value = window.localStorage.getItem(SESSION_KEY)
    except Exception:
        return None
    if value is None or is_none(value):
        return None
    return str(value) or None


def start_session():
    """After boot: reopen the session shown last, else the newest saved one (say, one
    migrated from an older version of the app), else start a new one."""
    remembered = stored_session()
    if remembered:
        open_session(remembered)
        refresh_sessions()
        return

    def listed(ok, value):
        if ok and isinstance(value, list):
            state["sessions"] = value
        elif not ok:
            storage_problem("Could not list the saved sessions", value)
        rows = state["sessions"]
        open_session(rows[0]["session_id"] if rows else new_session_id())
        render_sessions()
    request("sessions", listed)


def refresh_sessions():
    def done(ok, value):
        if ok and isinstance(value, list):
            state["sessions"] = value
        elif not ok:
            storage_problem("Could not list the saved sessions", value)
        render_sessions()
    request("sessions", done)


def storage_problem(what, error):
    """A failed read of saved data: a warning, not a failure (the chat still works)."""
    if isinstance(error, dict) and error.get("name") != "UnknownSessionError":
        show_storage_warning("%s (%s: %s)." % (what, error.get("name", "Error"),
                                               error.get("message", "")))


def render_sessions():
    clear(session_list)
    rows = list(state["sessions"])
    current = state["session"]
    if current and not any(row["session_id"] == current for row in rows):
        rows.insert(0, {"session_id": current, "title": "", "turns": 0, "updated_at": 0})
    running = state["turn"] is not None
    for row in rows:
        item = make("li", parent=session_list)
        button = make("button", "session", attrs={"type": "button",
                                                  "data-session-id": row["session_id"]},
                      parent=item)
        make("span", "session-title", row.get("title") or "New session", parent=button)
        turns = row.get("turns") or 0
        make("span", "session-meta", "%d turn%s" % (turns, "" if turns == 1 else "s"),
             parent=button)
        button.title = row["session_id"]
        if row["session_id"] == current:
            button.setAttribute("aria-current", "true")
        button.disabled = running


def on_session_click(event):
    target = event.target.closest("[data-session-id]")
    if target is None or is_none(target) or state["turn"] is not None:
        return
    session_id = target.getAttribute("data-session-id")
    if session_id != state["session"]:
        open_session(session_id)
        render_sessions()


def on_new_session(event):
    if state["turn"] is not None:
        return
    open_session(new_session_id())
    render_sessions()
    chat_input.focus()


def open_session(session_id):
    """Show a session: its whole transcript as messages, and its memory."""
    state["session"] = session_id
    state["memory"] = None
    state["note"] = ""
    remember_session(session_id)
    clear(messages_el)
    render_memory(None)
    messages_el.setAttribute("data-session-id", session_id)
    messages_el.setAttribute("data-loading", "true")

    def got_memory(ok, value):
        if state["session"] != session_id:
            return
        if ok:
            render_memory(value)
        else:
            storage_problem("Could not read this session's memory", value)
        request("transcript", lambda ok2, turns: got_transcript(ok2, turns, value if ok else None),
                session_id=session_id)

    def got_transcript(ok, turns, memory):
        if state["session"] != session_id:
            return
        if not ok:
            # Unknown session: nothing yet. Another failure: fall back to the memory's turns.
            storage_problem("Could not read this session's transcript", turns)
            turns = (memory or {}).get("recent_turns") or []
        compacted = compacted_ids(memory)
        clear(messages_el)
        for turn in turns or []:
            render_past_turn(turn, compacted)
        messages_el.setAttribute("data-loading", "false")
        scroll_down(force=True)
        render_status()

    request("memory", got_memory, session_id=session_id)
    update_controls()


# ------------------------------------------------------------------ memory panel

def render_memory(memory):
    """The summary and key facts the next prompt of this session will carry."""
    state["memory"] = memory
    clear(memory_facts)
    if memory is None:
        memory_summary.textContent = ""
        memory_info.textContent = "Nothing remembered yet: send a message to start."
        memory_panel.setAttribute("data-state", "empty")
        update_controls()
        return
    memory_summary.textContent = memory.get("summary") or ""
    for fact in memory.get("facts") or []:
        item = make("li", "fact", attrs={"data-category": fact.get("category", "")},
                    parent=memory_facts)
        make("span", "fact-category", fact.get("category", ""), parent=item)
        make("span", "fact-text", fact.get("text", ""), parent=item)
    memory_info.textContent = memory_line(memory)
    memory_panel.setAttribute("data-state", "compacting" if memory.get("compacting") else "idle")
    memory_panel.setAttribute("data-compactions", str(memory.get("compactions", 0)))
    update_controls()


def memory_line(memory):
    parts = []
    recent = memory.get("recent_turns")
    if not recent and not memory.get("compactions"):
        return "Nothing remembered yet: send a message to start."
    if isinstance(recent, list):
        parts.append("%d recent turn%s kept word for word" % (len(recent),
                                                              "" if len(recent) == 1 else "s"))
    compactions = memory.get("compactions", 0)
    if compactions:
        parts.append("%d compaction%s" % (compactions, "" if compactions == 1 else "s"))
    if memory.get("failed_compactions"):
        parts.append("%d failed" % memory["failed_compactions"])
    budget = memory.get("budget")
    if budget:
        parts.append("turns use %d of %d tokens (compacts at %d)"
                     % (budget.get("turns", 0), budget.get("turn_budget", 0),
                        budget.get("trigger", 0)))
    if memory.get("unsaved_turns"):
        parts.append("%d turn(s) not saved yet" % memory["unsaved_turns"])
    if memory.get("compacting"):
        parts.append("compacting now…")
    return "; ".join(parts) + "." if parts else ""


def refresh_memory():
    session_id = state["session"]

    def done(ok, value):
        if state["session"] != session_id:
            return
        if ok:
            render_memory(value)
            mark_compacted(value)
    request("memory", done, session_id=session_id)


def mark_compacted(memory):
    """Flag the shown turns that now live only in the summary."""
    compacted = compacted_ids(memory)
    for node in messages_el.querySelectorAll('[data-role="assistant"][data-turn-id]'):
        turn_id = int(node.getAttribute("data-turn-id"))
        node.setAttribute("data-compacted", "true" if turn_id in compacted else "false")


def compacted_ids(memory):
    """Ids of the turns that successful compactions folded into the summary."""
    done = set()
    for record in (memory or {}).get("compressions") or []:
        if record.get("ok"):
            for turn_id in record.get("turn_ids") or []:
                done.add(turn_id)
    return done


def on_compact(event):
    session_id = state["session"]
    if state["compacting"] or state["turn"] is not None:
        return
    state["compacting"] = True
    compact_button.textContent = "Compacting…"
    memory_panel.setAttribute("data-state", "compacting")
    update_controls()

    def done(ok, value):
        state["compacting"] = False
        compact_button.textContent = "Compact now"
        if state["session"] != session_id:
            update_controls()
            return
        if ok and value.get("ok"):
            state["note"] = "Compacted %d turn%s (%d → %d tokens)" % (
                value["compacted_turns"], "" if value["compacted_turns"] == 1 else "s",
                value.get("tokens_before", 0), value.get("tokens_after", 0))
        elif ok:
            state["note"] = "Nothing compacted: %s" % (value.get("error") or "no reason given")
        elif value.get("name") == "UnknownSessionError":
            state["note"] = "Nothing to compact yet: this session has no turns"
        else:
            state["note"] = "Compaction failed: %s" % value.get("message", "")
        refresh_memory()
        render_status()
    request("compact", done, session_id=session_id)


# ------------------------------------------------------------------ messages

def add_message(role, text, attrs=None):
    node = make("li", "message", attrs={"data-testid": "message", "data-role": role},
                parent=messages_el)
    if attrs:
        for name in attrs:
            node.setAttribute(name, str(attrs[name]))
    make("div", "role", "You" if role == "user" else "Agent", parent=node)
    return node


def add_user_message(text):
    node = add_message("user", text)
    make("div", "text", text, parent=node)
    return node


def add_assistant_message(turn_id=None, open_trace=True):
    attrs = {"data-state": "pending"}
    if turn_id is not None:
        attrs["data-turn-id"] = turn_id
    node = add_message("assistant", "", attrs)
    trace = make("details", "trace", attrs={"data-testid": "trace"}, parent=node)
    trace.open = open_trace
    make("summary", "trace-summary", "Thinking…", parent=trace)
    make("p", "tools-offered", parent=trace).hidden = True
    make("ol", "trace-steps", parent=trace)
    make("div", "text", parent=node)
    return node


def part(node, selector):
    return node.querySelector(selector)


def trace_step(message, index, kind="pending"):
    """The message's trace-step for step ``index`` (made on first use)."""
    steps = part(message, ".trace-steps")
    found = steps.querySelector('[data-index="%d"]' % index)
    if found is not None and not is_none(found):
        return found
    node = make("li", "trace-step", attrs={"data-testid": "trace-step", "data-index": index,
                                           "data-kind": kind}, parent=steps)
    head = make("div", "step-head", parent=node)
    make("span", "step-label", "Step %d" % index, parent=head)
    make("span", "step-timing", parent=head)
    make("p", "thought", attrs={"data-part": "thought"}, parent=node).hidden = True
    action = make("p", "action", attrs={"data-part": "action"}, parent=node)
    action.hidden = True
    make("span", "tool", parent=action)
    make("code", "tool-input", parent=action)
    make("pre", "observation", attrs={"data-part": "observation"}, parent=node).hidden = True
    return node


def set_part(step, selector, text):
    node = part(step, selector)
    node.textContent = text
    node.hidden = not text
    return node


def set_action(step, tool, tool_input):
    action = part(step, ".action")
    part(action, ".tool").textContent = tool
    part(action, ".tool-input").textContent = tool_input
    action.hidden = False
    step.setAttribute("data-tool", tool)


def set_observation(step, text, ok, kind, duration_ms):
    node = set_part(step, ".observation", text)
    node.hidden = False
    step.setAttribute("data-kind", kind or "tool")
    step.setAttribute("data-ok", "true" if ok else "false")
    if duration_ms:
        set_timing(step, "tool %s" % seconds(duration_ms))


def set_timing(step, text):
    part(step, ".step-timing").textContent = text


def summarize_trace(message, steps):
    """One line for the trace's <summary>: how many steps and which tools."""
    tools = []
    for step in steps:
        tool = step.get("tool") or ""
        if tool and tool != "none" and step.get("kind", "tool") in ("tool", "repeat", "compact") \
                and tool not in tools:
            tools.append(tool)
    text = "%d step%s" % (len(steps), "" if len(steps) == 1 else "s")
    if len(steps) == 1 and steps[0].get("kind") == "answer":
        text += " · answered directly"
    if tools:
        text += " · " + ", ".join(tools)
    corrective = len([s for s in steps if s.get("kind") in ("corrective", "repeat")])
    if corrective:
        text += " · %d corrected" % corrective
    part(message, ".trace-summary").textContent = text
    return tools


def step_kind(record):
    """The kind of an archived step (the archive keeps only `corrective`)."""
    if record.get("corrective"):
        return "corrective"
    tool = record.get("tool") or ""
    return "answer" if tool in ("", "none") else "tool"


def format_input(value):
    if isinstance(value, str):
        return value
    return json.dumps(value)


def render_past_turn(turn, compacted):
    add_user_message(turn.get("user", ""))
    message = add_assistant_message(turn.get("id"), open_trace=False)
    steps = []
    for index, record in enumerate(turn.get("steps") or []):
        kind = step_kind(record)
        step = trace_step(message, index + 1, kind)
        set_part(step, ".thought", record.get("thought") or "")
        if kind != "answer" or record.get("tool") not in ("", "none", None):
            if record.get("tool"):
                set_action(step, record.get("tool"), format_input(record.get("tool_input", "")))
        if record.get("observation"):
            set_observation(step, record["observation"], kind != "corrective", kind, 0)
        steps.append({"tool": record.get("tool"), "kind": kind})
    if not steps:
        part(message, ".trace").hidden = True
    else:
        summarize_trace(message, steps)
    status_ = turn.get("status") or "answered"
    message.setAttribute("data-state", status_)
    part(message, ".text").textContent = turn.get("answer") or \
        ("(no answer)" if status_ != "answered" else "")
    message.setAttribute("data-compacted", "true" if turn.get("id") in compacted else "false")
    return message


# ------------------------------------------------------------------ a turn

def can_send():
    return (state["booted"] and not state["failed"] and model_usable()
            and state["turn"] is None)


def send(text):
    text = text.strip()
    if not text or not can_send():
        return
    chat_input.value = ""
    if state["worker_error"] is not None:   # seen; a new turn starts afresh
        state["worker_error"] = None
        error_details.hidden = True
    add_user_message(text)
    message = add_assistant_message()
    session_id = state["session"]
    turn = {"session": session_id, "text": text, "message": message, "step": 0,
            "started": now_ms(), "phase": "Thinking…", "answered": False}
    state["turn"] = turn
    state["note"] = ""
    scroll_down(force=True)
    render_status()
    render_sessions()
    request("run", lambda ok, value: on_run_reply(turn, ok, value),
            session_id=session_id, text=text)


def on_run_reply(turn, ok, value):
    message = turn["message"]
    elapsed = now_ms() - turn["started"]
    state["turn"] = None
    text_node = part(message, ".text")
    if ok:
        result = value
        result_status = result.get("status") or "answered"
        message.setAttribute("data-state", result_status)
        message.setAttribute("data-turn-id", str(result.get("turn_id")))
        if result_status == "aborted":
            text_node.textContent = "Stopped before answering."
            state["note"] = "Stopped after %s" % seconds(elapsed)
        else:
            text_node.textContent = result.get("answer") or "(no answer)"
            finish_trace(message, result.get("steps") or [])
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
        text_node.textContent = "Something went wrong: %s: %s" % (
            error.get("name", "Error"), error.get("message", ""))
        add_error_details(message, error.get("message", ""), error.get("traceback") or "")
        restore_input(turn["text"])
        state["note"] = "The request failed"
    trace = part(message, ".trace")
    if not part(message, ".trace-steps").children.length:
        trace.hidden = True
    render_status()
    render_sessions()
    refresh_sessions()
    refresh_memory()
    check_model()   # a first turn may have downloaded the model
    scroll_down()
    if ok and value.get("status") != "error":
        chat_input.focus()


def finish_trace(message, steps):
    """Fill in what the events do not carry (model timings), and the summary line."""
    for step in steps:
        node = trace_step(message, step["index"], step.get("kind") or "tool")
        node.setAttribute("data-kind", step.get("kind") or "tool")
        node.setAttribute("data-state", "done")
        timing = ["model %s" % seconds(step.get("model_ms") or 0)]
        if step.get("tool_ms"):
            timing.append("tool %s" % seconds(step["tool_ms"]))
        set_timing(node, " · ".join(timing))
        if step.get("kind") == "answer":
            node.setAttribute("data-tool", "none")
    tools = summarize_trace(message, steps)
    part(message, ".trace").open = bool(tools)


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
    session_id = event.get("session_id")
    data = event.get("data") or {}
    if kind == "storage_error":
        show_storage_warning(data.get("message") or "Could not save to this browser's storage.")
        return
    if kind in ("compaction_started", "memory_updated", "compaction_failed"):
        on_memory_event(kind, session_id, data)
        return
    turn = state["turn"]
    if turn is None or turn["session"] != session_id:
        return
    message = turn["message"]
    if kind == "turn_started":
        message.setAttribute("data-turn-id", str(data.get("turn_id")))
    elif kind == "tools_retrieved":
        names = [t.get("name", "") for t in data.get("tools") or []]
        offered = part(message, ".tools-offered")
        offered.textContent = "Tools offered: " + (", ".join(names) or "none")
        offered.hidden = False
    elif kind == "step_started":
        index = data.get("index", 1)
        turn["step"] = index
        turn["stream_step"] = index
        step = trace_step(message, index)
        step.setAttribute("data-state", "running")
        turn["step_started"] = now_ms()
        turn["phase"] = "Thinking… (step %d)" % index
        render_status()
        scroll_down()
    elif kind == "thought":
        step = trace_step(message, data.get("index", turn["step"]))
        set_part(step, ".thought", data.get("text") or "")
    elif kind == "action":
        step = trace_step(message, data.get("index", turn["step"]))
        set_action(step, data.get("tool") or "", data.get("input") or "")
        step.setAttribute("data-kind", "tool")
        turn["phase"] = "Running %s… (step %d)" % (data.get("tool") or "a tool", turn["step"])
        render_status()
    elif kind == "observation":
        step = trace_step(message, data.get("index", turn["step"]))
        set_observation(step, data.get("text") or "", data.get("ok", True),
                        data.get("kind") or "tool", data.get("duration_ms") or 0)
        step.setAttribute("data-state", "done")
        scroll_down()
    elif kind == "answer":
        turn["answered"] = True
        if data.get("status") == "answered":
            last = part(message, '.trace-step[data-state="running"]')
            if last is not None and not is_none(last):
                last.setAttribute("data-kind", "answer")
                last.setAttribute("data-state", "done")
        if data.get("text"):
            part(message, ".text").textContent = data["text"]
        turn["phase"] = "Saving…"
        render_status()
        scroll_down()
    elif kind == "turn_saved":
        message.setAttribute("data-saved", "true")
    elif kind == "error":
        message.setAttribute("data-error-kind", data.get("kind") or "")


def on_memory_event(kind, session_id, data):
    if kind == "memory_updated":
        refresh_sessions()
    if session_id != state["session"]:
        return
    if kind == "compaction_started":
        memory_panel.setAttribute("data-state", "compacting")
        memory_info.textContent = "Compacting %d older turn%s into the summary…" % (
            len(data.get("turn_ids") or []), "" if len(data.get("turn_ids") or []) == 1 else "s")
    elif kind == "memory_updated":
        memory_summary.textContent = data.get("summary") or ""
        clear(memory_facts)
        for fact in data.get("facts") or []:
            item = make("li", "fact", attrs={"data-category": fact.get("category", "")},
                        parent=memory_facts)
            make("span", "fact-category", fact.get("category", ""), parent=item)
            make("span", "fact-text", fact.get("text", ""), parent=item)
        memory_panel.setAttribute("data-state", "idle")
        refresh_memory()   # the counters and budget, and which turns are compacted now
    elif kind == "compaction_failed":
        memory_panel.setAttribute("data-state", "failed")
        memory_info.textContent = ("Compaction failed (%s); the raw turns are kept and it "
                                   "will be retried." % (data.get("error") or "unknown error"))


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
    step = trace_step(message, index)
    thought = partial_string(text, "thought")
    if thought:
        set_part(step, ".thought", thought)
    # Preview the answer only from a step that answers (not one that calls a tool).
    answer = partial_string(text, "finalAnswer")
    if answer and partial_string(text, "toolName") == "none":
        part(message, ".text").textContent = answer
    scroll_down()


# ------------------------------------------------------------------ wiring

def on_submit(event):
    event.preventDefault()
    send(chat_input.value)


def on_key(event):
    if event.key == "Enter" and not event.shiftKey and not event.isComposing:
        event.preventDefault()
        send(chat_input.value)


handlers = [
    (form, "submit", on_submit),
    (chat_input, "keydown", on_key),
    (stop_button, "click", on_stop),
    (new_session_button, "click", on_new_session),
    (session_list, "click", on_session_click),
    (compact_button, "click", on_compact),
]
proxies = []
for target, name, function in handlers:
    proxy = create_proxy(function)
    proxies.append(proxy)
    target.addEventListener(name, proxy)

set_status("booting", "Starting the agent worker (UI: %s)…" % runtime)
update_controls()
restart_watchdog()
listen_to_llm_host()
check_model()
worker = take_over_worker()
