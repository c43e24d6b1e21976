#!/usr/bin/env python3
"""Derive the public tool-retrieval set in tests/data/bfcl/ from BFCL's published data.

The Berkeley Function Calling Leaderboard (BFCL, Apache-2.0) ships its questions and
function documents in the ``bfcl-eval`` package on PyPI. Every question comes with the
functions the model may call and the one it should; pooling the functions of a category
gives a registry, and each question labelled with its expected function is a retrieval
query. Two sets:

- ``live``: BFCL's "live" categories (``live_simple``, ``live_multiple``): requests real
  users contributed, short and often informal, some not in English.
- ``synthetic``: the original categories (``simple_python``, ``multiple``): long
  descriptive requests written for the benchmark.

Only questions with one user message and one expected function are kept. A function
name met twice with different descriptions keeps its first description. Each query is
put in the ``tune`` or ``report`` half by a hash of its BFCL id, so the split is stable.

    python bench/make_bfcl_set.py path/to/bfcl_eval-*.whl   # (pip download bfcl-eval)
"""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "bfcl"
SETS = {"live": ["live_simple", "live_multiple"], "synthetic": ["simple_python", "multiple"]}
DESCRIPTION_CHARS = 300


def split_of(query_id: str) -> str:
    return "tune" if hashlib.sha1(query_id.encode()).digest()[0] % 2 == 0 else "report"


def short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS - 1] + "…"


def read_jsonl(archive: zipfile.ZipFile, name: str) -> list[dict]:
    return [json.loads(line) for line in archive.read(name).decode().splitlines() if line.strip()]


def build(archive: zipfile.ZipFile, categories: list[str]) -> tuple[list[dict], list[dict]]:
    tools: dict[str, dict] = {}
    queries = []
    for category in categories:
        questions = read_jsonl(archive, f"bfcl_eval/data/BFCL_v4_{category}.json")
        answers = {a["id"]: a for a in read_jsonl(
            archive, f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")}
        for q in questions:
            for f in q["function"]:
                if f["name"] not in tools:
                    props = (f.get("parameters") or {}).get("properties") or {}
                    tools[f["name"]] = {
                        "name": f["name"], "description": short(f.get("description", "")),
                        "params": [{"name": p, "description": short(v.get("description", ""))}
                                   for p, v in props.items()]}
            expected = {name for call in answers[q["id"]]["ground_truth"] for name in call}
            users = [m["content"] for m in q["question"][0] if m["role"] == "user"]
            if len(expected) == 1 and len(users) == 1 and users[0].strip():
                queries.append({"id": q["id"], "query": users[0], "tool": expected.pop(),
                                "split": split_of(q["id"])})
    return list(tools.values()), queries


def main(wheel: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name, categories in SETS.items():
            tools, queries = build(archive, categories)
            (OUT / f"{name}_tools.jsonl").write_text(
                "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tools))
            (OUT / f"{name}_queries.jsonl").write_text(
                "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
            halves = {s: sum(q["split"] == s for q in queries) for s in ("tune", "report")}
            print(f"{name}: {len(tools)} tools, {len(queries)} queries {halves}")


if __name__ == "__main__":
    main(sys.argv[1])
