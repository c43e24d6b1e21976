"""Hostile model output, misbehaving models and tools: each costs at most one turn, the
turn is saved with the user's message and a clear answer, and the next turn works."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from py_agent import Agent, InMemoryStore, StepPolicy, ToolPolicy, tool
from py_agent.boundary import MAX_JSON_DEPTH, clean_text, depth_within, loads_bounded
from demo_tools.calculator import calculate
from py_agent.model import Purpose, destroy_quietly
from py_agent.sqlite_store import SqliteStore
from py_agent.testing import FunctionModel, PromptCall, step_json, user_message
from tests.unit.support import make_responder, run, stopped_turn

DEEP = 20_000
FAST = StepPolicy(timeout_s=0.3)


async def ignore_cancellation_for(seconds: float) -> None:
    """Swallow every cancellation for ``seconds`` (then let the test's teardown end it)."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        try:
            await asyncio.sleep(until - time.perf_counter())
        except asyncio.CancelledError:
            continue


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@tool
def echo(text: str) -> str:
    """Repeat the text back."""
    return text


def agent_for(step, *, tools=(), store=None, step_policy=FAST, **kwargs):
    model = FunctionModel(make_responder(step))
    agent = Agent(model=model, store=store or InMemoryStore(), tools=list(tools),
                  step_policy=step_policy,
                  tool_policy=kwargs.pop("tool_policy", ToolPolicy(timeout_s=0.3)), **kwargs)
    return agent, model


def first_turn_then(bad):
    """A responder that misbehaves (``bad(call)``) for every step of the first message,
    then answers normally."""
    def step(call: PromptCall):
        message = user_message(call)
        if message is not None:
            step.current = message
        if step.current == "break":
            return bad(call)
        return step_json(answer=f"fine: {step.current}")
    step.current = None
    return step


def assert_one_turn_lost_at_most(agent, session_id="s"):
    """The next turn works and both turns are in the transcript."""
    after = run(agent.run("next", session_id=session_id))
    assert after.status == "answered" and after.answer == "fine: next"
    archive = run(agent.transcript(session_id))
    assert [t.user for t in archive] == ["break", "next"]
    assert len({t.id for t in archive}) == 2
    text = run(agent.export_session(session_id))
    text.encode("utf-8")  # every stored string is valid Unicode
    return archive[0]


# ------------------------------------------------------------------ the boundary

def test_depth_is_measured_without_recursion_and_strings_do_not_count():
    assert depth_within(deep_object(MAX_JSON_DEPTH)) and not depth_within(deep_object(DEEP))
    assert depth_within(json.dumps({"a": "[[[[{{{{" * 1000}))
    assert depth_within('{"a": "\\"{{{"}' + "{" * 500, one_value=True)
    with pytest.raises(ValueError, match="deeper than 64"):
        loads_bounded("[" * DEEP + "]" * DEEP)


def test_text_is_cleaned_to_valid_unicode():
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\ud83d\ude00") == "😀"  # a pair written as two code units joins
    assert clean_text(b"caf\xc3\xa9 \xff") == "café \ufffd"
    assert clean_text("plain") == "plain"


# ------------------------------------------------------------------ model output

def test_a_reply_nested_20000_deep_costs_one_turn_with_a_clear_message():
    agent, _ = agent_for(first_turn_then(lambda call: deep_object(DEEP)))
    started = time.perf_counter()
    result = run(agent.run("break", session_id="s"))
    assert time.perf_counter() - started < 5
    assert result.status == "incomplete"
    assert "nests deeper than 64 levels" in result.answer
    assert "could not be used" in result.answer
    assert assert_one_turn_lost_at_most(agent).status == "incomplete"


def test_deep_json_inside_a_tool_input_string_is_an_observation_not_a_crash():
    calls = []

    def step(call: PromptCall):
        calls.append(call)
        if len(calls) == 1:
            return json.dumps({"thought": "", "toolName": "echo",
                               "toolInput": "{" + '"a":{' * 5000, "finalAnswer": ""})
        if len(calls) == 2:
            return json.dumps({"thought": "", "toolName": "echo",
                               "toolInput": {"text": "[" * 5000}, "finalAnswer": ""})
        return step_json(answer="done")

    agent, _ = agent_for(step, tools=[echo])
    result = run(agent.run("echo something deep", session_id="s"))
    assert result.status == "answered" and result.steps[0].kind == "tool"
    assert result.steps[1].observation == "[" * 1500 or result.steps[1].ok


def test_lone_surrogates_from_the_model_are_replaced_before_anything_is_stored(tmp_path):
    reply = '{"thought": "\\ud800", "toolName": "none", "toolInput": "", ' \
            '"finalAnswer": "bad \\udc00 text \\ud83d\\ude00"}'
    store = SqliteStore(tmp_path / "s.db")  # SQLite refuses text that is not valid Unicode
    agent, _ = agent_for(lambda call: reply, store=store)
    result = run(agent.run("hi \ud800 there", session_id="s"))
    assert result.saved and result.answer == "bad \ufffd text 😀"
    [turn] = run(store.read_archive("s"))
    assert turn.user == "hi \ufffd there" and turn.steps[0].thought == "\ufffd"
    run(agent.export_session("s")).encode("utf-8")


@pytest.mark.parametrize("reply", [None, b"\xff\xfe{}", "x" * 3_000_000, "\x00" * 100,
                                   '{"thought": 5, "toolName": [], "finalAnswer": {}}',
                                   '{"toolName": "none", "finalAnswer": 1e999}',
                                   '{"toolName": "none", "finalAnswer": ' + "9" * 5000 + "}"])
def test_replies_of_any_shape_never_escape(reply):
    agent, _ = agent_for(first_turn_then(lambda call: reply), max_steps=2)
    result = run(agent.run("break", session_id="s"))
    assert result.status in ("incomplete", "answered", "error") and result.saved
    assert_one_turn_lost_at_most(agent)


class RawSession:
    """A model session written by hand, replying whatever it is told to (no FunctionModel
    conveniences such as turning values into JSON text)."""

    context_window, context_usage = 9216, 100

    def __init__(self, reply):
        self.reply = reply

    async def prompt(self, text, *, response_constraint=None, purpose=Purpose.STEP):
        return self.reply

    async def measure(self, text):
        return "many"

    async def clone(self):
        return RawSession(self.reply)

    async def destroy(self):
        raise RuntimeError("already gone")


class RawModel:
    def __init__(self, reply):
        self.reply = reply

    async def availability(self):
        return "available"

    async def create(self, *, initial_prompts, purpose=Purpose.STEP):
        return RawSession(self.reply)


@pytest.mark.parametrize("reply", [{"finalAnswer": "a dict"}, 42, ["x"]])
def test_a_reply_that_is_not_text_fails_the_turn_clearly(reply):
    agent = Agent(model=RawModel(reply), store=InMemoryStore())
    result = run(agent.run("hello", session_id="s"))
    assert result.status == "error" and result.saved
    assert f"replied with {type(reply).__name__}, not text" in result.answer
    assert result.error.startswith("ModelCallError")
    agent.model = RawModel(step_json(answer="text at last"))  # new base sessions
    assert run(agent.run("again", session_id="s")).answer == "text at last"


# ------------------------------------------------------------------ model exceptions

@pytest.mark.parametrize("exc", [OSError("disk on fire"), TimeoutError(), KeyError("x"),
                                 RecursionError("deep"), RuntimeError("bug"),
                                 SystemExit(3), KeyboardInterrupt(), GeneratorExit(),
                                 asyncio.CancelledError()])
def test_any_exception_a_model_raises_fails_one_turn_and_is_saved(exc):
    def bad(call):
        raise exc

    agent, _ = agent_for(first_turn_then(bad))
    result = run(agent.run("break", session_id="s"))
    assert result.status == "error" and result.saved and result.answer
    first = assert_one_turn_lost_at_most(agent)
    assert (first.status, first.answer) == ("error", result.answer)


def test_a_model_that_raises_in_create_and_in_compaction_never_escapes():
    def bad(call):
        if call.purpose is not Purpose.STEP:
            raise OSError("summarizer down")
        return step_json(answer="ok")

    agent, model = agent_for(bad)
    run(agent.run("hello", session_id="s"))
    report = run(agent.compact("s"))
    assert not report.ok  # nothing to compact, or a failed compaction: never an exception
    broken = Agent(model=FunctionModel(bad), store=InMemoryStore())

    async def create(**kwargs):
        raise KeyError("no such model")
    broken.model.create = create
    result = run(broken.run("hello", session_id="t"))
    assert result.status == "error" and "KeyError" in result.error and result.saved


def test_a_hung_step_call_costs_its_timeout_and_one_turn():
    async def hang(call):
        await asyncio.Event().wait()

    agent, _ = agent_for(first_turn_then(hang))
    started = time.perf_counter()
    result = run(agent.run("break", session_id="s"))
    assert 0.3 <= time.perf_counter() - started < 1.5
    assert result.status == "error" and "did not answer in time" in result.answer
    assert "0.3 s" in result.answer and result.error.startswith("ModelTimeoutError")
    assert_one_turn_lost_at_most(agent)


def test_a_model_that_ignores_cancellation_is_abandoned_after_a_grace_period():
    async def stubborn(call):
        await ignore_cancellation_for(1.5)

    agent, _ = agent_for(first_turn_then(stubborn))
    started = time.perf_counter()
    result = run(agent.run("break", session_id="s"))
    assert time.perf_counter() - started < 2.0 and result.status == "error"
    assert_one_turn_lost_at_most(agent)


def test_a_destroy_that_hangs_or_raises_only_leaks_the_session(caplog):
    """Every session's destroy (base, memory, summary and facts sessions) goes through
    one bounded helper: closing never waits on a stubborn model."""

    class Stubborn:
        async def destroy(self) -> None:
            await ignore_cancellation_for(1.0)

    class Broken:
        async def destroy(self) -> None:
            raise OSError("the bridge is gone")

    async def scenario() -> float:
        started = time.perf_counter()
        await destroy_quietly(Stubborn(), "a stubborn session", timeout=0.1)
        await destroy_quietly(Broken(), timeout=0.1)
        return time.perf_counter() - started

    assert run(scenario()) < 0.9
    assert "could not destroy a stubborn session" in caplog.text
    assert "could not destroy a model session" in caplog.text and "the bridge is gone" in caplog.text


def test_stop_during_a_hung_call_keeps_the_message():
    async def hang(call):
        await asyncio.Event().wait()

    agent, _ = agent_for(hang, step_policy=StepPolicy(timeout_s=60))

    result = run(stopped_turn(agent, "please wait", after=0.1))
    assert result.status == "stopped"
    assert [(t.user, t.status) for t in run(agent.transcript("s"))] == [("please wait", "stopped")]


# ------------------------------------------------------------------ tools

def tool_turn(t, **policy):
    calls = []

    def step(call: PromptCall):
        calls.append(call)
        if len(calls) == 1:
            return step_json(tool=t.name, tool_input="x")
        return step_json(answer="after the tool")

    agent, _ = agent_for(step, tools=[t], tool_policy=ToolPolicy(timeout_s=0.3, **policy))
    result = run(agent.run(f"use {t.name} now", session_id="s"))
    assert result.status == "answered" and result.saved
    assert run(agent.run("and again", session_id="s")).status == "answered"
    return result.steps[0]


@pytest.mark.parametrize("exc", [SystemExit(1), KeyboardInterrupt(), asyncio.CancelledError(),
                                 GeneratorExit(), MemoryError("big")])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tool_raising_base_exceptions_is_contained(exc, kind):
    if kind == "sync":
        def explode(text: str) -> str:
            """Explode."""
            raise exc
    else:
        async def explode(text: str) -> str:
            """Explode."""
            raise exc
    step = tool_turn(tool(explode))
    assert not step.ok and type(exc).__name__ in step.observation


def test_an_async_tool_that_ignores_cancellation_costs_its_timeout():
    @tool
    async def stubborn(text: str) -> str:
        """Refuses to stop."""
        await ignore_cancellation_for(2.5)

    started = time.perf_counter()
    step = tool_turn(stubborn)
    assert time.perf_counter() - started < 2.5
    assert not step.ok and "did not finish within 0.3 s" in step.observation


def test_a_tool_returning_unshowable_values_gives_an_observation():
    class Weird:
        def __str__(self):
            raise RuntimeError("no")

    nested: list = []
    for _ in range(DEEP):
        nested = [nested]

    for value in (nested, Weird(), "\ud800", b"\xff"):
        @tool
        def odd(text: str):
            """Return something odd."""
            return value
        step = tool_turn(odd)
        assert step.observation and step.observation.encode("utf-8")


def test_calculating_a_gigantic_power_is_refused_at_once():
    started = time.perf_counter()
    with pytest.raises(ValueError, match="952,335 digits"):
        calculate("((9**999)**999)**99")
    assert time.perf_counter() - started < 0.1
    assert calculate("9**999").startswith("9**999 = 1942079168")
