"""The py_agent wheel the page's worker installs, built by the project's own build backend.

``pyproject.toml`` names the backend (setuptools) and what it needs; it is installed with
pip once into ``.cache/build-backend/<hash>/`` and its PEP 517 ``build_wheel`` hook runs
in a child process on a clean copy of the files the wheel is made of, so the result is
what ``pip wheel .`` gives. A build is keyed by the hash of those files and skipped when
``web/vendor/wheels/<hash>/`` holds it already.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from .common import SCRATCH_PREFIX, PrepareError, move_into_place, say, sha256_file
from .paths import CACHE, PYPROJECT, ROOT, VENDOR

KEEP_APP_BUILDS = 3  # py_agent wheels kept in web/vendor/wheels/<hash>/
BUILD_BACKENDS = CACHE / "build-backend"  # the [build-system] backend, per hash

# Calls the PEP 517 hook in a child process: the backend and its requirements come from
# BUILD_BACKENDS (on PYTHONPATH), never from whatever the running Python has installed.
BUILD_HOOK = """
import importlib, sys
name, _, attribute = sys.argv[1].partition(":")
backend = importlib.import_module(name)
for part in filter(None, attribute.split(".")):
    backend = getattr(backend, part)
print(backend.build_wheel(sys.argv[2]))
"""


def project_metadata() -> dict:
    return tomllib.loads(PYPROJECT.read_text())


def project_files(pyproject: dict) -> list[Path]:
    """What a wheel is built from: pyproject.toml, its readme and license files, and the
    top-level packages matching ``[tool.setuptools.packages.find] include``, without
    caches (so the demo's tools and the tests are never in it)."""
    patterns = (pyproject.get("tool", {}).get("setuptools", {}).get("packages", {})
                .get("find", {}).get("include", ["*"]))
    readme = pyproject.get("project", {}).get("readme")
    files = [PYPROJECT]
    files += [ROOT / readme] if isinstance(readme, str) and (ROOT / readme).is_file() else []
    files += sorted(p for p in ROOT.glob("LICEN[CS]E*") if p.is_file())
    for top in sorted(ROOT.iterdir()):
        if not top.is_dir() or not any(fnmatch.fnmatch(top.name, p) for p in patterns):
            continue
        if not (top / "__init__.py").is_file():
            continue
        for path in sorted(top.rglob("*")):
            parts = path.relative_to(ROOT).parts
            if (path.is_file() and "__pycache__" not in parts
                    and not any(part.startswith(".") for part in parts)
                    and path.suffix not in (".pyc", ".pyo")):
                files.append(path)
    return files


def build_backend(pyproject: dict) -> tuple[Path, str]:
    """(folder, backend name) of the ``[build-system]`` backend, installed with pip once
    into .cache/build-backend/<hash>/ (the package index is needed only that first time)."""
    system = pyproject.get("build-system", {})
    requires = list(system.get("requires", ["setuptools>=65"]))
    backend = system.get("build-backend", "setuptools.build_meta:__legacy__")
    key = hashlib.sha256(json.dumps([requires, sys.version_info[:2]]).encode()).hexdigest()
    folder = BUILD_BACKENDS / key[:16]
    if (folder / ".complete").is_file():
        return folder, backend
    say(f"installing the build backend ({', '.join(requires)}) with pip, once")
    BUILD_BACKENDS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD_BACKENDS, prefix=SCRATCH_PREFIX) as scratch:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--target", scratch, "--only-binary=:all:",
             "--disable-pip-version-check", "--no-input", "--quiet", *requires],
            capture_output=True, text=True)
        if result.returncode != 0:
            raise PrepareError("pip could not install the build backend "
                               f"({', '.join(requires)}); the package index must be "
                               f"reachable for the first run. {result.stderr[-2000:]}")
        (Path(scratch) / ".complete").write_text("\n".join(requires) + "\n")
        if not (folder / ".complete").is_file():   # not finished by another prepare()
            shutil.rmtree(folder, ignore_errors=True)
            move_into_place(Path(scratch), folder, done=lambda: (folder / ".complete").is_file())
    return folder, backend


def build_app_wheel(out_dir: Path) -> Path:
    """Build the py_agent wheel into ``out_dir`` with the project's build backend, from a
    clean copy of the files it is made of (no stale build/ folder can leak into it)."""
    pyproject = project_metadata()
    backend_dir, backend = build_backend(pyproject)
    with tempfile.TemporaryDirectory(prefix="py-agent-build-") as scratch:
        source = Path(scratch) / "src"
        for path in project_files(pyproject):
            target = source / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        env = {**os.environ, "PYTHONPATH": str(backend_dir), "SOURCE_DATE_EPOCH": "1580601600"}
        result = subprocess.run([sys.executable, "-c", BUILD_HOOK, backend, str(out_dir)],
                                cwd=source, env=env, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise PrepareError(f"building the py_agent wheel failed:\n{result.stderr[-2000:]}")
    return out_dir / result.stdout.strip().splitlines()[-1]


def source_hash(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def ensure_app_wheel() -> tuple[Path, str]:
    """The py_agent wheel in web/vendor/wheels/<source hash>/, built only when the files
    it is made of changed; old builds pruned. Returns (wheel, its sha256)."""
    digest = source_hash(project_files(project_metadata()))
    folder = VENDOR / "wheels" / digest[:16]
    found = sorted(folder.glob("*.whl"))
    if found:
        say(f"{found[0].name} up to date (wheels/{digest[:16]}/)")
        target = found[0]
    else:
        started = time.monotonic()
        (VENDOR / "wheels").mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=VENDOR / "wheels", prefix=SCRATCH_PREFIX) as scratch:
            built = build_app_wheel(Path(scratch))
            built.chmod(0o644)
            Path(scratch).chmod(0o755)
            move_into_place(Path(scratch), folder, done=lambda: any(folder.glob("*.whl")))
        target = folder / built.name
        say(f"built {target.name} ({target.stat().st_size} bytes) with the build backend in "
            f"{time.monotonic() - started:.1f} s -> web/vendor/wheels/{digest[:16]}/")
    os.utime(folder)
    # Keep the few newest builds: another prepare() may be serving one of them.
    builds = sorted((d for d in (VENDOR / "wheels").iterdir()
                     if d.is_dir() and not d.name.startswith(SCRATCH_PREFIX)),
                    key=lambda d: d.stat().st_mtime, reverse=True)
    for old in builds[KEEP_APP_BUILDS:]:
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    return target, sha256_file(target)
