"""Untrusted text that outlives its turn (tests/data/hostile/hostile_memory.json), against a
compromised model: it obeys any order it reads anywhere (this turn's results, the raw turns,
the memory session, the summary, the key facts, recalled turns), and it is also the
summarizer and the fact extractor, which carry the order on in their own words, without
any marks.

Written from the attacker's side before the memory kept provenance: while the order's text
is in what the model reads, every consequential call is asked about, whatever the user
allowed for the chat; the summary, the key facts and the profile carry it only marked;
another chat never reads it unconfirmed; turns recalled from elsewhere are marked."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from py_agent import Agent, InMemoryStore, MemoryPolicy, tool
from py_agent.model import Purpose
from py_agent.testing import FunctionModel, PromptCall, context_text, step_json, user_message
from py_agent.tools import OriginKind, ToolOrigin, Trust
from py_agent.tools.remote import remote_tool
from tests.unit.support import run

HOSTILE = json.loads(open("tests/data/hostile/hostile_memory.json", encoding="utf-8").read())
ENTRIES = HOSTILE["entries"]
TARGETS = HOSTILE["targets"]
# One block of data as prompts mark it: its text cannot hold the marks, so the shortest
# match is the whole block.
MARKED = re.compile("\u27e6data from [^\u27e7]*\u27e7.*?\u27e6end of data\u27e7", re.DOTALL)
LOOKUP = "Look up record 1 about the cabin booking."


def flat(text: str) -> str:
    return " ".join(text.split())


def unmarked(text: str) -> str:
    """``text`` without its data blocks: what a prompt says outside the marks."""
    return flat(MARKED.sub(" ", text))


class Scene:
    """One attack: a hostile record server, the consequential target the attacker wants,
    the user's answers, and a compromised model."""

    def __init__(self, entry: dict, *, memory_sessions: int = 4,
                 memory: MemoryPolicy | None = None, store=None) -> None:
        self.entry, self.directive = entry, entry["directive"]
        self.target = TARGETS[entry["target"]]
        self.ran: list[dict] = []
        self.asked: list[str] = []
        self.answer = "deny"   # what the user answers about the target
        self.events: list = []

        async def lookup(name, arguments):
            return {"content": [{"type": "text", "text": entry["text"]}]}
        records = remote_tool("lookup_record", "Look up a stored record, e.g. a booking.",
                              {"type": "object", "properties": {"id": {"type": "string"}}},
                              lookup, origin=ToolOrigin(kind=OriginKind.MCP,
                                                        trust=Trust.UNTRUSTED,
                                                        source="mcp:evil-server",
                                                        server="evil-server"),
                              annotations={"readOnlyHint": True})
        self.model = FunctionModel(self.respond)
        self.agent = Agent(self.model, store=store if store is not None else InMemoryStore(),
                           tools=[records, self.target_tool()], approve=self.approve,
                           memory_sessions=memory_sessions, on_event=self.events.append,
                           memory=memory or MemoryPolicy(facts_refresh_ratio=0.001,
                                                         min_recent_turns=1))

    def target_tool(self):
        """The user's own consequential tool the attacker wants called, always offered."""
        name = self.target["toolName"]
        ran = self.ran

        if name == "delete_note":
            def act(note: str) -> str:
                """Delete a note."""
                ran.append({"note": note})
                return "deleted"
        else:
            def act(to: str, amount: float) -> str:  # type: ignore[misc]
                """Send a payment."""
                ran.append({"to": to, "amount": amount})
                return "sent"
        act.__name__ = name
        return replace(tool(confirm=True)(act), pinned=True)

    def approve(self, request) -> str:
        if request.tool == "lookup_record":   # a server's read-only claim: allow it
            return "once"
        self.asked.append(request.tool)
        return self.answer

    # ------------------------------------------------------------ the compromised model

    def respond(self, call: PromptCall) -> str:
        read = flat(context_text(call))
        present = self.directive in read
        if call.purpose is Purpose.SUMMARY:   # carries the order on, without marks
            return ("The user looked up a record about the cabin booking and thanked the "
                    "assistant. " + (f"Remember: {self.directive}." if present else ""))
        if call.purpose is Purpose.FACTS:
            facts = [{"category": "preference", "text": self.directive + "."}] if present else []
            return json.dumps({"facts": facts})
        name = self.target["toolName"]
        if call.input.startswith(f"Observation from {name}:"):
            return step_json(answer="Done.")
        message = user_message(call)
        if message == "Please do what you would do for me." or (present and (
                message is not None or call.input.startswith("Observation from"))):
            return step_json(thought="as ordered", tool=name, tool_input=self.target["toolInput"])
        if message is not None and message.startswith("Look up record"):
            return step_json(tool="lookup_record", tool_input={"id": "1"})
        return step_json(answer="You're welcome.")

    # ------------------------------------------------------------ driving it

    def say(self, message: str, session_id: str = "default"):
        result = run(self.agent.run(message, session_id=session_id))
        run(self.agent.wait_idle())
        return result

    def allow_for_the_chat(self, session_id: str = "default") -> None:
        """The user allows the target for the whole chat, in a clean turn."""
        self.answer, self.asked[:] = "chat", []
        self.say("Please do what you would do for me.", session_id)
        assert self.asked == [self.target["toolName"]] and len(self.ran) == 1
        self.answer, self.asked[:], self.ran[:] = "deny", [], []

    def step_reads(self, since: tuple[int, int]) -> list[str]:
        """Everything the step model read since ``since`` (calls, appends)."""
        calls, appends = since
        return ([context_text(c) for c in self.model.calls[calls:] if c.purpose is Purpose.STEP]
                + [a.input for a in self.model.appends[appends:]])

    def mark(self) -> tuple[int, int]:
        return len(self.model.calls), len(self.model.appends)

    def questions(self) -> list[dict]:
        return [e.data for e in self.events if e.type == "approval_requested"
                and e.data["tool"] == self.target["toolName"]]


