# The memory inspector's user profile: the lasting facts the agent keeps for every chat
# that is not private (py_agent/profile.py), each with where it came from (the chat, the
# turn that said it, when), which of them the shown chat's next prompt carries, and Edit
# and Forget for each. Forget asks first; Edit is an inline field (Enter saves, Escape
# cancels). A private chat says here that it neither reads nor adds to the profile.
# A fact taken from text from outside (a tool's result, page text) is "unconfirmed": it
# says where it was read, no chat's prompt carries it, and it offers Confirm and Forget.
from ui.app import on, running, state
from ui.dom import by_id, clear, clicked_in_row, listen, make, plural
from ui.link import request
from ui.memory import refresh_memory
from ui.memory_log import when
from ui.status import failure_text, show_storage_warning

profile_panel = by_id("profile-panel")
profile_facts = by_id("profile-facts")
profile_note = by_id("profile-note")
profile_count = profile_panel.querySelector('[data-count="profile"]')

CATEGORY_LABELS = {"preference": "preference", "need": "need", "background": "background"}

# The facts as last listed, and what the list is doing: mode None, "edit" or "forget"
# for one fact (and the edit field, kept across re-renders).
_profile = {"facts": None, "mode": None, "fact": None, "field": None, "asked": 0}


def in_prompt_ids():
    """Ids of the profile facts the shown chat's next prompt carries."""
    memory = state["memory"] or {}
    return [f.get("id") for f in memory.get("profile") or []]


def source_text(fact):
    """Where a fact came from, as a person reads it."""
    session_id = fact.get("session_id") or ""
    if session_id and session_id == state["session"]:
        where = "this chat"
    elif fact.get("session_listed"):
        where = "“%s”" % (fact.get("session_title") or "an untitled chat")
    else:
        where = "a chat no longer listed"
    parts = ["From " + where]
    if fact.get("turn_id") is not None:
        parts.append("turn %s" % fact["turn_id"])
    said = when(fact.get("at"))
    if said:
        parts.append(said)
    text = ", ".join(parts)
    if fact.get("edited_at"):
        text += " (edited %s)" % when(fact["edited_at"])
    return text


def render_note(facts):
    memory = state["memory"] or {}
    if memory.get("private"):
        profile_panel.setAttribute("data-private", "true")
        profile_note.textContent = ("This chat is private: it neither reads these facts nor "
                                    "adds to them.")
        return
    profile_panel.setAttribute("data-private", "false")
    if not facts:
        profile_note.textContent = ("Preferences, needs and background you mention are kept "
                                    "here for every chat that is not private.")
        return
    shown = len([f for f in facts if f.get("id") in in_prompt_ids()])
    waiting = len([f for f in facts if f.get("unconfirmed")])
    profile_note.textContent = ("Known in every chat that is not private; %s from other chats "
                                "in this chat's next prompt." % plural(shown, "fact")
                                + (" %s waiting for you to confirm." % plural(waiting, "fact")
                                   if waiting else ""))


def render_profile():
    facts = _profile["facts"]
    clear(profile_facts)
    if facts is None:
        profile_panel.setAttribute("data-state", "loading")
        return
    profile_panel.setAttribute("data-state", "ready")
    profile_count.textContent = "(%d)" % len(facts) if facts else ""
    render_note(facts)
    carried = in_prompt_ids()
    busy = running()
    for fact in facts:
        fact_id = fact.get("id")
        item = make("li", "profile-fact", parent=profile_facts, attrs={
            "data-testid": "profile-fact", "data-fact-id": fact_id,
            "data-category": fact.get("category") or "",
            "data-in-prompt": "true" if fact_id in carried else "false",
            "data-session-id": fact.get("session_id") or ""})
        if _profile["fact"] == fact_id and _profile["mode"] == "edit":
            render_edit(item, fact)
            continue
        text = make("p", "profile-text", parent=item)
        make("span", "profile-category", "[%s] " % CATEGORY_LABELS.get(
            fact.get("category"), fact.get("category") or ""), parent=text)
        make("span", "profile-fact-text", fact.get("text") or "",
             attrs={"data-testid": "profile-fact-text"}, parent=text)
        make("p", "profile-source", source_text(fact), attrs={"data-testid": "profile-source"},
             parent=item)
        unconfirmed = bool(fact.get("unconfirmed"))
        item.setAttribute("data-unconfirmed", "true" if unconfirmed else "false")
        if unconfirmed:
            make("p", "profile-unconfirmed", "Unconfirmed: taken from text from outside (%s). "
                 "No chat reads it until you confirm it." % ", ".join(fact.get("untrusted") or []),
                 attrs={"data-testid": "profile-unconfirmed"}, parent=item)
        if _profile["fact"] == fact_id and _profile["mode"] == "forget":
            render_confirm(item, fact)
            continue
        actions = make("div", "profile-actions", parent=item)
        if unconfirmed:
            confirm = make("button", "session-action", "Confirm", parent=actions, attrs={
                "type": "button", "data-action": "confirm", "data-testid": "confirm-profile-fact",
                "aria-label": "Confirm “%s”: every chat may read it" % (fact.get("text") or "")})
            confirm.disabled = busy
        edit = make("button", "session-action", "Edit", parent=actions, attrs={
            "type": "button", "data-action": "edit", "data-testid": "edit-profile-fact",
            "aria-label": "Edit “%s”" % (fact.get("text") or "")})
        forget = make("button", "session-action", "Forget", parent=actions, attrs={
            "type": "button", "data-action": "forget", "data-testid": "forget-profile-fact",
            "aria-label": "Forget “%s”" % (fact.get("text") or "")})
        edit.disabled = forget.disabled = busy


