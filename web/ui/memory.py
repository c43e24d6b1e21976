# The memory inspector: what the next prompt of the shown session carries (summary,
# key facts by category, the recent raw turns), how it sits in the model's context
# window (ui/meter.py), whether memory runs degraded and why, the compaction history
# and the replaced and forgotten facts (ui/memory_log.py), the turns recalled from the
# archive into the last prompt (ui/recalled.py), and "Compact now".
from ui.app import emit, model_usable, on, running, state
from ui.dom import by_id, clear, clip, listen, make, number, plural
from ui.link import request
from ui.memory_log import render_fact_changes, render_history
from ui.meter import render_meter
from ui import recalled
from ui.status import render_status, update_controls

memory_panel = by_id("memory-panel")
memory_summary = by_id("memory-summary")
# The summary's marked part: made from turns that read text from outside, read by the
# model only as data (py_agent/state.py); shown with whose words it holds.
memory_untrusted = memory_panel.querySelector('[data-testid="memory-untrusted-summary"]')
memory_facts = by_id("memory-facts")
memory_info = by_id("memory-info")
memory_degraded = by_id("memory-degraded")
memory_turns = by_id("memory-turns")
compact_form = by_id("compact-form")
compact_focus = by_id("compact-focus")
compact_button = by_id("compact-button")
turns_count = memory_panel.querySelector('[data-count="turns"]')

# The fact categories the agent extracts, in the order the panel shows them.
CATEGORIES = (
    ("preference", "Preferences"),
    ("need", "Needs"),
    ("background", "Background"),
    ("follow-up", "Follow-ups"),
    ("decision", "Decisions"),
)


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
            outside = fact.get("untrusted") or []
            item = make("li", "fact", fact.get("text", ""), attrs={
                "data-category": category, "data-untrusted": "true" if outside else "false"},
                parent=listing)
            if outside:   # taken from text from outside: the model reads it as data only
                make("span", "fact-outside", " (from outside: %s)" % ", ".join(outside),
                     parent=item)


def render_summary(data):
    """Both parts of the summary: the user's, and the marked part with whose words it holds."""
    memory_summary.textContent = data.get("summary") or ""
    marked = data.get("untrusted_summary") or ""
    memory_untrusted.hidden = not marked
    memory_untrusted.textContent = ("From text from outside (%s), read as data only: %s" % (
        ", ".join(data.get("untrusted_sources") or []), marked)) if marked else ""


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


def render_memory(memory):
    """Everything the inspector shows for the memory reply ``memory`` (None: nothing yet)."""
    state["memory"] = memory
    shown = memory or {}
    render_summary(shown)
    render_facts(shown.get("facts"))
    render_turns(shown.get("recent_turns"))
    render_history(shown.get("compressions"))
    render_fact_changes(shown.get("compressions"))
    render_meter(shown.get("budget"))
    recalled.render_in_inspector(shown.get("recalled"), shown.get("session_id"))
    memory_info.textContent = memory_line(shown)
    render_degraded(shown.get("degraded"))
    if memory is None:
        panel_state = "empty"
    elif memory.get("compacting"):
        panel_state = "compacting"
    elif memory.get("degraded"):
        panel_state = "degraded"
    elif last_failure(memory) is not None:
        panel_state = "failed"
    else:
        panel_state = "idle"
    memory_panel.setAttribute("data-state", panel_state)
    memory_panel.setAttribute("data-compactions", str(shown.get("compactions", 0)))
    render_status()   # the status line says when memory is degraded
    emit("memory_shown", memory)   # ui/profile.py marks what the next prompt carries


def render_degraded(reason):
    """Say plainly, while it lasts, that memory runs without the summarizer, and why."""
    memory_degraded.hidden = not reason
    memory_degraded.textContent = ("Memory is degraded. " + str(reason)) if reason else ""


def last_failure(memory):
    """The newest compaction record (facts refreshes aside) if it failed, else None."""
    records = [r for r in memory.get("compressions") or []
               if (r.get("kind") or "compaction") == "compaction"]
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
    prefix = memory.get("prefix") or {}
    if prefix.get("level") and prefix.get("level") != "full":
        parts.append("the model's %s-token window is small, so its instructions are kept "
                     "%s%s" % (number(prefix.get("window") or 0), prefix["level"],
                               " and memory sizes scaled down" if prefix.get("scaled") else ""))
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
        # Counts the replies, so a watcher (the e2e tests) can tell this one arrived.
        replies = int(compact_button.getAttribute("data-replies") or "0") + 1
        compact_button.setAttribute("data-replies", str(replies))
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
        render_summary(data)
        render_facts(data.get("facts"))
        render_degraded(data.get("degraded"))
        memory_panel.setAttribute("data-state", "degraded" if data.get("degraded") else "idle")
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
    on_controls()   # started late (web/main.py): as the controls are now
    on("agent_event", on_memory_event)
    on("session_opening", lambda session_id: render_memory(None))
    on("turn_finished", lambda *args: refresh_memory())
    listen(compact_form, "submit", on_compact)
    recalled.start()
