"""Sync tools in a tool worker that can be stopped (py_agent.turn.remote_tools), with a fake
worker: each call runs in a thread of its own, and ``terminate`` drops whatever the
thread still sends, as a terminated Web Worker sends nothing more."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from py_agent import Agent, InMemoryStore, ToolPolicy, tool
from py_agent.turn.remote_tools import WorkerToolError, ToolWorkerClient, handle_call
from py_agent.testing import FunctionModel, PromptCall, step_json
from tests.unit.support import run, stopped_turn

BOOT_S = 0.05


@tool
def slow_power(expression: str) -> str:
    """Compute a power, very slowly when asked to."""
    if "forever" in expression:
        time.sleep(3)  # stands for ((9**999)**999)**99: nothing interrupts it
        return "late"
    if "crash" in expression:
        raise SystemExit(2)
    if "again" in expression:
        from py_agent import RetryableToolError
        raise RetryableToolError("busy")
    if "bad" in expression:
        raise ValueError("not a number")
    return f"{expression} = 4"


class FakeWorker:
    """A tool worker: boots after BOOT_S, answers each call from a thread."""

    spawned: list["FakeWorker"] = []

    def __init__(self, on_message, boot_error: str | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.on_message = on_message
        self.terminated = False
        self.calls = 0
        FakeWorker.spawned.append(self)
        ready = ({"type": "error", "message": boot_error} if boot_error
                 else {"type": "boot", "phase": "ready"})
        self.loop.call_later(BOOT_S, self._send, ready)

    def _send(self, message) -> None:
        if not self.terminated:
            self.on_message(message)

    def post(self, message) -> None:
        self.calls += 1

        def work():
            reply = handle_call({"slow_power": slow_power}, message)
            try:
                self.loop.call_soon_threadsafe(self._send, reply)
            except RuntimeError:
                pass

        threading.Thread(target=work, daemon=True).start()

    def terminate(self) -> None:
        self.terminated = True


@pytest.fixture
def client():
    FakeWorker.spawned = []
    return lambda **kw: ToolWorkerClient(lambda on_message: FakeWorker(on_message, **kw))


def test_calls_run_in_the_worker_and_errors_keep_their_kind(client):
    workers = client()
    policy = ToolPolicy(timeout_s=1, max_attempts=2, backoff_s=0.01)

    async def calls():
        from py_agent.turn.tool_runner import run_tool
        return [await run_tool(slow_power, text, policy, workers.call)
                for text in ("2**2", "bad", "crash", "again")]

    ok, bad, crash, again = run(calls())
    assert (ok.ok, ok.observation) == (True, "2**2 = 4")
    assert bad.observation == "Error: slow_power raised ValueError: not a number"
    assert not crash.ok and "SystemExit" in crash.observation and crash.error == "crashed"
    assert again.attempts == 2 and again.error == "retryable"
    assert len(FakeWorker.spawned) == 1 and FakeWorker.spawned[0].calls == 5


def test_a_hung_sync_tool_costs_its_timeout_and_the_worker_restarts(client):
    workers = client()
    calls = []

    def step(call: PromptCall):
        calls.append(call)
        if "Observation from slow_power" in call.input:
            return step_json(answer=call.input.split(": ", 1)[1])
        expression = "forever" if "hang" in call.input.split("User:")[-1] else "2**2"
        return step_json(tool="slow_power", tool_input=expression)

    agent = Agent(model=FunctionModel(step), store=InMemoryStore(), tools=[slow_power],
                  tool_policy=ToolPolicy(timeout_s=0.3), sync_tool_runner=workers.call)
    started = time.perf_counter()
    hung = run(agent.run("compute a power and hang", session_id="s"))
    assert time.perf_counter() - started < 1.0
    assert hung.status == "answered" and "did not finish within 0.3 s" in hung.answer
    assert workers.restarts == 1 and FakeWorker.spawned[0].terminated
    after = run(agent.run("compute a power", session_id="s"))
    assert after.answer == "2**2 = 4" and len(FakeWorker.spawned) == 2


def test_stopping_a_turn_during_a_hung_tool_restarts_the_worker(client):
    workers = client()
    agent = Agent(model=FunctionModel(lambda call: step_json(tool="slow_power",
                                                             tool_input="forever")),
                  store=InMemoryStore(), tools=[slow_power], tool_policy=ToolPolicy(timeout_s=30),
                  sync_tool_runner=workers.call)

    assert run(stopped_turn(agent, "compute a power", after=0.3)).status == "stopped"
    assert workers.restarts == 1 and FakeWorker.spawned[0].terminated


def test_a_tool_worker_that_cannot_start_leaves_the_tools_running_here(client):
    workers = client(boot_error="no nested workers here")

    async def call():
        from py_agent.turn.tool_runner import run_tool
        return await run_tool(slow_power, "3**2", ToolPolicy(timeout_s=1), workers.call)

    outcome = run(call())
    assert outcome.ok and outcome.observation == "3**2 = 4"  # ran in this process instead

    async def more_calls():
        from py_agent.turn.tool_runner import run_tool
        return [await run_tool(slow_power, f"{n}**2", ToolPolicy(timeout_s=1), workers.call)
                for n in range(4)]

    assert [o.ok for o in run(more_calls())] == [True] * 4
    # One more boot was tried, then no more: not one boot per call.
    assert len(FakeWorker.spawned) == 2 and workers.boot_failures == 2


def test_late_replies_of_a_terminated_worker_are_dropped(client):
    workers = client()

    async def scenario():
        with pytest.raises(TimeoutError):
            await workers.call(slow_power, {"expression": "forever"}, 0.2)
        return await workers.call(slow_power, {"expression": "5"}, 1)

    assert run(scenario()) == "5 = 4"
    assert [w.terminated for w in FakeWorker.spawned] == [True, False]


def test_closing_fails_a_running_call_at_once(client):
    workers = client()

    async def scenario():
        call = asyncio.ensure_future(workers.call(slow_power, {"expression": "forever"}, 30))
        await asyncio.sleep(BOOT_S + 0.1)   # booted, and the call is running
        started = time.perf_counter()
        workers.close()
        with pytest.raises(WorkerToolError, match="closed"):
            await asyncio.wait_for(call, 2)
        return time.perf_counter() - started

    assert run(scenario()) < 0.5
    assert FakeWorker.spawned[0].terminated and workers.restarts == 0


def test_a_tool_the_worker_does_not_have_runs_here(client):
    workers = client()

    @tool
    def local_only(word: str) -> str:
        """Only the agent's side knows this tool."""
        return word.upper()

    async def call():
        from py_agent.turn.tool_runner import run_tool
        return await run_tool(local_only, "hi", ToolPolicy(timeout_s=1), workers.call)

    outcome = run(call())
    assert outcome.ok and outcome.observation == "HI"
    assert FakeWorker.spawned[0].calls == 1 and workers.restarts == 0