def render_edit(item, fact):
    field = _profile["field"]
    if field is None:
        field = make("input", "rename-field", attrs={
            "type": "text", "maxlength": 300, "data-action": "edit-field",
            "data-testid": "profile-fact-field", "aria-label": "New words for this fact",
            "title": "Enter saves, Escape cancels"})
        field.value = fact.get("text") or ""
        _profile["field"] = field
    item.append(field)
    buttons = make("div", "profile-actions", parent=item)
    make("button", None, "Save", parent=buttons, attrs={
        "type": "button", "data-action": "save-edit", "data-testid": "save-profile-fact"})
    make("button", None, "Cancel", parent=buttons, attrs={
        "type": "button", "data-action": "cancel", "data-testid": "cancel-profile-fact"})
    field.focus()


def render_confirm(item, fact):
    box = make("div", "delete-confirm", parent=item, attrs={
        "role": "group", "aria-label": "Confirm forgetting"})
    make("span", "confirm-text", "Forget this in every chat?", parent=box)
    yes = make("button", "danger", "Yes, forget", parent=box, attrs={
        "type": "button", "data-action": "confirm-forget", "data-testid": "confirm-forget"})
    make("button", None, "No", parent=box, attrs={
        "type": "button", "data-action": "cancel", "data-testid": "cancel-forget"})
    yes.disabled = running()
    yes.focus()


# ------------------------------------------------------------------ requests

def refresh_profile(*args):
    """Ask the worker for the profile and show it (the newest request's reply wins)."""
    if not state["booted"]:
        return
    _profile["asked"] += 1
    asked = _profile["asked"]

    def done(ok, value):
        if asked != _profile["asked"]:
            return
        if ok and isinstance(value, list):
            _profile["facts"] = value
            if _profile["fact"] is not None and not any(
                    f.get("id") == _profile["fact"] for f in value):
                set_mode(None)   # the fact left meanwhile (another tab, a memory pass)
            render_profile()
        elif not ok:
            show_storage_warning("Could not read the profile (%s)." % failure_text(value))
    request("profile", done)


def set_mode(mode, fact_id=None):
    _profile["mode"], _profile["fact"], _profile["field"] = mode, fact_id, None


def after_change(what):
    def done(ok, value):
        set_mode(None)
        if not ok:
            show_storage_warning("Could not %s the fact (%s)." % (what, failure_text(value)))
        refresh_profile()
        refresh_memory()   # the shown chat's own copy, or what its prompt carries, changed
    return done


def save_edit():
    field = _profile["field"]
    fact_id = _profile["fact"]
    if field is None or fact_id is None:
        return
    text = " ".join(str(field.value).split())
    old = next((f.get("text") for f in _profile["facts"] or [] if f.get("id") == fact_id), "")
    if not text or text == old:
        set_mode(None)
        render_profile()
        return
    request("edit_profile_fact", after_change("edit"), fact_id=fact_id, text=text)


def on_click(event):
    target, fact_id = clicked_in_row(event, "data-fact-id")
    if target is None:
        return
    action = target.getAttribute("data-action")
    if action == "edit" and not running():
        set_mode("edit", fact_id)
        render_profile()
    elif action == "forget" and not running():
        set_mode("forget", fact_id)
        render_profile()
    elif action == "confirm" and not running():
        target.disabled = True
        request("confirm_profile_fact", after_change("confirm"), fact_id=fact_id)
    elif action == "confirm-forget" and not running():
        target.disabled = True
        request("forget_profile_fact", after_change("forget"), fact_id=fact_id)
    elif action == "save-edit":
        save_edit()
    elif action == "cancel":
        set_mode(None)
        render_profile()


def on_key(event):
    if event.target.getAttribute("data-action") == "edit-field":
        if event.key == "Enter":
            event.preventDefault()
            save_edit()
        elif event.key == "Escape":
            event.preventDefault()
            set_mode(None)
            render_profile()
    elif event.key == "Escape" and _profile["mode"] == "forget":
        event.preventDefault()
        set_mode(None)
        render_profile()


def on_agent_event(event):
    kind = event.get("type")
    if kind in ("profile_updated", "session_private"):
        refresh_profile()
    if kind == "session_private" and event.get("session_id") == state["session"]:
        refresh_memory()   # it now reads (or no longer reads) the profile


def start():
    on("booted", refresh_profile)
    on("agent_event", on_agent_event)
    on("memory_shown", lambda *args: render_profile())
    on("controls", lambda *args: render_profile() if _profile["mode"] is None else None)
    listen(profile_facts, "click", on_click)
    listen(profile_facts, "keydown", on_key)
    refresh_profile()   # started late (web/main.py): the worker may be ready already
