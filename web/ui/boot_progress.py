# The agent's start as the page shows it: the progress bar through the worker's boot
# phases, the list of phases with their timings (and how Pyodide started: from a
# snapshot or not), and a watchdog that calls the boot failed when the worker falls
# silent. The "ready" phase ends the boot: the page is booted, and says so ("booted").
from pyscript import window

from ui.app import emit, on, state
from ui.dom import by_id, keep, make
from ui.status import failure_text, render_status, set_status, show_storage_warning

# Give up waiting when the worker says nothing for this long during boot.
SILENCE_LIMIT_MS = 60_000

phases = by_id("boot-phases")
boot_row = by_id("boot-progress-row")
boot_bar = by_id("boot-progress")
boot_label = by_id("boot-progress-label")

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
# The watchdog's pending timeout, and the last phase the worker reported.
_watch = {"timer": None, "last": "start"}


def _on_silence():
    _watch["timer"] = None
    if not state["booted"] and not state["failed"]:
        emit("worker_error", "page", "the agent worker has been silent for %d s after '%s'"
             % (SILENCE_LIMIT_MS // 1000, _watch["last"]), "")


_silence_proxy = keep(_on_silence)


def stop_watchdog():
    if _watch["timer"] is not None:
        window.clearTimeout(_watch["timer"])
        _watch["timer"] = None


def restart_watchdog():
    stop_watchdog()
    _watch["timer"] = window.setTimeout(_silence_proxy, SILENCE_LIMIT_MS)


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
    _watch["last"] = name
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
            show_storage_warning("Saving is not available (%s); this conversation will "
                                 "not be kept after you close the page." % failure_text(problem))
        state["boot_details"] = details   # for parts that start later (tools panel)
        # The parts take in what the worker said (which model answers, first) before
        # anything is rendered as ready: nothing decides on a model not known yet.
        emit("booted", details)
        render_status()
    else:
        restart_watchdog()
        set_status("booting", "Starting the agent (%.1f s so far)…" % (data["ms"] / 1000))


def on_worker_error(where, message, traceback):
    """An error before the boot finished fails it: the bar will never move again, and a
    bar that does not move only confuses."""
    if not state["booted"]:
        stop_watchdog()
        boot_row.hidden = True


def start():
    on("boot_phase", on_boot_phase)
    on("boot_snapshot", on_boot_snapshot)
    on("tool_worker_phase", on_tool_worker_phase)
    on("worker_error", on_worker_error)
    show_boot_step("ui")
    restart_watchdog()
