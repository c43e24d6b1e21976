# The models that run in this page (`serve.py --gguf`: llama.cpp in WebAssembly, see
# web/page_model/). The site's offer (state["page_models"]), the first option of the
# no-model guide, and the load of the one chosen: it downloads once with a progress bar
# and a Cancel button, is checked and kept in the browser, and only then does the worker
# switch to it (so a failed or cancelled download leaves the model in use as it was,
# and the turn that failed can be retried). At start, the saved choice is loaded again
# from the browser's storage. The kept files are listed, each with a Delete button.
#
# The JavaScript objects live in web/page_model/page_models.js (window.pyAgentPageModels),
# loaded on first use: when the worker says the site offers an in-page model (a page that
# offers none never loads it, nor lists what the browser keeps). This part calls it with
# plain values and follows its promises.
from pyscript import window

from ui.app import PAGE_MODEL, emit, on, running, state
from ui.dom import by_id, from_js, keep, listen, make, missing
from ui.link import request
from ui.model_choice import described, megabytes, show, switch_to
from ui.status import render_status

box = by_id("page-model-box")
note = by_id("page-model-note")
progress_row = by_id("page-model-progress-row")
progress_bar = by_id("page-model-progress")
progress_label = by_id("page-model-progress-label")
cancel_button = by_id("page-model-cancel")
kept_box = by_id("kept-models")
kept_count = by_id("kept-count")
kept_list = by_id("kept-list")
kept_storage = by_id("kept-storage")
offer = by_id("page-model-offer")
offer_buttons = by_id("page-model-offer-buttons")

# The load under way: the model's URL and name, and whether the worker should switch to it
# once loaded (a choice) or already uses it (the saved choice, at start). (Its URL is
# also state["page_model_loading"], for the other parts.)
_load = {"url": None, "name": "", "switch": False}
# web/page_model/page_models.js's PageModels, once loaded; what waits for it meanwhile.
_glue = {"models": None, "loading": False, "waiting": []}


def glue():
    """The page's PageModels, or None before it is loaded (see with_glue)."""
    return _glue["models"]


def with_glue(then):
    """Call ``then(models)`` with the page's PageModels, loading its JavaScript first if
    need be (``then(None)`` if it cannot be loaded)."""
    if _glue["models"] is not None:
        then(_glue["models"])
        return
    _glue["waiting"].append(then)
    loader = getattr(window, "pyAgentLoadPageModels", None)
    if missing(loader):
        _on_glue_failed("index.html did not offer the in-page models")
    elif not _glue["loading"]:
        _glue["loading"] = True
        loader().then(_glue_loaded_proxy, _glue_failed_proxy)


def _on_glue_loaded(models):
    _glue.update(models=models, loading=False)
    waiting, _glue["waiting"] = _glue["waiting"], []
    for then in waiting:
        then(models)


def _on_glue_failed(error):
    window.console.error("py-agent: the in-page models could not be loaded:", error)
    _glue["loading"] = False
    waiting, _glue["waiting"] = _glue["waiting"], []
    for then in waiting:
        then(None)


_glue_loaded_proxy = keep(_on_glue_loaded)
_glue_failed_proxy = keep(_on_glue_failed)


def offered_by_site():
    """The site offers an in-page model (the worker's description says which)."""
    return bool(described().get("page_models")) or state["backend"] == PAGE_MODEL


def offered_model(url):
    for model in state["page_models"]:
        if model.get("url") == url:
            return model
    return None


def name_of(url):
    model = offered_model(url)
    return (model or {}).get("name") or url


# ------------------------------------------------------------------ the site's offer

def refresh_offered():
    models = glue()
    if models is not None:
        models.offered().then(_offered_proxy, _offered_failed_proxy)


def _on_offered(result):
    state["page_models"] = from_js(result) or []
    render_offer()
    render_kept()
    emit("page_models_listed")
    render_status()


def _on_offered_failed(error):
    state["page_models"] = []
    render_offer()


