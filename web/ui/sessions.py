# The sessions sidebar: list, create, switch, rename (inline) and delete (with an inline
# confirmation) sessions, and make one private (the lock: it neither reads nor adds to the
# user profile; a new chat can be private from its first message); the last one shown
# reopens on load.
#
# Keyboard: Tab reaches each session and its Rename/Delete buttons; in the list, Up/Down
# (and Home/End) move between sessions, F2 renames and Delete deletes the focused one.
# In the rename field Enter saves and Escape cancels; Escape also cancels a delete.
from pyscript import document, window

from ui.app import emit, on, running, state
from ui.dom import by_id, clear, clicked_in_row, listen, make, missing, plural
from ui.link import request
from ui.memory import render_memory
from ui.status import (failure_text, render_status, show_storage_warning, storage_problem,
                       update_controls)
from ui import chat, messages, transfer

SESSION_KEY = "py-agent.session"   # localStorage: the session shown last
TITLE_CHARS = 80                   # the agent keeps titles to this many characters

new_session_button = by_id("new-session-button")
session_list = by_id("session-list")

# What the list is doing: mode None, "rename" or "delete", for one session.
_edit = {"mode": None, "session": None, "field": None, "rendering": False}
# Titles shown before the agent has saved one (derived from the first message).
_pending_titles = {}
# Whether a session not listed yet (a new chat) was made private, until it is listed.
_private_unsaved = {}


def new_session_id():
    base = "s-%d" % int(window.Date.now())
    known = [row["session_id"] for row in state["sessions"]] + [state["session"]]
    candidate, n = base, 2
    while candidate in known:
        candidate = "%s-%d" % (base, n)
        n += 1
    return candidate


def title_from(message):
    """The title the agent will give a session from its first message: the page's one
    copy of py_agent/sessions.py's title_from (keep the two in step)."""
    text = " ".join(str(message).split())
    return text if len(text) <= 60 else text[:57].rstrip() + "…"


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
        mark_listed(ok)
    request("sessions", listed)


def refresh_sessions():
    def done(ok, value):
        if ok and isinstance(value, list):
            state["sessions"] = value
            for row in value:
                if row.get("title"):
                    _pending_titles.pop(row["session_id"], None)
                _private_unsaved.pop(row["session_id"], None)
        elif not ok:
            storage_problem("Could not list the saved sessions", value)
        render_sessions()
        mark_listed(ok)
    request("sessions", done)


def mark_listed(ok):
    """The list shows what storage holds (or could not be read): ``data-state`` says so
    for whoever waits on it (tests, assistive tools); before that it is still loading."""
    session_list.setAttribute("data-state", "listed" if ok else "failed")
    session_list.setAttribute("aria-busy", "false")


# ------------------------------------------------------------------ rendering

def find_row(session_id):
    for row in state["sessions"]:
        if row["session_id"] == session_id:
            return row
    return None


def shown_rows():
    """The saved sessions, plus the shown one if it is not saved yet (first)."""
    rows = list(state["sessions"])
    current = state["session"]
    if current and find_row(current) is None:
        rows.insert(0, {"session_id": current, "title": "", "turns": 0, "updated_at": 0,
                        "unsaved": True, "private": _private_unsaved.get(current, False)})
    return rows


def title_of(row, untitled="New session"):
    return row.get("title") or _pending_titles.get(row["session_id"]) or untitled


def session_title(session_id):
    """A chat's title as the list shows it; None for a chat the list does not show (one
    that only another client of the agent, say WebMCP's, uses)."""
    row = find_row(session_id)
    if row is None:
        if session_id != state["session"] and session_id not in _pending_titles:
            return None
        row = {"session_id": session_id}
    return title_of(row)


def row_node(session_id):
    for node in session_list.querySelectorAll("li[data-row]"):
        if node.getAttribute("data-row") == session_id:
            return node
    return None


def control(session_id, action):
    """The button (or field) ``action`` of a session's row, or None."""
    node = row_node(session_id)
    if node is None:
        return None
    found = node.querySelector('[data-action="%s"]' % action)
    return None if missing(found) else found


