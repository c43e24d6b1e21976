# Which model answers: Chrome's Gemini Nano or the OpenAI-compatible server that
# `serve.py --model-url` named. The worker decides at start (py_agent/browser/backends.py)
# and says so in its "ready" details and, when it changes, in a "model" event; this part
# keeps that in state["backend"] (and the server's description in state["server"]), shows
# the choice, and lets the user switch. The choice is saved in localStorage, so
# index.html starts the next worker with it.
from pyscript import window

from ui.app import emit, on, PROMPT_API, running, state
from ui.dom import by_id, listen, make
from ui.link import request

SERVER = "server"

choice = by_id("model-choice")
choice_row = by_id("model-choice-row")
choice_note = by_id("model-choice-note")
_seen = {"info": None}


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


def backend_clause():
    """What the status line says about the backend in use, when it is not Chrome's."""
    if state["server"] is not None:
        return server_clause()
    info = _seen["info"] or {}
    return "Answers come from %s." % (info.get("name") or state["backend"])


def backend_badge():
    """The model badge for a backend other than Chrome's."""
    info = _seen["info"] or {}
    if state["server"] is not None:
        return "Model: %s (server)" % (info.get("name") or "server")
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


def _option(value, text, selected):
    node = make("option", text=text, attrs={"value": value}, parent=choice)
    node.selected = selected


def render_choice():
    info = _seen["info"] or {}
    server = info.get("server")
    choice_row.hidden = server is None
    if server is None:
        return
    in_use = info.get("backend") or PROMPT_API
    choice.replaceChildren()
    _option(PROMPT_API, "Gemini Nano (Chrome, on this device)", in_use == PROMPT_API)
    names = list(server.get("models") or [])
    current = info.get("name") if in_use == SERVER else None
    for name in [current, server.get("model")]:
        if name and name not in names:
            names.insert(0, name)
    if not names:
        names = [""]
    for name in names:
        label = "%s (server %s)" % (name or "the server's model", server.get("url") or "")
        _option("%s:%s" % (SERVER, name), label, in_use == SERVER and (name == current or not name))
    _on_controls()


def _on_controls():
    choice.disabled = running() or not state["booted"]


def show(info):
    """The worker's description of the model in use (see BackendSwitch.describe)."""
    if not isinstance(info, dict):
        return
    _seen["info"] = info
    state["backend"] = info.get("backend") or PROMPT_API
    state["server"] = info if state["backend"] == SERVER else None
    render_choice()
    emit("model_changed")


def _on_booted(details):
    # A worker that does not say which model answers uses Chrome's (the page's default).
    show((details or {}).get("model") or {"backend": PROMPT_API})


def _on_agent_event(event):
    if event.get("type") == "model":
        show(event.get("data"))


def _on_switched(ok, value):
    if ok:
        show(value)
        choice_note.textContent = ""
    else:
        choice_note.textContent = "Could not switch: %s" % (value.get("message") or value)
        render_choice()


def _on_change(event):
    value = choice.value
    backend, _, model = value.partition(":")
    _save(backend, model)
    choice_note.textContent = "Switching…"
    choice.disabled = True
    fields = {"backend": backend}
    if model:   # no key at all otherwise (None would cross to the worker as a JS null)
        fields["model"] = model
    request("use_model", _on_switched, **fields)


def start():
    on("booted", _on_booted)
    on("agent_event", _on_agent_event)
    on("controls", _on_controls)
    listen(choice, "change", _on_change)
