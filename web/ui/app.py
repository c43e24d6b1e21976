# The page's shared state and a tiny publish/subscribe hub, so the parts of the page
# (status, chat, trace, memory, sessions) react to each other without importing each
# other in circles.
UNAVAILABLE = "unavailable"

state = {
    "booted": False, "failed": False, "boot_ms": 0, "worker": None,
    "model": None, "model_reason": None, "download": None,   # Prompt API availability
    "server": None,         # the model server answering instead (ui/model_choice.py)
    "session": None,        # the session shown
    "sessions": [],         # rows of the session list, newest first
    "turn": None,           # the running turn (a ui.turn_view.RunningTurn)
    "compacting": None,     # the session of a manual compaction that has not replied
    "memory": None,         # the last memory state of the shown session
    "note": "",             # the last turn's outcome, for the status line
    "worker_error": None,   # an error the worker reported after boot: (where, message)
}

_hooks = {}


def on(name, function):
    """Call ``function`` whenever ``name`` is emitted."""
    _hooks.setdefault(name, []).append(function)
    return function


def emit(name, *args):
    for function in _hooks.get(name, ()):
        function(*args)


def model_usable():
    # A model server in use takes messages even while it is down: each turn says why it
    # failed and is kept, to retry.
    if state["server"] is not None:
        return True
    return state["model"] is not None and state["model"] != UNAVAILABLE


def running():
    return state["turn"] is not None


def turn_of(event):
    """The running turn if the agent event ``event`` belongs to it, else None."""
    turn = state["turn"]
    if turn is None or turn.session != event.get("session_id"):
        return None
    return turn


def can_send():
    return state["booted"] and not state["failed"] and model_usable() and not running()