def test_built_in_tools_never_go_to_the_worker(client):
    from py_agent.turn import compact_tool
    workers = client()

    from py_agent.tools import RunContext
    from py_agent.turn.tool_services import TurnMemory
    memory = TurnMemory(None)

    async def call():
        from py_agent.turn.tool_runner import run_tool
        return await run_tool(compact_tool(), {"focus": "x"}, ToolPolicy(timeout_s=1),
                              workers.call, context=RunContext(memory=memory))

    assert run(call()).observation.startswith("Memory compaction is scheduled")
    assert memory.compaction_requests == 1 and memory.compaction_focus == ["x"]
    assert FakeWorker.spawned == []   # not even started


def test_on_boot_sees_each_workers_boot_phases_and_its_failure_stops_nothing():
    seen = []

    def spawn(on_message):
        worker = FakeWorker(on_message)
        # A real worker says how Pyodide started before it is ready.
        worker.loop.call_soon(worker._send, {"type": "boot", "phase": "pyodide-loaded",
                                             "snapshot": "restored"})
        return worker

    def on_boot(message):
        seen.append((message["phase"], message.get("snapshot")))
        raise RuntimeError("the page is gone")

    FakeWorker.spawned = []
    workers = ToolWorkerClient(spawn, on_boot=on_boot)

    async def two_workers():
        from py_agent.turn.tool_runner import run_tool
        first = await run_tool(slow_power, "2**2", ToolPolicy(timeout_s=1), workers.call)
        workers.restart("a test")
        second = await run_tool(slow_power, "2**2", ToolPolicy(timeout_s=1), workers.call)
        return first, second

    first, second = run(two_workers())
    assert first.observation == second.observation == "2**2 = 4"
    assert seen == [("pyodide-loaded", "restored"), ("ready", None)] * 2
