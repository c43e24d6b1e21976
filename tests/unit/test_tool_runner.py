import asyncio
import time

import pytest

from py_agent import RetryableToolError, ToolPolicy, tool
from py_agent.boundary import cap_text
from py_agent.turn.tool_runner import render_output, run_tool
from tests.unit.support import run

POLICY = ToolPolicy(timeout_s=0.2, max_attempts=3, backoff_s=0.01, max_observation_chars=200)


def test_sync_and_async_results_and_non_strings():
    @tool
    def numbers(n: int) -> list:
        """List numbers."""
        return list(range(n))

    @tool
    async def nothing(x: str) -> None:
        """Return nothing."""

    out = run(run_tool(numbers, "3", POLICY))
    assert out.ok and out.observation == "[0, 1, 2]" and out.attempts == 1
    out = run(run_tool(nothing, "x", POLICY))
    assert out.ok and out.observation == "(the tool returned nothing)"
    assert render_output({"a": "é"}) == '{"a": "é"}'


def test_async_hang_times_out_once_and_is_reported():
    calls = []

    @tool
    async def hang(x: str) -> str:
        """Hang forever."""
        calls.append(x)
        await asyncio.sleep(60)

    started = time.perf_counter()
    out = run(run_tool(hang, "x", POLICY))
    assert not out.ok and out.error == "timeout" and out.attempts == 1 and len(calls) == 1
    assert "did not finish within 0.2 s" in out.observation
    assert time.perf_counter() - started < 0.6


def test_sync_hang_times_out_without_blocking_the_loop():
    @tool
    def spin(x: str) -> str:
        """Block a thread for a long time."""
        time.sleep(5)
        return "late"

    started = time.perf_counter()
    out = run(run_tool(spin, "x", ToolPolicy(timeout_s=0.1, max_attempts=1)))
    assert not out.ok and out.error == "timeout"
    assert time.perf_counter() - started < 1.5


def test_retryable_error_is_retried_with_backoff_until_success():
    attempts = []

    @tool
    def flaky(x: str) -> str:
        """Fail twice, then work."""
        attempts.append(time.perf_counter())
        if len(attempts) < 3:
            raise RetryableToolError("busy")
        return "ok"

    out = run(run_tool(flaky, "x", ToolPolicy(timeout_s=1, max_attempts=3, backoff_s=0.05)))
    assert out.ok and out.observation == "ok" and out.attempts == 3
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert gaps[0] >= 0.045 and gaps[1] >= 0.09  # the delay doubles


def test_other_errors_are_not_retried_and_become_observations():
    attempts = []

    @tool
    def broken(x: str) -> str:
        """Always fails."""
        attempts.append(1)
        raise ZeroDivisionError("division by zero")

    out = run(run_tool(broken, "x", POLICY))
    assert not out.ok and len(attempts) == 1
    assert out.observation == "Error: broken raised ZeroDivisionError: division by zero"


def test_bad_arguments_never_call_the_tool():
    called = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        called.append(1)
        return a + b

    out = run(run_tool(add, {"a": 1}, POLICY))
    assert not out.ok and not called and "missing argument(s) b" in out.observation


def test_long_observations_are_capped():
    @tool
    def big(x: str) -> str:
        """Return a lot."""
        return "x" * 10_000

    out = run(run_tool(big, "x", POLICY))
    assert len(out.observation) == 200 and out.observation.endswith("[truncated 9800 characters]")
    assert cap_text("short", 200) == "short"


def test_policy_rejects_nonsense():
    with pytest.raises(ValueError):
        ToolPolicy(timeout_s=0)
    with pytest.raises(ValueError):
        ToolPolicy(max_attempts=0)
