# The status line, boot progress, error display and Chrome's model: its availability,
# the guide when it is missing, and the progress bar while Gemini Nano downloads.
#
# ``update_controls`` is the one place that decides what can be used now; each part of
# the page listens to the "controls" hook to enable or disable its own buttons.
from pyscript import window

from ui.app import UNAVAILABLE, can_send, emit, on, state
from ui.dom import by_id, from_js, keep, listen, make, missing, to_js
from ui.model_choice import server_badge, server_clause

# What the page's own availability() and create() declare, as the worker's BridgeModel
# does (py_agent/rpc.py): English text in and out (Chrome warns when no language is given).
MODEL_IO = {"expectedInputs": [{"type": "text", "languages": ["en"]}],
            "expectedOutputs": [{"type": "text", "languages": ["en"]}]}

# Give up waiting when the worker says nothing for this long during boot.
SILENCE_LIMIT_MS = 60_000
# While Chrome downloads the model for another page, look again this often.
DOWNLOAD_POLL_MS = 10_000

status = by_id("status")
phases = by_id("boot-phases")
error_box = by_id("boot-error")
error_details = by_id("error-details")
guide = by_id("model-guide")
storage_warning = by_id("storage-warning")
model_badge = by_id("model-state")
boot_row = by_id("boot-progress-row")
boot_bar = by_id("boot-progress")
boot_label = by_id("boot-progress-label")
download_box = by_id("model-download")
download_note = by_id("download-note")
download_button = by_id("download-model-button")
download_row = by_id("download-progress-row")
download_bar = by_id("download-progress")
download_label = by_id("download-progress-label")
chat_form = by_id("composer")
chat_input = by_id("chat-input")

# The worker's boot phases (see worker/agent_worker.js), in order: how far along the bar
# is once the phase is done (Pyodide's own start is most of the wait), what runs next,
# and its number. "ui" is this script starting; index.html shows step 1 (the page).
BOOT_STEPS = [
    ("ui", 0.12, "Loading Python (Pyodide) in a background worker…", 2),
    ("pyodide-loaded", 0.70, "Installing the py_agent package…", 3),
    ("packages-installed", 0.82, "Importing the agent…", 4),
    ("agent-imported", 0.92, "Opening this browser's storage and starting the agent…", 5),
    ("ready", 1.0, "Ready", 5),
]
BOOT_STEP_COUNT = BOOT_STEPS[-1][3]   # index.html says "step 1 of 5" too
_boot = {"value": 0.04}

# The page's own model download: whether this page started one, and how far it got
# (the largest `loaded` seen: two sessions being created report the same download).
_download = {"started": False, "loaded": 0.0, "poll": None}

BADGE = {
    None: "Model: checking…",
    "available": "Model: Gemini Nano, on this device",
    "downloadable": "Model: not downloaded yet",
    "downloading": "Model: downloading…",
    UNAVAILABLE: "Model: not available here",
}


def set_status(kind, text):
    # Unchanged text is not written again: the line is a live region, and screen
    # readers would announce the same words once more.
    if status.getAttribute("data-state") != kind:
        status.setAttribute("data-state", kind)
    if status.textContent != text:
        status.textContent = text


def model_clause():
    """What the status line says about Chrome's model, once booted."""
    model = state["model"]
    if state["server"] is not None:
        return server_clause()
    if model is None:
        return "Checking Chrome's built-in model…"
    if model == UNAVAILABLE:
        if state["model_reason"] == "unsupported":
            why = "this browser has no Prompt API (LanguageModel)"
        else:
            why = state["model_reason"] or "Chrome reports the model as unavailable on this device"
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


def _render_ready_status():
    turn = state["turn"]
    if turn is not None:
        text = turn["phase"]
        if state["download"] is not None:
            text += " Downloading the on-device model (first use only)…"
        set_status("busy", text)
    elif state["worker_error"] is not None:
        where, message = state["worker_error"]
        set_status("error", "Error in %s: %s" % (where, message))
    else:
        head = "Ready (agent started in %.1f s)" % (state["boot_ms"] / 1000)
        if state["model"] == UNAVAILABLE and state["server"] is None:
            text = "%s, %s" % (head, model_clause())
        else:
            text = "%s. %s" % (state["note"] or head, model_clause())
        degraded = (state["memory"] or {}).get("degraded")
        if degraded:
            text += " Memory is degraded (the summarizer is not working): see Memory."
        set_status("ready", text)
        status.setAttribute("data-memory", "degraded" if degraded else "ok")
    status.setAttribute("data-model", state["model"] or "unknown")
    status.setAttribute("data-backend", "server" if state["server"] is not None else "prompt-api")


