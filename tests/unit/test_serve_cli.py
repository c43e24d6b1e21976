"""``python serve.py`` as a fresh clone runs it: ``--help`` answers at once and sets nothing
up, and a Python without py_agent's dependencies imports them from the wheels serving
vendors for the page (no virtual environment, no re-execution)."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fresh_copy(target: Path) -> Path:
    """What a clone holds of serve.py's own files, without any prepared output."""
    target.mkdir()
    for name in ("serve.py", "pyproject.toml", "package.json", "package-lock.json", "run_tests.py"):
        shutil.copy2(ROOT / name, target / name)
    for folder in ("serving", "py_agent", "web", "worker", "demo_tools"):
        shutil.copytree(ROOT / folder, target / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "vendor"))
    return target


def tree(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def test_help_answers_within_a_second_and_creates_nothing(tmp_path):
    clone = fresh_copy(tmp_path / "clone")
    before = tree(clone)
    # -S: no site-packages at all, so nothing installed can be what makes --help work.
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-S", str(clone / "serve.py"), "--help"],
                            cwd=clone, capture_output=True, text=True, timeout=30)
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: serve.py") and "--prepare-only" in result.stdout
    assert elapsed < 1.0, f"serve.py --help took {elapsed:.2f} s"
    assert tree(clone) == before   # no .venv/, web/vendor/, .cache/ or node_modules/
    assert not (clone / "web" / "vendor").exists()


def test_a_bad_argument_is_refused_before_anything_is_set_up(tmp_path):
    clone = fresh_copy(tmp_path / "clone")
    before = tree(clone)
    result = subprocess.run([sys.executable, "-S", str(clone / "serve.py"), "--port", "x"],
                            cwd=clone, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "invalid int value" in result.stderr
    assert tree(clone) == before


def wheel_of(distribution: str, folder: Path) -> Path:
    """A wheel of an installed pure-Python distribution, made from its installed files
    (as pip would have downloaded it: the package and its .dist-info)."""
    dist = importlib.metadata.distribution(distribution)
    target = folder / f"{distribution}-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as archive:
        for file in dist.files:
            if "__pycache__" not in file.parts and not str(file).startswith(".."):
                archive.write(dist.locate_file(file), file.as_posix())
    return target


IMPORT_FROM_WHEELS = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from serving import vendored_wheels
vendored_wheels.WHEELS = Path(sys.argv[2])
try:
    import snowballstemmer
except ImportError:
    pass
else:
    sys.exit("snowballstemmer is importable before: the test proves nothing")
from serving.common import PrepareError
try:
    vendored_wheels.make_dependencies_importable()
except PrepareError as error:
    print("PrepareError:", error)
    sys.exit(0)
import py_agent.tools.modules, snowballstemmer, assel, fastjsonschema
print(snowballstemmer.__file__)
print(assel.__file__)
print(fastjsonschema.__file__)
"""


def run_without_site_packages(wheels: Path) -> subprocess.CompletedProcess:
    # -I -S: no site-packages, so py_agent's dependencies are missing, as in a plain Python.
    return subprocess.run([sys.executable, "-I", "-S", "-c", IMPORT_FROM_WHEELS, str(ROOT),
                           str(wheels)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PIP_NO_INDEX": "1"})


def test_a_python_without_the_dependencies_imports_them_from_the_vendored_wheels(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    made = {wheel_of(name, wheels) for name in ("snowballstemmer", "assel", "fastjsonschema")}
    result = run_without_site_packages(wheels)
    assert result.returncode == 0, result.stderr
    locations = result.stdout.split()
    assert len(locations) == 3 and "PrepareError" not in result.stdout, result.stdout
    assert {Path(location).parents[1] for location in locations} == made   # inside the wheels


def test_a_wheel_that_does_not_provide_its_distribution_is_a_clear_error(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel_of("assel", wheels)
    wheel_of("fastjsonschema", wheels)
    with zipfile.ZipFile(wheels / "snowballstemmer-3.1.1-py3-none-any.whl", "w") as archive:
        archive.writestr("nothing.txt", "not a wheel of snowballstemmer")
    result = run_without_site_packages(wheels)
    assert result.returncode == 0, result.stderr
    assert "PrepareError: the wheel of snowballstemmer 3.1.1 in web/vendor/wheels/ cannot " \
           "be imported; delete it and run again" in result.stdout
