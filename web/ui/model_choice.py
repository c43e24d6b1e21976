# Which model answers: Chrome's Gemini Nano, the OpenAI-compatible server that
# `serve.py --model-url` named, or a model running in this page (`serve.py --gguf`).
# The worker decides at start (py_agent/browser/backends.py) and says so in its "ready"
# details and, when it changes, in a "model" event; this part keeps that in
# state["backend"] (and the server's description in state["server"]), shows the choice
# in the Model menu, and lets the user switch. The choice is saved in localStorage, so
# index.html starts the next worker with it. An in-page model is loaded by
# ui/page_models.py before the worker switches to it (the menu only says it was chosen).
from pyscript import window

from ui.app import PAGE_MODEL, PROMPT_API, UNAVAILABLE, emit, on, running, state
from ui.dom import by_id, listen, make
from ui.link import request

SERVER = "server"

choice = by_id("model-choice")
choice_row = by_id("model-choice-row")
choice_note = by_id("model-choice-note")
_seen = {"info": None, "nano": None}


def megabytes(size):
    """A file size for people: "806 MB", "1.0 MB", "1.2 GB"."""
    if not size:
        return "size unknown"
    if size >= 1e9:
        return "%.1f GB" % (size / 1e9)
    if size >= 1e7:
        return "%d MB" % int(size / 1e6)
    return "%.1f MB" % (size / 1e6)


def server_clause():
    """What the status line says about the model server in use."""
    info = state["server"]
    where = info.get("url") or "the model server"
    name = info.get("name") or "the first model it lists"
    if info.get("error"):
        return ("Answers come from %s at %s, which is not answering now: %s Start it (or fix "
                "--model-url); your messages are kept and a turn can be retried."
                % (name, where, info["error"]))
    return "Answers come from %s on the model server at %s (OpenAI-compatible)." % (name, where)


def threads_clause(info):
    """How the in-page model computes: its threads, and why (cross-origin isolation)."""
    threads = info.get("threads")
    if info.get("multi_threaded") and threads:
        return "%d threads (this page is cross-origin isolated)" % threads
    if info.get("cross_origin_isolated") is False:
        return "single-threaded (this page is not cross-origin isolated, so one thread)"
    if info.get("multi_threaded") is False:
        return "single-threaded"
    return "threads not known yet"


def page_model_clause():
    """What the status line says about the model running in this page."""
    info = _seen["info"] or {}
    name = info.get("name") or "the model"
    phase = state["page_model"]
    if phase == "failed":
        return ("%s could not be loaded into this page (see above). Choose another model in "
                "the Model menu; your messages are kept." % name)
    if phase != "ready":
        return "Loading %s into this page…" % name
    return ("Answers come from %s (%s), running in this page with llama.cpp, %s; nothing "
            "leaves this device." % (name, megabytes(info.get("size")), threads_clause(info)))


def backend_clause():
    """What the status line says about the backend in use, when it is not Chrome's."""
    if state["server"] is not None:
        return server_clause()
    if state["backend"] == PAGE_MODEL:
        return page_model_clause()
    info = _seen["info"] or {}
    return "Answers come from %s." % (info.get("name") or state["backend"])


def backend_badge():
    """The model badge for a backend other than Chrome's."""
    info = _seen["info"] or {}
    if state["server"] is not None:
        return "Model: %s (server)" % (info.get("name") or "server")
    if state["backend"] == PAGE_MODEL:
        return "Model: %s (in this page)" % (info.get("name") or "loading…")
    return "Model: %s" % (info.get("name") or state["backend"])


def _save(backend, model):
    try:
        window.localStorage.setItem("py-agent.backend", backend)
        if model:
            window.localStorage.setItem("py-agent.model", model)
        else:
            window.localStorage.removeItem("py-agent.model")
    except Exception:   # storage turned off: the choice lasts for this page only
        pass


def _option(value, text, selected, disabled=False):
    node = make("option", text=text, attrs={"value": value}, parent=choice)
    node.selected = selected
    node.disabled = disabled


