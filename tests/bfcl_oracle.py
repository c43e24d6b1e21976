"""A scripted model for ``bench/bfcl.py``'s harness tests: it knows BFCL's expected calls.

A responder for :class:`tests.fake_openai_server.FakeServer` that answers each of the
three methods in its own format, by finding the case's turn in the conversation and
counting the calls already made in that turn:

- the agent (a ``step`` response format): one step per expected call, then an answer;
- native tools (``tools`` in the body): every expected call of the turn as ``tool_calls``
  in one reply, then plain text;
- prompting (neither): every expected call written as ``[f(a=1), g(b='x')]``, then
  plain text.

``mode`` changes what it answers: ``"expected"`` (the right calls), ``"never"`` (never a
call: plain text, or a ``none`` step), ``"wrong_argument"`` (the right calls, but the
first argument of the first call that has one changed). The agent's memory calls
(summaries, facts) are answered by the fake server's scripted agent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bench.bfcl_data import Case, parse_call_string
from tests.fake_openai_server import Action, ChatRequest, Reply, agent_responder

WRONG = "a value nobody expects"


def expected_calls(case: Case, turn: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls BFCL expects in ``turn``, one value per argument (BFCL's first)."""
    if case.kind == "irrelevance":
        return []
    if case.kind == "multi_turn":
        docs = {f["name"]: f for f in case.functions}
        calls = []
        for text in case.answer[turn]:
            name, arguments = parse_call_string(text)
            order = list((docs[name].get("parameters") or {}).get("properties", {}))
            calls.append((name, {order[int(k[1:])] if k.startswith("_") else k: v
                                 for k, v in arguments.items()}))
        return calls
    calls = []
    for call in case.answer:
        (name, params), = call.items()
        calls.append((name, _values(params)))
    return calls


def _values(params: dict[str, list[Any]]) -> dict[str, Any]:
    """One acceptable value per argument, nested dicts too; an argument whose acceptable
    values include "" (may be left out) is left out."""
    return {key: _value(options[0]) for key, options in params.items()
            if options and "" not in options}


def _value(option: Any) -> Any:
    if isinstance(option, dict):
        return _values(option)
    if isinstance(option, list) and option and all(isinstance(o, dict) for o in option):
        return [_values(o) for o in option]
    return option


class Oracle:
    """The responder; see the module doc."""

    def __init__(self, cases: list[Case], mode: str = "expected") -> None:
        if mode not in ("expected", "never", "wrong_argument"):
            raise ValueError(mode)
        self.mode = mode
        self.turns: dict[str, tuple[Case, int]] = {}
        for case in cases:
            for index, messages in enumerate(case.turns):
                users = [m for m in messages if m.get("role") == "user"]
                if users:
                    self.turns[str(users[-1]["content"]).strip()] = (case, index)

    def __call__(self, request: ChatRequest) -> Action:
        body = request.body
        is_step = request.schema_name == "step"
        if request.schema_name and not is_step or _is_summary(request):
            return agent_responder(request)
        found = self._find(request.messages)
        if found is None:
            return _finish(request, "I do not know this case.")
        case, turn, position = found
        calls = [] if self.mode == "never" else expected_calls(case, turn)
        if self.mode == "wrong_argument":
            # the first argument of the first call that has one
            index = next((i for i, (_, arguments) in enumerate(calls) if arguments), None)
            if index is not None:
                name, arguments = calls[index]
                calls[index] = (name, {**arguments, next(iter(arguments)): WRONG})
        later = request.messages[position + 1:]
        if is_step:
            done = sum(1 for m in later if m.get("role") == "user"
                       and str(m.get("content", "")).startswith("Observation from "))
            if done < len(calls):
                name, arguments = calls[done]
                return json.dumps({"thought": "The next call.", "toolName": _tool(name),
                                   "toolInput": arguments, "finalAnswer": ""})
            return json.dumps({"thought": "Done.", "toolName": "none", "toolInput": "",
                               "finalAnswer": "All done."})
        answered = any(m.get("role") == "assistant" for m in later)
        if answered or not calls:
            return Reply(content="All done.")
        if "tools" in body:
            return Reply(tool_calls=[{"name": _tool(n), "arguments": a} for n, a in calls])
        return Reply(content="[" + ", ".join(
            f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls) + "]")

    def _find(self, messages: list[dict[str, Any]]) -> tuple[Case, int, int] | None:
        """The newest message that holds a known turn: its case, turn and position."""
        for position in range(len(messages) - 1, -1, -1):
            message = messages[position]
            if message.get("role") != "user":
                continue
            content = str(message.get("content", "")).strip()
            for text, (case, turn) in self.turns.items():
                if content == text or content.endswith(("User: " + text, "\n\n" + text)):
                    return case, turn, position
        return None


def _tool(name: str) -> str:
    """A BFCL name as the agent and the native tools know it (dots replaced)."""
    return re.sub(r"\.", "_", name)


def _is_summary(request: ChatRequest) -> bool:
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    return "running summary" in system


def _finish(request: ChatRequest, text: str) -> Action:
    if request.schema_name == "step":
        return json.dumps({"thought": text, "toolName": "none", "toolInput": "",
                           "finalAnswer": text})
    return Reply(content=text)
