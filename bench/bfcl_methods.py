"""The three ways ``bench/bfcl.py`` puts a BFCL case to one model server.

- ``py_agent``: the real :class:`~py_agent.Agent` (retriever, memory, the ReAct loop, the
  step's JSON-schema constraint) with the case's functions as tools made by
  :func:`~py_agent.schema_tool`. A turn's calls are the calls its tools ran (after the
  agent's argument check); the built-in ``compact`` and ``recall`` are the agent's own and
  not counted. In single-turn cases a tool has nothing to run, so it answers "done"; in
  multi-turn cases it runs BFCL's Python backends, and the conversation goes on turn after
  turn in one session, memory and all.
- ``native_tools``: chat completions with ``tools`` (BFCL's docs converted by BFCL's own
  helper), as BFCL's OpenAI-style FC handlers do: one reply per single-turn case; in
  multi-turn cases, calls executed and their results sent back as ``tool`` messages until
  the model stops calling (BFCL's step limit, 20).
- ``prompting``: BFCL's default system prompt with the function docs, the model writes
  ``[func(arg=value)]`` and BFCL's own decoder reads it, as BFCL's prompt handlers do;
  results go back as a user message, as theirs do.

All three use the same sampling (``temperature`` 0, a fixed seed) and the same cap on
a reply's tokens. Each returns a :class:`Transcript`: per turn, per model reply, the
calls made (BFCL's names) and the call strings executed, ready for BFCL's checkers.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from py_agent import Agent, InMemoryStore, schema_tool
from py_agent.model import LanguageModel
from py_agent.openai_compat import OpenAIModel

from bench.bfcl_data import Case, bfcl, name_map, openai_tools

BFCL_STEP_LIMIT = 20  # BFCL's MAXIMUM_STEP_LIMIT for multi-turn inference
REQUEST_TIMEOUT_S = 600.0
SINGLE_TURN_OBSERVATION = "done"


@dataclass
class Step:
    """One model reply: what it said, the calls it made, what was executed."""

    raw: str = ""
    calls: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)


@dataclass
class Transcript:
    """A case as one method ran it."""

    turns: list[list[Step]] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""
    # the name BFCL's backends keyed this run's instances by (multi-turn)
    run_name: str = ""
    # what else happened, per turn, for the log (the agent's steps: raw replies, kinds)
    trace: list[list[dict[str, Any]]] = field(default_factory=list)

    def calls(self, turn: int = 0) -> list[dict[str, dict[str, Any]]]:
        return [c for step in self.turns[turn] for c in step.calls] if self.turns else []


@dataclass
class Sampling:
    """What every method sends alike."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 256

    def options(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed}


_runs = iter(range(1, 1 << 62))


def new_run_name(method: str) -> str:
    """A fresh name per run: BFCL's backends keep a run's instances under it."""
    return f"{method}_{next(_runs)}"


def case_message(messages: list[dict[str, str]]) -> str:
    """A BFCL turn (a system prompt, earlier messages, the user's) as one user message."""
    parts = []
    for i, m in enumerate(messages):
        last = i == len(messages) - 1
        text = str(m.get("content", ""))
        parts.append(text if last or m.get("role") == "system" else f"{m['role']}: {text}")
    return "\n\n".join(p for p in parts if p.strip())


def executor(case: Case, run_name: str):
    """Runs call strings on the case's BFCL backends (the instances of this run)."""
    b = bfcl()
    entry = case.entry

    def execute(calls: list[str]) -> list[str]:
        results, _ = b.execution.execute_multi_turn_func_call(
            calls, entry.get("initial_config", {}), entry["involved_classes"], run_name,
            case.id, long_context=False, is_evaL_run=False)
        return results

    return execute


def forget_run(run_name: str) -> None:
    """Drop the backend instances BFCL keeps for a finished run (inference and check)."""
    store = vars(bfcl().execution)
    prefix = re.sub(r"[-./:]", "_", run_name) + "_"
    for key in [k for k in store if k.startswith(prefix)]:
        del store[key]


# -------------------------------------------------------------------------- py_agent

class PyAgentMethod:
    """The whole agent, as an app would build it, on an OpenAI-compatible server."""

    name = "py_agent"

    def __init__(self, url: str, model: str, sampling: Sampling, *,
                 model_backend: LanguageModel | None = None, **agent_options: Any) -> None:
        self.url, self.model, self.sampling = url, model, sampling
        # another backend than the server at ``url`` (bench/bfcl_parity.py: the page's)
        self.model_backend = model_backend
        self.agent_options = agent_options

    def run(self, case: Case) -> Transcript:
        return asyncio.run(self.run_async(case))

    async def run_async(self, case: Case) -> Transcript:
        b = bfcl()
        transcript = Transcript(run_name=new_run_name(self.name))
        started = time.perf_counter()
        execute = executor(case, transcript.run_name) if case.kind == "multi_turn" else None
        names = name_map(case.functions)
        current: list[Step] = []

        def make_fn(tool_name: str):
            bfcl_name = names.get(tool_name, tool_name)

            async def call(**arguments: Any) -> str:
                executed = b.handler.convert_to_function_call([{bfcl_name: arguments}])
                step = Step(raw=json.dumps({tool_name: arguments}, default=str),
                            calls=[{bfcl_name: arguments}], executed=executed)
                current.append(step)
                if execute is None:
                    return SINGLE_TURN_OBSERVATION
                return execute(executed)[0]

            return call

        tools = [schema_tool(t["function"]["name"], t["function"].get("description", ""),
                             t["function"]["parameters"], make_fn(t["function"]["name"]))
                 for t in openai_tools(case.functions)]
        model = self.model_backend or OpenAIModel(
            self.url, self.model, max_tokens=self.sampling.max_tokens,
            options=self.sampling.options(), stream=False)
        agent = Agent(model=model, store=InMemoryStore(), tools=tools, **self.agent_options)
        try:
            for messages in case.turns:
                current = []
                result = await agent.run(case_message(messages) or "(no message)",
                                         session_id=case.id)
                await agent.wait_idle(case.id)
                transcript.turns.append(current)
                transcript.trace.append([{"kind": step.kind, "raw": step.raw,
                                          "observation": step.observation[:300],
                                          "constraint": step.constraint}
                                         for step in result.steps])
                if result.status == "error":
                    transcript.error = result.error or "error"
        finally:
            await agent.close()
        transcript.seconds = time.perf_counter() - started
        return transcript


