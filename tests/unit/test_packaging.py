"""The library apart from the app: the py_agent wheel (built by setuptools, as ``pip wheel .``
would) holds the library only, and importing py_agent loads no demo or browser module."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from serving.wheel import build_app_wheel

LIST_MODULES = "import json, sys; import py_agent; print(json.dumps(sorted(sys.modules)))"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_app_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_library_and_no_demo(wheel: Path):
    assert wheel.name == "py_agent-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read("py_agent-0.1.0.dist-info/METADATA").decode()
    assert all(n.startswith(("py_agent/", "py_agent-0.1.0.dist-info/")) for n in names), names
    assert not [n for n in names if "demo" in n or n.startswith(("tests/", "examples/"))]
    for module in ("py_agent/__init__.py", "py_agent/tools/modules.py", "py_agent/kv.py",
                   "py_agent/browser/main.py", "py_agent/browser/worker_tool_modules.py"):
        assert module in names
    assert "Name: py-agent" in metadata and "Version: 0.1.0" in metadata


def test_importing_py_agent_from_the_wheel_loads_no_demo_or_browser_module(wheel: Path):
    # -I -S: no working directory and no .pth hooks (so no editable install): py_agent
    # comes from the wheel; its dependencies, if any, from site-packages behind it.
    purelib = sysconfig.get_paths()["purelib"]
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(wheel)!r}); "
         f"sys.path.append({purelib!r}); import py_agent; "
         f"assert py_agent.__file__.startswith({str(wheel)!r}), py_agent.__file__; "
         + LIST_MODULES], capture_output=True, text=True, check=True)
    modules = json.loads(result.stdout)
    assert "py_agent" in modules and "py_agent.tools.modules" in modules
    assert not [m for m in modules if m.startswith(("demo_tools", "py_agent.demo"))]
    assert not [m for m in modules if m.split(".")[0] in ("js", "pyodide")
                or m.startswith("py_agent.browser")]


def test_importing_the_installed_py_agent_loads_no_demo_module(tmp_path: Path):
    # As a user's script would, from anywhere (here: the test environment's install).
    result = subprocess.run([sys.executable, "-c", LIST_MODULES], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    modules = json.loads(result.stdout)
    assert "py_agent" in modules
    assert not [m for m in modules if "demo" in m]


def test_the_wheel_ships_the_word_vector_table(wheel: Path):
    from py_agent.retrieval.embeddings import table

    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read("py_agent/retrieval/data/glove50.bin")
        record = archive.read("py_agent-0.1.0.dist-info/RECORD").decode()
    assert shipped == table().read_bytes()
    assert "py_agent/retrieval/data/glove50.bin," in record


def test_several_prepares_building_the_app_wheel_at_once_all_get_it(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """A test run's four workers (or two serve.py in one checkout) after an edit to
    py_agent all build its wheel at once: one folder wins, the others use it, and nobody
    prunes a folder another is still building (both failed before: "Directory not empty",
    and a scratch folder removed under a running build)."""
    from concurrent.futures import ThreadPoolExecutor

    from serving import wheel as wheels
    from serving.common import SCRATCH_PREFIX

    monkeypatch.setattr(wheels, "VENDOR", tmp_path)
    (tmp_path / "wheels").mkdir()
    building = tmp_path / "wheels" / f"{SCRATCH_PREFIX}someone-else"
    building.mkdir()
    for n in range(wheels.KEEP_APP_BUILDS + 1):   # old builds, which may be pruned
        (tmp_path / "wheels" / f"{n:016x}").mkdir()
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: wheels.ensure_app_wheel(), range(3)))
    assert len(set(results)) == 1
    target, digest = results[0]
    assert target.is_file() and target.parent.parent == tmp_path / "wheels"
    assert building.is_dir()
    assert [p.name for p in (tmp_path / "wheels").iterdir()
            if p.name.startswith(SCRATCH_PREFIX)] == [building.name]
