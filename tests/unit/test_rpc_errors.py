"""Errors as Chrome raises them, named as the LLM host names them (web/llm_host.js), end a
turn the way tests/e2e/test_prompt_api_errors.py sees it in the page: a refused response
constraint is its own error (the step is asked again under a simpler one), a session destroyed mid-prompt reads as a model that went
away, a quota error or context overflow that recovery cannot fix reads as "too long",
and a stopped turn aborts its call on the host."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from py_agent import Agent, InMemoryStore
from py_agent.model import (ModelAbortedError, ModelError, ModelUnavailableError, Purpose,
                            QuotaExceededError, ResponseConstraintError)
from py_agent.rpc import BridgeModel, model_error
from py_agent.testing import FunctionModel
from tests.unit.support import echo_agent_reply, make_responder, run

# What the user reads (py_agent's turn error texts); the e2e test reads the same.
TOO_LONG = "too long for the on-device model's context window"
WENT_AWAY = "The on-device model is not available right now"
CALL_FAILED = "Something went wrong while asking the model"


class ChromeHost:
    """Plays web/llm_host.js over a FunctionModel; step prompts take their outcome from
    ``outcomes`` first: {"error": {...}} (the host's error reply), {"overflowed": True}
    (the session evicted context), or "wait" (hangs until aborted)."""

    def __init__(self, outcomes: list[Any]) -> None:
        self.model = FunctionModel(make_responder(echo_agent_reply))
        self.outcomes = list(outcomes)
        self.sessions: dict[str, Any] = {}
        self.log: list[tuple[str, list[Any]]] = []
        self.released = asyncio.Event()
        self._ids = iter(range(1, 10_000))

    def _info(self, session: Any) -> dict[str, Any]:
        sid = f"s{next(self._ids)}"
        self.sessions[sid] = session
        return {"sessionId": sid, "contextWindow": session.context_window,
                "contextUsage": session.context_usage}

    async def transport(self, method: str, args: list[Any]) -> dict[str, Any]:
        self.log.append((method, args))
        if method == "availability":
            return {"ok": True, "value": {"availability": "available", "reason": None}}
        if method == "create":
            return {"ok": True, "value": self._info(await self.model.create(
                initial_prompts=args[0]["initialPrompts"]))}
        if method == "clone":
            return {"ok": True, "value": self._info(await self.sessions[args[0]].clone())}
        if method == "measure":
            return {"ok": True, "value": await self.sessions[args[0]].measure(args[1])}
        if method == "destroy":
            session = self.sessions.pop(args[0], None)
            if session is not None:
                await session.destroy()
            return {"ok": True, "value": session is not None}
        if method == "abort":
            self.released.set()
            return {"ok": True, "value": 1}
        if method == "append":
            session = self.sessions[args[0]]
            await session.append(args[1])
            return {"ok": True, "value": {"contextUsage": session.context_usage,
                                          "contextWindow": session.context_window}}
        if method == "prompt":
            return await self._prompt(*args)
        return {"ok": False, "error": {"name": "TypeError", "message": f"unknown {method}"}}

    async def _prompt(self, session_id: str, text: str, options: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions[session_id]
        if options["purpose"] == Purpose.STEP.value and self.outcomes:
            outcome = self.outcomes.pop(0)
            if outcome == "wait":
                await self.released.wait()
                return {"ok": False, "error": {"name": "AbortError", "originalName": "AbortError",
                                               "message": "Stopped by the user."}}
            if "error" in outcome:
                return {"ok": False, "error": outcome["error"]}
        else:
            outcome = {}
        reply = await session.prompt(text, response_constraint=options["responseConstraint"],
                                     purpose=Purpose(options["purpose"]))
        return {"ok": True, "value": {"text": reply, "contextUsage": session.context_usage,
                                      "contextWindow": session.context_window,
                                      "overflowed": bool(outcome.get("overflowed"))}}


def turn(outcomes: list[Any], message: str = "hello") -> tuple[Any, ChromeHost]:
    host = ChromeHost(outcomes)
    agent = Agent(model=BridgeModel(host.transport), store=InMemoryStore())
    return run(agent.run(message, session_id="chat")), host


CONSTRAINT_REFUSED = {"name": "ResponseConstraintError", "originalName": "NotSupportedError",
                      "message": 'Response constraint is not a supported JSON schema: schema '
                                 'uses "anyOf", which this model does not support.'}
DESTROYED = {"name": "InvalidStateError", "originalName": "InvalidStateError",
             "message": "The model execution session has been destroyed."}
QUOTA = {"name": "QuotaExceededError", "originalName": "QuotaExceededError",
         "message": "The input is too large.", "requested": 9500, "quota": 9216}


@pytest.mark.parametrize("error, cls", [
    (CONSTRAINT_REFUSED, ResponseConstraintError),
    ({"name": "ResponseConstraintError", "originalName": "SyntaxError", "message": "no"},
     ResponseConstraintError),
    (DESTROYED, ModelUnavailableError),
    ({"name": "AbortError", "message": "Stopped by the user."}, ModelAbortedError),
    (QUOTA, QuotaExceededError),
])
def test_the_hosts_error_names_become_typed_errors(error, cls):
    exc = model_error(error)
    assert type(exc) is cls and isinstance(exc, ModelError)
    if cls is ResponseConstraintError:
        assert exc.original_name == error["originalName"]
        assert str(exc).startswith(error["originalName"] + ": ")
    if cls is QuotaExceededError:
        assert (exc.requested, exc.quota) == (9500, 9216)


def test_a_refused_step_constraint_is_asked_again_under_a_simpler_one():
    """Chrome refusing the step schema is not a missing model: the step is asked again
    under the tool-name enum (py_agent/constraints.py), and the turn answers."""
    result, host = turn([{"error": CONSTRAINT_REFUSED}])
    assert result.status == "answered" and result.answer == "You said: hello"
    assert WENT_AWAY not in result.answer
    prompts = [args[2] for method, args in host.log
               if method == "prompt" and args[2]["purpose"] == "step"]
    assert ["anyOf" in json.dumps(p["responseConstraint"]) for p in prompts] == [True, False]
    assert "none" in prompts[1]["responseConstraint"]["properties"]["toolName"]["enum"]
    assert [s.constraint for s in result.steps] == ["names"]
    # The schema is left out of the model's input: what is sent is what measure() counts.
    assert all(p["omitResponseConstraintInput"] is True for p in prompts)


def test_a_session_destroyed_mid_prompt_reads_as_a_model_that_went_away():
    result, _ = turn([{"error": DESTROYED}])
    assert result.status == "error"
    assert result.answer.startswith(WENT_AWAY)
    assert result.error.startswith("ModelUnavailableError")


@pytest.mark.parametrize("failure", [{"error": QUOTA}, {"overflowed": True}],
                         ids=["quota-exceeded", "context-overflow"])
def test_a_window_problem_is_recovered_once_then_reads_as_too_long(failure):
    once, host = turn([failure])
    assert once.status == "answered" and once.answer == "You said: hello"
    clones = [m for m, _ in host.log if m == "clone"]
    assert len(clones) >= 2   # a fresh clone after the first failure
    twice, _ = turn([failure, failure])
    assert twice.status == "error" and TOO_LONG in twice.answer


def test_a_stopped_turn_aborts_its_call_on_the_host():
    host = ChromeHost(["wait"])
    agent = Agent(model=BridgeModel(host.transport), store=InMemoryStore())
    abort = asyncio.Event()

    async def stop_when_prompting():
        while not any(m == "prompt" for m, _ in host.log):
            await asyncio.sleep(0.01)
        abort.set()

    async def scenario():
        stopper = asyncio.ensure_future(stop_when_prompting())
        result = await asyncio.wait_for(agent.run("hello", session_id="chat", abort=abort), 10)
        await stopper
        return result

    result = run(scenario())
    assert result.status == "stopped" and result.answer == ""
    request_id = next(a[2]["requestId"] for m, a in host.log if m == "prompt")
    assert ("abort", [request_id]) in host.log
