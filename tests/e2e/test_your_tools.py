"""Your own tools and your own page, end to end, as the README tells users to do them.

The README's snippets are read from README.md (tests/readme.py) and its commands are run
as written, from a folder outside the repository: ``python serve.py --tools
tea_tools.py`` (plus a PEP 723 module and a broken one) for the demo page, and
``python serve.py --tools tea_tools.py --site my_site`` for a page of your own. The
example page (examples/) runs with its own tool module. A scripted fake model calls the
tools the retriever offered, so every answer shows what the real tool returned.
"""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests import readme
from tests.e2e.conftest import REPO_ROOT
from tests.e2e.pages import (ASSISTANT, BOOT_TIMEOUT_MS, TURN_TIMEOUT_MS, Watch, boot, chat,
                             open_chat, tool_call_responder)

pytestmark = pytest.mark.e2e

START_TIMEOUT_S = 240   # the first run fetches wheels with pip and checks each module

# message pattern -> the tool call the "model" makes; then the observation as the answer.
TOOL_RESPONDER = tool_call_responder(r"""[
    [/steep (\w+) tea/i, (m) => ['brew_time', {tea: m[1]}]],
    [/write (\d+) in roman numerals/i, (m) => ['to_roman', {number: Number(m[1])}]],
    [/calculate (.+)$/i, (m) => ['calculate', {expression: m[1]}]],
    [/water my (\w+)/i, (m) => ['plant_care', {plant: m[1]}]],
]""")

BROKEN_TOOLS = '''\
from py_agent import tool


@tool
def never_offered(text: str) -> str:
    """A tool of a module that fails to import."""
    return text

undefined_thing.attribute
'''
BROKEN_ERROR = ("tool module 'broken_tools': failed to import: NameError: name "
                "'undefined_thing' is not defined (broken_tools.py, line 9)")

NO_WHEEL_TOOLS = '''\
# /// script
# dependencies = ["psutil"]
# ///
import psutil
from py_agent import tool


@tool
def cpu_load() -> str:
    """How busy the processor is."""
    return str(psutil.cpu_percent())
'''
NO_WHEEL_ERROR = ("tool module 'process_tools': dependency 'psutil' has no pure-Python "
                  "(py3-none-any) wheel on the package index and Pyodide has no build of it")


