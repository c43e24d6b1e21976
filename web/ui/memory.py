# The memory inspector: what the next prompt of the shown session carries (summary,
# key facts, recent turns) and how it sits in the model's context window.
from ui.app import emit, model_usable, on, running, state
from ui.dom import by_id, clear, listen, make
from ui.link import request
from ui.status import render_status, update_controls

memory_panel = by_id("memory-panel")
memory_summary = by_id("memory-summary")
memory_facts = by_id("memory-facts")
memory_info = by_id("memory-info")
compact_button = by_id("compact-button")


def render_facts(facts):
    clear(memory_facts)
    for fact in facts or []:
        item = make("li", "fact", attrs={"data-category": fact.get("category", "")},
                    parent=memory_facts)
        make("span", "fact-category", fact.get("category", ""), parent=item)
        make("span", "fact-text", fact.get("text", ""), parent=item)


def render_memory(memory):
    """The summary and key facts the next prompt of this session will carry."""
    state["memory"] = memory
    if memory is None:
        render_facts([])
        memory_summary.textContent = ""
        memory_info.textContent = "Nothing remembered yet: send a message to start."
        memory_panel.setAttribute("data-state", "empty")
        update_controls()
        return
    memory_summary.textContent = memory.get("summary") or ""
    render_facts(memory.get("facts"))
    memory_info.textContent = memory_line(memory)
    memory_panel.setAttribute("data-state", "compacting" if memory.get("compacting") else "idle")
    memory_panel.setAttribute("data-compactions", str(memory.get("compactions", 0)))
    update_controls()


def memory_line(memory):
    parts = []
    recent = memory.get("recent_turns")
    if not recent and not memory.get("compactions"):
        return "Nothing remembered yet: send a message to start."
    if isinstance(recent, list):
        parts.append("%d recent turn%s kept word for word" % (len(recent),
                                                              "" if len(recent) == 1 else "s"))
    compactions = memory.get("compactions", 0)
    if compactions:
        parts.append("%d compaction%s" % (compactions, "" if compactions == 1 else "s"))
    if memory.get("failed_compactions"):
        parts.append("%d failed" % memory["failed_compactions"])
    budget = memory.get("budget")
    if budget:
        parts.append("turns use %d of %d tokens (compacts at %d)"
                     % (budget.get("turns", 0), budget.get("turn_budget", 0),
                        budget.get("trigger", 0)))
    if memory.get("unsaved_turns"):
        parts.append("%d turn(s) not saved yet" % memory["unsaved_turns"])
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


def on_compact(event):
    session_id = state["session"]
    if state["compacting"] or running():
        return
    state["compacting"] = True
    compact_button.textContent = "Compacting…"
    memory_panel.setAttribute("data-state", "compacting")
    update_controls()

    def done(ok, value):
        state["compacting"] = False
        compact_button.textContent = "Compact now"
        if state["session"] != session_id:
            update_controls()
            return
        if ok and value.get("ok"):
            state["note"] = "Compacted %d turn%s (%d → %d tokens)" % (
                value["compacted_turns"], "" if value["compacted_turns"] == 1 else "s",
                value.get("tokens_before", 0), value.get("tokens_after", 0))
        elif ok:
            state["note"] = "Nothing compacted: %s" % (value.get("error") or "no reason given")
        elif value.get("name") == "UnknownSessionError":
            state["note"] = "Nothing to compact yet: this session has no turns"
        else:
            state["note"] = "Compaction failed: %s" % value.get("message", "")
        refresh_memory()
        render_status()
    request("compact", done, session_id=session_id)


def on_memory_event(event):
    kind = event.get("type")
    if kind not in ("compaction_started", "memory_updated", "compaction_failed"):
        return
    data = event.get("data") or {}
    if event.get("session_id") != state["session"]:
        return
    if kind == "compaction_started":
        count = len(data.get("turn_ids") or [])
        memory_panel.setAttribute("data-state", "compacting")
        memory_info.textContent = "Compacting %d older turn%s into the summary…" % (
            count, "" if count == 1 else "s")
    elif kind == "memory_updated":
        memory_summary.textContent = data.get("summary") or ""
        render_facts(data.get("facts"))
        memory_panel.setAttribute("data-state", "idle")
        refresh_memory()   # the counters and budget, and which turns are compacted now
    elif kind == "compaction_failed":
        memory_panel.setAttribute("data-state", "failed")
        memory_info.textContent = ("Compaction failed (%s); the raw turns are kept and it "
                                   "will be retried." % (data.get("error") or "unknown error"))


def on_controls():
    compact_button.disabled = (running() or state["compacting"] or not state["booted"]
                               or not model_usable() or state["memory"] is None)


def start():
    on("controls", on_controls)
    on("agent_event", on_memory_event)
    on("session_opening", lambda session_id: render_memory(None))
    on("turn_finished", lambda *args: refresh_memory())
    listen(compact_button, "click", on_compact)
