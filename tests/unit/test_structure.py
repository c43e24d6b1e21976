"""The library's structure, read from its source: imports go one way, private stays private.

- no import circles among py_agent's modules, counting imports inside functions (such
  an import only moves the failure from import time to call time);
- nothing imports a ``_private`` module from outside that module's folder (tests and
  benchmarks included);
- no module reads or writes another object's ``_private`` attribute;
- imports go down the layers (``LAYERS`` below, docs/layout.md), every module has one,
  and the check itself catches an upward import (entry points excepted).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "py_agent"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, known: set[str]) -> set[str]:
    """The py_agent modules ``path`` imports, anywhere in it."""
    name = module_name(path) if path.is_relative_to(PACKAGE) else ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rpartition(".")[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level \
                else (node.module or "")
            for alias in node.names:
                full = f"{module}.{alias.name}"
                add(full if full in known else module)
    return found


def test_no_import_circles_in_py_agent():
    known = modules()
    graph = {name: imported(path, set(known)) for name, path in known.items()}
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_private_modules_are_imported_only_from_their_own_folder():
    known = modules()
    sources = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
               *(ROOT / "bench").glob("*.py")]
    wrong = []
    for path in sources:
        for target in imported(path, set(known)):
            private = [i for i, part in enumerate(target.split(".")) if part.startswith("_")]
            if not private:
                continue
            folder = known[target].parent
            if not path.resolve().is_relative_to(folder):
                wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert wrong == []


def test_no_module_touches_another_objects_private_attributes():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert wrong == []


# The layers, bottom to top (docs/layout.md): a module imports its own layer or lower
# ones, never upward, and never a different layer of its own rank (those sit side by
# side: mcp, openai_compat and retrieval; memory and recall; turn and page). Every module
# has a layer: a new one is placed here, or the test says where it is missing. Entry
# points (the package's front, the page's and the terminal's glue, replay) sit above
# them all and may import anything.
LAYERS: dict[str, tuple[str, int]] = {
    # 1. plain data and what needs nothing of the agent's
    **dict.fromkeys(["py_agent.state", "py_agent.boundary", "py_agent.redaction", "py_agent.tokens",
                     "py_agent.waiting", "py_agent.events", "py_agent.profile",
                     "py_agent.transfer", "py_agent.memory_view",
                     "py_agent.attachments"], ("data", 1)),
    # 2. the model and store protocols, their bridges, and the context budget
    **dict.fromkeys(["py_agent.model", "py_agent.store", "py_agent.message_list",
                     "py_agent.constraints", "py_agent.parsing", "py_agent._model_guard",
                     "py_agent.replies", "py_agent.rpc", "py_agent.kv",
                     "py_agent.sqlite_store", "py_agent.testing", "py_agent.budget",
                     "py_agent.results"], ("protocols", 2)),
    # texts as vectors: the embedder protocol, the default model, vectors and their search
    "py_agent.embedding": ("embedding", 2),
    # 3. what a tool is, and the agent's tools from their sources
    "py_agent.tools": ("tools", 3),
    # 4. what uses tools or models without the agent: side by side
    "py_agent.retrieval": ("retrieval", 4), "py_agent.mcp": ("mcp", 4),
    "py_agent.openai_compat": ("openai_compat", 4),
    # 5. prompt text and the fixed prefix
    "py_agent.prompting": ("prompting", 5), "py_agent.prefix": ("prompting", 5),
    # 6. the session table and the base model sessions
    "py_agent.sessions": ("sessions", 6), "py_agent.bases": ("sessions", 6),
    "py_agent.profile_table": ("sessions", 6),
    # 7. memory and recall, side by side
    "py_agent.memory": ("memory", 7), "py_agent.recall": ("recall", 7),
    # 8. one turn, and the page being read, side by side
    "py_agent.turn": ("turn", 8), "py_agent.page": ("page", 8),
    # 9. the agent
    "py_agent.agent": ("agent", 9), "py_agent.memory_report": ("agent", 9),
}
ENTRY_POINTS = {"py_agent", "py_agent.browser", "py_agent.terminal", "py_agent.host",
                "py_agent.replay", "py_agent.__main__"}


def is_entry_point(name: str) -> bool:
    return name == "py_agent" or any(name == e or name.startswith(e + ".")
                                     for e in ENTRY_POINTS - {"py_agent"})


def layer_of(name: str) -> tuple[str, int] | None:
    """The layer's name and rank of the longest prefix of ``name`` in LAYERS, if any."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        layer = LAYERS.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def layer_problems(graph: dict[str, set[str]]) -> list[str]:
    """Each import of ``graph`` (module -> the py_agent modules it imports) that goes up
    the layers or sideways, and each module with no layer."""
    problems = []
    for name, targets in sorted(graph.items()):
        if is_entry_point(name):
            continue
        own = layer_of(name)
        if own is None:
            problems.append(f"{name} has no layer: add it to LAYERS (and docs/layout.md)")
            continue
        for target in sorted(targets):
            other = layer_of(target)
            if other is None or is_entry_point(target):
                problems.append(f"{name} -> {target}: not a layer it may import")
            elif other[1] > own[1] or (other[1] == own[1] and other[0] != own[0]):
                problems.append(f"{name} ({own[0]}) -> {target} ({other[0]})")
    return problems


def test_imports_go_down_the_layers():
    known = modules()
    graph = {name: imported(path, set(known)) for name, path in known.items()}
    assert layer_problems(graph) == []


@pytest.mark.parametrize("importer,target", [
    ("py_agent.tools.toolbox", "py_agent.mcp"),
    ("py_agent.tools.toolbox", "py_agent.openai_compat.model"),
    ("py_agent.tools.definition", "py_agent.retrieval"),
    ("py_agent.tools.origin", "py_agent.prompting"),
    ("py_agent.retrieval.retriever", "py_agent.mcp.server"),      # side by side
    ("py_agent.mcp.server", "py_agent.openai_compat"),
    ("py_agent.budget", "py_agent.prompting"),
    ("py_agent.model", "py_agent.tools"),
    ("py_agent.memory.engine", "py_agent.recall.archive"),         # side by side
    ("py_agent.recall.index", "py_agent.memory"),
    ("py_agent.page.tools", "py_agent.turn.loop"),
    ("py_agent.turn.runner", "py_agent.agent"),
    ("py_agent.sessions", "py_agent.host"),                         # an entry point
])
def test_an_upward_or_sideways_import_is_caught(importer, target):
    assert layer_problems({importer: {target}}) != []


def test_the_tools_new_modules_may_import_the_tools_and_the_bottom_layers():
    # the tool plumbing's own modules: py_agent.tools and model, budget, tokens, events,
    # boundary (and the rest of the two bottom layers) only
    bottom = {"py_agent.tools", "py_agent.tools.definition", "py_agent.model",
              "py_agent.budget", "py_agent.tokens", "py_agent.events", "py_agent.boundary",
              "py_agent.state", "py_agent.kv"}
    graph = {f"py_agent.tools.{name}": bottom for name in ("toolbox", "origin", "run_context")}
    assert layer_problems(graph) == []


def test_a_module_without_a_layer_is_named():
    assert layer_problems({"py_agent.newthing": set()}) == [
        "py_agent.newthing has no layer: add it to LAYERS (and docs/layout.md)"]
