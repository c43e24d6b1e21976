# The live trace under each answer: which tools the retriever offered (with their
# scores, and why: the signals that chose each and the words and example that matched),
# then one entry per step of the ReAct loop (thought, tool and input,
# observation, timings, a badge on corrective steps, and the response constraint its
# reply was asked under), filled in from the turn's events as they arrive and completed
# from the final result.
#
# All model and tool text goes in through textContent (ui.dom.make / set_part).
from pyscript import document

from ui.dom import clear, format_input, make, missing, part, plural, seconds

# Why a corrective step was needed, from the observation the agent sent back
# (py_agent/turn/loop.py and py_agent/parsing.py word them; first match wins).
REASONS = (
    ("not valid JSON", "invalid JSON"),
    ("with no JSON step", "invalid JSON"),
    ("reply was empty", "empty reply"),
    ("has none of the fields", "malformed step"),
    ("must be a string", "malformed step"),
    ("There is no tool named", "unknown tool"),
    ('toolName was "none"', "missing answer"),
    ("You already called", "repeated action"),
)


# The response-constraint levels of a step (py_agent/constraints.py), as the trace names them.
CONSTRAINTS = {"full": "per-tool schemas", "names": "tool-name enum",
               "object": "plain JSON object", "none": "no constraint (parsed as text)"}


def add_trace(message, open_trace=True):
    trace = make("details", "trace", attrs={"data-testid": "trace"}, parent=message)
    trace.open = open_trace
    make("summary", "trace-summary", "Thinking…", parent=trace)
    make("p", "tools-offered", attrs={"data-testid": "tools-offered"}, parent=trace).hidden = True
    make("ul", "tools-why", attrs={"data-testid": "tools-why"}, parent=trace).hidden = True
    make("ol", "trace-steps", parent=trace)
    return trace


def trace_step(message, index, kind="pending"):
    """The message's trace-step for step ``index`` (made on first use)."""
    steps = part(message, ".trace-steps")
    found = steps.querySelector('[data-index="%d"]' % index)
    if not missing(found):
        return found
    node = make("li", "trace-step", attrs={"data-testid": "trace-step", "data-index": index,
                                           "data-kind": kind}, parent=steps)
    head = make("div", "step-head", parent=node)
    make("span", "step-label", "Step %d" % index, parent=head)
    badge = make("span", "step-badge", attrs={"data-testid": "step-badge"}, parent=head)
    badge.hidden = True
    make("span", "step-timing", parent=head)
    make("span", "step-constraint", attrs={"data-testid": "step-constraint"},
         parent=head).hidden = True
    make("p", "thought", attrs={"data-part": "thought"}, parent=node).hidden = True
    action = make("p", "action", attrs={"data-part": "action"}, parent=node)
    action.hidden = True
    make("span", "tool", parent=action)
    make("code", "tool-input", parent=action)
    make("pre", "observation", attrs={"data-part": "observation"}, parent=node).hidden = True
    return node


APPROVAL_TEXT = {"once": "You allowed this call.",
                 "chat": "You allowed this tool for this chat.",
                 "deny": "Not run: you denied this call."}


def set_approval(step, decision, why="", untrusted=None, asked_again=""):
    """A consequential call's approval, in its step: allowed once, for the chat, or denied;
    and, when text from outside was in what the model read, why it was asked (which text,
    from where, where it sits: py_agent/turn/approval.py)."""
    step.setAttribute("data-approval", decision)
    text = APPROVAL_TEXT.get(decision, decision)
    if why == "allowed for this chat earlier":
        text = "Allowed for this chat earlier."
    elif why and decision == "deny":
        text = "Not run: %s." % why
    if untrusted:
        text += (" Asked again although allowed for this chat: " if asked_again else
                 " Text from outside was in what the model read: ") + "; ".join(untrusted) + "."
        step.setAttribute("data-untrusted", "true")
    note = part(step, ".approval")
    if missing(note):
        note = make("p", "approval", attrs={"data-testid": "step-approval"}, parent=step)
    note.textContent = text


def set_part(step, selector, text):
    node = part(step, selector)
    node.textContent = text
    node.hidden = not text
    return node


def set_action(step, tool, tool_input):
    action = part(step, ".action")
    part(action, ".tool").textContent = tool
    part(action, ".tool-input").textContent = tool_input
    action.hidden = False
    step.setAttribute("data-tool", tool)


