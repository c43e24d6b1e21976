# Attachments in the composer: the Attach button, pasting and dropping pictures or sounds
# into the message box, the microphone, the pending attachments (each with its thumbnail
# and a button to remove it), and what the model in use takes besides text.
#
# The work on the files themselves (sniffing, decoding, scaling, SVG drawn as a picture,
# sounds made WAV, recording) is web/attachments.js's, imported the first time a file or
# the microphone is used: nothing of it is loaded before that. ui/chat.py sends what is
# pending with the next message (state["attachments"]) and checks first that the model
# takes it; the typed text is never lost when it cannot.
from pyscript import document, js_import, window

from ui.app import emit, on, state
from ui.dom import by_id, keep, listen, make, missing
from ui.link import request

pending_list = by_id("pending-attachments")
note = by_id("attach-note")
attach_input = by_id("attach-input")
attach_button = by_id("attach-button")
record_button = by_id("record-button")
inputs_note = by_id("model-inputs")
composer = by_id("composer")
chat_input = by_id("chat-input")

_module = {"module": None, "loading": None, "recorder": None}
_keep = []   # proxies of one-off callbacks, kept until the page goes


def _once(function):
    proxy = keep(function)
    _keep.append(proxy)
    return proxy


def with_module(then):
    """Call ``then(module)`` with web/attachments.js, imported on first use (one import;
    callers that come while it loads are called in the order they came)."""
    if _module["module"] is not None:
        then(_module["module"])
        return
    waiting = _module["loading"]
    if waiting is not None:
        waiting.append(then)
        return
    waiting = _module["loading"] = [then]
    url = window.URL.new("attachments.js", document.baseURI).href

    def loaded(modules):
        _module["module"] = modules[0]
        _module["loading"] = None
        for each in waiting:
            each(modules[0])

    def failed(error):
        _module["loading"] = None
        show_note("Attachments could not be loaded here: %s" % getattr(error, "message", error))

    js_import(url).then(_once(loaded), _once(failed))


# ------------------------------------------------------------------ what is pending

def pending():
    return state["attachments"]


def show_note(text):
    note.textContent = text
    note.hidden = not text


def kinds_pending():
    return sorted({str(item.kind) for item in pending()})


def render():
    pending_list.replaceChildren()
    for index, item in enumerate(pending()):
        chip = make("li", "attachment-chip", parent=pending_list,
                    attrs={"data-testid": "pending-attachment", "data-kind": str(item.kind),
                           "data-name": str(item.name)})
        add_preview(chip, item)
        remove = make("button", None, "✕", parent=chip,
                      attrs={"type": "button", "data-testid": "remove-attachment",
                             "data-index": str(index),
                             "aria-label": "Remove %s" % item.name})
        remove.title = "Remove %s" % item.name
    pending_list.hidden = not pending()
    composer.setAttribute("data-attachments", str(len(pending())))
    emit("controls")


def add_preview(chip, item):
    """A chip's picture (drawn from the Blob: never markup) or sound, name and note."""
    if str(item.kind) == "image":
        url = window.URL.createObjectURL(item.blob)
        make("img", None, parent=chip, attrs={"src": url, "alt": "", "data-testid": "attachment-thumb",
                                              "data-width": str(item.width),
                                              "data-height": str(item.height)})
    else:
        make("span", None, "♪", parent=chip, attrs={"aria-hidden": "true"})
    label = str(item.name)
    if not missing(item.seconds) and item.seconds:
        label += " (%.1f s)" % float(item.seconds)
    make("span", "attachment-name", label, parent=chip)
    if not missing(item.note) and str(item.note):
        make("span", "attachment-note", str(item.note), parent=chip)


def add_files(files):
    """Prepare ``files`` (a FileList or an array of Files) and add the ready ones."""
    if missing(files) or not files.length:
        return
    composer.setAttribute("data-preparing", "true")
    show_note("Preparing %d file%s…" % (files.length, "" if files.length == 1 else "s"))

    def prepared(result):
        composer.removeAttribute("data-preparing")
        for index in range(result.added.length):
            state["attachments"].append(result.added[index])
        refused = [str(result.refused[i].message) for i in range(result.refused.length)]
        show_note(". ".join(refused) + "." if refused else "")
        if refused:
            note.setAttribute("data-reasons", ",".join(str(result.refused[i].reason)
                                                       for i in range(result.refused.length)))
        render()
        say_what_the_model_takes()

    def failed(error):
        composer.removeAttribute("data-preparing")
        show_note("The files could not be read: %s" % getattr(error, "message", error))

    def prepare(module):
        # One batch after another, so the attachments keep the order they were given in.
        def run(*_args):
            return module.prepareAll(files, len(pending())).then(_once(prepared),
                                                                 _once(failed))
        chain = _module.get("chain") or window.Promise.resolve()
        _module["chain"] = chain.then(_once(run))

    with_module(prepare)


def take():
    """The pending attachments as the run request sends them (a JS array), emptied."""
    items = pending()
    state["attachments"] = []
    render()
    show_note("")
    payload = window.Array.new()
    for item in items:
        entry = window.Object.new()
        entry.name = item.name
        entry.type = item.type
        entry.data = item.blob
        entry.width = item.width
        entry.height = item.height
        payload.push(entry)
    return payload, items


# ------------------------------------------------------------------ the page's events

def on_input(event):
    files = attach_input.files
    add_files(getattr(window.Array, "from")(files))
    attach_input.value = ""


