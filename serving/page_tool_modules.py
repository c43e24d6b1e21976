"""serve.py's tool modules: what the page's worker needs to load them, kept current.

Every tool reaches the page through one door: the demo's ``demo_tools/`` package and each
``python serve.py --tools PATH`` module (a ``.py`` file or a package folder) are

1. zipped into ``web/vendor/tools/<content-hash>/<name>.zip`` (a new URL when the source
   changes, so an edit plus a reload of the page picks it up);
2. given their PEP 723 dependencies (``# /// script`` / ``dependencies = [...]``):
   pure-Python wheels fetched once with ``pip download`` for a ``py3-none-any`` target
   into ``web/vendor/deps/<hash>/`` (offline afterwards), which the worker installs with
   micropip. A dependency with no such wheel is named in an error;
3. imported once in a child CPython (``-I -S``: only the standard library, the py_agent
   wheel the page gets and those wheels on its path, as in the page), so that a module
   that fails to import or has no tools is reported in the terminal. The worker loads it
   all the same and reports its own error to the page; the other modules still load.

Each module becomes one entry of the manifest's ``tool_modules`` list:
``{name, archive, path, dependencies, requirements, error}`` (URLs relative to the site's
root, like all of the manifest's; ``path`` is where the
module lies inside its extracted archive; ``requirements`` are wheel URLs; ``error`` says
why the worker must not even try, e.g. a dependency that cannot be had).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from py_agent.tools.modules import ToolModuleError, check_module_path, script_dependencies

from .common import SCRATCH_PREFIX, PrepareError, move_into_place, say, write_atomically
from .paths import CACHE, ROOT, VENDOR

DEMO_TOOLS = ROOT / "demo_tools"
CHECKS = CACHE / "tool-checks"   # verdicts by content hash (not served)
CHECK_TIMEOUT_S = 30
PIP_TIMEOUT_S = 300
KEEP_RECENT_S = 24 * 3600    # content-addressed folders younger than this are never pruned
KEEP_AT_LEAST = 30

# Imported only in the browser: a module that needs them is checked by the worker alone.
BROWSER_ONLY = {"js", "pyodide", "pyodide_js", "pyscript", "micropip"}

# Runs in the child interpreter: load one tool module as the worker will, say how it went.
CHECK_SCRIPT = """
import json, sys
path, wheels, browser_only = sys.argv[1], json.loads(sys.argv[2]), set(json.loads(sys.argv[3]))
sys.path[:0] = wheels
from py_agent.tools.modules import ToolModuleError, load_tools
try:
    tools = load_tools(path)
except ToolModuleError as error:
    cause = error.__cause__
    missing = getattr(cause, "name", None) if isinstance(cause, ModuleNotFoundError) else None
    print(json.dumps({"ok": False, "message": str(error),
                      "browser_only": (missing or "").split(".")[0] in browser_only}))
else:
    print(json.dumps({"ok": True, "tools": [t.name for t in tools]}))
"""


@dataclass(frozen=True)
class PageRuntime:
    """What the tool modules are checked and fetched for: the page's Python version,
    Pyodide's own package builds (name -> version), and the py_agent wheel the page gets
    with the wheels of py_agent's own dependencies (the check's sys.path)."""

    python: str
    pyodide_packages: dict[str, str]
    app_wheels: tuple[Path, ...]


def tool_module_path(text: str | Path) -> Path:
    """A ``--tools`` argument as a checked path; PrepareError saying what is wrong."""
    path = Path(text).expanduser().resolve()
    try:
        check_module_path(path)
    except ToolModuleError as error:
        raise PrepareError(f"--tools {text}: {error.reason}") from None
    return path


def module_files(path: Path) -> list[Path]:
    """The files of a tool module: the .py file, or the package's files without caches."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file()
                  and not any(part.startswith(".") or part == "__pycache__"
                              for part in p.relative_to(path).parts)
                  and p.suffix not in (".pyc", ".pyo"))


def content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for file in module_files(path):
        digest.update(file.relative_to(path.parent).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def write_archive(path: Path, digest: str) -> Path:
    """``web/vendor/tools/<digest>/<name>.zip`` holding the module (made once)."""
    target = VENDOR / "tools" / digest[:16] / f"{path.stem if path.is_file() else path.name}.zip"
    if target.exists():
        return target
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in module_files(path):
            item = zipfile.ZipInfo(file.relative_to(path.parent).as_posix(),
                                   date_time=(2020, 2, 2, 0, 0, 0))
            item.external_attr = 0o644 << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(item, file.read_bytes())
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, buffer.getvalue())
    return target


