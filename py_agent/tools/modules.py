"""Tool modules: an app's tools in Python files or packages of their own, loaded by path.

This is the one door through which tools reach an agent: the page's worker loads the
demo's tools and every ``python serve.py --tools PATH`` module with it, and a terminal
app can do the same. The contract of a tool module (a ``.py`` file, or a package
directory whose ``__init__.py`` is read):

- Its tools are its module-level :class:`~py_agent.tools.Tool` objects (functions
  decorated with ``@tool``): the names in ``__all__`` if it defines one, in that order,
  else every public name, in definition order. A package's ``__init__.py`` imports the
  tools of its submodules to offer them.
- Optionally, ``make_tools(context)`` returns more tools, for those that need what the
  app provides: ``context`` is a :class:`ToolContext`, whose ``kv`` is a
  :class:`~py_agent.kv.KeyValueStore` (IndexedDB in the page, a dict or SQLite in
  CPython) for the tools' own data. Keep your keys under a prefix of your own
  (the demo's are ``note:``, ``todo:``, ``meta:``): every module shares the store.
- A module that fails to import, or has no tools, raises :class:`ToolModuleError`, whose
  message names the module and says why; :func:`load_tool_modules` collects such errors
  and goes on with the other modules.
- Its pip dependencies may be declared with PEP 723 inline metadata (a ``# /// script``
  block with ``dependencies = [...]``), read by :func:`script_metadata`. The loader does
  not install them: ``serve.py`` fetches them for the page; in CPython, pip does.

A module is imported under its file or folder name, which must not hide an installed
module (``json.py`` would), once, as ``import`` would; its own imports (``from .helpers
import x`` in a package) work as usual.
"""

from __future__ import annotations

import importlib.util
import inspect
import keyword
import re
import sys
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

from ..kv import InMemoryKeyValueStore, KeyValueStore
from .definition import Tool
from .origin import OWN, OriginKind, ToolOrigin
from .toolbox import StaticSource

FACTORY = "make_tools"
RESERVED_NAMES = frozenset({"compact"})   # the agent's own tool

# PEP 723's reference regular expression for inline script metadata blocks.
_METADATA_BLOCK = re.compile(
    r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


class ToolModuleError(Exception):
    """A tool module that cannot be used; ``str()`` names it and says why.

    ``module`` is its name, ``path`` where it was read from, ``detail`` a traceback
    (or "") for the curious.
    """

    def __init__(self, module: str, path: str | Path, reason: str, detail: str = "") -> None:
        super().__init__(f"tool module {module!r}: {reason}")
        self.module = module
        self.path = str(path)
        self.reason = reason
        self.detail = detail

    def to_dict(self) -> dict[str, str]:
        return {"module": self.module, "path": self.path, "message": str(self),
                "detail": self.detail}


@dataclass
class ToolContext:
    """What the app hands a module's ``make_tools(context)``.

    ``kv`` keeps the tools' own data: IndexedDB in the page (it outlives reloads), a dict
    or SQLite elsewhere. It is shared by every tool module of the app.
    """

    kv: KeyValueStore = field(default_factory=InMemoryKeyValueStore)


@dataclass
class LoadedTools:
    """The outcome of :func:`load_tool_modules`: the tools of the modules that loaded,
    which module gave which, and an error for each module (or tool) left out."""

    tools: list[Tool] = field(default_factory=list)
    modules: dict[str, list[str]] = field(default_factory=dict)
    errors: list[ToolModuleError] = field(default_factory=list)

    def sources(self) -> list["StaticSource"]:
        """One tool source per module (``module:<name>``), for a toolbox."""
        by_name = {t.name: t for t in self.tools}
        return [StaticSource(f"module:{name}", [by_name[n] for n in names if n in by_name],
                             module_origin(name))
                for name, names in self.modules.items()]


# --------------------------------------------------------------------- metadata

def module_name(path: str | Path) -> str:
    """The name a tool module is imported as: its file's stem or its folder's name."""
    path = Path(path)
    return path.stem if path.suffix == ".py" else path.name


def source_file(path: str | Path) -> Path:
    """The file whose text is the module: the ``.py`` file, or a package's __init__.py."""
    path = Path(path)
    return path / "__init__.py" if path.is_dir() else path


def script_metadata(source: str) -> dict[str, Any]:
    """The PEP 723 ``script`` metadata of a module's source (``{}`` when it has none).

    Raises ValueError for two ``script`` blocks, invalid TOML, or ``dependencies`` that
    is not a list of strings.
    """
    blocks = [m for m in _METADATA_BLOCK.finditer(source) if m.group("type") == "script"]
    if not blocks:
        return {}
    if len(blocks) > 1:
        raise ValueError("more than one '# /// script' metadata block")
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in blocks[0].group("content").splitlines(keepends=True))
    import tomllib   # here: most modules have no metadata, and boot time counts

    try:
        metadata = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"the '# /// script' block is not valid TOML: {exc}") from None
    dependencies = metadata.get("dependencies", [])
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        raise ValueError("'dependencies' in the '# /// script' block must be a list of strings")
    return metadata