def on_paste(event):
    data = event.clipboardData
    if missing(data) or missing(data.files) or not data.files.length:
        return   # text: pasted as usual
    event.preventDefault()
    add_files(getattr(window.Array, "from")(data.files))


def on_dragover(event):
    event.preventDefault()
    composer.classList.add("drop-target")


def on_dragleave(event):
    composer.classList.remove("drop-target")


def on_drop(event):
    event.preventDefault()
    composer.classList.remove("drop-target")
    data = event.dataTransfer
    if missing(data):
        return
    if not missing(data.files) and data.files.length:
        add_files(getattr(window.Array, "from")(data.files))
        return
    address = data.getData("text/uri-list") or data.getData("text/plain")
    if address and str(address).startswith(("http://", "https://")):
        url = str(address).split("\n")[0].strip()

        def fetched(file):
            add_files(window.Array.of(file))

        def refused(error):
            show_note(str(getattr(error, "message", error)) + ".")
            note.setAttribute("data-reasons", str(getattr(error, "reason", "failed")))

        with_module(lambda module: module.fromAddress(url).then(_once(fetched),
                                                                _once(refused)))


def on_remove(event):
    button = event.target.closest('[data-testid="remove-attachment"]')
    if missing(button):
        return
    index = int(button.getAttribute("data-index"))
    items = pending()
    if 0 <= index < len(items):
        items.pop(index)
    render()
    chat_input.focus()


# ------------------------------------------------------------------ the microphone

def on_record(event):
    recorder = _module["recorder"]
    if recorder is None:
        start_recording()
    else:
        stop_recording()


def start_recording():
    def begin(module):
        options = window.Object.new()
        options.onLimit = _once(lambda *args: stop_recording())
        recorder = module.Recorder.new(options)
        _module["recorder"] = recorder

        def started(*_args):
            record_button.setAttribute("aria-pressed", "true")
            record_button.textContent = "Stop recording"
            show_note("Recording… press Stop recording when you are done.")

        def failed(error):
            _module["recorder"] = None
            show_note(str(getattr(error, "message", error)) + ".")

        recorder.start().then(_once(started), _once(failed))

    with_module(begin)


def stop_recording():
    recorder = _module["recorder"]
    if recorder is None:
        return
    _module["recorder"] = None
    record_button.setAttribute("aria-pressed", "false")
    record_button.textContent = "Record"

    def recorded(item):
        state["attachments"].append(item)
        show_note("")
        render()

    def failed(error):
        show_note(str(getattr(error, "message", error)) + ".")
        note.setAttribute("data-reasons", str(getattr(error, "reason", "failed")))

    recorder.stop().then(_once(recorded), _once(failed))


# ------------------------------------------------------------------ what the model takes

def refusal():
    """Why the model in use cannot take what is pending ("" if it can)."""
    inputs = state["inputs"] or {}
    for kind in kinds_pending():
        entry = inputs.get(kind) or {}
        if inputs and not entry.get("supported"):
            return entry.get("reason") or "The model cannot take %s input." % kind
    return ""


def say_what_the_model_takes():
    inputs = state["inputs"]
    if not inputs:
        return
    image, audio = inputs.get("image") or {}, inputs.get("audio") or {}
    parts = []
    parts.append("Pictures: yes" if image.get("supported") else "Pictures: no")
    parts.append("voice: yes" if audio.get("supported") else "voice: no")
    why = [entry.get("reason") for entry in (image, audio)
           if not entry.get("supported") and entry.get("reason")]
    inputs_note.textContent = "%s%s" % (" · ".join(parts), (" (%s)" % why[0]) if why else "")
    inputs_note.title = inputs_note.textContent   # the line may be cut: its whole text
    inputs_note.setAttribute("data-image", "yes" if image.get("supported") else "no")
    inputs_note.setAttribute("data-audio", "yes" if audio.get("supported") else "no")
    record_button.hidden = not audio.get("supported")
    attach_button.title = ("Attach pictures or sounds (or paste or drop them into the message "
                           "box)" if image.get("supported") or audio.get("supported") else
                           "%s Attached files stay here for another model." %
                           (image.get("reason") or "This model takes text only."))
    blocked = refusal()
    if blocked and pending():
        show_note("%s Your attachments stay here: choose a model that takes them, or remove "
                  "them to send the text alone." % blocked)


def ask_model_inputs(*args):
    def answered(ok, value):
        if ok and isinstance(value, dict):
            state["inputs"] = value
            say_what_the_model_takes()

    request("model_inputs", answered)


def after_turn(turn, ok, value):
    """A model that refused the turn's pictures or sounds has said what it cannot take:
    ask again, so the buttons say it before the next try."""
    if ok and isinstance(value, dict) and str(value.get("error") or "").startswith(
            "InputNotSupportedError"):
        ask_model_inputs()


def start():
    state["attachments"] = []
    state["inputs"] = None
    listen(attach_input, "change", on_input)
    listen(chat_input, "paste", on_paste)
    listen(composer, "dragover", on_dragover)
    listen(composer, "dragleave", on_dragleave)
    listen(composer, "drop", on_drop)
    listen(pending_list, "click", on_remove)
    listen(record_button, "click", on_record)
    on("model_changed", ask_model_inputs)
    on("turn_finished", after_turn)
    if state["booted"]:
        ask_model_inputs()
    else:
        on("booted", ask_model_inputs)