def update_controls():
    """Enable exactly what can be used now (each part handles its own controls)."""
    emit("controls")


def show_error(where, message, traceback):
    """A worker or page error: readable on the status line, details expandable."""
    if not state["booted"]:
        state["failed"] = True
        stop_watchdog()
        boot_row.hidden = True   # a bar that will never move again only confuses
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


def show_boot_step(phase):
    """Move the boot bar to the end of ``phase`` and name what runs next."""
    known = [step for step in BOOT_STEPS if step[0] == phase]
    if known:
        name, value, label, number = known[0]
    else:   # a phase this page does not know: nudge the bar, keep the label
        value, label = min(0.98, _boot["value"] + 0.02), None
    _boot["value"] = max(_boot["value"], value)
    boot_bar.setAttribute("value", str(_boot["value"]))
    boot_bar.setAttribute("data-phase", phase)
    if phase == "ready":
        boot_row.hidden = True
    elif label:
        boot_label.textContent = "%s (step %d of %d)" % (label, number, BOOT_STEP_COUNT)


def on_boot_snapshot(data):
    """The worker made (or failed to make) the snapshot the next boot starts from."""
    state_name = data.get("state") or "failed"
    text = "snapshot %s" % state_name
    if state_name == "saved":
        text += " (%.1f MB in %.1f s%s) for the next start" % (
            (data.get("bytes") or 0) / 1e6, (data.get("ms") or 0) / 1000,
            ", the server's kept" if data.get("source") == "server" else "")
    else:
        text += ": %s" % (data.get("reason") or "unknown reason")
    make("p", cls="boot-snapshot", text=text,
         attrs={"data-testid": "boot-snapshot", "data-state": state_name,
                "data-source": data.get("source") or "browser",
                "data-reason": data.get("reason") or ""}, parent=phases.parentNode)


def _phase_item(data, text, attrs):
    """A line of the boot phases list; says how Pyodide started if the phase does."""
    if data.get("snapshot"):   # from the boot snapshot, or why not
        attrs["data-snapshot"] = data["snapshot"]
        attrs["data-snapshot-reason"] = data.get("snapshot_reason") or ""
        if data.get("snapshot_source"):   # 'server' (serve.py made it) or 'browser'
            attrs["data-snapshot-source"] = data["snapshot_source"]
        text += ", snapshot %s%s" % (data["snapshot"], (": " + data["snapshot_reason"])
                                     if data.get("snapshot_reason") else "")
    make("li", text=text, attrs=attrs, parent=phases)


def on_tool_worker_phase(data):
    """The tool worker (where sync tools run) started, or restarted after a hung tool."""
    _phase_item(data, "tool worker %s  %d ms (+%d)" % (data.get("phase"), data.get("ms") or 0,
                                                       data.get("took") or 0),
                {"data-tool-worker-phase": data.get("phase") or "", "data-ms": data.get("ms")})


def on_boot_phase(data, received_ms):
    name = data["phase"]
    state["last"] = name
    _phase_item(data, "%s  %d ms (+%d)" % (name, data["ms"], data["took"]),
                {"data-phase": name, "data-ms": data["ms"], "data-took": data["took"],
                 "data-page-ms": received_ms})
    show_boot_step(name)
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
        state["boot_details"] = details   # for parts that start later (tools panel)
        emit("booted", details)
    else:
        restart_watchdog()
        set_status("booting", "Starting the agent (%.1f s so far)…" % (data["ms"] / 1000))


# ------------------------------------------------------------------ Chrome's model

def _on_availability(result):
    info = from_js(result) or {}
    availability = info.get("availability") or UNAVAILABLE
    if _download["started"] and availability in ("downloadable", "downloading") \
            and state["download"] is not None:
        availability = "downloading"   # ours, under way
    state["model"] = availability
    state["model_reason"] = info.get("reason")
    show_model_state()


def _on_availability_failed(error):
    state["model"] = UNAVAILABLE
    state["model_reason"] = str(getattr(error, "message", None) or error)
    show_model_state()


_availability_proxy = keep(_on_availability)
_availability_failed_proxy = keep(_on_availability_failed)


def _poll_download():
    _download["poll"] = None
    check_model()


_poll_proxy = keep(_poll_download)


def show_model_state():
    model = state["model"]
    server = state["server"] is not None
    guide.hidden = model != UNAVAILABLE or server
    model_badge.textContent = server_badge() if server else BADGE.get(model, "Model: %s" % model)
    model_badge.setAttribute("data-model", "server" if server else model or "unknown")
    render_download()
    # Chrome may be fetching the model for another page: look again now and then.
    if model == "downloading" and state["download"] is None and _download["poll"] is None:
        _download["poll"] = window.setTimeout(_poll_proxy, DOWNLOAD_POLL_MS)
    render_status()


