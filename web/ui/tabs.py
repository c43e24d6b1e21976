# Other tabs of the app: each tab has its own agent worker, and all of them share one
# IndexedDB. The agent never loses a turn when two tabs write one session (each write
# is checked against the stored version and merged on a conflict), but a tab shows what
# it loaded. So whenever this tab's agent has saved a turn or a compaction, it says so on
# a BroadcastChannel; a tab showing that session reloads it once it is idle.
from pyscript import window

from ui.app import on, running, state
from ui.dom import from_js, keep, missing, to_js

CHANNEL = "py-agent-sessions"
SAVED_EVENTS = ("turn_saved", "memory_updated")

_channel = [None]
_stale = set()   # sessions another tab changed while this one was busy


def _reload(session_id):
    from ui import sessions   # here: sessions imports chat, which is loaded first
    sessions.refresh_sessions()
    if session_id == state["session"]:
        sessions.open_session(session_id)


def _on_message(event):
    data = from_js(event.data)
    if not isinstance(data, dict) or not isinstance(data.get("session_id"), str):
        return
    session_id = data["session_id"]
    if running() or state["compacting"] is not None:
        _stale.add(session_id)
    else:
        _reload(session_id)


def _on_agent_event(event):
    if event.get("type") in SAVED_EVENTS and _channel[0] is not None:
        _channel[0].postMessage(to_js({"session_id": event.get("session_id"),
                                       "type": event.get("type")}))


def _on_idle(*args):
    while _stale and not running() and state["compacting"] is None:
        _reload(_stale.pop())


def start():
    constructor = getattr(window, "BroadcastChannel", None)
    if missing(constructor):
        return   # an old browser: each tab still saves correctly, it just shows less
    _channel[0] = constructor.new(CHANNEL)
    _channel[0].onmessage = keep(_on_message)
    on("agent_event", _on_agent_event)
    on("turn_finished", _on_idle)
    on("memory_refreshed", _on_idle)   # also after a manual compaction