def script_dependencies(path: str | Path) -> list[str]:
    """The pip requirements a tool module declares (PEP 723), in order."""
    return list(script_metadata(source_file(path).read_text(encoding="utf-8"))
                .get("dependencies", []))


# --------------------------------------------------------------------- loading

def load_tools(path: str | Path, context: ToolContext | None = None) -> list[Tool]:
    """Import the tool module at ``path`` (a .py file or a package folder) and return
    its tools; :class:`ToolModuleError` when that fails or it has none."""
    module = import_tool_module(path)
    try:
        return collect_tools(module, context)
    except ToolModuleError:
        _forget(module.__name__)   # loaded again once fixed, not found in sys.modules as it was
        raise


def import_tool_module(path: str | Path) -> ModuleType:
    """Import the tool module at ``path`` without collecting its tools (a later
    :func:`load_tools` of the same path reuses it); :class:`ToolModuleError` if it fails.

    The browser worker imports its tool modules this way before taking a memory
    snapshot of the interpreter, so that a restored worker skips the import."""
    path = Path(path)
    name = check_module_path(path)
    origin = _installed_origin(name)
    if origin is not None and Path(origin).resolve() != source_file(path).resolve():
        raise ToolModuleError(name, path, f"its name hides the module {name!r} of "
                              f"{origin}; rename the file or folder")
    return _import(name, path)


def collect_tools(module: ModuleType, context: ToolContext | None = None) -> list[Tool]:
    """The tools of an imported module: its module-level tools (``__all__`` if defined),
    then those its ``make_tools(context)`` returns; :class:`ToolModuleError` if none."""
    name = module.__name__
    path = getattr(module, "__file__", None) or name
    exported = getattr(module, "__all__", None)
    names = list(exported) if exported is not None else \
        [n for n in vars(module) if not n.startswith("_")]
    found: dict[int, Tool] = {}   # by identity: a tool listed twice is offered once
    for attribute in names:
        value = getattr(module, attribute, None)
        if isinstance(value, Tool):
            found.setdefault(id(value), value)
    factory = getattr(module, FACTORY, None)
    if callable(factory) and not isinstance(factory, Tool):
        for made in _call_factory(name, path, factory, context or ToolContext()):
            found.setdefault(id(made), made)
    if not found:
        where = "listed in __all__" if exported is not None else "at module level"
        raise ToolModuleError(name, path, f"defines no tools: no @tool function {where} and "
                              f"no {FACTORY}(context) returning some")
    origin = module_origin(name)
    return [replace(t, origin=origin) if t.origin == OWN else t for t in found.values()]


def module_origin(name: str) -> ToolOrigin:
    """The origin of the tools of tool module ``name``: the app's code, so trusted, and
    kept under the module's name."""
    return ToolOrigin(kind=OriginKind.MODULE, source=f"module:{name}", server=name)


def load_tool_modules(paths: Iterable[str | Path], context: ToolContext | None = None, *,
                      reserved: Iterable[str] = RESERVED_NAMES) -> LoadedTools:
    """Load several tool modules; one that fails is reported in ``errors`` and skipped,
    and so is a tool whose name an earlier module (or the agent) already uses."""
    context = context or ToolContext()
    taken = {name: "the agent itself" for name in reserved}
    seen: set[int] = set()   # one tool imported by two modules is offered once
    loaded = LoadedTools()
    for path in paths:
        name = module_name(path)
        try:
            tools = load_tools(path, context)
        except ToolModuleError as error:
            loaded.errors.append(error)
            continue
        kept = []
        for item in tools:
            if id(item.fn) in seen:
                continue
            if item.name in taken:
                loaded.errors.append(ToolModuleError(
                    name, path, f"its tool {item.name!r} was left out: {taken[item.name]} "
                    "already has a tool of that name (rename it: @tool(name=...))"))
                continue
            taken[item.name] = f"tool module {name!r}"
            seen.add(id(item.fn))
            kept.append(item)
        loaded.modules[name] = [t.name for t in kept]
        loaded.tools.extend(kept)
    return loaded


