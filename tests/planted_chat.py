"""A 500-turn conversation with planted facts, against a scripted model.

The user's side is ``tests/data/planted_facts.json`` (written independently of the
code). The model's side is scripted here, and plays fair:

- the agent answers every message directly, briefly;
- the **summarizer** is lossy but honest: it keeps what it is handed and nothing
  else. It writes one sentence per turn (the fact a turn states, else a gist of
  the user's words), keeps the previous summary and the facts it is asked to
  keep, drops what it is told no longer holds, and when over the target length
  drops its oldest chit-chat first, then its oldest sentences;
- the **fact extractor** reports what the turns it is handed say, in the
  operations the reply format allows: when the prompt lists known facts with
  ids it updates or retracts them by id; otherwise (py-agent before fact ids) it
  can only add, so an update is a new fact and a retraction is not expressible.

Used by ``bench/memory_fidelity.py`` (today's code and a checkout of the old code
both import this file, so only API both have is used) and to record
``tests/data/recorded_session_300.jsonl`` for the replay test::

    python tests/planted_chat.py --record tests/data/recorded_session_300.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "planted_facts.json"
_KNOWN = re.compile(r"^- (?:(f\d+) )?\[([a-z-]+)\] (.*)$", re.MULTILINE)
_USER = re.compile(r"^User: (.*)$", re.MULTILINE)


def load(path: Path = DATA) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def conversation(data: dict) -> list[tuple[int, str]]:
    """(turn, message) in order; two facts planted in one message are one turn."""
    turns: dict[int, str] = {}
    for fact in data["facts"]:
        for key in ("state", "update", "retract"):
            if fact[key]:
                turns[fact[key]["turn"]] = fact[key]["message"]
    for filler in data["filler"]:
        turns[filler["turn"]] = filler["message"]
    return sorted(turns.items())


class Script:
    """The scripted model's knowledge of what each planted message says."""

    def __init__(self, data: dict) -> None:
        self.data = data
        # message (first line, as prompts show it) -> [(fact, kind)]
        self.by_message: dict[str, list[tuple[dict, str]]] = {}
        for fact in data["facts"]:
            for kind in ("state", "update", "retract"):
                if fact[kind]:
                    key = self.key(fact[kind]["message"])
                    self.by_message.setdefault(key, []).append((fact, kind))

    @staticmethod
    def key(message: str) -> str:
        return " ".join(message.split())[:120]

    def said(self, user_text: str) -> list[tuple[dict, str]]:
        return self.by_message.get(self.key(user_text), [])

    # ------------------------------------------------------------- the agent

    def step(self, call) -> str:
        message = _user_message(call.input)
        gist = " ".join((message or "that").split()[:8])
        answer = (f"Here is a short answer about {gist}. I hope it helps; tell me if you "
                  "want more detail or a different angle on it.")
        return json.dumps({"thought": "I can answer this directly.", "toolName": "none",
                           "toolInput": "", "finalAnswer": answer})

    # ------------------------------------------------------- the extractor

    def facts(self, call) -> str:
        known = {text: fid for fid, _, text in _KNOWN.findall(call.input.split("<turns>")[0])}
        with_ids = any(fid for fid in known.values())
        turns_part = call.input.split("<turns>", 1)[-1]
        ops = []
        for user_text in _USER.findall(turns_part):
            for fact, kind in self.said(user_text):
                if kind == "state":
                    ops.append({"category": fact["category"], "text": fact["state"]["fact"]})
                    continue
                old = self._current_text(fact, kind)
                old_id = known.get(old) if with_ids else None
                if kind == "update":
                    op = {"category": fact["category"], "text": fact["update"]["fact"]}
                    if old_id:
                        op.update(op="update", replaces=old_id)
                    ops.append(op)
                elif old_id:  # a retraction needs an id to name
                    ops.append({"category": fact["category"], "op": "retract",
                                "replaces": old_id, "text": "the user said to forget it or "
                                                            "that it no longer holds"})
        return json.dumps({"facts": ops})

    @staticmethod
    def _current_text(fact: dict, kind: str) -> str:
        """The fact as it stood before this update or retraction."""
        if kind == "retract" and fact["update"] and fact["update"]["turn"] < fact["retract"]["turn"]:
            return fact["update"]["fact"]
        return fact["state"]["fact"]

    # ------------------------------------------------------ the summarizer

    def summary(self, call) -> str:
        text = call.input
        previous = _section(text, "previous-summary")
        previous = "" if previous.strip() == "(none)" else previous
        keep = [line[2:] for line in _section(text, "keep").splitlines() if line.startswith("- ")]
        outdated = [line[2:].split(" (now:")[0].split(" (retracted:")[0]
                    for line in _section(text, "outdated").splitlines()
                    if line.startswith("- ")]
        limit = _target_words(text)
        sentences: list[tuple[bool, str]] = []  # (salient, sentence)
        for sentence in re.split(r"(?<=[.!?])\s+", previous.strip()):
            if sentence and not any(_same(sentence, o) for o in outdated):
                sentences.append((not sentence.startswith("The user asked about"), sentence))
        sentences += [(True, _sentence(k)) for k in keep]
        for user_text in _USER.findall(_section(text, "turns")):
            said = self.said(user_text)
            if said:
                for fact, kind in said:
                    words = re.sub(r"[.!?]+", "", " ".join(user_text.split()[:16]))
                    sentences.append((True, _sentence(fact[kind]["fact"]) if kind != "retract"
                                      else f"The user said: {words}."))
            else:
                gist = re.sub(r"[.!?]+", "", " ".join(user_text.split()[:6]))
                sentences.append((False, f"The user asked about {gist}."))
        while sum(len(s.split()) for _, s in sentences) > limit and sentences:
            chat = next((i for i, (salient, _) in enumerate(sentences) if not salient), None)
            sentences.pop(chat if chat is not None else 0)
        return " ".join(s for _, s in sentences) or "The conversation has just started."

    def respond(self, call) -> str:
        purpose = getattr(call.purpose, "value", call.purpose)
        if purpose == "summary":
            return self.summary(call)
        if purpose == "facts":
            return self.facts(call)
        return self.step(call)


