"""serve.py's tool modules (serving/page_tool_modules.py): archives, the terminal's verdict on each module,
rebuilds on edit, and what a dependency without a pure-Python wheel is told."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

from serving import page_tool_modules as serve_tools
from serving.common import PrepareError
from serving.page_tool_modules import PageRuntime, ToolModules

REPO = Path(__file__).resolve().parents[2]
TEA = '''\
from py_agent import tool


@tool
def brew_time(tea: str) -> str:
    """How long to steep tea."""
    return f"{tea}: 3 minutes"
'''
BROKEN = "from py_agent import tool\n\nx = 1\nundefined_name\n"


@pytest.fixture
def vendor(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "vendor"
    monkeypatch.setattr(serve_tools, "VENDOR", folder)
    monkeypatch.setattr(serve_tools, "CHECKS", tmp_path / "checks")
    return folder


@pytest.fixture
def runtime() -> PageRuntime:
    # The checks import py_agent from the source tree (a folder on sys.path, like the wheel)
    # and its dependencies from this environment's site-packages.
    return PageRuntime(python="3.14", pyodide_packages={"pyyaml": "6.0.3"},
                       app_wheels=(REPO, Path(sysconfig.get_paths()["purelib"])))


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def archive_names(vendor: Path, entry: dict) -> list[str]:
    with zipfile.ZipFile(vendor.parent / entry["archive"].lstrip("/")) as archive:
        return sorted(archive.namelist())


def test_modules_are_archived_and_the_terminal_says_how_each_one_imports(
        tmp_path, vendor, runtime):
    said: list[str] = []
    good, broken = write(tmp_path, "tea_tools.py", TEA), write(tmp_path, "broken.py", BROKEN)
    entries = ToolModules([good, broken], runtime, report=said.append).entries()
    assert [e["name"] for e in entries] == ["tea_tools", "broken"]
    assert entries[0]["path"] == "tea_tools.py" and entries[0]["error"] is None
    assert entries[0]["archive"].startswith("vendor/tools/")
    assert archive_names(vendor, entries[0]) == ["tea_tools.py"]
    assert said[0] == "tool module tea_tools: 1 tool (brew_time)"
    # The broken module is still served: the page reports its own error for it.
    assert entries[1]["error"] is None
    assert said[1] == ("error: tool module 'broken': failed to import: NameError: name "
                       "'undefined_name' is not defined (broken.py, line 4). The page will "
                       "show this too and start without it.")


def test_an_edit_gives_a_new_archive_and_a_new_verdict_and_nothing_else_is_redone(
        tmp_path, vendor, runtime):
    said: list[str] = []
    path = write(tmp_path, "tea_tools.py", TEA)
    modules = ToolModules([path], runtime, report=said.append)
    first = modules.entries()[0]
    assert modules.entries()[0] is first and len(said) == 1   # unchanged: no work, no words
    path.write_text(TEA.replace("brew_time", "steep_time"))
    second = modules.entries()[0]
    assert second["archive"] != first["archive"]
    assert said[-1] == "tool module tea_tools: 1 tool (steep_time)"
    # Another server for the same sources (as make_server after prepare) says nothing again.
    ToolModules([path], runtime, report=said.append).entries()
    assert len(said) == 2


def test_a_package_is_archived_without_caches_or_hidden_files(tmp_path, vendor, runtime):
    write(tmp_path, "kitchen/__init__.py", "from .timers import egg_timer\n")
    write(tmp_path, "kitchen/timers.py", TEA.replace("brew_time", "egg_timer"))
    write(tmp_path, "kitchen/data/eggs.json", "{}")
    write(tmp_path, "kitchen/__pycache__/timers.cpython-311.pyc", "x")
    write(tmp_path, "kitchen/.secret", "x")
    said: list[str] = []
    entry = ToolModules([tmp_path / "kitchen"], runtime, report=said.append).entries()[0]
    assert entry["path"] == "kitchen"
    assert archive_names(vendor, entry) == ["kitchen/__init__.py", "kitchen/data/eggs.json",
                                            "kitchen/timers.py"]
    assert said == ["tool module kitchen: 1 tool (egg_timer)"]


def test_a_module_that_needs_the_browser_is_left_to_the_page(tmp_path, vendor, runtime):
    said: list[str] = []
    path = write(tmp_path, "page_tools.py", "import js\n" + TEA)
    ToolModules([path], runtime, report=said.append).entries()
    assert said == ["tool module page_tools: imports browser-only modules; the page checks it"]


def test_bad_metadata_is_an_error_the_worker_passes_on(tmp_path, vendor, runtime):
    said: list[str] = []
    path = write(tmp_path, "meta_tools.py", "# /// script\n# dependencies = 'x'\n# ///\n" + TEA)
    entry = ToolModules([path], runtime, report=said.append).entries()[0]
    assert entry["error"] == ("'dependencies' in the '# /// script' block must be a list "
                              "of strings")
    assert said[0].startswith("error: tool module 'meta_tools': 'dependencies' in the")


def test_two_modules_of_one_name_and_paths_that_are_no_module_are_refused(tmp_path, runtime):
    one = write(tmp_path, "a/tools.py", TEA)
    other = write(tmp_path, "b/tools.py", TEA)
    with pytest.raises(PrepareError, match="two tool modules are named 'tools'"):
        ToolModules([one, other], runtime)
    with pytest.raises(PrepareError, match="--tools nowhere.py: no such file or folder"):
        serve_tools.tool_module_path("nowhere.py")
    with pytest.raises(PrepareError, match="is not a .py file or a package folder"):
        serve_tools.tool_module_path(write(tmp_path, "notes.txt", "hi"))


PIP_NO_MATCH = """WARNING: Location 'file:///x/simple/{0}/' is ignored
ERROR: Could not find a version that satisfies the requirement {0} (from versions: none)
ERROR: No matching distribution found for {0}
"""


def test_a_dependency_without_a_pure_wheel_is_named(runtime):
    message, definite = serve_tools._pip_failure(PIP_NO_MATCH.format("psutil"), ["psutil"],
                                                 runtime)
    assert definite and message == (
        "dependency 'psutil' has no pure-Python (py3-none-any) wheel on the package index "
        "and Pyodide has no build of it, so it cannot run in the page")
    message, definite = serve_tools._pip_failure(PIP_NO_MATCH.format("PyYAML"), ["PyYAML>=6"],
                                                 runtime)
    assert definite and message.startswith(
        "dependency 'PyYAML' has no pure-Python wheel; Pyodide has its own build of PyYAML "
        "6.0.3, but the offline runtime")
    message, definite = serve_tools._pip_failure(
        "ERROR: Could not install requirement roman because of HTTP error 503\n", ["roman"],
        runtime)
    assert not definite and message.startswith("pip could not fetch roman: ERROR: Could not")


def test_fetched_and_refused_dependencies_are_remembered_without_pip(vendor, runtime,
                                                                   monkeypatch):
    def no_pip(*args, **kwargs):
        raise AssertionError("pip must not run")

    monkeypatch.setattr(subprocess, "run", no_pip)
    key = hashlib.sha256(json.dumps([["roman"], "3.14"]).encode()).hexdigest()
    folder = vendor / "deps" / key[:16]
    write(folder, "resolved.json", json.dumps(["roman-5.2-py3-none-any.whl"]))
    assert serve_tools.fetch_dependencies(["roman"], runtime) == \
        [folder / "roman-5.2-py3-none-any.whl"]
    key = hashlib.sha256(json.dumps([["psutil"], "3.14"]).encode()).hexdigest()
    write(vendor / "deps" / key[:16], "refused.json", json.dumps({"message": "no wheel"}))
    with pytest.raises(PrepareError, match="no wheel"):
        serve_tools.fetch_dependencies(["psutil"], runtime)
