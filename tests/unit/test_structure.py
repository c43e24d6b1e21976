"""The library's structure, read from its source: imports go one way, private stays private.

- no import circles among py_agent's modules, counting imports inside functions (such
  an import only moves the failure from import time to call time);
- nothing imports a ``_private`` module from outside that module's folder (tests and
  benchmarks included);
- no module reads or writes another object's ``_private`` attribute;
- imports go down the layers: agent → turn → memory and recall → the session table and
  base sessions → the store, model and plain data (entry points excepted).
"""

from __future__ import annotations

import ast
from pathlib import Path

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


# The layers, top to bottom (docs/layout.md): a module imports its own layer or lower
# ones, never upward; memory and recall sit side by side and do not import each other.
# Entry points (the package's front, the page's and the terminal's glue, replay) sit
# above them all and may import anything.
LAYERS = {"py_agent.agent": ("agent", 5), "py_agent.memory_report": ("agent", 5),
          "py_agent.turn": ("turn", 4), "py_agent.page": ("page", 4),
          "py_agent.memory": ("memory", 3), "py_agent.recall": ("recall", 3),
          "py_agent.sessions": ("sessions", 2), "py_agent.bases": ("sessions", 2),
          "py_agent.profile_table": ("sessions", 2)}
ENTRY_POINTS = {"py_agent", "py_agent.browser", "py_agent.terminal", "py_agent.host",
                "py_agent.replay", "py_agent.__main__"}


def layer_of(name: str) -> tuple[str, int]:
    """The layer's name and rank (the plain-data, store and model modules: rank 1)."""
    for prefix, layer in LAYERS.items():
        if name == prefix or name.startswith(prefix + "."):
            return layer
    return "base", 1


def test_imports_go_down_the_layers():
    known = modules()
    upward = []
    for name, path in known.items():
        if any(name == e or name.startswith(e + ".") for e in ENTRY_POINTS - {"py_agent"}) \
                or name == "py_agent":
            continue
        own, rank = layer_of(name)
        for target in imported(path, set(known)):
            other, target_rank = layer_of(target)
            if target_rank > rank or (target_rank == rank and other != own):
                upward.append(f"{name} -> {target}")
    assert upward == []
