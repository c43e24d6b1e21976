#!/usr/bin/env python3
"""Archive recall on LoCoMo, through ``Agent.recall``, against BM25Okapi, in one run.

    python bench/locomo.py --data /work/shared/data/locomo     # both halves
    python bench/locomo.py --data DIR --half report

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, so never in this repository: see
tests/data/recall/locomo.md for where a copy lives and how it maps to our format) holds
ten long two-person conversations and questions with evidence turns. Each conversation
is one archive: its sessions written to an :class:`~py_agent.InMemoryStore`, an agent
made over it, and every answerable question (categories 1-4) asked through
:meth:`py_agent.Agent.recall` from a new session, as a user would ask it. Methods:

- ``bm25-okapi``: rank_bm25's BM25Okapi over each turn's text (lowercased words);
- ``recall``: the agent without an embedder (lexical recall, as before);
- ``recall+dense``: the agent with USE multilingual v3 (the ``embed`` extra), the turn
  vectors made in the background by the agent itself, waited for before asking.

Halves by conversation (26, 41, 43, 47, 49 tune; the rest report); the settings were
tuned on the project's own recall set, not on LoCoMo. Measures: evidence hit@1/3/5
(any evidence turn among the first k) and MRR.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rank_bm25 import BM25Okapi  # noqa: E402

from py_agent import Agent, InMemoryStore  # noqa: E402
from py_agent.state import SessionState, Turn  # noqa: E402
from py_agent.testing import FunctionModel  # noqa: E402

TUNE = {"26", "41", "43", "47", "49"}
KS = (1, 3, 5)
Key = tuple[str, int]


def load_conversation(path: Path) -> tuple[dict[str, list[Turn]], dict[str, str],
                                           list[tuple[str, tuple[Key, ...]]]]:
    """Sessions (id -> turns), titles, and (question, evidence) pairs of one file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    n = path.stem
    a, b = data["speaker_a"], data["speaker_b"]
    sessions: dict[str, list[Turn]] = {}
    titles: dict[str, str] = {}
    where: dict[str, Key] = {}
    number = 1
    while f"session_{number}" in data:
        utterances = data[f"session_{number}"]
        if utterances:
            session_id = f"{n}-s{number:02d}"
            start = datetime.strptime(data[f"session_{number}_date_time"],
                                      "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
            turns = []
            for i in range(0, len(utterances), 2):
                pair = utterances[i:i + 2]
                texts = [_said(u) for u in pair]
                turn_id = i // 2 + 1
                turns.append(Turn(turn_id, texts[0], texts[1] if len(texts) > 1 else "",
                                  created_at=start.timestamp() * 1000 + 30_000 * i))
                for u in pair:
                    where[u["dia_id"]] = (session_id, turn_id)
            sessions[session_id] = turns
            titles[session_id] = f"{a} & {b}, session {number}"
        number += 1
    questions = []
    for qa in data["qa"]:
        if qa.get("category") == 5:
            continue
        evidence = tuple(dict.fromkeys(where[e] for e in _ids(qa.get("evidence", []))
                                       if e in where))
        if evidence:
            questions.append((qa["question"], evidence))
    return sessions, titles, questions


def _said(utterance: dict) -> str:
    text = f"{utterance['speaker']}: {utterance['text']}"
    if utterance.get("blip_caption"):
        text += f" [shares a photo: {utterance['blip_caption']}]"
    return text


def _ids(evidence: list[str]) -> list[str]:
    out = []
    for item in evidence:  # a few entries hold several ids, or stray spaces
        out += re.findall(r"D\d+:\d+", item)
    return out


async def agent_ranks(sessions: dict[str, list[Turn]], titles: dict[str, str],
                      questions: list[str], dense: bool) -> list[list[Key]]:
    store = InMemoryStore()
    for session_id, turns in sessions.items():
        state = SessionState(session_id, title=titles[session_id],
                             next_turn_id=len(turns) + 1)
        await store.commit_turn(state, turns)
    embedder = None
    if dense:
        from py_agent.embedding.use_m3 import load_use_m3
        embedder = load_use_m3
    agent = Agent(FunctionModel(lambda call: ""), store, embedder=embedder)
    try:
        recall = agent.archive_recall
        assert recall is not None
        await recall.settled(600)
        if dense:
            await agent.embedder.wait_ready(120)
            assert recall.vectors is not None
            recall.vectors.wake()
            await recall.vectors.settled(1800)
        out = []
        for question in questions:
            hits = await agent.recall(question, k=max(KS))
            out.append([(h.session_id, h.turn_id) for h in hits])
        return out
    finally:
        await agent.close()


def okapi_ranks(sessions: dict[str, list[Turn]], questions: list[str]) -> list[list[Key]]:
    keys = [(s, t.id) for s, turns in sessions.items() for t in turns]
    words = lambda text: re.findall(r"[^\W_]+", text.lower())  # noqa: E731
    bm25 = BM25Okapi([words(f"{t.user}\n{t.answer}") or ["\0"]
                      for turns in sessions.values() for t in turns])
    out = []
    for question in questions:
        scores = bm25.get_scores(words(question))
        order = sorted((i for i in range(len(keys)) if scores[i] > 0), key=lambda i: -scores[i])
        out.append([keys[i] for i in order[:max(KS)]])
    return out


def measures(ranked: list[list[Key]], evidence: list[tuple[Key, ...]]) -> dict[str, float]:
    n = max(1, len(ranked))
    out = {f"hit@{k}": sum(bool(set(e) & set(r[:k])) for r, e in zip(ranked, evidence)) / n
           for k in KS}
    out["MRR"] = sum(next((1 / (i + 1) for i, key in enumerate(r) if key in e), 0.0)
                     for r, e in zip(ranked, evidence)) / n
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="the folder holding data/multimodal_dialog/locomo10_v2/")
    parser.add_argument("--half", choices=("tune", "report", "both"), default="both")
    parser.add_argument("--methods", default="bm25-okapi,recall,recall+dense")
    args = parser.parse_args()
    folder = args.data / "data" / "multimodal_dialog" / "locomo10_v2"
    if not folder.is_dir():
        print(f"LoCoMo is not at {folder}: skipped (see tests/data/recall/locomo.md)")
        return 0
    methods = args.methods.split(",")
    halves = ("tune", "report") if args.half == "both" else (args.half,)
    results: dict[str, dict[str, list]] = {h: {m: [] for m in methods} for h in halves}
    evidence: dict[str, list] = {h: [] for h in halves}
    for path in sorted(folder.glob("*.json")):
        half = "tune" if path.stem in TUNE else "report"
        if half not in halves:
            continue
        sessions, titles, qas = load_conversation(path)
        questions = [q for q, _ in qas]
        evidence[half] += [e for _, e in qas]
        for method in methods:
            if method == "bm25-okapi":
                ranks = okapi_ranks(sessions, questions)
            else:
                ranks = asyncio.run(agent_ranks(sessions, titles, questions,
                                                dense=method == "recall+dense"))
            results[half][method] += ranks
        print(f"conversation {path.stem} ({half}): {sum(len(t) for t in sessions.values())} "
              f"turns, {len(questions)} questions", file=sys.stderr, flush=True)
    for half in halves:
        print(f"\n### LoCoMo, {half} half (n={len(evidence[half])})\n")
        print("| method | hit@1 | hit@3 | hit@5 | MRR |\n|---|---|---|---|---|")
        for method in methods:
            m = measures(results[half][method], evidence[half])
            print(f"| {method} | " + " | ".join(f"{m[f'hit@{k}']:.3f}" for k in KS)
                  + f" | {m['MRR']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
