"""Build the archive-recall evaluation set from its hand-written sources.

The chats live in ``src/sNN_*.txt`` (one file per chat session) and the questions in
``src/questions.txt``; ``templates.py`` supplies the small everyday filler turns
(conversions, sums, dates, to-dos...) that real chats are full of. This script gives every
turn its id and timestamp, draws the fillers with a fixed seed, resolves each question's
evidence labels to (session_id, turn_id), and writes ``sessions.jsonl`` and
``questions.jsonl`` next to it. Same sources, same output, byte for byte.

Session file format (lines; ``#`` starts a comment line)::

    title: Lisbon trip in May
    families: travel_money, date_math, todo:travel     # filler kinds for %fill
    @ 2025-02-05T19:12                                  # clock for the next turn (UTC)
    U: user message            (U[label]: ... names the turn for questions)
    S: tool | input | observation                       # optional tool steps
    A: assistant answer        (a literal \\n in U/A/S text is a line break)
    %fill 3                                             # three filler turns here
    == pool ==                                          # hand-written fillers, drawn by %fill

Questions file format (blank line between questions)::

    Q: the question as the user types it
    kind: entity
    ask: s20 2025-04-28T20:15          # session it is asked in, and when
    ev: s01:rest_liked, s05:other      # evidence labels
    dist: s19:dub_rest                 # optional: tempting wrong turns
    answer: short expected answer
    window: 2025-03-10 2025-03-16      # relative-date questions: the resolved days

Usage: ``python tests/data/recall/make_set.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load_templates():
    """templates.py sits next to this script (tests/data is not a package)."""
    spec = importlib.util.spec_from_file_location("recall_set_templates",
                                                  HERE / "templates.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


templates = _load_templates()

SEED = 24
MIN_GAP_TURNS = 20
KINDS = ("exact_detail", "recommendation", "cross_session", "changed_fact",
         "relative_date", "paraphrase", "entity", "number")


@dataclass
class Turn:
    label: str | None
    user: str
    answer: str
    steps: list[dict] = field(default_factory=list)


@dataclass
class Session:
    session_id: str
    title: str
    families: list[str]
    items: list[tuple]          # ("clock", datetime) | ("turn", Turn) | ("fill", n)
    pool: list[Turn]


def _text(raw: str) -> str:
    return raw.strip().replace("\\n", "\n")


def _parse_time(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%Y-%m-%dT%H:%M").replace(tzinfo=timezone.utc)


def parse_session(path: Path) -> Session:
    """Read one session source file; fail loudly on anything malformed."""
    session_id = path.name.split("_", 1)[0]
    title, families = "", []
    items: list[tuple] = []
    pool: list[Turn] = []
    in_pool = False
    pending: dict | None = None

    def target() -> list:
        return pool if in_pool else items

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{number}"
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("title:"):
            title = stripped[6:].strip()
        elif stripped.startswith("families:"):
            families = [f.strip() for f in stripped[9:].split(",") if f.strip()]
        elif stripped == "== pool ==":
            in_pool = True
        elif stripped.startswith("@"):
            items.append(("clock", _parse_time(stripped[1:])))
        elif stripped.startswith("%fill"):
            items.append(("fill", int(stripped[5:])))
        elif re.match(r"U(\[[\w-]+\])?:", stripped):
            if pending is not None:
                raise ValueError(f"{where}: user line before the previous turn's answer")
            match = re.match(r"U(?:\[([\w-]+)\])?:(.*)", stripped)
            pending = {"label": match.group(1), "user": _text(match.group(2)), "steps": []}
        elif stripped.startswith("S:"):
            if pending is None:
                raise ValueError(f"{where}: tool step outside a turn")
            parts = [p.strip() for p in stripped[2:].split("|")]
            if len(parts) != 3:
                raise ValueError(f"{where}: a step is 'tool | input | observation'")
            pending["steps"].append({"tool": parts[0], "input": _text(parts[1]),
                                     "observation": _text(parts[2])})
        elif stripped.startswith("A:"):
            if pending is None:
                raise ValueError(f"{where}: answer without a user line")
            target().append(Turn(pending["label"], pending["user"], _text(stripped[2:]),
                                 pending["steps"]) if in_pool else
                            ("turn", Turn(pending["label"], pending["user"],
                                          _text(stripped[2:]), pending["steps"])))
            pending = None
        else:
            raise ValueError(f"{where}: cannot read {stripped[:40]!r}")
    if pending is not None:
        raise ValueError(f"{path.name}: the last turn has no answer")
    if not title:
        raise ValueError(f"{path.name}: no title")
    if not items or items[0][0] != "clock":
        raise ValueError(f"{path.name}: must start with an @ clock line")
    return Session(session_id, title, families, items, pool)


def _gap(rng: random.Random, turn: Turn) -> timedelta:
    """Time to read, type and answer: longer messages take longer."""
    words = len(turn.user.split()) + len(turn.answer.split()) // 4
    return timedelta(seconds=40 + 3 * words + rng.randint(0, 200))


def build_session(session: Session, seen_users: set[str]) -> list[dict]:
    """Lay out one session's turns with ids, times and drawn fillers."""
    rng = random.Random(f"{SEED}-{session.session_id}")
    fills = sum(n for kind, n in session.items if kind == "fill")
    if fills < len(session.pool):
        raise ValueError(f"{session.session_id}: {len(session.pool)} pool turns but only "
                         f"{fills} fill slots")
    stream: list[Turn | None] = list(session.pool) + [None] * (fills - len(session.pool))
    rng.shuffle(stream)
    rows: list[dict] = []
    clock: datetime | None = None
    labels: set[str] = set()

    def place(turn: Turn) -> None:
        nonlocal clock
        seen_users.add(turn.user)       # fillers drawn later avoid every text so far
        if turn.label:
            if turn.label in labels:
                raise ValueError(f"{session.session_id}: label {turn.label} used twice")
            labels.add(turn.label)
        row = {"session_id": session.session_id, "session_title": session.title,
               "turn_id": len(rows) + 1, "time": clock.strftime("%Y-%m-%dT%H:%M:%SZ"),
               "user": turn.user, "answer": turn.answer}
        if turn.steps:
            row["steps"] = turn.steps
        row["_label"] = turn.label
        rows.append(row)
        clock += _gap(rng, turn)

    family_order = list(session.families)
    for kind, value in session.items:
        if kind == "clock":
            if clock is not None and value <= clock:
                raise ValueError(f"{session.session_id}: clock {value} goes back "
                                 f"(already at {clock})")
            clock = value
        elif kind == "turn":
            place(value)
        else:
            for _ in range(value):
                drawn = stream.pop()
                if drawn is None:
                    drawn = templates.make_turn(rng, family_order, clock, seen_users)
                    drawn = Turn(None, drawn["user"], drawn["answer"], drawn["steps"])
                place(drawn)
    return rows


