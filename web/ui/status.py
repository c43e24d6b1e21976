# The status line (what the agent is doing, or why it cannot), errors from the worker or
# the page, and the warnings about this browser's storage.
#
# A model that refuses a response constraint makes the agent ask for a simpler one; the
# status line says so once (after the turn that found out, until the next one starts).
#
# ``update_controls`` is the one place that decides what can be used now; each part of
# the page listens to the "controls" hook to enable or disable its own buttons.
# (The boot's progress bar is ui/boot_progress.py's; Chrome's model and its download are
# ui/gemini_nano.py's.)
from ui.app import PROMPT_API, UNAVAILABLE, emit, no_model, on, other_backend, state
from ui.dom import by_id
from ui.model_choice import backend_clause
from ui.model_reason import short_reason

status = by_id("status")
error_box = by_id("boot-error")
error_details = by_id("error-details")
storage_warning = by_id("storage-warning")

# The agent stepped down to a simpler response constraint: what the status line says
# about it, and whether it has been shown once the turn that found out had ended.
_constraint_note = {"text": "", "shown": False}
CONSTRAINT_WHAT = {"step": ("the step's JSON schema", "steps"),
                   "facts": ("the fact schema", "fact extraction")}
CONSTRAINT_NOW = {"names": "asks for a tool-name enum", "object": "asks for any JSON object",
                  "none": "asks with no constraint and reads the reply as text"}


def set_status(kind, text):
    # Unchanged text is not written again: the line is a live region, and screen
    # readers would announce the same words once more.
    if status.getAttribute("data-state") != kind:
        status.setAttribute("data-state", kind)
    if status.textContent != text:
        status.textContent = text


