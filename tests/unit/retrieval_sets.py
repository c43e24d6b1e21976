"""Labelled retrieval sets, loaded as tools and queries for the tests and bench/retrieval.py.

- ``corpus``: tests/unit/retrieval_corpus.py, 60 tools of a browser assistant (no examples);
  its queries split tune/report by a hash of their text.
- ``demo``: the page's demo tools, with the issue's quoted requests and the demo cases.
- ``everyday``: tests/data/everyday_demo.jsonl, everyday requests to the demo's tools written
  from the user's side (with follow-ups and chit-chat), split tune/report.
- ``bfcl-live`` / ``bfcl-synthetic``: tests/data/bfcl/, public (BFCL, Apache-2.0), split
  tune/report by a hash of the query id.
- ``heldout``: tests/data/heldout_tools.py and heldout_queries.jsonl, another app's tools
  and requests written by someone who saw only their names and descriptions.
- ``multilingual-demo`` / ``multilingual-heldout``: tests/data/multilingual_*.jsonl,
  requests (and chit-chat) in 20 languages to the demo's and the held-out app's tools;
  ``chitchat-en``: tests/data/chitchat_en.jsonl, English chit-chat and requests that
  avoid the tools' words. All three written from the user's side (tests/data/README.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from py_agent.retrieval import PreviousTurn
from py_agent.tools import Tool, ToolParam

DATA = Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True)
class Query:
    """A message, the tools that would serve it (empty: chit-chat), and the turn before."""

    text: str
    expected: frozenset[str]
    previous: PreviousTurn | None = None
    split: str = "report"
    kind: str = "single"  # "single", "followup" or "chitchat"
    needs_all: bool = False  # every expected tool must be offered, not just one

    def hit(self, names: list[str]) -> bool:
        """Does a ranking or offer serve this request?"""
        found = self.expected & set(names)
        return found == self.expected if self.needs_all else bool(found)


@dataclass
class RetrievalSet:
    name: str
    tools: list[Tool]
    queries: list[Query] = field(default_factory=list)

    def half(self, split: str | None) -> list[Query]:
        return [q for q in self.queries if split is None or q.split == split]


def _noop(**_: Any) -> None:
    return None


def tool_from_dict(d: dict[str, Any]) -> Tool:
    """A :class:`Tool` from a plain description (name, description, params, examples...)."""
    params = []
    given = d.get("params", [])
    if isinstance(given, dict):  # {"name": "type"}
        given = [{"name": k, "schema": {"type": v}} for k, v in given.items()]
    for p in given:
        if isinstance(p, str):
            p = {"name": p}
        params.append(ToolParam(p["name"], p.get("schema", {"type": "string"}),
                                p.get("required", True), description=p.get("description", "")))
    return Tool(d["name"], d.get("description", ""), params, fn=_noop,
                examples=list(d.get("examples", [])), keywords=list(d.get("keywords", [])))


def split_of(text: str) -> str:
    """A stable tune/report half for a set that comes without one."""
    return "tune" if hashlib.sha1(text.encode()).digest()[0] % 2 == 0 else "report"


def corpus_set() -> RetrievalSet:
    from tests.unit import retrieval_corpus as corpus
    return RetrievalSet("corpus", [tool_from_dict(t) for t in corpus.TOOLS],
                        [Query(q, frozenset([e]), split=split_of(q)) for q, e in corpus.QUERIES])


# The requests quoted in issue 9, which the old retriever failed.
ISSUE_QUOTES = [
    ("What is 17 times 23? Use the calculator.", "calculate"),
    ("How much is 15% of 80?", "calculate"),
    ("Use the calculator please", "calculate"),
    ("19 x 47 = ?", "calculate"),
    ("what's 70 kg in pounds", "convert_units"),
    ("what year is it", "current_datetime"),
    ("heads or tails?", "roll_dice"),
]


def demo_set() -> RetrievalSet:
    from tests.unit.demo import demo_tools
    from tests.unit.test_demo_tools import RETRIEVAL_CASES
    cases = ISSUE_QUOTES + list(RETRIEVAL_CASES)
    return RetrievalSet("demo", demo_tools(), [Query(q, frozenset([e])) for q, e in cases])


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def everyday_set() -> RetrievalSet | None:
    """The everyday requests to the demo's tools, or None when the file is missing."""
    path = DATA / "everyday_demo.jsonl"
    if not path.exists():
        return None
    from py_agent.turn import compact_tool
    from py_agent.turn.recall_tool import recall_tool
    from tests.unit.demo import demo_tools
    queries = [_query_of(row) for row in _jsonl(path)]
    # The agent's registry: the demo's tools and the two built-in ones.
    return RetrievalSet("everyday", [*demo_tools(), compact_tool(), recall_tool()], queries)


