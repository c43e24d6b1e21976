# The token meter of the memory inspector: how the next prompt of the shown session
# fills the model's context window (fixed prefix, memory, the room planned for turns
# recalled from the archive, recent turns, the room kept for the turn's own work and
# answer, and what is free), with the numbers as text too.
from ui.dom import by_id, clear, make, number

meter = by_id("token-meter")
bar = meter.querySelector(".meter-bar")
meter_text = meter.querySelector(".meter-text")
legend = meter.querySelector(".meter-legend")

# Each segment's label (segments() below gives the order the bar shows them in).
LABELS = {
    "prefix": "Fixed prefix",
    "memory": "Memory (summary, facts, profile)",
    "recall": "Room for recalled turns",
    "turns": "Recent turns",
    "free": "Free",
    "reserved": "Reserved for the answer",
}
SHORT = {"prefix": "prefix", "memory": "memory", "recall": "recall", "turns": "turns",
         "free": "free", "reserved": "answer room"}


def _int(budget, name):
    value = budget.get(name)
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def segments(budget):
    """[(segment, tokens)] for a budget from the worker, in the bar's order; they add up
    to the window (or to more, when the raw turns overflow it). The free space sits
    before the reserved room, because that is where the raw turns grow until compaction."""
    window = _int(budget, "context_window")
    parts = [("prefix", _int(budget, "prefix")),
             ("memory", _int(budget, "summary") + _int(budget, "facts")
              + _int(budget, "profile")),   # the user profile's facts shown (ui/profile.py)
             ("recall", _int(budget, "recall")),
             ("turns", _int(budget, "turns"))]
    reserved = _int(budget, "reserved")
    used = sum(tokens for _, tokens in parts) + reserved
    parts.append(("free", max(0, window - used)))
    parts.append(("reserved", reserved))
    return parts


def render_meter(budget):
    """Draw ``budget`` (the memory reply's), or the empty state for None."""
    clear(bar)
    clear(legend)
    if not budget or not _int(budget, "context_window"):
        meter.setAttribute("data-state", "empty")
        meter.removeAttribute("data-window")
        meter.removeAttribute("data-estimated")
        bar.setAttribute("aria-label", "No turns in this session yet")
        meter_text.textContent = "Shown once this session has a turn."
        return
    window = _int(budget, "context_window")
    estimated = bool(budget.get("estimated"))
    parts = segments(budget)
    sizes = dict(parts)
    total = max(window, sum(sizes.values()))
    approx = "≈ " if estimated else ""
    used = sum(tokens for name, tokens in parts if name != "free")
    for name, tokens in parts:
        node = make("div", "meter-segment", attrs={"data-segment": name, "data-tokens": tokens},
                    parent=bar)
        node.style.width = "%.3f%%" % (100.0 * tokens / total)
        node.title = "%s: %s%s tokens" % (LABELS[name], approx, number(tokens))
        item = make("li", attrs={"data-segment": name}, parent=legend)
        make("span", "swatch", attrs={"data-segment": name}, parent=item)
        make("span", "legend-label", SHORT[name], parent=item)
        make("span", "legend-value", number(tokens), parent=item)
    # Where automatic compaction starts: when the raw turns pass the trigger.
    trigger = _int(budget, "trigger")
    start = sizes["prefix"] + sizes["memory"] + sizes["recall"]
    if trigger and total:
        mark = make("div", "meter-trigger", attrs={"data-tokens": start + trigger}, parent=bar)
        mark.style.left = "%.3f%%" % min(100.0, 100.0 * (start + trigger) / total)
        mark.title = "Compaction starts when the recent turns pass %s tokens" % number(trigger)
    over = used > window
    meter.setAttribute("data-state", "over" if over else ("due" if _int(budget, "turns") > trigger
                                                          else "ok"))
    meter.setAttribute("data-window", str(window))
    meter.setAttribute("data-estimated", "true" if estimated else "false")
    summary = "%s%s of %s tokens in use (%s of them kept free for the answer)" % (
        approx, number(min(used, total)), number(window), number(sizes["reserved"]))
    if trigger:
        summary += "; the recent turns (%s) are compacted once past %s" % (
            number(_int(budget, "turns")), number(trigger))
    if estimated:
        summary += ". Estimated until the model has started."
    else:
        summary += "."
    meter_text.textContent = summary
    bar.setAttribute("aria-label", "Context window of %s%s tokens: %s." % (
        approx, number(window),
        ", ".join("%s %s" % (LABELS[name].lower(), number(tokens))
                  for name, tokens in parts)) + (" Estimated." if estimated else ""))