class Served:
    """``python serve.py ...`` run as a user runs it, on a free port; its output kept."""

    def __init__(self, arguments: list[str], cwd: Path) -> None:
        command = [sys.executable, str(REPO_ROOT / "serve.py"), *arguments,
                   "--port", "0", "--quiet"]
        self.process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stdout],
                         daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                pytest.fail(f"serve.py did not start in {START_TIMEOUT_S} s:\n{self.output}")
            self.lines.append(line.rstrip("\n"))
            found = re.search(r"open (http://\S+?)/ in Chrome", line)
            if found:
                self.url = found.group(1)
                break
            if self.process.poll() is not None and lines.empty():
                pytest.fail(f"serve.py exited ({self.process.returncode}):\n{self.output}")

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A user's folder outside the repository with the README's files in it."""
    folder = tmp_path_factory.mktemp("my-project")
    readme.write_files("Add your own tool", folder)
    readme.write_files("Use py-agent in your own page", folder)
    (folder / "broken_tools.py").write_text(BROKEN_TOOLS)
    (folder / "process_tools.py").write_text(NO_WHEEL_TOOLS)
    return folder


def serve_as_readme_says(section: str, project: Path, *extra: str) -> Served:
    (command,) = readme.commands(section)
    assert command[:2] == ["python", "serve.py"]
    return Served([*command[2:], *extra], project)


@pytest.fixture(scope="module")
def tools_server(project: Path):
    served = serve_as_readme_says("Add your own tool", project, "--tools", "roman_tools.py",
                                  "--tools", "broken_tools.py", "--tools", "process_tools.py")
    yield served
    served.stop()


def tools_panel(page: Page) -> list[str]:
    return page.eval_on_selector_all('[data-testid="tools-panel"] [data-tool-name]',
                                     "items => items.map(li => li.dataset.toolName)")


def test_the_page_offers_and_runs_your_tools_and_survives_broken_ones(
        page: Page, tools_server: Served, project: Path, install_fake_lm) -> None:
    # The terminal named what is wrong before the page was opened.
    assert "tool module tea_tools: 1 tool (brew_time)" in tools_server.output
    assert "tool module roman_tools: 1 tool (to_roman)" in tools_server.output
    assert f"error: {BROKEN_ERROR}" in tools_server.output
    assert NO_WHEEL_ERROR in tools_server.output

    watch = open_chat(page, tools_server.url, install_fake_lm, responderSource=TOOL_RESPONDER)
    names = tools_panel(page)
    assert {"brew_time", "to_roman", "calculate", "add_note"} <= set(names)
    assert "never_offered" not in names and "cpu_load" not in names
    errors = page.get_by_test_id("tool-errors")
    expect(errors).to_be_visible()
    expect(errors.locator('[data-module="broken_tools"]')).to_have_text(BROKEN_ERROR)
    expect(errors.locator('[data-module="process_tools"]')).to_contain_text(NO_WHEEL_ERROR)

    # The README's tool, the PEP 723 one (roman, installed with micropip from the vendored
    # wheel) and the demo's own tools all answer.
    assert chat(page, "How long should I steep green tea?") == \
        "brew_time -> Steep green tea for 2 minutes."
    step = page.locator(ASSISTANT).last.get_by_test_id("trace-step").filter(has_text="brew_time")
    expect(step.locator('[data-part="observation"]')).to_have_text(
        "Steep green tea for 2 minutes.")
    assert chat(page, "Please write 2026 in Roman numerals") == "to_roman -> MMXXVI"
    assert chat(page, "Calculate 6 * 7") == "calculate -> 6 * 7 = 42"

    # Edit the module and reload the page: the running server serves the new version.
    module = project / "tea_tools.py"
    original = module.read_text()
    try:
        module.write_text(original.replace('f"Steep {tea} tea', 'f"Brew {tea} tea'))
        boot(page, tools_server.url + "/")
        assert chat(page, "How long should I steep green tea?") == \
            "brew_time -> Brew green tea for 2 minutes."
    finally:
        module.write_text(original)
    assert watch.problems == []


def test_your_own_page_from_the_readme_answers(page: Page, project: Path,
                                                install_fake_lm) -> None:
    served = serve_as_readme_says("Use py-agent in your own page", project)
    try:
        watch = Watch(page)
        install_fake_lm(page, responderSource=TOOL_RESPONDER)
        page.goto(served.url + "/")
        expect(page.locator("#answer")).to_have_text(
            "brew_time -> Steep green tea for 2 minutes.", timeout=BOOT_TIMEOUT_MS)
        # Asking for a module serve.py does not serve: the agent starts without it and
        # says so; its memory and sessions answer too.
        second = page.evaluate("""async () => {
          const {createAgent} = await import('/agent.js');
          const agent = await createAgent({tools: ['tea_tools', 'nope'], session: 's2'});
          const reply = {tools: agent.tools.map((t) => t.name), errors: agent.toolErrors,
                         sessions: (await agent.sessions()).map((s) => s.session_id),
                         memory: (await agent.memory({session: 'main'})).recent_turns.length};
          agent.close();
          return reply;
        }""")
        assert second == {
            "tools": ["brew_time", "compact", "recall"],
            "errors": [{"module": "nope", "message": "tool module 'nope': is not served here "
                        "(served: demo_tools, tea_tools); start serve.py with --tools "
                        "PATH/nope.py"}],
            "sessions": ["main"], "memory": 1}
        assert watch.problems == []
    finally:
        served.stop()


def test_the_example_page_streams_an_answer_with_its_own_tool(
        page: Page, install_fake_lm) -> None:
    served = Served(["--site", "examples", "--tools", "examples/plant_tools.py"], REPO_ROOT)
    try:
        watch = Watch(page)
        install_fake_lm(page, responderSource=TOOL_RESPONDER, chunkDelayMs=5)
        page.goto(served.url + "/")
        expect(page.locator("#answer")).to_have_text(
            "Ready: ask about plant_care, compact, recall.", timeout=BOOT_TIMEOUT_MS)
        texts = []
        page.expose_function("seen", lambda text: texts.append(text))
        page.evaluate("""() => new MutationObserver(() => seen(
            document.querySelector('#answer').textContent)).observe(
            document.querySelector('#answer'), {childList: true, characterData: true,
                                                subtree: true})""")
        page.get_by_role("button", name="Ask").click()
        answer = "plant_care -> Water a fern every 3 days; it likes shade; keep the soil moist."
        expect(page.locator("#answer")).to_have_text(answer, timeout=TURN_TIMEOUT_MS)
        expect(page.locator("#steps li")).to_have_text(
            'plant_care({"plant": "fern"}) → Water a fern every 3 days; it likes shade; '
            'keep the soil moist.')
        # The answer streamed in: growing prefixes of it were shown before the whole.
        streamed = [text for text in texts if answer.startswith(text) and text != answer]
        assert len(streamed) >= 3 and streamed == sorted(streamed, key=len)
        assert watch.problems == []
    finally:
        served.stop()
