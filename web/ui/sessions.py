# The sessions sidebar: list, create and switch sessions; the last one reopens on load.
from pyscript import window

from ui.app import emit, on, running, state
from ui.dom import by_id, clear, listen, make, missing
from ui.link import request
from ui.memory import render_memory
from ui.status import render_status, storage_problem, update_controls
from ui import chat

SESSION_KEY = "py-agent.session"   # localStorage: the session shown last

new_session_button = by_id("new-session-button")
session_list = by_id("session-list")


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
    if missing(value):
        return None
    return str(value) or None


def start_session(details=None):
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


def render_sessions():
    clear(session_list)
    rows = list(state["sessions"])
    current = state["session"]
    if current and not any(row["session_id"] == current for row in rows):
        rows.insert(0, {"session_id": current, "title": "", "turns": 0, "updated_at": 0})
    busy = running()
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
        button.disabled = busy


def on_session_click(event):
    target = event.target.closest("[data-session-id]")
    if missing(target) or running():
        return
    session_id = target.getAttribute("data-session-id")
    if session_id != state["session"]:
        open_session(session_id)
        render_sessions()


def on_new_session(event):
    if running():
        return
    open_session(new_session_id())
    render_sessions()
    chat.chat_input.focus()


def open_session(session_id):
    """Show a session: its whole transcript as messages, and its memory."""
    state["session"] = session_id
    state["memory"] = None
    state["note"] = ""
    remember_session(session_id)
    emit("session_opening", session_id)

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
        chat.show_transcript(session_id, turns, memory)
        render_status()

    request("memory", got_memory, session_id=session_id)
    update_controls()


def on_controls():
    busy = running()
    new_session_button.disabled = busy or not state["booted"]
    session_list.setAttribute("aria-disabled", "true" if busy else "false")
    for button in session_list.querySelectorAll("button"):
        button.disabled = busy


def on_agent_event(event):
    if event.get("type") == "memory_updated":
        refresh_sessions()


def start():
    on("controls", on_controls)
    on("booted", start_session)
    on("turn_started", lambda turn: render_sessions())
    on("turn_finished", lambda *args: refresh_sessions())
    on("agent_event", on_agent_event)
    listen(new_session_button, "click", on_new_session)
    listen(session_list, "click", on_session_click)