@dataclass
class Question:
    query: str
    kind: str
    ask_session: str
    ask_time: datetime
    evidence: list[str]
    distractors: list[str]
    answer: str
    window: tuple[str, str] | None
    where: str


def parse_questions(path: Path) -> list[Question]:
    questions = []
    blocks = re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))
    for block in blocks:
        lines = [ln for ln in block.strip().splitlines() if ln.strip() and
                 not ln.lstrip().startswith("#")]
        if not lines:
            continue
        fields: dict[str, str] = {}
        for line in lines:
            key, _, value = line.partition(":")
            if not _:
                raise ValueError(f"questions: cannot read {line!r}")
            fields[key.strip()] = value.strip()
        missing = {"Q", "kind", "ask", "ev", "answer"} - fields.keys()
        if missing:
            raise ValueError(f"questions: {fields.get('Q', block[:40])!r} lacks {missing}")
        if fields["kind"] not in KINDS:
            raise ValueError(f"questions: unknown kind {fields['kind']}")
        ask_session, ask_time = fields["ask"].split()
        window = tuple(fields["window"].split()) if "window" in fields else None
        split = lambda v: [x.strip() for x in v.split(",") if x.strip()]  # noqa: E731
        questions.append(Question(fields["Q"], fields["kind"], ask_session,
                                  _parse_time(ask_time), split(fields["ev"]),
                                  split(fields.get("dist", "")), fields["answer"], window,
                                  fields["Q"][:50]))
    return questions