def check_module_path(path: str | Path) -> str:
    """The module name of a path that can be a tool module (a .py file, or a folder with
    __init__.py, named as a Python module can be); :class:`ToolModuleError` if it cannot."""
    path = Path(path)
    name = module_name(path)
    if path.is_dir():
        if not (path / "__init__.py").is_file():
            raise ToolModuleError(name, path, "is a folder without __init__.py; a tool "
                                  "module is a .py file or a package")
    elif not path.is_file():
        raise ToolModuleError(name, path, "no such file or folder")
    elif path.suffix != ".py":
        raise ToolModuleError(name, path, "is not a .py file or a package folder")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ToolModuleError(name, path, "its name is not a valid Python module name "
                              "(use letters, digits and underscores)")
    return name


def _installed_origin(name: str) -> str | None:
    """Where an importable module ``name`` comes from, if one exists."""
    existing = sys.modules.get(name)
    if existing is not None:
        return getattr(existing, "__file__", None) or "the running interpreter"
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return spec.origin if spec.origin not in (None, "built-in", "frozen") else \
        f"Python ({spec.origin or 'namespace package'})"


def _import(name: str, path: Path) -> ModuleType:
    if path.is_dir():
        spec = importlib.util.spec_from_file_location(
            name, path / "__init__.py", submodule_search_locations=[str(path)])
    else:
        spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ToolModuleError(name, path, "Python cannot import it")
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == spec.origin:
        return loaded   # imported already (by the app, or an earlier load): as import does
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        _forget(name)
        if not isinstance(exc, Exception):
            raise
        raise ToolModuleError(name, path, _import_failure(exc, path),
                              "".join(traceback.format_exception(exc))) from exc
    return module


def _forget(name: str) -> None:
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def _import_failure(exc: Exception, path: Path) -> str:
    """``failed to import: NameError: name 'x' is not defined (tools.py, line 3)``."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f" ({Path(exc.filename).name}, line {exc.lineno})"
    else:
        root = path.resolve()
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if _inside(Path(f.filename), root)]
        if frames:
            where = f" ({Path(frames[-1].filename).name}, line {frames[-1].lineno})"
    reason = f"failed to import: {text}{where}"
    if isinstance(exc, ModuleNotFoundError):
        try:
            needs = script_dependencies(path)
        except (OSError, ValueError):
            needs = []
        if needs:
            reason += f"; it declares the dependencies {', '.join(needs)}: are they installed?"
    return reason


def _inside(file: Path, root: Path) -> bool:
    try:
        file = file.resolve()
    except OSError:
        return False
    return file == root or root in file.parents


def _call_factory(name: str, path: str, factory: Any, context: ToolContext) -> list[Tool]:
    try:
        made = factory(context)
    except Exception as exc:
        raise ToolModuleError(name, path, f"{FACTORY}(context) failed: "
                              f"{type(exc).__name__}: {exc}",
                              "".join(traceback.format_exception(exc))) from exc
    if inspect.isawaitable(made):
        if inspect.iscoroutine(made):
            made.close()   # never awaited: say so instead of a RuntimeWarning
        raise ToolModuleError(name, path, f"{FACTORY}(context) must be a plain function "
                              "(not async) that returns a list of tools")
    try:
        items = list(made)
    except TypeError:
        raise ToolModuleError(name, path, f"{FACTORY}(context) must return a list of tools, "
                              f"not {type(made).__name__}") from None
    wrong = [item for item in items if not isinstance(item, Tool)]
    if wrong:
        raise ToolModuleError(name, path, f"{FACTORY}(context) returned "
                              f"{type(wrong[0]).__name__} {wrong[0]!r:.60}, not a tool "
                              "(decorate the function with @tool)")
    return items
