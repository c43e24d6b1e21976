# Chrome's built-in model (Gemini Nano, through the Prompt API): whether this browser has
# it, the model badge, the guide when it is missing, and its download: offered before
# the first message, started by a Send (Chrome downloads only from a user gesture), with
# a progress bar.
from pyscript import window

from ui.app import UNAVAILABLE, can_send, on, other_backend, state
from ui.dom import by_id, from_js, keep, listen, to_js
from ui.link import llm_host
from ui.model_choice import backend_badge
from ui.model_reason import show_reason
from ui.status import render_status

# What the page's own availability() and create() declare, as the worker's BridgeModel
# does (py_agent/rpc.py): English text in and out (Chrome warns when no language is given).
MODEL_IO = {"expectedInputs": [{"type": "text", "languages": ["en"]}],
            "expectedOutputs": [{"type": "text", "languages": ["en"]}]}

# While Chrome downloads the model for another page, look again this often.
DOWNLOAD_POLL_MS = 10_000

guide = by_id("model-guide")
model_badge = by_id("model-state")
download_box = by_id("model-download")
download_note = by_id("download-note")
download_button = by_id("download-model-button")
download_row = by_id("download-progress-row")
download_bar = by_id("download-progress")
download_label = by_id("download-progress-label")
chat_form = by_id("composer")
chat_input = by_id("chat-input")

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


def _on_availability(result):
    info = from_js(result) or {}
    availability = info.get("availability") or UNAVAILABLE
    if _download["started"] and availability in ("downloadable", "downloading") \
            and state["download"] is not None:
        availability = "downloading"   # ours, under way
    state["model"] = availability
    state["model_reason"] = info.get("reason")
    state["model_languages"] = info.get("languages")
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
    other = other_backend()   # (not known before the worker is ready: the guide may show)
    guide.hidden = model != UNAVAILABLE or other
    model_badge.textContent = backend_badge() if other else BADGE.get(model, "Model: %s" % model)
    model_badge.setAttribute("data-model", state["backend"] if other else model or "unknown")
    show_reason(not other)
    render_download()
    # Chrome may be fetching the model for another page: look again now and then.
    if model == "downloading" and state["download"] is None and _download["poll"] is None:
        _download["poll"] = window.setTimeout(_poll_proxy, DOWNLOAD_POLL_MS)
    render_status()


def render_download():
    """The download box: an offer to download before the first message, then the bar."""
    model = state["model"]
    needed = model in ("downloadable", "downloading") and not other_backend()
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
        # Chrome starts a download only from a user gesture: say that this is the wait.
        download_note.textContent = ("Gemini Nano (a few GB) downloads once, the first time "
                                     "you send a message: Chrome starts a download only "
                                     "after a click or key press here. You can start it "
                                     "now instead.")
    download_box.setAttribute("data-reason", "" if download_box.hidden else
                              "downloading" if running or model == "downloading"
                              else "needs-click")


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
    # Runs before chat.py's own handler (this part starts first), still in the gesture.
    if _wants_download():
        start_download()


def _on_send_key(event):
    if event.key == "Enter" and not event.shiftKey and not event.isComposing:
        _on_send_gesture(event)


def check_model():
    host = llm_host()
    if host is None:
        _on_availability_failed("the page's LLM host did not start")
        return
    host.availability(to_js(MODEL_IO)).then(_availability_proxy, _availability_failed_proxy)


def start():
    """Ask Chrome about its model, and follow a download. (Started before ui/chat.py, so
    that a Send starts a needed download within the user's gesture.)"""
    on("model_changed", show_model_state)
    on("turn_finished", lambda *args: check_model())   # a first turn may download the model
    host = llm_host()
    if host is not None:
        listen(host, "downloadprogress", on_download_progress)
    listen(chat_form, "submit", _on_send_gesture)
    listen(chat_input, "keydown", _on_send_key)
    listen(download_button, "click", lambda event: start_download())
    check_model()
