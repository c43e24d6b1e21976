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