_offered_proxy = keep(_on_offered)
_offered_failed_proxy = keep(_on_offered_failed)


def render_offer():
    """The no-model guide's first option: one button per offered model."""
    offer.hidden = not state["page_models"]
    offer_buttons.replaceChildren()
    for model in state["page_models"]:
        where = ("%s, built into the extension" % megabytes(model.get("size"))
                 if model.get("packaged") else "kept in this browser" if model.get("kept")
                 else "%s download" % megabytes(model.get("size")))
        label = "Run %s in this page (%s)" % (model.get("name"), where)
        button = make("button", text=label, parent=offer_buttons,
                      attrs={"type": "button", "data-testid": "page-model-offer-button",
                             "data-url": model.get("url")})
        button.disabled = _load["url"] is not None


def _on_offer_click(event):
    button = event.target.closest('[data-testid="page-model-offer-button"]')
    if not missing(button) and not button.disabled:
        choose(button.getAttribute("data-url"))


# ------------------------------------------------------------------ loading

def choose(url):
    """The user chose the in-page model at ``url`` (in the menu or the guide)."""
    if _load["url"] is not None or running() or not state["booted"]:
        return
    info = described()
    if state["backend"] == PAGE_MODEL and info.get("url") == url and state["page_model"] == "ready":
        return   # in use already
    start_load(url, switch=True)


def start_load(url, switch):
    models = glue()
    if models is None:
        show_note("This page could not start its in-page model (see the browser console).")
        return
    _load.update(url=url, name=name_of(url), switch=switch)
    state["page_model_loading"] = url
    if not switch:
        state["page_model"] = "loading"
    show_note("")
    progress_bar.setAttribute("value", "0")
    progress_label.textContent = "Preparing %s…" % _load["name"]
    progress_row.hidden = False
    cancel_button.disabled = False
    render_box()
    render_offer()
    emit("controls")
    render_status()
    models.load(url, _progress_proxy).then(_loaded_proxy, _load_failed_proxy)


def _on_progress(progress):
    detail = from_js(progress) or {}
    loaded, total = detail.get("loaded") or 0, detail.get("total") or 0
    if total and loaded >= total:
        progress_bar.setAttribute("value", "1")
        progress_label.textContent = "Checking and loading %s into this page…" % _load["name"]
    elif total:
        progress_bar.setAttribute("value", str(loaded / total))
        progress_label.textContent = "Downloading %s: %d%% (%s of %s)" % (
            _load["name"], int(100 * loaded / total), megabytes(loaded), megabytes(total))
    else:
        progress_bar.removeAttribute("value")   # size unknown: an indeterminate bar
        progress_label.textContent = "Downloading %s: %s" % (_load["name"], megabytes(loaded))


def _on_loaded(info):
    url, name, switch = _load["url"], _load["name"], _load["switch"]
    glue().activate(url)
    _finish_load()
    if switch:
        switch_to(PAGE_MODEL, url, lambda ok, value: _on_switched(ok, value, name))
    else:
        state["page_model"] = "ready"
        request("model_info", lambda ok, value: show(value) if ok else None)
    refresh_offered()   # it is kept now
    emit("controls")
    render_status()


def _on_switched(ok, value, name):
    settle()
    if not ok:
        show_note("The agent could not switch to %s: %s" % (
            name, (value or {}).get("message") or value))


def _on_load_failed(error):
    name = str(getattr(error, "name", None) or "Error")
    message = str(getattr(error, "message", None) or error)
    chosen = _load["name"]
    at_start = not _load["switch"]
    _finish_load()
    if name == "AbortError":
        show_note("%s Cancelled." % chosen if "Cancelled" not in message else message)
    else:
        show_note("Could not use %s: %s" % (chosen, message))
    if at_start:
        state["page_model"] = "failed"
    refresh_offered()   # nothing half-kept shows as kept
    emit("controls")
    render_status()


