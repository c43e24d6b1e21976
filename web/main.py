# The page's Python (MicroPython via PyScript): starts the agent worker and shows
# its boot phases. The agent itself runs in the worker; nothing here thinks.
import sys

from pyscript import document, window
from pyscript.ffi import create_proxy

# Give up waiting when the worker says nothing for this long during boot.
SILENCE_LIMIT_MS = 60_000

status = document.querySelector('[data-testid="status"]')
phases = document.querySelector('[data-testid="boot-phases"]')
error_box = document.querySelector('[data-testid="boot-error"]')

runtime = "%s %s" % (sys.implementation.name,
                     ".".join(str(n) for n in sys.implementation.version[:3]))
status.setAttribute("data-ui-runtime", runtime)
status.setAttribute("data-ui-ms", str(int(window.performance.now())))  # UI is up

state = {"booted": False, "failed": False, "watchdog": None, "last": "start"}


def now_ms():
    return int(window.performance.now())


def set_status(kind, text):
    status.setAttribute("data-state", kind)
    status.textContent = text


def show_error(where, message, traceback):
    state["failed"] = True
    stop_watchdog()
    set_status("error", "Error in %s: %s" % (where, message))
    error_box.textContent = traceback or message
    error_box.hidden = False


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
    name = data.phase
    state["last"] = name
    item = document.createElement("li")
    item.setAttribute("data-phase", name)
    item.setAttribute("data-ms", str(data.ms))
    item.setAttribute("data-took", str(data.took))
    item.setAttribute("data-page-ms", str(received_ms))
    item.textContent = "%s  %d ms (+%d)" % (name, data.ms, data.took)
    phases.append(item)
    if name == "ready":
        state["booted"] = True
        stop_watchdog()
        set_status("ready", "Ready: the agent worker booted in %.1f s (page at %.1f s)"
                   % (data.ms / 1000, received_ms / 1000))
    else:
        restart_watchdog()
        set_status("booting", "Starting the agent… %s after %.1f s" % (name, data.ms / 1000))


def on_message(event):
    data = event.data
    kind = data.type
    if kind == "boot":
        # The event's own time stamp: early events are handled later than they came.
        on_boot_phase(data, int(event.timeStamp))
    elif kind == "error":
        show_error(data.where, data.message, data.traceback)
    else:
        window.console.log("[page] worker message", data)


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
    if glue is None:
        show_error("page", "index.html did not start the agent worker", "")
        return None
    worker = glue.worker
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


set_status("booting", "Starting the agent worker (UI: %s)…" % runtime)
restart_watchdog()
worker = take_over_worker()
