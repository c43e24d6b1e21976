# The status line, boot progress, error display and Chrome's model availability.
#
# ``update_controls`` is the one place that decides what can be used now; each part of
# the page listens to the "controls" hook to enable or disable its own buttons.
from pyscript import window

from ui.app import UNAVAILABLE, emit, model_usable, on, state
from ui.dom import by_id, from_js, keep, make, missing

# Give up waiting when the worker says nothing for this long during boot.
SILENCE_LIMIT_MS = 60_000

status = by_id("status")
phases = by_id("boot-phases")
error_box = by_id("boot-error")
error_details = by_id("error-details")
guide = by_id("model-guide")
storage_warning = by_id("storage-warning")


def set_status(kind, text):
    status.setAttribute("data-state", kind)
    status.textContent = text


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
    if state["failed"] or not state["booted"]:
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
    """Enable exactly what can be used now (each part handles its own controls)."""
    emit("controls")


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


def clear_worker_error():
    if state["worker_error"] is not None:   # seen; a new turn starts afresh
        state["worker_error"] = None
        error_details.hidden = True


def show_storage_warning(text):
    storage_warning.textContent = text
    storage_warning.hidden = False


def storage_problem(what, error):
    """A failed read of saved data: a warning, not a failure (the chat still works)."""
    if isinstance(error, dict) and error.get("name") != "UnknownSessionError":
        show_storage_warning("%s (%s: %s)." % (what, error.get("name", "Error"),
                                               error.get("message", "")))


# ------------------------------------------------------------------ boot

def _on_silence():
    state["watchdog"] = None
    if not state["booted"] and not state["failed"]:
        show_error("page", "the agent worker has been silent for %d s after '%s'"
                   % (SILENCE_LIMIT_MS // 1000, state["last"]), "")


_silence_proxy = keep(_on_silence)


def stop_watchdog():
    if state["watchdog"] is not None:
        window.clearTimeout(state["watchdog"])
        state["watchdog"] = None


def restart_watchdog():
    stop_watchdog()
    state["watchdog"] = window.setTimeout(_silence_proxy, SILENCE_LIMIT_MS)


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
        emit("booted", details)
    else:
        restart_watchdog()
        set_status("booting", "Starting the agent… %s after %.1f s" % (name, data["ms"] / 1000))


# ------------------------------------------------------------------ Chrome's model

def _on_availability(result):
    info = from_js(result) or {}
    state["model"] = info.get("availability") or UNAVAILABLE
    state["model_reason"] = info.get("reason")
    show_model_state()


def _on_availability_failed(error):
    state["model"] = UNAVAILABLE
    state["model_reason"] = str(getattr(error, "message", None) or error)
    show_model_state()


_availability_proxy = keep(_on_availability)
_availability_failed_proxy = keep(_on_availability_failed)


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


def llm_host():
    host = getattr(window, "pyAgentLLM", None)
    return None if missing(host) else host


def check_model():
    host = llm_host()
    if host is None:
        _on_availability_failed("the page's LLM host did not start")
        return
    host.availability().then(_availability_proxy, _availability_failed_proxy)


def start(runtime):
    """Show the booting state and start watching the worker and the model."""
    on("boot_phase", on_boot_phase)
    on("worker_error", show_error)
    on("turn_finished", lambda *args: check_model())   # a first turn may download the model
    host = llm_host()
    if host is not None:
        from ui.dom import listen
        listen(host, "downloadprogress", on_download_progress)
    set_status("booting", "Starting the agent worker (UI: %s)…" % runtime)
    update_controls()
    restart_watchdog()
    check_model()