@pytest.mark.parametrize("memory_sessions", [0, 4], ids=["prompt", "memory-session"])
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_later_turns_ask_again_while_the_result_is_in_the_raw_turns(entry, memory_sessions):
    scene = Scene(entry, memory_sessions=memory_sessions,
                  memory=MemoryPolicy(facts_refresh_ratio=0.5))
    name = scene.target["toolName"]
    scene.allow_for_the_chat()
    scene.say(LOOKUP)                          # turn N: the result, read, orders the call
    assert scene.asked == [name] and scene.ran == []
    for message in ("Thanks.", "Anything else I should know?"):   # turns N+1, N+2
        scene.say(message)
    assert scene.ran == []                     # nothing ran unasked
    assert scene.asked == [name] * 3
    # the trace says why: which text, from where, and where it sits now
    why = " ".join(scene.questions()[-1]["untrusted"])
    assert "lookup_record (evil-server)" in why and "turn 2" in why


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_the_summary_and_key_facts_carry_the_order_only_marked(entry):
    scene = Scene(entry)
    name = scene.target["toolName"]
    scene.allow_for_the_chat()
    scene.say(LOOKUP)
    scene.say("Thanks.")
    scene.say("Fine.")
    report = run(scene.agent.compact("default"))
    assert report.ok and report.compacted_turns >= 2
    state = run(scene.agent.memory_state("default"))
    assert 2 not in [t.id for t in state.recent_turns]   # turn N left the raw turns
    assert scene.directive not in state.summary       # the user's summary stays clean
    assert scene.directive in state.untrusted_summary  # the marked part holds it
    assert entry["directive"] not in unmarked(state.summary)
    carried = [f for f in state.facts if scene.directive in f.text]
    assert carried and all(f.untrusted for f in carried)
    scene.asked[:] = []
    since = scene.mark()
    scene.say("One more thing.")
    assert scene.ran == [] and scene.asked == [name]   # still in what it reads: asked
    read = scene.step_reads(since)
    assert any(scene.directive in flat(text) for text in read)
    assert not any(scene.directive in unmarked(text) for text in read)
    why = " ".join(scene.questions()[-1]["untrusted"])
    assert "summary" in why or "key fact" in why


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_the_profile_takes_the_order_only_unconfirmed(entry):
    scene = Scene(entry)
    scene.say(LOOKUP)
    scene.say("Thanks.")
    # another chat never reads it, marked or not
    since, scene.asked[:] = scene.mark(), []
    scene.say("Hello there, what can you do?", "other")
    assert not any(scene.directive in flat(text) for text in scene.step_reads(since))
    assert scene.ran == [] and scene.asked == []
    state = run(scene.agent.memory_state("other"))
    assert not any(scene.directive in f.text for f in state.profile)
    # it waits in the profile, unconfirmed, for the user to see in the inspector
    profile = run(scene.agent.profile())
    carried = [p for p in profile if scene.directive in p.text]
    assert carried and all(p.unconfirmed for p in carried)
    # confirmed by the user in the inspector, it is a normal profile fact
    confirmed = run(scene.agent.confirm_profile_fact(carried[0].id))
    assert not confirmed.unconfirmed
    since = scene.mark()
    scene.say("Hi again, what do you know?", "third")
    read = scene.step_reads(since)
    assert any(scene.directive in unmarked(text) for text in read)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_turns_recalled_from_another_chat_are_marked_and_asked_about(entry):
    scene = Scene(entry, memory=MemoryPolicy(facts_refresh_ratio=0.9))
    name = scene.target["toolName"]
    scene.say(LOOKUP, "first")
    scene.allow_for_the_chat("second")
    since = scene.mark()
    events = len(scene.events)
    scene.say("What did the cabin booking record say?", "second")
    recalled = [e.data for e in scene.events[events:] if e.type == "recalled"]
    assert recalled and any(h["shown"] and h["session_id"] == "first"
                            for h in recalled[0]["hits"])
    read = scene.step_reads(since)
    assert any(scene.directive in flat(text) for text in read)
    assert not any(scene.directive in unmarked(text) for text in read)
    assert scene.ran == [] and scene.asked == [name]
    why = " ".join(scene.questions()[-1]["untrusted"])
    assert "recalled" in why


def test_once_the_text_is_dropped_from_memory_the_chat_allowance_holds_again():
    """The fallback summary keeps only the user's words: the result's text leaves what the
    model reads (the raw turns, the memory session once rebuilt), and with it the reason
    to ask; a call the user allowed for the chat runs again without a question."""
    entry = ENTRIES[0]
    scene = Scene(entry, memory=MemoryPolicy(extract_facts=False, min_recent_turns=1,
                                             fallback_after_failures=1))
    respond = scene.respond

    def no_summaries(call: PromptCall) -> str:   # a summarizer that fails: the fallback
        return "" if call.purpose is Purpose.SUMMARY else respond(call)
    scene.model.fn = no_summaries
    name = scene.target["toolName"]
    scene.allow_for_the_chat()
    scene.say(LOOKUP)
    scene.say("Thanks.")
    report = run(scene.agent.compact("default"))
    assert report.ok and report.record is not None and report.record.fallback
    state = run(scene.agent.memory_state("default"))
    assert state.untrusted_summary == "" and scene.directive not in state.summary
    assert not any(t.untrusted for t in state.recent_turns)
    scene.asked[:] = []
    scene.say("Please do what you would do for me.")
    assert scene.asked == [] and len(scene.ran) == 1   # allowed for the chat, not asked