def _query_of(row: dict[str, Any]) -> Query:
    expected = row.get("expected_tools", row.get("tools", row.get("tool", [])))
    if isinstance(expected, str):
        expected = [expected] if expected else []
    expected = [e for e in expected if e and e != "none"]
    previous = None
    before = row.get("previous") or row.get("previous_turn")
    if before:
        if isinstance(before, str):
            before = {"message": before}
        tools = before.get("tools", before.get("tool", []))
        previous = PreviousTurn(str(before.get("message", before.get("user", ""))),
                                tuple([tools] if isinstance(tools, str) else tools))
    kind = row.get("kind") or ("chitchat" if not expected else
                               "followup" if previous else "single")
    return Query(row.get("message", row.get("query", row.get("text", ""))), frozenset(expected),
                 previous, row.get("split", "report"), kind,
                 bool(row.get("needs_all")) or kind == "multi")


def bfcl_set(name: str) -> RetrievalSet:
    """``live`` or ``synthetic``: BFCL's functions pooled as a registry, with its requests."""
    tools = [tool_from_dict(t) for t in _jsonl(DATA / "bfcl" / f"{name}_tools.jsonl")]
    queries = [Query(q["query"], frozenset([q["tool"]]), split=q["split"])
               for q in _jsonl(DATA / "bfcl" / f"{name}_queries.jsonl")]
    return RetrievalSet(f"bfcl-{name}", tools, queries)


def heldout_set() -> RetrievalSet | None:
    """Another app's registry and requests, or None when the files are missing."""
    tools_file, queries_file = DATA / "heldout_tools.py", DATA / "heldout_queries.jsonl"
    if not tools_file.exists() or not queries_file.exists():
        return None
    spec = importlib.util.spec_from_file_location("heldout_tools", tools_file)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    tools = _registry_of(module)
    return RetrievalSet("heldout", tools, [_query_of(r) for r in _jsonl(queries_file)])


def _registry_of(module: Any) -> list[Tool]:
    for name in ("TOOLS", "tools", "REGISTRY"):
        value = getattr(module, name, None)
        if value is not None:
            return [v if isinstance(v, Tool) else tool_from_dict(v) for v in value]
    found = [v for v in vars(module).values() if isinstance(v, Tool)]
    if not found:
        raise ValueError("the held-out registry defines no tools")
    return found


def demo_registry() -> list[Tool]:
    """The demo's tools as the agent offers them: with the built-in compact and recall."""
    from py_agent.turn import compact_tool
    from py_agent.turn.recall_tool import recall_tool
    from tests.unit.demo import demo_tools
    return [*demo_tools(), compact_tool(), recall_tool()]


def multilingual_demo_set() -> RetrievalSet | None:
    path = DATA / "multilingual_demo.jsonl"
    if not path.exists():
        return None
    return RetrievalSet("multilingual-demo", demo_registry(), [_query_of(r) for r in _jsonl(path)])


def multilingual_heldout_set() -> RetrievalSet | None:
    path, held_out = DATA / "multilingual_heldout.jsonl", heldout_set()
    if not path.exists() or held_out is None:
        return None
    return RetrievalSet("multilingual-heldout", held_out.tools,
                        [_query_of(r) for r in _jsonl(path)])


def chitchat_en_set() -> RetrievalSet | None:
    path = DATA / "chitchat_en.jsonl"
    if not path.exists():
        return None
    return RetrievalSet("chitchat-en", demo_registry(), [_query_of(r) for r in _jsonl(path)])


def all_sets() -> list[RetrievalSet]:
    sets = [corpus_set(), demo_set(), everyday_set(), bfcl_set("live"), bfcl_set("synthetic"),
            heldout_set(), multilingual_demo_set(), multilingual_heldout_set(), chitchat_en_set()]
    return [s for s in sets if s is not None]


Loader = Callable[[], RetrievalSet | None]