def page_model_label(offered):
    """"tiny.gguf, in this page (1.0 MB, kept)" or "... (1.0 MB download)" (or, a file
    of the extension itself, "... (1.0 MB, built in)")."""
    size = megabytes(offered.get("size")) if offered.get("size") else ""
    if offered.get("packaged"):
        where = size + ", built in" if size else "built in"
    elif offered.get("kept"):
        where = size + ", kept" if size else "kept"
    else:
        where = size + " download" if size else "downloads once"
    return "%s, in this page (%s)" % (offered.get("name") or offered.get("url"), where)


def render_choice():
    """The Model menu: Gemini Nano when Chrome has it (or it is in use), the server's
    models, and the in-page models with their size."""
    info = _seen["info"] or {}
    server = info.get("server")
    offered = state["page_models"]
    _seen["nano"] = state["model"]
    choice_row.hidden = server is None and not offered
    if choice_row.hidden:
        return
    in_use = info.get("backend") or PROMPT_API
    choice.replaceChildren()
    listed = False
    if state["model"] != UNAVAILABLE:
        _option(PROMPT_API, "Gemini Nano (Chrome, on this device)", in_use == PROMPT_API)
        listed = in_use == PROMPT_API
    elif in_use == PROMPT_API:
        _option("", "Choose a model…", True, disabled=True)
        listed = True
    if server is not None:
        names = list(server.get("models") or [])
        current = info.get("name") if in_use == SERVER else None
        for name in [current, server.get("model")]:
            if name and name not in names:
                names.insert(0, name)
        if not names:
            names = [""]
        for name in names:
            label = "%s (server %s)" % (name or "the server's model", server.get("url") or "")
            selected = in_use == SERVER and (name == current or not name)
            listed = listed or selected
            _option("%s:%s" % (SERVER, name), label, selected)
    for model in offered:
        selected = in_use == PAGE_MODEL and model.get("url") == info.get("url")
        listed = listed or selected
        _option("%s:%s" % (PAGE_MODEL, model.get("url")), page_model_label(model), selected)
    if not listed:   # (an in-page model the site no longer offers, say)
        _option("", "Choose a model…", True, disabled=True)
    _on_controls()


def _on_controls():
    choice.disabled = running() or not state["booted"] or state["page_model_loading"] is not None
    if _seen["nano"] != state["model"] and not choice_row.hidden:
        render_choice()   # Chrome said whether it has its model: list it or not


def show(info):
    """The worker's description of the model in use (see BackendSwitch.describe)."""
    if not isinstance(info, dict):
        return
    _seen["info"] = info
    state["backend"] = info.get("backend") or PROMPT_API
    state["server"] = info if state["backend"] == SERVER else None
    render_choice()
    emit("model_changed")


def described():
    """The worker's last description of the model in use (a dict, maybe empty)."""
    return _seen["info"] or {}


def _on_booted(details):
    # A worker that does not say which model answers uses Chrome's (the page's default).
    show((details or {}).get("model") or {"backend": PROMPT_API})


def _on_agent_event(event):
    if event.get("type") == "model":
        show(event.get("data"))


def switch_to(backend, model=None, on_done=None):
    """Ask the worker to answer with ``backend`` (and ``model``: the server's model name,
    or the in-page model's URL); the choice is saved. ``on_done(ok, value)`` after."""
    _save(backend, model)
    choice_note.textContent = "Switching…"
    choice.disabled = True
    fields = {"backend": backend}
    if model:   # no key at all otherwise (None would cross to the worker as a JS null)
        fields["model"] = model

    def switched(ok, value):
        if ok:
            show(value)
            choice_note.textContent = ""
        else:
            choice_note.textContent = "Could not switch: %s" % (value.get("message") or value)
            render_choice()
        if on_done is not None:
            on_done(ok, value)

    request("use_model", switched, **fields)


def _on_change(event):
    backend, _, model = choice.value.partition(":")
    if backend == PAGE_MODEL:
        render_choice()   # the model in use stays selected until the new one is loaded
        emit("page_model_chosen", model)
    elif backend:
        switch_to(backend, model)


def start():
    on("booted", _on_booted)
    on("agent_event", _on_agent_event)
    on("controls", _on_controls)
    on("page_models_listed", render_choice)
    listen(choice, "change", _on_change)