_progress_proxy = keep(_on_progress)
_loaded_proxy = keep(_on_loaded)
_load_failed_proxy = keep(_on_load_failed)


def _finish_load():
    _load.update(url=None, name="", switch=False)
    state["page_model_loading"] = None
    progress_row.hidden = True
    render_box()
    render_offer()


def show_note(text):
    note.textContent = text
    note.hidden = not text
    render_box()


def render_box():
    box.hidden = progress_row.hidden and note.hidden and kept_box.hidden


def settle():
    """Keep loaded exactly the in-page model the worker uses (or none), and say whether
    it is ready; at start, load the saved one again."""
    models = glue()
    info = described()
    if state["backend"] != PAGE_MODEL:
        if models is not None:
            models.keepOnly(None)
        state["page_model"] = None
    elif models is not None and not missing(models.info(info.get("url"))):
        models.activate(info.get("url"))
        models.keepOnly(info.get("url"))
        state["page_model"] = "ready"
    elif _load["url"] is None and state["page_model"] != "failed":
        start_load(info.get("url"), switch=False)   # the saved choice, kept in the browser
    emit("controls")
    render_status()


# ------------------------------------------------------------------ kept models

def render_kept():
    kept = [model for model in state["page_models"] if model.get("kept")]
    kept_box.hidden = not kept
    kept_count.textContent = "(%d)" % len(kept) if kept else ""
    kept_list.replaceChildren()
    in_use = described().get("url") if state["backend"] == PAGE_MODEL else None
    for model in kept:
        row = make("li", parent=kept_list, attrs={"data-testid": "kept-model",
                                                  "data-url": model.get("url")})
        make("span", text="%s, %s" % (model.get("name"), megabytes(model.get("size"))), parent=row)
        button = make("button", text="Delete", parent=row,
                      attrs={"type": "button", "data-testid": "delete-model-button",
                             "data-url": model.get("url")})
        if model.get("url") == in_use:
            button.disabled = True
            button.title = "In use: choose another model first"
    render_box()
    models = glue()
    if kept and models is not None:
        models.estimate().then(_estimate_proxy)


def _on_estimate(result):
    estimate = from_js(result) or {}
    usage, quota = estimate.get("usage"), estimate.get("quota")
    kept_storage.textContent = ("This site uses %s of the %s this browser allows it."
                                % (megabytes(usage), megabytes(quota))
                                if usage is not None and quota else "")


_estimate_proxy = keep(_on_estimate)


_deleting = {"url": None}


def _on_kept_click(event):
    button = event.target.closest('[data-testid="delete-model-button"]')
    if missing(button) or button.disabled or _deleting["url"] is not None:
        return
    _deleting["url"] = button.getAttribute("data-url")
    button.disabled = True
    glue().delete(_deleting["url"]).then(_deleted_proxy, _delete_failed_proxy)


def _on_deleted(result):
    url, _deleting["url"] = _deleting["url"], None
    show_note("%s was deleted from this browser; choosing it again downloads it again."
              % name_of(url))
    refresh_offered()


def _on_delete_failed(error):
    url, _deleting["url"] = _deleting["url"], None
    show_note("Could not delete %s: %s" % (name_of(url), getattr(error, "message", None) or error))
    refresh_offered()


_deleted_proxy = keep(_on_deleted)
_delete_failed_proxy = keep(_on_delete_failed)


# ------------------------------------------------------------------ start

def _on_model_changed():
    if glue() is None and offered_by_site():
        # The first word that the site offers one: load the models' JavaScript, list the
        # offer and what this browser keeps, then act on the model in use.
        with_glue(lambda models: (refresh_offered(), settle(), render_kept()))
        return
    settle()
    render_kept()


def start():
    on("page_model_chosen", choose)
    on("model_changed", _on_model_changed)
    listen(cancel_button, "click", lambda event: glue().cancel())
    listen(offer_buttons, "click", _on_offer_click)
    listen(kept_list, "click", _on_kept_click)
    note.hidden = True