def focused_control():
    """(session id, action) of the list's control that has the focus, or None."""
    active = document.activeElement
    if missing(active) or not session_list.contains(active):
        return None
    row = active.closest("li[data-row]")
    if missing(row):
        return None
    return row.getAttribute("data-row"), active.getAttribute("data-action") or "open"


def focus_control(session_id, action):
    node = control(session_id, action) or control(session_id, "open")
    if node is not None:
        node.focus()
    return node


def render_sessions():
    focus = focused_control()
    _edit["rendering"] = True   # the rename field may lose focus here: not a blur to act on
    try:
        clear(session_list)
        current = state["session"]
        busy = running()
        for row in shown_rows():
            session_id = row["session_id"]
            item = make("li", "session-row", attrs={"data-row": session_id}, parent=session_list)
            editing = _edit["session"] == session_id and _edit["mode"]
            if editing == "rename":
                render_rename(item, row)
            elif editing == "delete":
                render_confirm(item, row, busy)
            else:
                render_row(item, row, session_id == current, busy)
        field = _edit["field"]
        if _edit["mode"] == "rename" and field is not None and field.isConnected:
            field.focus()
        elif focus is not None:
            focus_control(*focus)
    finally:
        _edit["rendering"] = False


def render_row(item, row, current, busy):
    session_id = row["session_id"]
    title = title_of(row)
    button = make("button", "session", attrs={"type": "button", "data-session-id": session_id,
                                              "data-action": "open"}, parent=item)
    private = bool(row.get("private"))
    make("span", "session-title", title, parent=button)
    meta = plural(row.get("turns") or 0, "turn") + (" · private" if private else "")
    make("span", "session-meta", meta, parent=button)
    button.title = "%s (%s)%s" % (title, session_id, ", private" if private else "")
    if current:
        button.setAttribute("aria-current", "true")
    button.disabled = busy
    item.setAttribute("data-private", "true" if private else "false")
    lock = make("button", "session-action", "🔒" if private else "🔓", parent=item, attrs={
        "type": "button", "data-action": "private", "data-testid": "private-session",
        "aria-pressed": "true" if private else "false",
        "aria-label": "Private: “%s” neither reads nor adds to your profile" % title,
        "title": ("Private: this chat neither reads nor adds to your profile (click to share "
                  "it again)" if private else "Make this chat private: nothing from it "
                  "enters your profile")})
    lock.disabled = busy
    if row.get("unsaved"):
        return   # nothing stored to rename or delete yet
    rename = make("button", "session-action", "✎", parent=item, attrs={
        "type": "button", "data-action": "rename", "data-testid": "rename-session",
        "aria-label": "Rename “%s”" % title, "title": "Rename (F2)"})
    rename.disabled = busy
    delete = make("button", "session-action", "✕", parent=item, attrs={
        "type": "button", "data-action": "delete", "data-testid": "delete-session",
        "aria-label": "Delete “%s”" % title, "title": "Delete (Del)"})
    delete.disabled = busy


def render_rename(item, row):
    item.setAttribute("data-mode", "rename")
    field = _edit["field"]
    if field is None:
        field = make("input", "rename-field", attrs={
            "type": "text", "data-action": "rename-field", "data-testid": "rename-field",
            "maxlength": TITLE_CHARS, "aria-label": "New title for “%s”" % title_of(row),
            "title": "Enter saves, Escape cancels"})
        field.value = title_of(row, "")
        _edit["field"] = field
        item.append(field)
        field.focus()
        field.select()
    else:
        item.append(field)


def render_confirm(item, row, busy):
    item.setAttribute("data-mode", "delete")
    box = make("div", "delete-confirm", attrs={"role": "group",
                                               "aria-label": "Confirm deletion"}, parent=item)
    make("span", "confirm-text", "Delete “%s”?" % title_of(row), parent=box)
    yes = make("button", "danger", "Yes, delete", parent=box, attrs={
        "type": "button", "data-action": "confirm-delete", "data-testid": "confirm-delete"})
    no = make("button", None, "No", parent=box, attrs={
        "type": "button", "data-action": "cancel-delete", "data-testid": "cancel-delete"})
    yes.disabled = busy
    no.disabled = False