def embedder_clause():
    """What the status line says about the sentence embedder: only while it downloads
    for the first time, or when it failed (the agent works without it either way)."""
    data = state.get("embedder") or {}
    if data.get("state") == "failed":
        return " Tools and recall match words only: %s." % (data.get("note") or "the "
                                                              "embedding model did not load")
    if data.get("task") == "download" and data.get("total") and \
            not data.get("from_cache") and data.get("loaded", 0) < data.get("total"):
        return " Downloading the embedding model (%d of %d MB, first visit only)…" % (
            data["loaded"] // 1000000, data["total"] // 1000000)
    return ""


def on_embedder_status(data):
    state["embedder"] = data
    status.setAttribute("data-embedder", data.get("state") or "off")
    render_status()


def model_clause():
    """What the status line says about the model, once booted."""
    model = state["model"]
    if other_backend():
        return backend_clause()
    if model is None:
        return "Checking Chrome's built-in model…"
    if model == UNAVAILABLE:
        why = short_reason(state["model_reason"]) or state["model_reason"] or \
            "Chrome reports it as unavailable on this device"
        if state["page_models"]:
            return ("but Chrome's built-in model is not available here (%s). Run a small "
                    "model in this page instead (below), or see how to turn Chrome's on."
                    % why)
        return ("but Chrome's built-in model is not available here (%s), so the agent "
                "cannot answer. See below how to turn it on, or how to use a model server "
                "you run (Ollama, llama.cpp, vLLM) instead." % why)
    if state["download"] is not None:
        return ("Downloading the on-device model (first use only); a message sent now "
                "is answered once it is ready.")
    if model == "downloading":
        return ("Chrome is downloading the on-device model (Gemini Nano); "
                "the first answer may take a few minutes.")
    if model == "downloadable":
        return ("The on-device model (Gemini Nano) will download on first use: your first "
                "message starts it, and the first answer may take a few minutes.")
    return "Gemini Nano runs on this device; nothing leaves it."


def render_status():
    """The status line once booted (before that, the boot steps have it), and what can
    be used now."""
    if state["booted"] and not state["failed"]:
        _render_ready_status()
    update_controls()


def constraint_clause():
    """The note about a simpler response constraint, once: shown while no turn runs,
    dropped when the next turn starts."""
    note = _constraint_note
    if not note["text"]:
        return ""
    if state["turn"] is not None:
        if note["shown"]:
            note["text"], note["shown"] = "", False
        return ""
    note["shown"] = True
    return " " + note["text"]


def on_constraint_event(event):
    """``constraint_level``: the model refused a response constraint; say which, once."""
    if event.get("type") != "constraint_level":
        return
    data = event.get("data") or {}
    what, who = CONSTRAINT_WHAT.get(data.get("purpose"), ("a JSON schema", "the agent"))
    level = data.get("level")
    now = CONSTRAINT_NOW.get(level) or "asks for %s" % (data.get("label") or level)
    refused = [r for r in data.get("refused") or [] if r.get("lasting")]
    said = ((refused[0].get("error") or "") if refused else "").rstrip(".")
    if len(said) > 140:
        said = said[:139] + "…"
    _constraint_note["text"] = "The model would not take %s%s, so %s now %s." % (
        what, " (%s)" % said if said else "", who, now)
    _constraint_note["shown"] = False
    status.setAttribute("data-constraint", "%s:%s" % (data.get("purpose"), data.get("level")))
    render_status()


def _render_ready_status():
    turn = state["turn"]
    if turn is not None:
        constraint_clause()   # a new turn: the note has been read
        text = turn.phase
        if state["download"] is not None:
            text += " Downloading the on-device model (first use only)…"
        set_status("busy", text)
    elif state["worker_error"] is not None:
        where, message = state["worker_error"]
        set_status("error", "Error in %s: %s" % (where, message))
    else:
        head = "Ready (agent started in %.1f s)" % (state["boot_ms"] / 1000)
        if no_model():
            text = "%s, %s" % (head, model_clause())
        else:
            text = "%s. %s" % (state["note"] or head, model_clause())
        text += constraint_clause()
        text += embedder_clause()
        degraded = (state["memory"] or {}).get("degraded")
        if degraded:
            text += " Memory is degraded (the summarizer is not working): see Memory."
        set_status("ready", text)
        status.setAttribute("data-memory", "degraded" if degraded else "ok")
    status.setAttribute("data-model", state["model"] or "unknown")
    status.setAttribute("data-backend", state["backend"] or PROMPT_API)


def update_controls():
    """Enable exactly what can be used now (each part handles its own controls)."""
    emit("controls")


def show_error(where, message, traceback):
    """A worker or page error: readable on the status line, details expandable."""
    if not state["booted"]:
        state["failed"] = True   # (ui/boot_progress.py stops its watchdog and bar)
    else:   # the agent may well go on working: keep the error up until the next turn
        state["worker_error"] = (where, message)
    set_status("error", "Error in %s: %s" % (where, message))
    status.setAttribute("data-where", where)
    error_box.textContent = traceback or message
    error_box.hidden = False
    error_details.hidden = False
    error_details.open = not state["booted"]   # boot failures show it all at once
    update_controls()


def clear_worker_error():
    if state["worker_error"] is not None:   # seen; a new turn starts afresh
        state["worker_error"] = None
        error_details.hidden = True


def show_storage_warning(text, until_saved=False):
    """Warn about storage; ``until_saved``: the warning is about unsaved turns, and
    goes once they are saved (clear_saved_warning)."""
    storage_warning.textContent = text
    storage_warning.hidden = False
    storage_warning.setAttribute("data-until-saved", "true" if until_saved else "false")


def clear_saved_warning():
    """Every pending turn is saved now: a warning about unsaved turns is out of date."""
    if storage_warning.getAttribute("data-until-saved") == "true":
        storage_warning.hidden = True
        storage_warning.setAttribute("data-until-saved", "false")


def failure_text(error):
    """An error the worker replied with, as the page words it: "Name: message"."""
    return "%s: %s" % (error.get("name", "Error"), error.get("message", ""))


def storage_problem(what, error):
    """A failed read of saved data: a warning, not a failure (the chat still works)."""
    if isinstance(error, dict) and error.get("name") != "UnknownSessionError":
        show_storage_warning("%s (%s)." % (what, failure_text(error)))


def on_storage_event(event):
    """The worker could not save (a warning, and the turn is kept to save later), or
    has saved every pending turn since."""
    kind = event.get("type")
    data = event.get("data") or {}
    if kind == "storage_error":
        show_storage_warning(data.get("message") or "Could not save to this browser's storage.",
                             until_saved=data.get("unsaved") is not None)
    elif kind == "turn_saved" and not data.get("unsaved"):
        clear_saved_warning()


def start(runtime):
    """Say that the agent is starting, and listen for errors and storage trouble."""
    on("worker_error", show_error)
    on("agent_event", on_storage_event)
    on("agent_event", on_constraint_event)
    on("embedder_status", on_embedder_status)
    set_status("booting", "Starting the agent worker (UI: %s)…" % runtime)
    update_controls()
