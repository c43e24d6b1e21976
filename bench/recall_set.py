"""The recall evaluation set, read from disk, and scaled up by replicating its sessions.

Pure standard library and py_agent, so the cost measurements (``bench/recall_cost.py``)
run unchanged in Pyodide. The format is that of ``tests/data/recall/`` (see its README):
``sessions.jsonl`` one archived turn per line, ``questions.jsonl`` one question per line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from py_agent.state import StepRecord, Turn

Key = tuple[str, int]
DAY_MS = 86_400_000.0
# The asking session's last turns up to the question are in the prompt already (the
# set's README: evidence in the asking session is at least 20 turns back): no method
# may return them.
IN_PROMPT = 19


@dataclass(frozen=True)
class Question:
    """One question of the set; ``in_prompt`` are the turns its prompt already holds."""

    id: str
    query: str
    asked_in: str
    asked_at: datetime
    evidence: tuple[Key, ...]
    kind: str
    half: str
    answer: str = ""
    in_prompt: frozenset[Key] = frozenset()

    @property
    def asked_ms(self) -> float:
        return self.asked_at.timestamp() * 1000.0


def parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def load_set(folder: Path) -> tuple[dict[str, list[Turn]], dict[str, str], list[Question]]:
    """Sessions (id -> turns, oldest first), their titles, and the questions."""
    sessions: dict[str, list[Turn]] = defaultdict(list)
    titles: dict[str, str] = {}
    with open(folder / "sessions.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            steps = [StepRecord(tool=s.get("tool", ""), tool_input=s.get("input", ""),
                                observation=str(s.get("observation", "")))
                     for s in row.get("steps") or []]
            sessions[row["session_id"]].append(Turn(
                int(row["turn_id"]), row["user"], row["answer"], steps,
                created_at=parse_time(row["time"]).timestamp() * 1000.0))
            titles[row["session_id"]] = row.get("session_title", "")
    for turns in sessions.values():
        turns.sort(key=lambda t: t.id)
    questions = load_questions(folder / "questions.jsonl")
    return dict(sessions), titles, questions


def load_questions(path: Path) -> list[Question]:
    """The questions of a file in the format of ``questions.jsonl`` (also that of the
    paraphrased questions, ``tests/data/recall_paraphrase.jsonl``)."""
    questions = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            asked_in = row.get("asked_in") or row["session_id"]
            after = int(row.get("after_turn") or 0)
            recent = frozenset((asked_in, i) for i in range(max(1, after - IN_PROMPT + 1),
                                                            after + 1))
            questions.append(Question(
                str(row.get("id", len(questions) + 1)), row["query"], asked_in,
                parse_time(row["asked_at"]),
                tuple((e["session_id"], int(e["turn_id"])) for e in row["evidence"]),
                row.get("kind", ""), row.get("half", "report"), row.get("answer", ""), recent))
    return questions


def replicate(sessions: dict[str, list[Turn]], total: int) -> dict[str, list[Turn]]:
    """Exactly ``total`` turns: the set's sessions, then copies under new ids shifted back
    in time by whole multiples of the set's span (cut in the last copy)."""
    times = [t.created_at for turns in sessions.values() for t in turns]
    span = max(times) - min(times) + DAY_MS
    out: dict[str, list[Turn]] = {}
    count, copy = 0, 0
    while count < total:
        for session_id, turns in sessions.items():
            if count >= total:
                break
            name = session_id if copy == 0 else f"{session_id}~{copy}"
            take = turns[:total - count]
            out[name] = [Turn(t.id, t.user, t.answer, t.steps, t.status,
                              t.created_at - copy * span) for t in take]
            count += len(take)
        copy += 1
    return out


def archive_bytes(sessions: dict[str, list[Turn]]) -> int:
    """The archive as the stores keep it: each turn's JSON."""
    return sum(len(json.dumps(t.to_dict(), ensure_ascii=False).encode())
               for turns in sessions.values() for t in turns)
