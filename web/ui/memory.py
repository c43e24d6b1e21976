# The memory inspector: what the next prompt of the shown session carries (summary,
# key facts by category, the recent raw turns), how it sits in the model's context
# window (ui/meter.py), the compaction history, and "Compact now" with a focus.
from pyscript import window

from ui.app import emit, model_usable, on, running, state
from ui.dom import by_id, clear, clip, listen, make, number, plural, seconds, to_js
from ui.link import request
from ui.meter import render_meter
from ui.status import render_status, update_controls

memory_panel = by_id("memory-panel")
memory_summary = by_id("memory-summary")
memory_facts = by_id("memory-facts")
memory_info = by_id("memory-info")
memory_turns = by_id("memory-turns")
history = by_id("compaction-history")
compact_form = by_id("compact-form")
compact_focus = by_id("compact-focus")
compact_button = by_id("compact-button")
turns_count = memory_panel.querySelector('[data-count="turns"]')
history_count = memory_panel.querySelector('[data-count="history"]')

# The fact categories the agent extracts, in the order the panel shows them.
CATEGORIES = (
    ("preference", "Preferences"),
    ("need", "Needs"),
    ("background", "Background"),
    ("follow-up", "Follow-ups"),
    ("decision", "Decisions"),
)
TRIGGERS = {"auto": "automatic", "manual": "manual", "tool": "asked by the agent"}


# ------------------------------------------------------------------ rendering

def render_facts(facts):
    """Key facts grouped by category, a heading per category that has any."""
    clear(memory_facts)
    groups = {}
    order = [name for name, _ in CATEGORIES]
    for fact in facts or []:
        category = str(fact.get("category") or "background")
        if category not in groups:
            groups[category] = []
            if category not in order:
                order.append(category)
        groups[category].append(fact)
    labels = dict(CATEGORIES)
    for category in order:
        items = groups.get(category)
        if not items:
            continue
        group = make("section", "fact-group", attrs={"data-testid": "fact-group",
                                                     "data-category": category},
                     parent=memory_facts)
        heading = make("h4", "fact-heading", labels.get(category) or category[:1].upper() + category[1:],
                       parent=group)
        make("span", "count", " (%d)" % len(items), parent=heading)
        listing = make("ul", "fact-list", parent=group)
        for fact in items:
            make("li", "fact", fact.get("text", ""), attrs={"data-category": category},
                 parent=listing)


def render_turns(turns):
    """The raw turns the next prompt carries word for word, clipped for the sidebar."""
    clear(memory_turns)
    turns = turns or []
    turns_count.textContent = "(%d)" % len(turns) if turns else ""
    for turn in turns:
        item = make("li", "memory-turn", attrs={"data-turn-id": turn.get("id", "")},
                    parent=memory_turns)
        user = make("p", "turn-user", parent=item)
        make("span", "who", "You: ", parent=user)
        make("span", None, clip(turn.get("user", ""), 120), parent=user)
        answer = make("p", "turn-answer", parent=item)
        make("span", "who", "Agent: ", parent=answer)
        make("span", None, clip(turn.get("answer", "") or "(no answer)", 160), parent=answer)
        steps = turn.get("steps") or []
        tools = [s.get("tool") for s in steps if s.get("tool") and s.get("tool") != "none"]
        if tools:
            make("p", "turn-tools", "tools: " + ", ".join(tools), parent=item)


def when(started_at):
    """A compaction's start as local time (the date too if it was not today)."""
    try:
        ms = float(started_at or 0)
    except (TypeError, ValueError):
        return ""
    if not ms:
        return ""
    if ms < 1e11:   # seconds since the epoch, not milliseconds
        ms *= 1000
    date = window.Date.new(ms)
    today = window.Date.new()
    time_text = str(date.toLocaleTimeString(to_js([]), to_js({"hour": "2-digit",
                                                                "minute": "2-digit"})))
    if str(date.toDateString()) == str(today.toDateString()):
        return time_text
    return "%s %s" % (date.toLocaleDateString(), time_text)


def render_history(records):
    """Every compaction of the session, newest first."""
    clear(history)
    records = list(records or [])
    history_count.textContent = "(%d)" % len(records) if records else ""
    failed = 0
    for record in reversed(records):
        ok = bool(record.get("ok"))
        failed += 0 if ok else 1
        turn_ids = record.get("turn_ids") or []
        before = int(record.get("tokens_before") or 0)
        after = int(record.get("tokens_after") or 0)
        trigger = record.get("trigger") or "auto"
        item = make("li", "compaction", attrs={
            "data-testid": "compaction-entry", "data-ok": "true" if ok else "false",
            "data-trigger": trigger, "data-turns": len(turn_ids),
            "data-tokens-before": before, "data-tokens-after": after}, parent=history)
        head = make("p", "compaction-head", parent=item)
        make("span", "compaction-when", when(record.get("started_at")), parent=head)
        make("span", "compaction-trigger", TRIGGERS.get(trigger, trigger), parent=head)
        make("span", "compaction-outcome", "done" if ok else "failed", parent=head)
        span = ""
        if turn_ids:
            span = " (#%s)" % turn_ids[0] if len(turn_ids) == 1 else \
                " (#%s–#%s)" % (turn_ids[0], turn_ids[-1])
        detail = plural(len(turn_ids), "turn") + span
        if ok:
            detail += "; %s → %s tokens, %s saved" % (number(before), number(after),
                                                      number(before - after))
        detail += "; took %s" % seconds(float(record.get("duration_ms") or 0))
        calls = record.get("model_calls")
        if calls:
            detail += ", %s" % plural(int(calls), "model call")
        make("p", "compaction-detail", detail, parent=item)
        if record.get("focus"):
            make("p", "compaction-focus", "Focus: " + str(record["focus"]), parent=item)
        if record.get("error"):
            make("p", "compaction-error", str(record["error"]), parent=item)
    history.setAttribute("data-failed", str(failed))