def badge_text(kind, observation):
    """The badge of a step: why it was corrected, or what else was special about it."""
    if kind in ("corrective", "repeat"):
        if kind == "repeat":
            return "corrected: repeated action"
        for needle, reason in REASONS:
            if needle in observation:
                return "corrected: " + reason
        return "corrected"
    if kind == "compact":
        return "memory compaction"
    if kind == "error":
        return "error"
    return ""


def set_badge(step, kind, observation):
    badge = part(step, ".step-badge")
    text = badge_text(kind, observation or "")
    badge.textContent = text
    badge.hidden = not text
    badge.setAttribute("data-kind", kind or "")


def set_observation(step, text, ok, kind, duration_ms, tool=""):
    node = set_part(step, ".observation", text)
    node.hidden = False
    kind = kind or "tool"
    step.setAttribute("data-kind", kind)
    step.setAttribute("data-ok", "true" if ok else "false")
    # A corrective step for an unknown tool has no action event: show what was asked.
    if tool and part(step, ".action").hidden and tool != "none":
        set_action(step, tool, "")
    set_badge(step, kind, text)
    if duration_ms:
        set_timing(step, "tool %s" % seconds(duration_ms))


def set_constraint(step, level):
    """The response constraint the step's reply was asked under (a refused one is asked
    again a level down, so a step may show one level, then a lower one)."""
    if not level:
        return
    node = part(step, ".step-constraint")
    node.textContent = "JSON: " + CONSTRAINTS.get(level, level)
    node.hidden = False
    step.setAttribute("data-constraint", level)


def set_timing(step, text):
    part(step, ".step-timing").textContent = text


def score_text(score):
    if not score:
        return "0"
    return "%.2f" % score if score < 0.1 else "%.1f" % score


SIGNAL_NAMES = {"bm25": "words", "ngrams": "similar spelling", "word vectors": "similar meaning",
                "previous turn": "previous turn",
                "pinned": "pinned"}


def why_text(why):
    """One line on why a tool was offered: "words: times (examples), calculator (name);
    example: “how much is 12 times 35?”; via words + similar spelling"."""
    why = why or {}
    parts = []
    found = []
    for field, words in (why.get("terms") or {}).items():
        found.append("%s (%s)" % (", ".join(words), field))
    if found:
        parts.append("matched " + "; ".join(found))
    similar = ["%s ≈ %s" % (pair[0], pair[1]) for pair in why.get("similar") or [] if len(pair) == 2]
    if similar:
        parts.append("similar: " + ", ".join(similar))
    if why.get("example"):
        parts.append("example: “%s”" % why["example"])
    signals = [SIGNAL_NAMES.get(s, s) for s in why.get("signals") or []]
    if signals:
        parts.append("via " + " + ".join(signals))
    return " · ".join(parts)


def show_offered(message, tools, not_ready=None):
    """Which tools the retriever offered the model for this turn, with their scores
    ("calculate 3.2 · convert_units 1.1 · pinned: compact") and, below, why each; and the
    tool sources (a tool server still connecting) whose tools were not there yet."""
    offered = part(message, ".tools-offered")
    clear(offered)
    reasons = part(message, ".tools-why")
    if not missing(reasons):
        clear(reasons)
    make("span", "offered-label", "Tools offered: ", parent=offered)
    ranked = [t for t in tools or [] if not t.get("pinned")]
    pinned = [t for t in tools or [] if t.get("pinned")]
    for index, tool in enumerate(ranked + pinned):
        if index:
            offered.append(document.createTextNode(" · "))
        if index == len(ranked):
            make("span", "offered-pinned-label", "pinned: ", parent=offered)
        name = tool.get("name", "")
        score = tool.get("score") or 0
        text = name if tool.get("pinned") and not score else "%s %s" % (name, score_text(score))
        reason = why_text(tool.get("why"))
        attrs = {"data-tool": name, "data-score": score_text(score),
                 "data-pinned": "true" if tool.get("pinned") else "false"}
        if reason:
            attrs["title"] = reason
        make("span", "offered-tool", text, attrs=attrs, parent=offered)
        if reason and not missing(reasons):
            item = make("li", "tool-why", attrs={"data-tool": name,
                                                 "data-signals": " ".join(
                                                     (tool.get("why") or {}).get("signals") or [])},
                        parent=reasons)
            make("span", "why-tool", name + ": ", parent=item)
            make("span", "why-text", reason, parent=item)
    if not ranked and not pinned:
        make("span", "offered-none", "none (the model answers on its own)", parent=offered)
    if not_ready:
        make("span", "offered-not-ready",
             " · not ready yet, so not offered: " + ", ".join(not_ready),
             attrs={"data-testid": "tools-not-ready"}, parent=offered)
    offered.setAttribute("data-filled", "true")
    offered.hidden = False
    if not missing(reasons):
        reasons.hidden = not reasons.children.length