# ----------------------------------------------------------------- dependencies

def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def fetch_dependencies(requirements: list[str], runtime: PageRuntime) -> list[Path]:
    """Pure-Python wheels for ``requirements`` and what they depend on, fetched with pip
    once into ``web/vendor/deps/<hash>/``; PrepareError naming a dependency that has none."""
    key = hashlib.sha256(json.dumps([sorted(requirements), runtime.python]).encode()).hexdigest()
    folder = VENDOR / "deps" / key[:16]
    if (folder / "resolved.json").is_file():
        return [folder / name for name in json.loads((folder / "resolved.json").read_text())]
    refused = folder / "refused.json"   # the index said no (not a network failure): a day
    if refused.is_file() and time.time() - refused.stat().st_mtime < KEEP_RECENT_S:
        raise PrepareError(json.loads(refused.read_text())["message"])
    say(f"fetching {', '.join(requirements)} with pip (pure-Python wheels for "
        f"Python {runtime.python})")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=SCRATCH_PREFIX) as scratch:
        command = [sys.executable, "-m", "pip", "download", "--dest", scratch,
                   "--only-binary=:all:", "--platform", "any", "--implementation", "py",
                   "--abi", "none", "--python-version", runtime.python,
                   "--disable-pip-version-check", "--no-input", "--quiet", *requirements]
        try:
            result = subprocess.run(command, capture_output=True, text=True,
                                    timeout=PIP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise PrepareError(f"pip did not fetch {', '.join(requirements)} within "
                               f"{PIP_TIMEOUT_S} s") from None
        if result.returncode != 0:
            message, definite = _pip_failure(result.stderr, requirements, runtime)
            if definite:
                folder.mkdir(exist_ok=True)
                refused.write_text(json.dumps({"message": message}) + "\n")
            raise PrepareError(message)
        wheels = sorted(p.name for p in Path(scratch).glob("*.whl"))
        (Path(scratch) / "resolved.json").write_text(json.dumps(wheels) + "\n")
        if not (folder / "resolved.json").is_file():   # not fetched by another prepare()
            shutil.rmtree(folder, ignore_errors=True)
            move_into_place(Path(scratch), folder,
                            done=lambda: (folder / "resolved.json").is_file())
    say(f"fetched {', '.join(wheels)} -> web/vendor/deps/{key[:16]}/")
    return [folder / name for name in wheels]


def _pip_failure(stderr: str, requirements: list[str],
                 runtime: PageRuntime) -> tuple[str, bool]:
    """What pip's failure means for the page, and whether it is the index's definite no."""
    missing = re.search(r"No matching distribution found for ([A-Za-z0-9._-]+)", stderr)
    if missing:
        name = missing.group(1)
        pyodide = runtime.pyodide_packages.get(_canonical(name))
        if pyodide:
            return (f"dependency {name!r} has no pure-Python wheel; Pyodide has its own build "
                    f"of {name} {pyodide}, but the offline runtime (the pyodide npm package) "
                    "carries no package builds, so it cannot be installed in the page"), True
        return (f"dependency {name!r} has no pure-Python (py3-none-any) wheel on the package "
                "index and Pyodide has no build of it, so it cannot run in the page"), True
    lines = [line for line in stderr.splitlines() if line.strip()
             and not line.startswith("WARNING")]
    return (f"pip could not fetch {', '.join(requirements)}: "
            f"{lines[-1] if lines else 'no reason given'} (the package index must be "
            "reachable the first time)"), False


# ----------------------------------------------------------------- import check

def check_import(path: Path, wheels: list[Path], runtime: PageRuntime) -> dict:
    """Import the module in a child CPython as the worker will; its verdict."""
    command = [sys.executable, "-I", "-S", "-c", CHECK_SCRIPT, str(path),
               json.dumps([*map(str, runtime.app_wheels), *map(str, wheels)]),
               json.dumps(sorted(BROWSER_ONLY))]
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=CHECK_TIMEOUT_S, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"ok": False, "message": f"tool module {path.stem!r}: importing it took longer "
                                        f"than {CHECK_TIMEOUT_S} s"}
    lines = result.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "message": f"tool module {path.stem!r}: the check crashed: {reason}"}


