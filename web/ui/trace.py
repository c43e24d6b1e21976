# The live trace under each answer: one entry per step of the ReAct loop (thought,
# tool and input, observation, timings), filled in from the turn's events as they
# arrive and completed from the final result.
from ui.dom import format_input, make, missing, part, seconds


def add_trace(message, open_trace=True):
    trace = make("details", "trace", attrs={"data-testid": "trace"}, parent=message)
    trace.open = open_trace
    make("summary", "trace-summary", "Thinking…", parent=trace)
    make("p", "tools-offered", parent=trace).hidden = True
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
    make("span", "step-timing", parent=head)
    make("p", "thought", attrs={"data-part": "thought"}, parent=node).hidden = True
    action = make("p", "action", attrs={"data-part": "action"}, parent=node)
    action.hidden = True
    make("span", "tool", parent=action)
    make("code", "tool-input", parent=action)
    make("pre", "observation", attrs={"data-part": "observation"}, parent=node).hidden = True
    return node


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


def set_observation(step, text, ok, kind, duration_ms):
    node = set_part(step, ".observation", text)
    node.hidden = False
    step.setAttribute("data-kind", kind or "tool")
    step.setAttribute("data-ok", "true" if ok else "false")
    if duration_ms:
        set_timing(step, "tool %s" % seconds(duration_ms))


def set_timing(step, text):
    part(step, ".step-timing").textContent = text


def show_offered(message, tools):
    """Which tools the retriever offered the model for this turn."""
    names = [t.get("name", "") for t in tools or []]
    offered = part(message, ".tools-offered")
    offered.textContent = "Tools offered: " + (", ".join(names) or "none")
    offered.hidden = False


def summarize_trace(message, steps):
    """One line for the trace's <summary>: how many steps and which tools."""
    tools = []
    for step in steps:
        tool = step.get("tool") or ""
        if tool and tool != "none" and step.get("kind", "tool") in ("tool", "repeat", "compact") \
                and tool not in tools:
            tools.append(tool)
    text = "%d step%s" % (len(steps), "" if len(steps) == 1 else "s")
    if len(steps) == 1 and steps[0].get("kind") == "answer":
        text += " · answered directly"
    if tools:
        text += " · " + ", ".join(tools)
    corrective = len([s for s in steps if s.get("kind") in ("corrective", "repeat")])
    if corrective:
        text += " · %d corrected" % corrective
    part(message, ".trace-summary").textContent = text
    return tools


def finish_trace(message, steps):
    """Fill in what the events do not carry (model timings), and the summary line."""
    for step in steps:
        node = trace_step(message, step["index"], step.get("kind") or "tool")
        node.setAttribute("data-kind", step.get("kind") or "tool")
        node.setAttribute("data-state", "done")
        timing = ["model %s" % seconds(step.get("model_ms") or 0)]
        if step.get("tool_ms"):
            timing.append("tool %s" % seconds(step["tool_ms"]))
        set_timing(node, " · ".join(timing))
        if step.get("kind") == "answer":
            node.setAttribute("data-tool", "none")
    tools = summarize_trace(message, steps)
    part(message, ".trace").open = bool(tools)
    hide_if_empty(message)


def hide_if_empty(message):
    if not part(message, ".trace-steps").children.length:
        part(message, ".trace").hidden = True


def step_kind(record):
    """The kind of an archived step (the archive keeps only `corrective`)."""
    if record.get("corrective"):
        return "corrective"
    tool = record.get("tool") or ""
    return "answer" if tool in ("", "none") else "tool"


def render_past_steps(message, records):
    """The trace of an archived turn (no timings: the archive does not keep them)."""
    steps = []
    for index, record in enumerate(records or []):
        kind = step_kind(record)
        step = trace_step(message, index + 1, kind)
        set_part(step, ".thought", record.get("thought") or "")
        if kind != "answer" or record.get("tool") not in ("", "none", None):
            if record.get("tool"):
                set_action(step, record.get("tool"), format_input(record.get("tool_input", "")))
        if record.get("observation"):
            set_observation(step, record["observation"], kind != "corrective", kind, 0)
        steps.append({"tool": record.get("tool"), "kind": kind})
    if not steps:
        part(message, ".trace").hidden = True
    else:
        summarize_trace(message, steps)