def render_download():
    """The download box: an offer to download before the first message, then the bar."""
    model = state["model"]
    needed = model in ("downloadable", "downloading") and state["server"] is None
    running = state["download"] is not None
    download_box.hidden = not (needed or running)
    download_row.hidden = not running
    download_button.hidden = running or model != "downloadable" or _download["started"]
    if running:
        download_note.textContent = ("Gemini Nano is downloading to this device (first use "
                                     "only; it can take a few minutes). Keep this tab open.")
    elif model == "downloading":
        download_note.textContent = ("Chrome is downloading Gemini Nano to this device. "
                                     "Send a message to follow its progress here.")
    else:
        download_note.textContent = ("Gemini Nano (a few GB) downloads once, the first time "
                                     "you send a message. You can start it now instead.")


def on_download_progress(event):
    """``downloadprogress`` from the LLM host (``loaded`` from 0 to 1). Chrome reports
    0 and 1 for every session it creates; only a needed download shows the bar."""
    if state["model"] not in ("downloadable", "downloading"):
        return
    detail = from_js(event.detail) or {}
    loaded = float(detail.get("loaded") or 0)
    if loaded >= 1:
        finish_download()
        return
    _download["started"] = True
    _download["loaded"] = max(_download["loaded"], loaded)
    percent = int(_download["loaded"] * 100)
    download_bar.setAttribute("value", str(_download["loaded"]))
    download_label.textContent = "Downloading Gemini Nano: %d%%" % percent
    first = state["download"] is None
    state["download"] = percent
    if first:
        state["model"] = "downloading"
        show_model_state()


def finish_download():
    download_bar.setAttribute("value", "1")
    state["download"] = None
    state["model"] = "available"
    _download["loaded"] = 0.0
    show_model_state()


def start_download():
    """Create a session to make Chrome fetch the model. Called from a click or key
    press: Chrome only starts a download from a user gesture (transient activation),
    and the agent's own create() comes later, from the worker's reply."""
    host = llm_host()
    if host is None or _download["started"]:
        return
    _download["started"] = True
    download_bar.setAttribute("value", "0")
    download_label.textContent = "Starting the download…"
    state["download"] = 0
    state["model"] = "downloading"
    show_model_state()
    options = {"purpose": "download", "requestId": "page-model-download"}
    options.update(MODEL_IO)
    host.create(to_js(options)) \
        .then(_download_done_proxy, _download_failed_proxy)


def _download_done(result):
    info = from_js(result) or {}
    host = llm_host()
    if host is not None and info.get("sessionId"):
        host.destroy(info["sessionId"])   # only the download was wanted
    if state["download"] is not None:
        finish_download()


def _download_failed(error):
    _download["started"] = False
    state["download"] = None
    name = str(getattr(error, "name", None) or "Error")
    message = str(getattr(error, "message", None) or error)
    state["note"] = "The model download did not start (%s: %s)" % (name, message)
    check_model()


_download_done_proxy = keep(_download_done)
_download_failed_proxy = keep(_download_failed)


def _wants_download():
    return (state["model"] in ("downloadable", "downloading") and not _download["started"]
            and can_send() and chat_input.value.strip() != "")


def _on_send_gesture(event):
    # Runs before chat.py's own handler (status starts first), still in the gesture.
    if _wants_download():
        start_download()


def _on_send_key(event):
    if event.key == "Enter" and not event.shiftKey and not event.isComposing:
        _on_send_gesture(event)


def llm_host():
    host = getattr(window, "pyAgentLLM", None)
    return None if missing(host) else host


def check_model():
    host = llm_host()
    if host is None:
        _on_availability_failed("the page's LLM host did not start")
        return
    host.availability(to_js(MODEL_IO)).then(_availability_proxy, _availability_failed_proxy)


def start(runtime):
    """Show the booting state and start watching the worker and the model."""
    on("boot_phase", on_boot_phase)
    on("boot_snapshot", on_boot_snapshot)
    on("tool_worker_phase", on_tool_worker_phase)
    on("worker_error", show_error)
    on("model_changed", show_model_state)
    on("turn_finished", lambda *args: check_model())   # a first turn may download the model
    host = llm_host()
    if host is not None:
        listen(host, "downloadprogress", on_download_progress)
    listen(chat_form, "submit", _on_send_gesture)
    listen(chat_input, "keydown", _on_send_key)
    listen(download_button, "click", lambda event: start_download())
    show_boot_step("ui")
    set_status("booting", "Starting the agent worker (UI: %s)…" % runtime)
    update_controls()
    restart_watchdog()
    check_model()