def render_memory(memory):
    """Everything the inspector shows for the memory reply ``memory`` (None: nothing yet)."""
    state["memory"] = memory
    shown = memory or {}
    memory_summary.textContent = shown.get("summary") or ""
    render_facts(shown.get("facts"))
    render_turns(shown.get("recent_turns"))
    render_history(shown.get("compressions"))
    render_meter(shown.get("budget"))
    memory_info.textContent = memory_line(shown)
    if memory is None:
        panel_state = "empty"
    elif memory.get("compacting"):
        panel_state = "compacting"
    elif last_failure(memory) is not None:
        panel_state = "failed"
    else:
        panel_state = "idle"
    memory_panel.setAttribute("data-state", panel_state)
    memory_panel.setAttribute("data-compactions", str(shown.get("compactions", 0)))
    update_controls()


def last_failure(memory):
    """The newest compaction record if it failed, else None."""
    records = memory.get("compressions") or []
    if records and not records[-1].get("ok"):
        return records[-1]
    return None


def memory_line(memory):
    parts = []
    recent = memory.get("recent_turns")
    if not recent and not memory.get("compactions"):
        return "Nothing remembered yet: send a message to start."
    if isinstance(recent, list):
        parts.append(plural(len(recent), "recent turn") + " kept word for word")
    compactions = memory.get("compactions", 0)
    if compactions:
        parts.append(plural(compactions, "compaction"))
    if memory.get("failed_compactions"):
        parts.append("%d failed" % memory["failed_compactions"])
    failure = last_failure(memory)
    if failure is not None and not memory.get("compacting"):
        parts.append("the last compaction failed (%s), so the raw turns are kept and it "
                     "will be retried" % (failure.get("error") or "unknown error"))
    if memory.get("unsaved_turns"):
        parts.append("%d turn(s) not saved yet" % memory["unsaved_turns"])
    if memory.get("detached"):
        parts.append("kept in this tab only (storage failed)")
    if memory.get("compacting"):
        parts.append("compacting now…")
    return "; ".join(parts) + "." if parts else ""


def refresh_memory():
    session_id = state["session"]

    def done(ok, value):
        if state["session"] != session_id:
            return
        if ok:
            render_memory(value)
            emit("memory_refreshed", value)
    request("memory", done, session_id=session_id)


def compacted_ids(memory):
    """Ids of the turns that successful compactions folded into the summary."""
    done = set()
    for record in (memory or {}).get("compressions") or []:
        if record.get("ok"):
            for turn_id in record.get("turn_ids") or []:
                done.add(turn_id)
    return done


# ------------------------------------------------------------------ compact now

def on_compact(event):
    event.preventDefault()
    session_id = state["session"]
    if state["compacting"] or running() or compact_button.disabled:
        return
    focus = " ".join(str(compact_focus.value or "").split())
    state["compacting"] = session_id
    compact_button.textContent = "Compacting…"
    memory_panel.setAttribute("data-state", "compacting")
    update_controls()

    def done(ok, value):
        state["compacting"] = None
        compact_button.textContent = "Compact now"
        if state["session"] != session_id:
            update_controls()
            return
        if ok and value.get("ok"):
            compact_focus.value = ""   # used: the next compaction starts without one
            state["note"] = "Compacted %s (%d → %d tokens)" % (
                plural(value["compacted_turns"], "turn"),
                value.get("tokens_before", 0), value.get("tokens_after", 0))
        elif ok:
            state["note"] = "Nothing compacted: %s" % (value.get("error") or "no reason given")
        elif value.get("name") == "UnknownSessionError":
            state["note"] = "Nothing to compact yet: this session has no turns"
        else:
            state["note"] = "Compaction failed: %s" % value.get("message", "")
        refresh_memory()   # (its events did not: see on_memory_event)
        render_status()
    fields = {"session_id": session_id}
    if focus:
        fields["focus"] = focus
    request("compact", done, **fields)


def on_memory_event(event):
    kind = event.get("type")
    if kind not in ("compaction_started", "memory_updated", "compaction_failed"):
        return
    data = event.get("data") or {}
    session_id = event.get("session_id")
    if session_id != state["session"]:
        return
    if kind == "compaction_started":
        memory_panel.setAttribute("data-state", "compacting")
        memory_info.textContent = "Compacting %s into the summary…" % plural(
            len(data.get("turn_ids") or []), "older turn")
        return
    if kind == "memory_updated":
        memory_summary.textContent = data.get("summary") or ""
        render_facts(data.get("facts"))
        memory_panel.setAttribute("data-state", "idle")
    else:
        memory_panel.setAttribute("data-state", "failed")
        memory_info.textContent = ("Compaction failed (%s); the raw turns are kept and it "
                                   "will be retried." % (data.get("error") or "unknown error"))
    # The counters, budget, history (a failure stays shown there) and which turns are
    # compacted now: from a fresh memory reply, unless "Compact now" is waiting for its
    # own reply, which asks for one anyway.
    if state["compacting"] != session_id:
        refresh_memory()


def on_controls():
    compacting = state["compacting"] is not None
    compact_button.disabled = (running() or compacting or not state["booted"]
                               or not model_usable() or state["memory"] is None)
    compact_focus.disabled = compacting


def start():
    on("controls", on_controls)
    on("agent_event", on_memory_event)
    on("session_opening", lambda session_id: render_memory(None))
    on("turn_finished", lambda *args: refresh_memory())
    listen(compact_form, "submit", on_compact)