def summarize_trace(message, steps):
    """One line for the trace's <summary>: how many steps and which tools."""
    tools = []
    for step in steps:
        tool = step.get("tool") or ""
        if tool and tool != "none" and step.get("kind", "tool") in ("tool", "repeat", "compact") \
                and tool not in tools:
            tools.append(tool)
    text = plural(len(steps), "step")
    if len(steps) == 1 and steps[0].get("kind") == "answer":
        text += " · answered directly"
    if tools:
        text += " · " + ", ".join(tools)
    corrective = len([s for s in steps if s.get("kind") in ("corrective", "repeat")])
    if corrective:
        text += " · %d corrected" % corrective
    level = steps[-1].get("constraint") if steps else ""
    if level and level != "full":   # the model refused the full step schema
        text += " · JSON: " + CONSTRAINTS.get(level, level)
    part(message, ".trace-summary").textContent = text
    return tools


def finish_trace(message, steps, offered=None):
    """Fill in what the events do not carry (model timings, an unknown tool's input),
    and the summary line."""
    listed = part(message, ".tools-offered")
    if offered and listed.getAttribute("data-filled") != "true":
        show_offered(message, [{"name": pair[0], "score": pair[1]} for pair in offered])
    for step in steps:
        kind = step.get("kind") or "tool"
        node = trace_step(message, step["index"], kind)
        node.setAttribute("data-kind", kind)
        node.setAttribute("data-state", "done")
        if step.get("thought") and part(node, ".thought").hidden:
            set_part(node, ".thought", step["thought"])
        tool = step.get("tool") or ""
        if tool and tool != "none" and kind != "answer":
            if part(node, ".action").hidden or not part(node, ".tool-input").textContent:
                set_action(node, tool, format_input(step.get("tool_input", "")))
        if step.get("observation") and part(node, ".observation").hidden:
            set_observation(node, step["observation"], step.get("ok", True), kind, 0)
        set_badge(node, kind, step.get("observation") or "")
        timing = ["model %s" % seconds(step.get("model_ms") or 0)]
        if step.get("tool_ms"):
            timing.append("tool %s" % seconds(step["tool_ms"]))
        set_timing(node, " · ".join(timing))
        set_constraint(node, step.get("constraint"))
        if kind == "answer":
            node.setAttribute("data-tool", "none")
    tools = summarize_trace(message, steps)
    part(message, ".trace").open = bool(tools)
    hide_if_empty(message)


def mark_failed(message, steps):
    """The turn failed: a step still shown as running ended with the error."""
    running = message.querySelectorAll('.trace-step[data-state="running"]')
    for node in running:
        node.setAttribute("data-kind", "error")
        node.setAttribute("data-state", "done")
        set_badge(node, "error", "")
    shown = part(message, ".trace-steps").children.length
    if shown > len(steps):
        part(message, ".trace-summary").textContent = plural(shown, "step") + " · failed"


def hide_if_empty(message):
    if not part(message, ".trace-steps").children.length:
        part(message, ".trace").hidden = True


def step_kind(record):
    """The kind of an archived step (the archive keeps only a `corrective` flag, which
    covers repeated actions too; their observation tells them apart)."""
    if record.get("corrective"):
        observation = record.get("observation") or ""
        return "repeat" if observation.startswith("You already called") else "corrective"
    tool = record.get("tool") or ""
    return "answer" if tool in ("", "none") else "tool"


def render_past_steps(message, records):
    """The trace of an archived turn (no timings: the archive does not keep them)."""
    steps = []
    for index, record in enumerate(records or []):
        kind = step_kind(record)
        step = trace_step(message, index + 1, kind)
        set_part(step, ".thought", record.get("thought") or "")
        tool = record.get("tool")
        if kind != "answer" and tool and tool != "none":
            set_action(step, tool, format_input(record.get("tool_input", "")))
        if record.get("observation"):
            set_observation(step, record["observation"], kind not in ("corrective",), kind, 0)
        else:
            set_badge(step, kind, "")
        steps.append({"tool": tool, "kind": kind})
    if not steps:
        part(message, ".trace").hidden = True
    else:
        summarize_trace(message, steps)