def _user_message(text: str) -> str | None:
    if "Tools for this request:" not in text:
        return None
    return text.rpartition("\n\nUser: ")[2]


def _section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def _target_words(text: str) -> int:
    match = re.search(r"in at most (\d+) words", text)
    return int(match.group(1)) if match else 300


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _same(sentence: str, fact_text: str) -> bool:
    norm = lambda s: re.sub(r"\W+", " ", s.lower()).strip()  # noqa: E731
    return norm(fact_text) in norm(sentence)


_DEFAULT: Script | None = None


def respond(call) -> str:
    """The scripted model on the default data set, as a FunctionModel responder
    (``python -m py_agent.replay ... --fixture tests/planted_chat.py:respond``)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Script(load())
    return _DEFAULT.respond(call)


# ------------------------------------------------------------------ running it

def normalise(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def facts_section(prompt: str) -> str:
    match = re.search(r"Key facts:\n(.*?)(?:\n\n|$)", prompt, re.DOTALL)
    return match.group(1) if match else ""


def summary_section(prompt: str) -> str:
    match = re.search(r"Summary of the earlier conversation:\n(.*?)(?:\n\n|$)", prompt, re.DOTALL)
    return match.group(1) if match else ""


def score(data: dict, prompt: str, last_turn: int) -> dict:
    """Current facts present in ``prompt``, and stale ones shown as current (their old
    value in the key facts), after ``last_turn`` turns."""
    whole, facts, summary = normalise(prompt), normalise(facts_section(prompt)), \
        normalise(summary_section(prompt))
    current = present = stale_facts = stale_summary = stale_total = 0
    missing, stale = [], []
    for fact in data["facts"]:
        if fact["state"]["turn"] > last_turn:
            continue
        stages = [("state", fact["state"])]
        if fact["update"] and fact["update"]["turn"] <= last_turn:
            stages.append(("update", fact["update"]))
        retracted = bool(fact["retract"] and fact["retract"]["turn"] <= last_turn)
        old = [s for _, s in stages[:-1]] + ([stages[-1][1]] if retracted else [])
        for stage in old:
            stale_total += 1
            probes = [normalise(p) for p in stage["probe"]]
            if any(p in facts for p in probes):
                stale_facts += 1
                stale.append(fact["id"])
            if any(p in summary for p in probes):
                stale_summary += 1
        if not retracted:
            current += 1
            if any(normalise(p) in whole for p in stages[-1][1]["probe"]):
                present += 1
            else:
                missing.append(fact["id"])
    return {"current": current, "present": present, "missing": missing,
            "stale_total": stale_total, "stale_in_facts": stale_facts, "stale": stale,
            "stale_in_summary": stale_summary}


async def never(call) -> str:
    """A summarizer that never answers."""
    await asyncio.Event().wait()
    return ""


async def run(turns: int = 500, window: int = 9216, data: dict | None = None,
              export: bool = False, hang_summary: bool = False,
              idle_wait: float = 60.0) -> tuple[dict, str | None]:
    """Play the conversation; returns the measures and, with ``export``, the session
    as JSON Lines. After each turn it waits (up to ``idle_wait`` s) for compaction, as
    a user reading the answer would; ``hang_summary`` makes the summarizer hang."""
    from py_agent import Agent, InMemoryStore, MemoryPolicy
    from py_agent.testing import FunctionModel

    data = data or load()
    script = Script(data)

    def respond(call):
        if hang_summary and getattr(call.purpose, "value", "") == "summary":
            return never(call)
        return script.respond(call)

    # With a hanging summarizer, a short summary timeout where the policy has one
    # (py-agent before issue 10 has none): the bench should not wait minutes per call.
    fields = getattr(MemoryPolicy, "__dataclass_fields__", {})
    policy = MemoryPolicy(summary_timeout_s=0.05) if hang_summary and \
        "summary_timeout_s" in fields else None
    model = FunctionModel(respond, context_window=window)
    agent = Agent(model=model, store=InMemoryStore(), memory=policy)
    tokens, first_prompt, answered, idle_timeouts = [], "", 0, 0
    played = conversation(data)[:turns]
    for turn, message in played:
        before = len(model.calls)
        result = await agent.run(message, session_id="planted")
        answered += result.status == "answered"
        steps = [c for c in model.calls[before:] if getattr(c.purpose, "value", "") == "step"]
        tokens.append(sum(c.input_tokens for c in steps))
        first_prompt = steps[0].input if steps else first_prompt
        # The user reads the answer before writing again; never cancel a compaction.
        done, _ = await asyncio.wait({asyncio.ensure_future(agent.wait_idle())},
                                     timeout=idle_wait)
        idle_timeouts += not done
    measures = score(data, first_prompt, played[-1][0])
    measures["answered"] = answered
    measures["wait_idle_timeouts"] = idle_timeouts
    measures["turn_1_fact_in_last_prompt"] = normalise("Mags") in normalise(first_prompt)
    calls = agent.model_calls
    try:
        state = await agent.memory_state("planted")
    except KeyError:  # every turn failed: no session
        state = None
    measures.update({
        "turns": len(played), "overflows": model.quota_errors + model.overflow_events,
        "compaction_calls_per_100": round((calls["summary"] + calls["facts"]) * 100
                                          / len(played), 1),
        "prompt_tokens_mean": round(statistics.mean(tokens), 1) if tokens else 0,
        "prompt_tokens_max": max(tokens, default=0),
        "compactions": state.compactions if state else 0,
        "failed_compactions": state.failed_compactions if state else 0,
        "key_facts": len(state.facts) if state else 0})
    return measures, (await agent.export_session("planted") if export else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--window", type=int, default=9216)
    parser.add_argument("--record", help="export the session (JSON Lines) to this file")
    parser.add_argument("--json", action="store_true", help="print the measures as JSON")
    parser.add_argument("--hang-summary", action="store_true",
                        help="a summarizer that never answers")
    parser.add_argument("--idle-wait", type=float, default=60.0,
                        help="seconds to wait for compaction after each turn")
    args = parser.parse_args()
    measures, text = asyncio.run(run(args.turns, args.window, export=bool(args.record),
                                     hang_summary=args.hang_summary, idle_wait=args.idle_wait))
    if args.record:
        Path(args.record).write_text(text, encoding="utf-8")
    print(json.dumps(measures) if args.json else measures)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