# ------------------------------------------------------------------ actions

def set_edit(mode, session_id=None):
    """Rename or delete (``mode``) ``session_id`` in the list, or (None) neither."""
    _edit["mode"], _edit["session"], _edit["field"] = mode, session_id, None


def start_edit(mode, session_id):
    if running() or find_row(session_id) is None:
        return
    set_edit(mode, session_id)
    render_sessions()
    if mode == "delete":
        focus_control(session_id, "cancel-delete")   # the safe choice has the focus


def end_edit(focus_action=None):
    session_id = _edit["session"]
    set_edit(None)
    render_sessions()
    if focus_action and session_id:
        focus_control(session_id, focus_action)


def commit_rename():
    session_id = _edit["session"]
    field = _edit["field"]
    if _edit["mode"] != "rename" or field is None:
        return
    title = " ".join(str(field.value).split())[:TITLE_CHARS]
    row = find_row(session_id)
    old = (row or {}).get("title") or ""
    if not title or row is None or title == old:
        end_edit("rename")   # an empty title changes nothing
        return
    row["title"] = title   # shown at once; put back if the worker refuses
    end_edit("rename")

    def done(ok, value):
        if not ok:
            current = find_row(session_id)
            if current is not None and current.get("title") == title:
                current["title"] = old
            render_sessions()
            show_storage_warning("Could not rename the session (%s)." % failure_text(value))
            return
        refresh_sessions()
    request("rename_session", done, session_id=session_id, title=title)


def delete_session(session_id):
    rows = shown_rows()
    ids = [row["session_id"] for row in rows]
    index = ids.index(session_id) if session_id in ids else 0
    others = [sid for sid in ids if sid != session_id]
    # After deletion, the focus (and, for the shown session, the page) goes to the next
    # session in the list, else the previous one.
    after = others[min(index, len(others) - 1)] if others else None
    set_edit(None)

    def done(ok, value):
        if not ok:
            render_sessions()
            show_storage_warning("Could not delete the session (%s)." % failure_text(value))
            focus_control(session_id, "delete")
            return
        state["sessions"] = [row for row in state["sessions"]
                             if row["session_id"] != session_id]
        _pending_titles.pop(session_id, None)
        target = after
        if session_id == state["session"]:
            if target is None:
                target = new_session_id()
            open_session(target)
        render_sessions()
        focus_control(target or state["session"], "open")
        refresh_sessions()
    for node in session_list.querySelectorAll("button"):
        node.disabled = True   # until the worker has answered
    request("delete_session", done, session_id=session_id)


def toggle_private(session_id):
    """Make a session private or not (a new, unsaved one too); shown at once, put back if
    the worker refuses."""
    row = find_row(session_id)
    unsaved = row is None
    if unsaved:
        private = not _private_unsaved.get(session_id, False)
        _private_unsaved[session_id] = private
    else:
        private = not row.get("private")
        row["private"] = private
    render_sessions()

    def done(ok, value):
        if not ok:
            if unsaved:
                _private_unsaved.pop(session_id, None)
            elif find_row(session_id) is not None:
                find_row(session_id)["private"] = not private
            render_sessions()
            show_storage_warning("Could not change whether the session is private (%s)."
                                 % failure_text(value))
            return
        refresh_sessions()
    request("set_private", done, session_id=session_id, private=private)


def show_imported(session_id, title, turns):
    """List a session the worker has just imported and open it."""
    if find_row(session_id) is None:
        state["sessions"].insert(0, {"session_id": session_id, "title": title or "",
                                     "turns": turns, "updated_at": window.Date.now()})
    open_session(session_id)
    render_sessions()
    refresh_sessions()


def on_list_click(event):
    target, session_id = clicked_in_row(event, "data-row")
    if target is None:
        return
    action = target.getAttribute("data-action")
    if action == "open":
        if not running() and session_id != state["session"]:
            open_session(session_id)
            render_sessions()
    elif action == "private":
        if not running():
            toggle_private(session_id)
    elif action == "rename":
        start_edit("rename", session_id)
    elif action == "delete":
        start_edit("delete", session_id)
    elif action == "confirm-delete":
        if not running():
            delete_session(session_id)
    elif action == "cancel-delete":
        end_edit("delete")


