# The running turn as the page shows it: its agent message, filled in from the worker's
# events (steps, thoughts, tool calls, observations, the answer) and from the model's
# streamed text (the step's thought as it arrives, and a preview of the answer), then
# the turn's outcome once the worker replies.
#
# One RunningTurn lives in state["turn"] from the moment a message is sent until the
# worker's reply (ui/chat.py makes it and ends it).
from pyscript import window

from ui.app import state, turn_of
from ui.dom import keep, missing, now_ms, part, seconds
from ui.messages import set_answer, show_error, show_unfinished, UNFINISHED
from ui.scrolling import after_change, at_latest
from ui.status import failure_text, render_status
from ui.streamed_reply import StreamedReply
from ui import recalled, trace

PREVIEW_MS = 80      # the streamed reply is drawn at most this often,
PREVIEW_BACKOFF = 5  # and waits at least this many times its last render's cost


class RunningTurn:
    """A turn from its send to the worker's reply: the message that shows it, the step
    it is on, what the status line says it does, and the state of its streamed reply."""

    def __init__(self, session_id, text, message):
        self.session = session_id    # the session it runs in
        self.text = text             # the user's message
        self.message = message       # its agent message (the <li>)
        self.started = now_ms()
        self.step = 0                # the step running now (from "step_started")
        self.phase = "Thinking…"     # for the status line
        self.stopping = False        # Stop was pressed; the worker has not replied yet
        self.final = False           # the answer is final: no more previews of it
        self._shown = None           # the final answer as shown (rich text only)
        self._reply = None           # the StreamedReply of the model call streaming now
        self._preview = None         # the reply waiting to be drawn
        self._timer = None           # the drawing's pending timeout
        self._quiet_until = 0        # no preview before this time (ms)
        self._thought = None         # (step index, its thought line, the text shown)

    def elapsed_ms(self):
        return now_ms() - self.started

    # ------------------------------------------------------------------ the answer

    def finish_answer(self, text, rich=True):
        """The answer is final: no more previews of it."""
        self.final = True
        if self._timer is not None:
            window.clearTimeout(self._timer)
            self._timer = None
        if rich and self._shown == text:
            return
        self._shown = text if rich else None
        set_answer(self.message, text, rich)

    def show_outcome(self, ok, value):
        """The worker's reply to the turn (a result, or an error), shown in its message;
        the note the status line gives it."""
        message = self.message
        elapsed = self.elapsed_ms()
        message.removeAttribute("aria-busy")
        if not ok:
            trace.mark_failed(message, [])
            self.finish_answer("", rich=False)
            show_error(message, "Something went wrong: %s" % failure_text(value),
                       value.get("traceback") or value.get("message", ""))
            return "The request failed"
        status_ = value.get("status") or "answered"
        steps = value.get("steps") or []
        message.setAttribute("data-state", status_)
        message.setAttribute("data-turn-id", str(value.get("turn_id")))
        if status_ in UNFINISHED:
            self.finish_answer("", rich=False)
            show_unfinished(message, status_)
            note = "Stopped after %s" % seconds(elapsed)
        else:
            trace.finish_trace(message, steps, value.get("tools_offered") or [])
            if status_ == "error":
                trace.mark_failed(message, steps)
                self.finish_answer("", rich=False)
                show_error(message, value.get("answer") or "The agent could not answer.",
                           value.get("error") or "")
                note = "The agent could not answer"
            else:
                self.finish_answer(value.get("answer") or "(no answer)",
                                   rich=status_ == "answered")
                if status_ == "incomplete":
                    note = "Gave up after %d steps (%s)" % (len(steps), seconds(elapsed))
                else:
                    note = "Answered in %s" % seconds(elapsed)
        if not value.get("saved"):
            message.setAttribute("data-saved", "false")
        return note

    # ------------------------------------------------------------------ agent events

    def show_event(self, kind, data):
        """An agent event of this turn, in its message. True if it added content (the
        view may have to follow it)."""
        message = self.message
        if kind == "turn_started":
            message.setAttribute("data-turn-id", str(data.get("turn_id")))
        elif kind == "tools_retrieved":
            trace.show_offered(message, data.get("tools"), data.get("not_ready"))
        elif kind == "recalled":
            recalled.show_in_trace(message, data, self.session)
        elif kind == "step_started":
            index = data.get("index", 1)
            self.step = index
            step = trace.trace_step(message, index)
            step.setAttribute("data-state", "running")
            trace.set_constraint(step, data.get("constraint"))
            self.phase = "Thinking… (step %d)" % index
            render_status()
        elif kind == "constraint_level":
            if data.get("purpose") != "step":
                return False
            trace.set_constraint(trace.trace_step(message, data.get("index", self.step)),
                                 data.get("level"))
        elif kind == "thought":
            step = trace.trace_step(message, data.get("index", self.step))
            trace.set_part(step, ".thought", data.get("text") or "")
        elif kind == "action":
            step = trace.trace_step(message, data.get("index", self.step))
            trace.set_action(step, data.get("tool") or "", data.get("input") or "")
            step.setAttribute("data-kind", "tool")
            self.phase = "Running %s… (step %d)" % (data.get("tool") or "a tool", self.step)
            render_status()
        elif kind == "observation":
            step = trace.trace_step(message, data.get("index", self.step))
            trace.set_observation(step, data.get("text") or "", data.get("ok", True),
                                  data.get("kind") or "tool", data.get("duration_ms") or 0,
                                  data.get("tool") or "")
            step.setAttribute("data-state", "done")
        elif kind == "answer":
            answer_status = data.get("status")
            if answer_status == "answered":
                last = part(message, '.trace-step[data-state="running"]')
                if not missing(last):
                    last.setAttribute("data-kind", "answer")
                    last.setAttribute("data-state", "done")
            if data.get("text") and answer_status in ("answered", "incomplete"):
                self.finish_answer(data["text"], rich=answer_status == "answered")
            self.phase = "Saving…"
            render_status()
        elif kind == "approval_requested":
            step = trace.trace_step(message, data.get("index", self.step))
            step.setAttribute("data-approval", "asking")
            self.phase = "Waiting for your approval… (step %d)" % self.step
            render_status()
        elif kind == "approval":
            step = trace.trace_step(message, data.get("index", self.step))
            trace.set_approval(step, data.get("decision") or "", data.get("why") or "",
                               data.get("untrusted"), data.get("asked_again") or "")
        elif kind == "turn_saved":
            message.setAttribute("data-saved", "true")
            return False
        elif kind == "error":
            message.setAttribute("data-error-kind", data.get("kind") or "")
            return False
        else:
            return False
        return True

    # ------------------------------------------------------------------ streaming

    def take_chunk(self, detail):
        """A streamed delta of a model call. Only the delta is read (the text so far
        would be a copy of the whole reply per chunk), and here it is only fed to the
        StreamedReply: what the page shows of it is drawn by flush_preview, at most every
        PREVIEW_MS, so that a fast stream of tiny chunks never keeps the page busy.
        Only this turn's chat's steps count: a delta is tagged with the chat its model
        session serves (conversationId), and another chat may stream at the same time."""
        if self.final or str(getattr(detail, "purpose", "")) != "step" or \
                str(getattr(detail, "conversationId", "")) != self.session:
            return
        reply = self._reply
        offset = int(detail.offset)
        if reply is None or offset != reply.size:   # a new model call (or a gap): start over
            reply = self._reply = StreamedReply()
            if offset:   # joined mid-call: catch up once
                reply.feed(str(detail.text)[:offset])
        reply.feed(str(detail.chunk))
        self._preview = reply
        if self._timer is not None:
            return
        wait = self._quiet_until - now_ms()
        if wait <= 0:
            self.flush_preview()
        else:
            self._timer = window.setTimeout(_flush_proxy, wait)

    def flush_preview(self):
        """Draw the streaming reply as far as it has come: the step's thought, and the
        answer once the step turns out to answer (rather than call a tool). The next
        drawing waits at least PREVIEW_MS and PREVIEW_BACKOFF times this one's cost (a
        long answer that is slow to render is shown less often, so the page stays
        responsive however long it gets)."""
        self._timer = None
        reply = self._preview
        self._preview = None
        if reply is None or self.final:
            return
        started = now_ms()
        was_at_latest = at_latest()
        changed = self._show_thought(reply.field("thought"))
        if reply.parts is not None and reply.field("toolName") == "none":
            set_answer(self.message, reply.answer(), streaming=True)
            changed = True
        if changed:
            after_change(was_at_latest)
        ended = now_ms()
        self._quiet_until = ended + max(PREVIEW_MS, PREVIEW_BACKOFF * (ended - started))

    def _show_thought(self, thought):
        """The thought of the step streaming now, as far as it has arrived; whether the
        page changed. Its trace line is looked up once per step, and written only when
        the thought changed."""
        if not thought:
            return False
        index = self.step or 1
        shown = self._thought
        if shown is None or shown[0] != index:
            node = part(trace.trace_step(self.message, index), ".thought")
        elif shown[2] == thought:
            return False
        else:
            node = shown[1]
        self._thought = (index, node, thought)
        node.textContent = thought
        node.hidden = False
        return True


def _flush_running():
    turn = state["turn"]
    if turn is not None:
        turn.flush_preview()


_flush_proxy = keep(_flush_running)


def on_agent_event(event):
    turn = turn_of(event)
    if turn is None:
        return
    was_at_latest = at_latest()
    if turn.show_event(event.get("type"), event.get("data") or {}):
        after_change(was_at_latest)


def on_chunk(event):
    turn = state["turn"]
    if turn is not None:
        turn.take_chunk(event.detail)
