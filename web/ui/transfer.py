# Export and import of a whole session (py-agent-session/2 JSON Lines, made and read
# by the worker): Export downloads the shown session as a file; Import reads a file,
# adds it as a new session, lists it and opens it. A bad file changes nothing.
from pyscript import document, window

from ui.app import emit, on, running, state
from ui.dom import by_id, keep, listen, missing, plural, to_js
from ui.link import request
from ui.status import failure_text

MAX_IMPORT_BYTES = 20 * 1024 * 1024

export_button = by_id("export-button")
import_input = by_id("import-input")
message = by_id("transfer-message")

_exported_urls = []   # object URLs of downloads, revoked a little later
_reading = {"name": None, "busy": False}


def say(text, kind="ok"):
    message.textContent = text
    message.setAttribute("data-state", kind)
    message.setAttribute("role", "alert" if kind == "error" else "status")
    message.hidden = not text


# ------------------------------------------------------------------ export

def _revoke():
    while _exported_urls:
        window.URL.revokeObjectURL(_exported_urls.pop())


_revoke_proxy = keep(_revoke)


def download(filename, text, mime="application/jsonl"):
    """Save ``text`` as ``filename`` through a Blob and an <a download>."""
    blob = window.Blob.new(to_js([text]), to_js({"type": mime + ";charset=utf-8"}))
    url = window.URL.createObjectURL(blob)
    link = document.createElement("a")
    link.href = url
    link.download = filename
    link.hidden = True
    document.body.append(link)
    link.click()
    link.remove()
    _exported_urls.append(url)
    window.setTimeout(_revoke_proxy, 10_000)


def on_export(event):
    session_id = state["session"]
    if not session_id or state["memory"] is None:
        return
    export_button.disabled = True
    say("Exporting…", "busy")

    def done(ok, value):
        update()
        if not ok:
            say("Could not export this session (%s)." % failure_text(value), "error")
            return
        download(value.get("filename") or "%s.jsonl" % session_id, value.get("text") or "")
        say("Exported %s as %s." % (plural(int(value.get("turns") or 0), "turn"),
                                    value.get("filename")))
    request("export", done, session_id=session_id)


# ------------------------------------------------------------------ import

def _file_read(text):
    name = _reading["name"]

    def done(ok, value):
        _reading["busy"] = False
        update()
        if not ok:
            if value.get("name") == "SessionImportError":
                why = value.get("message") or "not a py-agent session file"
            else:
                why = failure_text(value)
            say("Could not import %s: %s. Nothing was changed." % (name, why), "error")
            return
        session_id = value.get("session_id")
        turns = int(value.get("turns") or 0)
        title = value.get("title") or session_id
        # ui/sessions.py lists and opens it (which clears this message).
        emit("session_imported", session_id, title, turns)
        say("Imported “%s” (%s)." % (title, plural(turns, "turn")))
    request("import", done, text=str(text))


def _file_failed(error):
    _reading["busy"] = False
    update()
    say("Could not read %s (%s). Nothing was changed." % (
        _reading["name"], getattr(error, "message", None) or error), "error")


_read_proxy = keep(_file_read)
_read_failed_proxy = keep(_file_failed)


def on_import(event):
    files = import_input.files
    if missing(files) or files.length == 0:
        return
    chosen = files.item(0)
    import_input.value = ""   # the same file can be chosen again
    if running() or _reading["busy"]:
        say("Wait until the agent has answered, then import.", "error")
        return
    name = "“%s”" % chosen.name
    if chosen.size > MAX_IMPORT_BYTES:
        say("Could not import %s: the file is larger than %d MB. Nothing was changed."
            % (name, MAX_IMPORT_BYTES // (1024 * 1024)), "error")
        return
    _reading["name"] = name
    _reading["busy"] = True
    update()
    say("Importing %s…" % name, "busy")
    chosen.text().then(_read_proxy, _read_failed_proxy)


# ------------------------------------------------------------------ controls

def update():
    busy = running()
    export_button.disabled = busy or not state["booted"] or state["memory"] is None
    import_input.disabled = busy or not state["booted"] or _reading["busy"]


def start():
    on("controls", update)
    on("session_opening", lambda session_id: say(""))
    listen(export_button, "click", on_export)
    listen(import_input, "change", on_import)
