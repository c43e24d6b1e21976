# The memory inspector's two views of the compression log: the history (every
# compaction and facts refresh, newest first) and the replaced and forgotten facts
# (each supersession, retraction and fold with its reason), so nothing leaves the
# key facts unseen.
from pyscript import window

from ui.dom import by_id, clear, make, number, plural, seconds, to_js

history = by_id("compaction-history")
fact_changes = by_id("fact-changes")
panel = by_id("memory-panel")
history_count = panel.querySelector('[data-count="history"]')
changes_count = panel.querySelector('[data-count="changes"]')

TRIGGERS = {"auto": "automatic", "manual": "manual", "tool": "asked by the agent"}


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


def span(turn_ids):
    if not turn_ids:
        return ""
    if len(turn_ids) == 1:
        return " (#%s)" % turn_ids[0]
    return " (#%s–#%s)" % (turn_ids[0], turn_ids[-1])


def quoted(fact):
    return "“%s”" % ((fact or {}).get("text") or "")


def change_text(change):
    """One change of the key facts, as a person reads it."""
    action = change.get("action")
    fact = quoted(change.get("fact"))
    if action == "superseded":
        text = "%s: replaced by %s" % (fact, quoted(change.get("replaced_by")))
        if change.get("by") == "rule":
            text += " (a newer fact on the same subject)"
        return text
    if action == "retracted":
        return "%s: forgotten at the user's request (%s)" % (
            fact, change.get("reason") or "the user said it no longer holds")
    if action == "folded":
        return "%s: moved into the summary (the key facts were over their budget)" % fact
    return "%s: kept as a key fact (the summary did not carry it)" % fact


def counts(changes):
    tally = {}
    for change in changes:
        action = change.get("action")
        tally[action] = tally.get(action, 0) + 1
    parts = []
    for action, word in (("superseded", "replaced"), ("retracted", "forgotten"),
                         ("folded", "moved into the summary")):
        if tally.get(action):
            parts.append("%d %s" % (tally[action], word))
    return parts


def render_entry(record):
    ok = bool(record.get("ok"))
    kind = record.get("kind") or "compaction"
    turn_ids = record.get("turn_ids") or []
    before = int(record.get("tokens_before") or 0)
    after = int(record.get("tokens_after") or 0)
    trigger = record.get("trigger") or "auto"
    fallback = bool(record.get("fallback"))
    changes = record.get("fact_changes") or []
    item = make("li", "compaction", attrs={
        "data-testid": "compaction-entry", "data-ok": "true" if ok else "false",
        "data-kind": kind, "data-trigger": trigger, "data-turns": len(turn_ids),
        "data-fallback": "true" if fallback else "false",
        "data-tokens-before": before, "data-tokens-after": after}, parent=history)
    head = make("p", "compaction-head", parent=item)
    make("span", "compaction-when", when(record.get("started_at")), parent=head)
    if kind == "facts":
        make("span", "compaction-trigger", "key facts refreshed", parent=head)
        make("span", "compaction-outcome", "done" if ok else "failed", parent=head)
        read = record.get("facts_turn_ids") or []
        detail = "read " + plural(len(read), "turn") + span(read)
        added = len(record.get("facts_added") or [])
        detail += "; " + ", ".join(["%d added" % added] + counts(changes))
    else:
        make("span", "compaction-trigger", TRIGGERS.get(trigger, trigger), parent=head)
        outcome = "done without the model" if fallback else ("done" if ok else "failed")
        make("span", "compaction-outcome", outcome, parent=head)
        detail = plural(len(turn_ids), "turn") + span(turn_ids)
        if ok:
            detail += "; %s → %s tokens, %s saved" % (number(before), number(after),
                                                      number(before - after))
        facts = counts(changes)
        if facts:
            detail += "; facts: " + ", ".join(facts)
    detail += "; took %s" % seconds(float(record.get("duration_ms") or 0))
    calls = record.get("model_calls")
    if calls:
        detail += ", %s" % plural(int(calls), "model call")
    make("p", "compaction-detail", detail, parent=item)
    if record.get("focus"):
        make("p", "compaction-focus", "Focus: " + str(record["focus"]), parent=item)
    if record.get("error"):
        label = "The summarizer did not answer, so the user's own words were kept: " \
            if fallback else ""
        make("p", "compaction-error", label + str(record["error"]), parent=item)
    if record.get("facts_error"):
        make("p", "compaction-error", "Fact extraction: " + str(record["facts_error"]),
             parent=item)
    return ok or kind == "facts"


def render_history(records):
    """Every compaction and facts refresh of the session, newest first."""
    clear(history)
    records = list(records or [])
    history_count.textContent = "(%d)" % len(records) if records else ""
    failed = 0
    for record in reversed(records):
        failed += 0 if render_entry(record) else 1
    history.setAttribute("data-failed", str(failed))


def render_fact_changes(records):
    """Facts that left the key facts, newest first, each once (its latest change), with
    what replaced it or why it went."""
    clear(fact_changes)
    seen = set()
    shown = 0
    for record in reversed(list(records or [])):
        for change in reversed(record.get("fact_changes") or []):
            fact = change.get("fact") or {}
            key = fact.get("id") or fact.get("text")
            if change.get("action") == "kept" or key in seen:
                continue
            seen.add(key)
            shown += 1
            make("li", "fact-change", change_text(change), attrs={
                "data-testid": "fact-change", "data-action": change.get("action") or "",
                "data-by": change.get("by") or "model"}, parent=fact_changes)
    changes_count.textContent = "(%d)" % shown if shown else ""
