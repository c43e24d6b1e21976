"""Tool modules: a user's file or package of tools, loaded by path (py_agent.tools.modules)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from py_agent import (InMemoryKeyValueStore, ToolContext, ToolModuleError, load_tool_modules,
                      load_tools)
from py_agent.testing import step_json
from py_agent.tools.modules import import_tool_module, script_dependencies, script_metadata
from tests import readme
from tests.unit.support import run

TEA = '''
from py_agent import tool

@tool
def brew_time(tea: str, strong: bool = False) -> str:
    """How long to steep tea."""
    return f"{tea}: {3 + strong} minutes"

@tool
def _hidden(x: str) -> str:
    """Not offered: a private name."""
    return x

def helper():
    return "not a tool"
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(autouse=True)
def forget_loaded_modules():
    """Each test's tool modules are new modules, whatever an earlier test loaded."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_a_file_offers_its_public_module_level_tools(tmp_path):
    tools = load_tools(write(tmp_path, "tea_tools.py", TEA))
    assert [t.name for t in tools] == ["brew_time"]
    assert tools[0]("green", strong=True) == "green: 4 minutes"


def test_all_chooses_and_orders_the_tools_and_make_tools_gets_the_context(tmp_path):
    path = write(tmp_path, "ordered.py", '''
        from py_agent import tool

        @tool
        def first(x: str) -> str:
            """One."""
            return x

        @tool
        def second(x: str) -> str:
            """Two."""
            return x

        @tool
        def unlisted(x: str) -> str:
            """Not in __all__."""
            return x

        def make_tools(context):
            @tool
            async def remember(text: str) -> str:
                """Keep a text."""
                await context.kv.put("ordered:last", text)
                return "kept"
            return [remember, second]   # second is listed once

        __all__ = ["second", "first", "make_tools"]
    ''')
    kv = InMemoryKeyValueStore()
    tools = load_tools(path, ToolContext(kv=kv))
    assert [t.name for t in tools] == ["second", "first", "remember"]
    assert run(tools[2].fn("milk")) == "kept"
    assert run(kv.get("ordered:last")) == "milk"


def test_a_package_with_relative_imports_loads_by_folder(tmp_path):
    write(tmp_path, "kitchen/helpers.py", "def minutes(n):\n    return f'{n} min'\n")
    write(tmp_path, "kitchen/timers.py", '''
        from py_agent import tool
        from .helpers import minutes

        @tool
        def egg_timer(style: str) -> str:
            """How long to boil an egg."""
            return minutes(9 if style == "hard" else 6)
    ''')
    write(tmp_path, "kitchen/__init__.py", "from .timers import egg_timer\n")
    tools = load_tools(tmp_path / "kitchen")
    assert [t.name for t in tools] == ["egg_timer"]
    assert tools[0]("soft") == "6 min"


def test_loading_twice_gives_the_same_module_as_import_does(tmp_path):
    path = write(tmp_path, "counted.py", TEA + "\nLOADS = []\nLOADS.append(1)\n")
    first, second = load_tools(path), load_tools(path)
    assert first[0].fn is second[0].fn and first[0] == second[0]
    assert sys.modules["counted"].LOADS == [1]


def test_a_module_imported_ahead_is_loaded_without_running_it_again(tmp_path):
    # The browser worker imports its tool modules before a memory snapshot; after a
    # restore, loading them finds the import done and only collects the tools.
    path = write(tmp_path, "ahead.py", TEA + "\nLOADS = []\nLOADS.append(1)\n"
                 "def make_tools(context):\n    return [brew_time]\n")
    module = import_tool_module(path)
    assert module is sys.modules["ahead"] and module.LOADS == [1]
    assert [t.name for t in load_tools(path)] == ["brew_time"]
    assert module.LOADS == [1]
    with pytest.raises(ToolModuleError, match="failed to import: NameError"):
        import_tool_module(write(tmp_path, "broken_ahead.py", "undefined_name\n"))
    assert "broken_ahead" not in sys.modules


@pytest.mark.parametrize("source, expected", [
    ("x = 1\nundefined_name\n", "failed to import: NameError: name 'undefined_name' is not "
                                "defined (broken.py, line 2)"),
    ("def f(:\n", "failed to import: SyntaxError: invalid syntax (broken.py, line 1)"),
    ("import no_such_package_xyz\n", "failed to import: ModuleNotFoundError: No module named "
                                     "'no_such_package_xyz' (broken.py, line 1)"),
    ("x = 1\n", "defines no tools"),
    ("__all__ = ['x']\nx = 1\n", "no @tool function listed in __all__"),
    ("def make_tools(context):\n    return ['not a tool']\n",
     "make_tools(context) returned str 'not a tool', not a tool"),
    ("def make_tools(context):\n    return 42\n", "must return a list of tools, not int"),
    ("def make_tools(context):\n    raise OSError('disk gone')\n",
     "make_tools(context) failed: OSError: disk gone"),
    ("async def make_tools(context):\n    return []\n", "must be a plain function (not async)"),
])
def test_a_broken_module_gets_an_error_naming_it_and_why(tmp_path, source, expected):
    path = write(tmp_path, "broken.py", source)
    with pytest.raises(ToolModuleError) as caught:
        load_tools(path)
    assert str(caught.value).startswith("tool module 'broken': ")
    assert expected in str(caught.value)
    assert caught.value.module == "broken" and caught.value.path == str(path)
    assert "broken" not in sys.modules   # a failed import leaves nothing half-loaded


