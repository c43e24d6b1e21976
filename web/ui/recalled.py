# Turns recalled from the archive (py_agent/turn/recalled.py), as the page shows them:
#
# - in the trace of the turn that recalled them (the worker's "recalled" event): which
#   earlier turns came into the prompt, from which chat and day, why (the words matched
#   and where, the time phrase, how much of the message they cover), and those looked at
#   but left out, with the reason;
# - in the memory inspector: the turns recalled into the shown session's last prompt.
#
# When the page is hidden (and may be closed) it asks the worker to save the index's
# blobs that lag, so the next start loads them rather than analysing turns again.
#
# All text goes in through textContent (ui.dom.make).
from pyscript import document, window

from ui.app import state
from ui.dom import by_id, clear, clip, listen, make, missing, part, plural
from ui.link import request

recalled_box = by_id("recalled-box")
recalled_list = by_id("recalled-turns")

FIELDS = {"user": "your words", "answer": "the answer", "tools": "a tool's result",
          "names": "names and figures"}


def day_text(ms):
    """A turn's day as the browser writes it ("" when unknown). (A float: MicroPython
    hands JavaScript a large int cut to 32 bits.)"""
    try:
        ms = float(ms or 0)
    except (TypeError, ValueError):
        return ""
    return str(window.Date.new(ms).toLocaleDateString()) if ms else ""


def source_text(hit, session_id):
    """Where a recalled turn was said: "this chat" or the chat's title, and the day."""
    if hit.get("session_id") == session_id:
        where = "this chat"
    else:
        title = hit.get("title") or ""
        where = "“%s”" % clip(title, 40) if title else "another chat"
    day = day_text(hit.get("time") or 0)
    return where + (", " + day if day else "")


def why_text(hit):
    """Why a turn was recalled: "matched wedding, porto (your words); 91% of the message";
    the time phrase and its fit; the speaker the message pointed at."""
    why = hit.get("why") or {}
    parts = []
    found = []
    for field, words in (why.get("terms") or {}).items():
        if words:
            found.append("%s (%s)" % (", ".join(words), FIELDS.get(field, field)))
    if found:
        parts.append("matched " + "; ".join(found))
    related = ["%s ≈ %s" % (pair[0], pair[1]) for pair in why.get("related") or []
               if len(pair) == 2]
    if related:
        parts.append("related: " + ", ".join(related))
    coverage = why.get("coverage")
    if coverage is not None:
        parts.append("%d%% of the message" % int(round(100 * coverage)))
    if why.get("time"):
        parts.append("“%s” (fit %d%%)" % (why["time"], int(round(100 * (why.get("closeness")
                                                                        or 0)))))
    return " · ".join(parts)


def show_in_trace(message, data, session_id):
    """The trace of ``message`` gets the turns its prompt recalled (``data``: the
    "recalled" event), or those the recall tool found."""
    trace = part(message, ".trace")
    if missing(trace):
        return
    source = data.get("source") or "auto"
    box = part(trace, '.recalled[data-source="%s"]' % source)
    if missing(box):
        box = make("div", "recalled", attrs={"data-testid": "recalled", "data-source": source})
        steps = part(trace, ".trace-steps")
        trace.insertBefore(box, steps)
    clear(box)
    hits = data.get("hits") or []
    shown = [h for h in hits if h.get("shown")]
    if source == "tool":
        label = "Recall tool found %s for “%s”" % (plural(len(shown), "earlier turn"),
                                                   clip(data.get("query") or "", 60))
    elif shown:
        label = "Recalled %s into the prompt (%d tokens of %d)" % (
            plural(len(shown), "earlier turn"), data.get("tokens") or 0, data.get("budget") or 0)
    else:
        label = "Nothing recalled: no earlier turn matched well enough"
    make("p", "recalled-label", label, parent=box)
    listing = make("ul", "recalled-hits", parent=box)
    for hit in hits:
        item = make("li", "recalled-hit", attrs={
            "data-session-id": hit.get("session_id") or "", "data-turn-id": hit.get("turn_id"),
            "data-shown": "true" if hit.get("shown") else "false",
            "data-coverage": "%.2f" % ((hit.get("why") or {}).get("coverage") or 0)},
            parent=listing)
        make("span", "recalled-source", source_text(hit, session_id) + ": ", parent=item)
        make("span", "recalled-text", clip(hit.get("text") or "", 160), parent=item)
        reason = why_text(hit)
        if not hit.get("shown") and hit.get("reason"):
            reason = (reason + " · " if reason else "") + "left out: " + hit["reason"]
        make("span", "recalled-why", reason, parent=item)
    box.hidden = not hits and source == "tool"


def render_in_inspector(hits, session_id):
    """The memory inspector's list of the turns recalled into the last prompt."""
    if missing(recalled_list):
        return
    clear(recalled_list)
    hits = hits or []
    count = recalled_box.querySelector('[data-count="recalled"]')
    if not missing(count):
        count.textContent = "(%d)" % len(hits) if hits else ""
    for hit in hits:
        item = make("li", "recalled-turn", attrs={"data-session-id": hit.get("session_id") or "",
                                                  "data-turn-id": hit.get("turn_id")},
                    parent=recalled_list)
        make("p", "recalled-source", "From " + source_text(hit, session_id), parent=item)
        make("p", "recalled-text", clip(hit.get("text") or "", 240), parent=item)
        make("p", "recalled-why", why_text(hit), parent=item)


def on_visibility(event):
    if document.visibilityState == "hidden" and state["booted"]:
        request("save_recall")


def start():
    listen(document, "visibilitychange", on_visibility)
