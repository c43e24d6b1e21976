# The page's two links: requests to the agent worker, matched to their replies by id,
# and the LLM host (web/llm_host.js) that index.html started beside it.
#
# Every request gets exactly one reply ({type: 'reply', id, ok, value|error}); the
# callback receives (ok, value_or_error). The waiting requests are held by the page's
# one reply table, web/replies.js (docs/protocols.md has the messages). Events and boot
# phases are handed on.
from pyscript import window
from pyscript.js_modules import replies

from ui.app import emit, state
from ui.dom import from_js, keep, missing, to_js

# What the worker sends the page's LLM host (web/llm_host.js), which answers it itself.
LLM_MESSAGES = ("llm", "llm-result", "llm-event")
# ...and the page tools host (web/page_tools.js).
PAGE_TOOLS_MESSAGES = ("page-tools",)

# The error of a reply stays a plain object (a dict here, as the callbacks expect). No
# timeout: the worker answers every request (AgentHost), and a turn has its own deadlines.
_replies = replies.Replies.new(to_js({"prefix": "ui"}))
_replies.toError = lambda error: error


def request(kind, callback=None, raw=None, raw_reply=False, **fields):
    """Ask the agent worker; ``callback(ok, value_or_error)`` gets its reply. ``raw``:
    fields that are JavaScript objects already (Blobs: never through JSON); with
    ``raw_reply`` the callback gets the reply's value as it came (bytes stay bytes)."""
    message = {"type": kind}
    message.update(fields)

    def send(request_id):
        message["id"] = request_id
        js_message = to_js(message)
        for key in raw or {}:
            setattr(js_message, key, raw[key])
        state["worker"].postMessage(js_message)

    def answered(value):
        if callback is not None:
            callback(True, value if raw_reply else from_js(value))

    def failed(error):
        if callback is not None:
            callback(False, _error(error))

    _replies.request(send).then(answered, failed)


def _error(error):
    """A reply's error as a dict ({name, message, ...}), whatever was thrown."""
    data = from_js(error)
    if not isinstance(data, dict) or not data.get("message"):
        data = {"name": str(getattr(error, "name", None) or "Error"),
                "message": str(getattr(error, "message", None) or "unknown error")}
    return data


def _on_message(event):
    kind = getattr(event.data, "type", None)
    if kind in LLM_MESSAGES or kind in PAGE_TOOLS_MESSAGES:
        return   # the hosts' business (left unconverted: they carry whole prompts)
    if kind == "reply":
        _replies.settle(event.data)   # its value is converted for its callback alone
        return
    data = from_js(event.data)
    if not isinstance(data, dict):
        return
    kind = data.get("type")
    if kind == "event":
        emit("agent_event", data.get("event") or {})
    elif kind == "boot":
        # The event's own time stamp: early events are handled later than they came.
        emit("boot_phase", data, int(event.timeStamp))
    elif kind == "snapshot":
        emit("boot_snapshot", data)
    elif kind == "tool-worker":   # the tool worker's boot phases, relayed by the agent's
        emit("tool_worker_phase", data)
    elif kind == "embedder":      # the sentence embedder's load, after ready
        emit("embedder_status", data)
    elif kind == "error":
        emit("worker_error", data.get("where") or "worker",
             data.get("message") or "unknown error", data.get("traceback") or "")
    else:
        window.console.log("[page] worker message", event.data)


def _on_worker_error(event):
    # A module worker that cannot even load (404, CSP, syntax error) lands here,
    # usually with no message of its own.
    event.preventDefault()
    # A bare Event has no .message (and MicroPython raises for missing JS attributes).
    message = getattr(event, "message", None) or \
        "the worker script failed to load (see the browser console)"
    emit("worker_error", "worker-script", message, "")


def take_over_worker():
    """index.html started the worker before PyScript was up (to overlap the two
    starts) and kept its events; handle those, then listen directly."""
    glue = getattr(window, "pyAgentWorker", None)
    if missing(glue):
        emit("worker_error", "page", "index.html did not start the agent worker", "")
        return None
    worker = glue.worker
    state["worker"] = worker
    worker.onmessage = keep(_on_message)
    worker.onerror = keep(_on_worker_error)
    early = glue.early
    for index in range(early.length):
        event = early[index]
        if event.type == "message":
            _on_message(event)
        else:
            _on_worker_error(event)
    early.length = 0
    return worker


def llm_host():
    """The page's LLM host (it answers the worker's Prompt API calls and hands the
    model's streamed text to the page as 'chunk' events), or None if it did not start."""
    host = getattr(window, "pyAgentLLM", None)
    return None if missing(host) else host