def test_a_missing_dependency_is_named_with_what_the_module_declares(tmp_path):
    path = write(tmp_path, "needs_deps.py", '''
        # /// script
        # dependencies = ["no-such-dist-abc>=1", "other"]
        # ///
        import no_such_dist_abc
    ''')
    with pytest.raises(ToolModuleError, match="declares the dependencies no-such-dist-abc>=1, "
                                              "other: are they installed"):
        load_tools(path)


@pytest.mark.parametrize("name, make, expected", [
    ("json.py", lambda p: p.write_text(TEA), "hides the module 'json'"),
    ("my-tools.py", lambda p: p.write_text(TEA), "not a valid Python module name"),
    ("notes.txt", lambda p: p.write_text(TEA), "is not a .py file or a package folder"),
    ("nothing_here.py", lambda p: None, "no such file or folder"),
    ("plain_folder", lambda p: p.mkdir(), "a folder without __init__.py"),
])
def test_paths_that_cannot_be_tool_modules_are_refused(tmp_path, name, make, expected):
    make(tmp_path / name)
    with pytest.raises(ToolModuleError, match=expected):
        load_tools(tmp_path / name)


def test_several_modules_one_broken_and_clashing_names_are_reported_not_fatal(tmp_path):
    good = write(tmp_path, "good_tools.py", TEA)
    broken = write(tmp_path, "broken_tools.py", "raise RuntimeError('boom')\n")
    clash = write(tmp_path, "clash_tools.py", '''
        from py_agent import tool

        @tool
        def brew_time(tea: str) -> str:
            """Another brew_time."""
            return tea

        @tool
        def compact(text: str) -> str:
            """Would replace the agent's own compact tool."""
            return text

        @tool
        def pour(cup: str) -> str:
            """Pour a cup."""
            return cup
    ''')
    loaded = load_tool_modules([good, broken, clash])
    assert [t.name for t in loaded.tools] == ["brew_time", "pour"]
    assert loaded.modules == {"good_tools": ["brew_time"], "clash_tools": ["pour"]}
    messages = [str(e) for e in loaded.errors]
    assert messages[0].startswith("tool module 'broken_tools': failed to import: "
                                  "RuntimeError: boom (broken_tools.py, line 1)")
    assert "its tool 'brew_time' was left out: tool module 'good_tools' already has" \
        in messages[1]
    assert "its tool 'compact' was left out: the agent itself already has" in messages[2]
    assert loaded.errors[0].to_dict()["detail"].startswith("Traceback")


def test_an_agent_runs_a_tool_of_a_loaded_module(tmp_path, make_agent):
    loaded = load_tool_modules([write(tmp_path, "tea_tools.py", TEA)])
    replies = iter([step_json(thought="Ask the tool.", tool="brew_time",
                              tool_input={"tea": "oolong"}),
                    step_json(answer="Four minutes.")])
    agent, _, _ = make_agent(lambda call: next(replies), tools=loaded.tools)
    result = run(agent.run("How long for oolong?", session_id="s"))
    assert result.steps[0].observation == "oolong: 3 minutes"
    assert result.answer == "Four minutes."


def test_script_metadata_reads_pep_723_blocks(tmp_path):
    source = textwrap.dedent('''\
        """A docstring first."""
        # /// script
        # requires-python = ">=3.11"
        # dependencies = [
        #   "roman>=4",   # roman numerals
        #   "humanize",
        # ]
        # ///
        import roman
    ''')
    assert script_metadata(source) == {"requires-python": ">=3.11",
                                       "dependencies": ["roman>=4", "humanize"]}
    assert script_metadata("import os\n# /// other\n# x = 1\n# ///\n") == {}
    write(tmp_path, "pkg/__init__.py", source)
    assert script_dependencies(tmp_path / "pkg") == ["roman>=4", "humanize"]
    assert script_dependencies(write(tmp_path, "plain.py", TEA)) == []


@pytest.mark.parametrize("block, expected", [
    ("# /// script\n# dependencies = 'roman'\n# ///\n", "must be a list of strings"),
    ("# /// script\n# dependencies = [\n# ///\n", "not valid TOML"),
    ("# /// script\n# a = 1\n# ///\nx = 1\n# /// script\n# b = 2\n# ///\n", "more than one"),
])
def test_bad_script_metadata_is_a_value_error(block, expected):
    with pytest.raises(ValueError, match=expected):
        script_metadata(block)


def test_the_readme_tool_module_loads_as_the_page_loads_it(tmp_path):
    written = readme.write_files("Add your own tool", tmp_path)
    (brew_time,) = load_tools(written["tea_tools.py"])
    assert brew_time("green") == "Steep green tea for 2 minutes."
    assert brew_time("black", strong=True) == "Steep black tea for 5 minutes."
    assert brew_time("mint").startswith("I don't know 'mint'")