def move_focus(target, step):
    buttons = list(session_list.querySelectorAll('[data-action="open"]'))
    if not buttons:
        return
    ids = [b.getAttribute("data-session-id") for b in buttons]
    here = target.getAttribute("data-session-id")
    index = ids.index(here) if here in ids else 0
    if step == "first":
        index = 0
    elif step == "last":
        index = len(buttons) - 1
    else:
        index = max(0, min(len(buttons) - 1, index + step))
    buttons[index].focus()


def on_list_key(event):
    target = event.target
    action = target.getAttribute("data-action")
    key = event.key
    row = target.closest("li[data-row]")
    session_id = None if missing(row) else row.getAttribute("data-row")
    if action == "rename-field":
        if key == "Enter":
            event.preventDefault()
            commit_rename()
        elif key == "Escape":
            event.preventDefault()
            end_edit("rename")
        return
    if _edit["mode"] == "delete" and key == "Escape":
        event.preventDefault()
        end_edit("delete")
        return
    if action != "open":
        return
    moves = {"ArrowDown": 1, "ArrowUp": -1, "Home": "first", "End": "last"}
    if key in moves:
        event.preventDefault()
        move_focus(target, moves[key])
    elif key == "F2" and session_id:
        event.preventDefault()
        start_edit("rename", session_id)
    elif key == "Delete" and session_id:
        event.preventDefault()
        start_edit("delete", session_id)


def on_field_blur(event):
    """Leaving the rename field (say, with Tab) saves it, as Enter does."""
    if _edit["rendering"] or _edit["mode"] != "rename":
        return
    if event.target.getAttribute("data-action") == "rename-field":
        commit_rename()


def on_new_session(event):
    if running():
        return
    set_edit(None)
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

    # Both are asked for at once; the transcript is shown once both are in (it needs the
    # memory to mark compacted turns, and falls back to its recent turns).
    replies = {}

    def got_memory(ok, value):
        if state["session"] != session_id:
            return
        if ok:
            render_memory(value)
        else:
            storage_problem("Could not read this session's memory", value)
        replies["memory"] = value if ok else None
        show_transcript()

    def got_transcript(ok, turns):
        replies["transcript"] = (ok, turns)
        show_transcript()

    def show_transcript():
        if state["session"] != session_id or len(replies) < 2:
            return
        ok, turns = replies["transcript"]
        memory = replies["memory"]
        if not ok:
            # Unknown session: nothing yet. Another failure: fall back to the memory's turns.
            storage_problem("Could not read this session's transcript", turns)
            turns = (memory or {}).get("recent_turns") or []
        messages.show_transcript(session_id, turns, memory)
        render_status()

    request("memory", got_memory, session_id=session_id)
    request("transcript", got_transcript, session_id=session_id)
    update_controls()


def on_controls():
    busy = running()
    new_session_button.disabled = busy or not state["booted"]
    session_list.setAttribute("aria-disabled", "true" if busy else "false")
    for button in session_list.querySelectorAll("button"):
        button.disabled = busy and button.getAttribute("data-action") != "cancel-delete"


def on_turn_started(turn):
    """Title a new session from its first message at once (the agent saves the same)."""
    session_id = turn.session
    row = find_row(session_id)
    if not (row and row.get("title")) and session_id not in _pending_titles:
        _pending_titles[session_id] = title_from(turn.text)
    if _edit["mode"] == "rename":
        set_edit(None)
    render_sessions()


def start():
    on("controls", on_controls)
    on_controls()   # started late (web/main.py): as the controls are now
    on("booted", start_session)
    if state["booted"]:   # started after the worker said ready (web/main.py starts it late)
        start_session()
    on("turn_started", on_turn_started)
    on("turn_finished", lambda *args: refresh_sessions())
    on("session_imported", show_imported)
    listen(new_session_button, "click", on_new_session)
    listen(session_list, "click", on_list_click)
    listen(session_list, "keydown", on_list_key)
    listen(session_list, "focusout", on_field_blur)
    transfer.start()