# ----------------------------------------------------------------- the set of modules

class ToolModules:
    """The tool modules one server offers, as manifest entries, rebuilt when a source
    changes (``entries()`` is called for every manifest request; unchanged sources cost
    one read and a hash)."""

    def __init__(self, paths: list[Path], runtime: PageRuntime,
                 report: Callable[[str], None] = say) -> None:
        names: dict[str, Path] = {}
        for path in paths:
            name = path.stem if path.is_file() else path.name
            if name in names and names[name] != path:
                raise PrepareError(f"two tool modules are named {name!r} ({names[name]} and "
                                   f"{path}): rename one")
            names[name] = path
        self.paths = list(names.values())
        self.runtime = runtime
        self.report = report

    # Entries by (path, content hash, py_agent wheel), shared by every instance: a server
    # made after prepare() reuses what prepare() built (and said) for the same sources.
    _prepared: dict[tuple[Path, str, Path], dict] = {}
    _lock = threading.Lock()

    def entries(self) -> list[dict]:
        with self._lock:
            return [self._entry(path) for path in self.paths]

    def _entry(self, path: Path) -> dict:
        name = path.stem if path.is_file() else path.name
        try:
            digest = content_hash(path)
        except OSError as error:
            return {"name": name, "archive": None, "path": None, "dependencies": [],
                    "requirements": [], "error": f"cannot be read: {error}"}
        key = (path, digest, self.runtime.app_wheels)
        if key not in self._prepared:
            self._prepared[key] = self._prepare(name, path, digest)
        return self._prepared[key]

    def _prepare(self, name: str, path: Path, digest: str) -> dict:
        archive = write_archive(path, digest)
        entry = {"name": name, "archive": archive.relative_to(VENDOR.parent).as_posix(),
                 "path": path.name, "dependencies": [], "requirements": [], "error": None}
        wheels: list[Path] = []
        try:
            entry["dependencies"] = script_dependencies(path)
            if entry["dependencies"]:
                wheels = fetch_dependencies(entry["dependencies"], self.runtime)
        except (ValueError, PrepareError) as error:
            entry["error"] = str(error)
            self.report(f"error: tool module {name!r}: {error}. The page starts without it.")
            return entry
        entry["requirements"] = [w.relative_to(VENDOR.parent).as_posix() for w in wheels]
        verdict = self._verdict(CHECKS / f"{digest[:16]}.json", path, wheels)
        if verdict.get("ok"):
            count = len(verdict["tools"])
            self.report(f"tool module {name}: {count} tool{'' if count == 1 else 's'} "
                        f"({', '.join(verdict['tools'])})")
        elif verdict.get("browser_only"):
            self.report(f"tool module {name}: imports browser-only modules; the page checks it")
        else:
            self.report(f"error: {verdict['message']}. The page will show this too and "
                        "start without it.")
        return entry

    def _verdict(self, cache: Path, path: Path, wheels: list[Path]) -> dict:
        """check_import's verdict, kept in ``cache`` so a re-run checks nothing new."""
        key = hashlib.sha256(json.dumps([*map(str, self.runtime.app_wheels), str(path),
                                         *map(str, wheels)]).encode()).hexdigest()
        try:
            cached = json.loads(cache.read_text())
            if cached.get("key") == key:
                return cached["verdict"]
        except (OSError, ValueError, KeyError):
            pass
        verdict = check_import(path, wheels, self.runtime)
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(cache, json.dumps({"key": key, "verdict": verdict}).encode())
        return verdict


def prune(folder: Path, keep: set[Path] = frozenset()) -> None:
    """Remove old content-addressed builds under ``folder``: never one in ``keep`` or one
    touched within KEEP_RECENT_S (another server may be serving it), else beyond the
    KEEP_AT_LEAST newest."""
    if not folder.is_dir():
        return
    builds = sorted((d for d in folder.iterdir() if d.is_dir()),
                    key=lambda d: d.stat().st_mtime, reverse=True)
    now = time.time()
    for old in builds[KEEP_AT_LEAST:]:
        if old not in keep and now - old.stat().st_mtime > KEEP_RECENT_S:
            shutil.rmtree(old, ignore_errors=True)
