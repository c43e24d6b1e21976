# The page's shared state and a tiny publish/subscribe hub, so the parts of the page
# (status, chat, trace, memory, sessions) react to each other without importing each
# other in circles.
UNAVAILABLE = "unavailable"
PROMPT_API = "prompt-api"   # the worker's name for Chrome's Prompt API backend
PAGE_MODEL = "page-model"   # ... and for a model running in this page (ui/page_models.py)

state = {
    "booted": False, "failed": False, "boot_ms": 0, "worker": None,
    "backend": None,        # which backend answers: unknown (None) until the worker says
    "model": None, "model_reason": None, "download": None,   # Prompt API availability
    "server": None,         # the model server answering instead (ui/model_choice.py)
    "page_models": [],      # the in-page models the site offers, each {url, name, size, kept}
    "page_model": None,     # the one in use: "loading", "ready" or "failed" (ui/page_models.py)
    "page_model_loading": None,   # the URL of an in-page model being loaded, if any
    "session": None,        # the session shown
    "sessions": [],         # rows of the session list, newest first
    "turn": None,           # the running turn (a ui.turn_view.RunningTurn)
    "compacting": None,     # the session of a manual compaction that has not replied
    "memory": None,         # the last memory state of the shown session
    "embedder": None,       # the sentence embedder's last status (worker 'embedder' messages)
    "note": "",             # the last turn's outcome, for the status line
    "worker_error": None,   # an error the worker reported after boot: (where, message)
    "queued": None,         # a message sent before it could be, waiting (ui/chat.py)
    "attachments": [],      # the pictures and sounds waiting to go with the next message
    "inputs": None,         # what the model in use takes besides text (ui/attach.py)
}

_hooks = {}


def on(name, function):
    """Call ``function`` whenever ``name`` is emitted."""
    _hooks.setdefault(name, []).append(function)
    return function


def emit(name, *args):
    for function in _hooks.get(name, ()):
        function(*args)


def other_backend():
    """The worker said a backend other than Chrome's Prompt API answers (a model server,
    or a model running in the page)."""
    return state["backend"] is not None and state["backend"] != PROMPT_API


def model_usable():
    """The model in use takes a message now. Not known before the worker has said which
    backend answers (its "ready" details; ui/model_choice.py). Chrome's Prompt API needs
    its model available or downloadable; another backend takes messages even while it is
    down: each turn says why it failed and is kept, to retry. A model in this page takes
    them once the page has loaded it."""
    if state["backend"] is None:
        return False
    if state["backend"] == PAGE_MODEL:
        return state["page_model"] == "ready"
    if other_backend():
        return True
    return state["model"] is not None and state["model"] != UNAVAILABLE


def no_model():
    """No model can answer: the worker uses Chrome's Prompt API, and Chrome has no model
    here. (Only then; whatever the Prompt API says before the worker has chosen its
    backend decides nothing.)"""
    return state["backend"] == PROMPT_API and state["model"] == UNAVAILABLE


def nothing_answers():
    """No model will answer a message now: Chrome's is missing (no_model), or the model
    chosen to run in this page could not be loaded."""
    return no_model() or (state["backend"] == PAGE_MODEL and state["page_model"] == "failed")


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