def _time(row: dict) -> datetime:
    return datetime.strptime(row["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def resolve_questions(questions: list[Question], turns: list[dict]) -> list[dict]:
    """Turn labels into ids, place each question in its session, split the halves."""
    by_label = {f"{r['session_id']}:{r['_label']}": r for r in turns if r["_label"]}
    by_session: dict[str, list[dict]] = {}
    for row in turns:
        by_session.setdefault(row["session_id"], []).append(row)
    out = []
    problems: list[str] = []
    for number, q in enumerate(questions, 1):
        def ref(label: str) -> dict:
            if label not in by_label:
                raise ValueError(f"question {q.where!r}: no turn labelled {label}")
            row = by_label[label]
            return {"session_id": row["session_id"], "turn_id": row["turn_id"]}
        session_rows = by_session[q.ask_session]
        after_turn = sum(1 for r in session_rows if _time(r) < q.ask_time)
        if after_turn < len(session_rows) and _time(session_rows[after_turn]) <= q.ask_time:
            raise ValueError(f"question {q.where!r}: asked at a turn's exact time")
        evidence = [ref(label) for label in q.evidence]
        for label in q.distractors:
            if label in by_label and _time(by_label[label]) >= q.ask_time:
                problems.append(f"{q.where!r}: distractor {label} is not older")
        for item, label in zip(evidence, q.evidence):
            row = by_label[label]
            if _time(row) >= q.ask_time:
                problems.append(f"{q.where!r}: evidence {label} is not older")
            if row["session_id"] == q.ask_session and after_turn + 1 - row["turn_id"] < \
                    MIN_GAP_TURNS:
                problems.append(f"{q.where!r}: evidence {label} is only "
                                f"{after_turn + 1 - row['turn_id']} turns back")
        record = {"id": f"q{number:03d}", "query": q.query, "kind": q.kind,
                  "session_id": q.ask_session,
                  "asked_at": q.ask_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "after_turn": after_turn, "evidence": evidence,
                  "distractors": [ref(label) for label in q.distractors],
                  "cross_session": any(e["session_id"] != q.ask_session for e in evidence),
                  "answer": q.answer}
        if q.window:
            record["window"] = {"start": q.window[0], "end": q.window[1]}
        out.append(record)
    if problems:
        raise ValueError("questions:\n  " + "\n  ".join(problems))
    _split_halves(out)
    return out


def _split_halves(records: list[dict]) -> None:
    """Alternate tune/report within each kind (file order); a kind with an odd count
    starts on whichever half is behind, so the halves stay within one of each other."""
    balance = 0                                   # tune minus report so far
    for kind in KINDS:
        first = "tune" if balance <= 0 else "report"
        other = "report" if first == "tune" else "tune"
        for index, record in enumerate(r for r in records if r["kind"] == kind):
            record["half"] = first if index % 2 == 0 else other
            balance += 1 if record["half"] == "tune" else -1


def build(src: Path) -> tuple[list[dict], list[dict]]:
    seen: set[str] = set()
    turns: list[dict] = []
    for path in sorted(src.glob("s[0-9][0-9]_*.txt")):
        turns.extend(build_session(parse_session(path), seen))
    questions = resolve_questions(parse_questions(src / "questions.txt"), turns)
    return turns, questions


def write(turns: list[dict], questions: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "sessions.jsonl", "w", encoding="utf-8") as handle:
        for row in turns:
            clean = {k: v for k, v in row.items() if k != "_label"}
            handle.write(json.dumps(clean, ensure_ascii=False) + "\n")
    with open(out / "questions.jsonl", "w", encoding="utf-8") as handle:
        for row in questions:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--labels", action="store_true",
                        help="print label -> id, for writing questions")
    args = parser.parse_args()
    turns, questions = build(HERE / "src")
    write(turns, questions, args.out)
    if args.labels:
        for row in turns:
            if row["_label"]:
                print(f"{row['session_id']}:{row['_label']} = turn {row['turn_id']} "
                      f"{row['time']}")
    sessions = {r["session_id"] for r in turns}
    print(f"{len(sessions)} sessions, {len(turns)} turns, {len(questions)} questions")


if __name__ == "__main__":
    main()