# ------------------------------------------------------------------------ baselines

def post_chat(url: str, body: dict[str, Any], timeout: float = REQUEST_TIMEOUT_S) -> dict:
    """One non-streamed ``POST /v1/chat/completions``; the reply as JSON."""
    request = urllib.request.Request(f"{url.rstrip('/')}/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:500]
        raise RuntimeError(f"the server answered {exc.code}: {detail}") from None


class _BaselineMethod:
    """A baseline that talks to the server directly: a server or decoding error ends the
    case (as a failure with the error kept), never the run."""

    name = ""

    def __init__(self, url: str, model: str, sampling: Sampling) -> None:
        self.url, self.model, self.sampling = url, model, sampling

    def run(self, case: Case) -> Transcript:
        transcript = Transcript(run_name=new_run_name(self.name))
        started = time.perf_counter()
        try:
            self._run(case, transcript)
        except (OSError, RuntimeError, ValueError) as exc:
            transcript.error = str(exc)
        transcript.seconds = time.perf_counter() - started
        return transcript

    def _run(self, case: Case, transcript: Transcript) -> None:
        raise NotImplementedError


class NativeToolsMethod(_BaselineMethod):
    """Chat completions with ``tools``, as BFCL's OpenAI-completions FC handler."""

    name = "native_tools"

    def _run(self, case: Case, transcript: Transcript) -> None:
        b = bfcl()
        tools = openai_tools(case.functions)
        names = name_map(case.functions)
        execute = executor(case, transcript.run_name) if case.kind == "multi_turn" else None
        messages: list[dict[str, Any]] = []
        for turn in case.turns:
            steps: list[Step] = []
            transcript.turns.append(steps)
            messages.extend(copy.deepcopy(turn))
            for _ in range(BFCL_STEP_LIMIT + 1 if execute else 1):
                body = {"model": self.model, "messages": messages, "max_tokens":
                        self.sampling.max_tokens, **self.sampling.options()}
                if tools:
                    # as BFCL's handler sends it: the server's own default for
                    # parallel_tool_calls (llama.cpp: one call a reply; OpenAI: several)
                    body["tools"] = tools
                message = post_chat(self.url, body)["choices"][0]["message"]
                calls = message.get("tool_calls") or []
                step = Step(raw=json.dumps(message, ensure_ascii=False))
                for call in calls:
                    function = call.get("function") or {}
                    arguments = function.get("arguments") or "{}"
                    try:
                        parsed = json.loads(arguments) if isinstance(arguments, str) \
                            else arguments
                    except ValueError:
                        parsed = None
                    if isinstance(parsed, dict):
                        step.calls.append({names.get(function.get("name", ""),
                                                     function.get("name", "")): parsed})
                steps.append(step)
                if not step.calls or execute is None:
                    break
                step.executed = b.handler.convert_to_function_call(step.calls)
                results = execute(step.executed)
                messages.append({"role": "assistant", "content": message.get("content") or "",
                                 "tool_calls": calls})
                for call, result in zip(calls, results):
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                     "content": result})


class PromptingMethod(_BaselineMethod):
    """BFCL's default system prompt; the model writes the calls as Python."""

    name = "prompting"

    def _run(self, case: Case, transcript: Transcript) -> None:
        b = bfcl()
        execute = executor(case, transcript.run_name) if case.kind == "multi_turn" else None
        turns = copy.deepcopy(case.turns)
        turns[0] = b.handler.system_prompt_pre_processing_chat_model(
            turns[0], copy.deepcopy(case.functions), case.id)
        messages: list[dict[str, Any]] = []
        for turn in turns:
            steps: list[Step] = []
            transcript.turns.append(steps)
            messages.extend(turn)
            for _ in range(BFCL_STEP_LIMIT + 1 if execute else 1):
                body = {"model": self.model, "messages": messages, "max_tokens":
                        self.sampling.max_tokens, **self.sampling.options()}
                text = post_chat(self.url, body)["choices"][0]["message"].get("content") or ""
                step = Step(raw=text)
                steps.append(step)
                messages.append({"role": "assistant", "content": text})
                try:
                    step.calls = b.handler.default_decode_ast_prompting(
                        text, b.enums.ReturnFormat.PYTHON, False)
                    executed = b.handler.default_decode_execute_prompting(text, False)
                except Exception:  # BFCL's decoder raises many kinds on free text
                    step.calls = []
                    break
                if b.utils.is_empty_output(step.calls) or execute is None:
                    step.calls = [] if b.utils.is_empty_output(step.calls) else step.calls
                    break
                step.executed = executed
                results = execute(executed)
                messages.append({"role": "user", "content":
                                 b.handler.format_execution_results_prompting(
                                     {}, results, {"model_responses_decoded": executed})})


METHODS = {m.name: m for m in (PyAgentMethod, NativeToolsMethod, PromptingMethod)}
