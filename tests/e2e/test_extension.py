"""The Chrome extension end to end: built by serve.py's own code, loaded unpacked into
Chromium (a persistent context with --load-extension), its side panel page opened in a
tab (headless Chromium cannot open the side panel itself) with the fake Prompt API, and
fixture pages in other tabs (tests/e2e/extension_app.py).

The three backends the panel offers: Gemini Nano (the fake Prompt API, the default), the
in-page model (the tiny random-weight GGUF built into the extension, run by llama.cpp in
WebAssembly: no fake), and a model server named at build time (the fake OpenAI-compatible
server, which sends no CORS headers: the extension's host permission lets it through).
A tool server named at build time (--mcp: tests/mcp_servers.py, also without CORS
headers) is connected at start.
The tests that use the last two choose them in the Model menu and choose Gemini Nano
again after.

One browser and one booted panel serve the whole file (each boot costs seconds); the
restart test comes last and starts the browser again on the same profile.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect

from tests.e2e.extension_app import (ARTICLE_SECTIONS, HUGE_NEEDLE, PLANTED, ExtensionBrowser,
                                     FixtureServer, build_test_extension, marker,
                                     page_tools_call)
from tests.e2e.page_model_app import write_model
from tests.e2e.pages import ASSISTANT, BOOT_TIMEOUT_MS, SHOWN_AFTER_BOOT, TURN_TIMEOUT_MS, \
    answer_to, chat, send, step_responder, wait_until
from tests.fake_openai_server import ChatRequest, FakeServer, agent_responder
from tests.tool_server_processes import free_port, python_server

PAGE_TOOLS = ["read_page", "find_in_page", "summarize_page", "page_selection", "page_links",
              "page_images", "look_at_image", "capture_tab", "list_tabs"]

# The scripted model: the user's message picks a page tool; the observation's page text
# is answered with its sentence that shares most words with the message, in quotes; a
# part of a page to summarize is summarized as the section words it holds.
RESPONDER = step_responder(r"""
    const observed = /^Observation from (\w+): ([\s\S]*)$/.exec(text);
    const asked = window.__asked || '';
    if (observed) {
      const data = /<page-data[^>]*>\n([\s\S]*?)\n<\/page-data>/.exec(observed[2]);
      if (!data) return step({thought: 'no page', finalAnswer: `No page: ${observed[2].slice(0, 300)}`});
      if (observed[1] === 'summarize_page') return step({thought: 'done', finalAnswer: `Summary: ${data[1]}`});
      const words = new Set(asked.toLowerCase().match(/[a-z0-9]{3,}/g) || []);
      let best = '', score = -1;
      for (const sentence of data[1].split(/(?<=[.!?;])\s+|\n/)) {
        const s = sentence.replace(/^\[[^\]]*\]$/, '').trim();
        const n = (s.toLowerCase().match(/[a-z0-9]{3,}/g) || []).filter((w) => words.has(w)).length;
        if (s.length > 12 && n > score) { best = s; score = n; }
      }
      return step({thought: 'found it', finalAnswer: `According to the page, “${best.replace(/[.;]$/, '')}”.`});
    }
    const message = text.slice(text.lastIndexOf('User: ') + 6).trim();
    window.__asked = message;
    const offered = schema.properties.toolName.enum;
    const pick = /summar/i.test(message) ? ['summarize_page', {}]
      : /selected/i.test(message) ? ['page_selection', {}]
      : /tabs/i.test(message) ? ['list_tabs', {}]
      : /^find /i.test(message) ? ['find_in_page', {query: message.slice(5)}]
      : /^where does (this|the) page/i.test(message) ? ['find_in_page', {query: message}]
      : ['read_page', {question: message}];
    if (!offered.includes(pick[0])) return step({finalAnswer: `NOT OFFERED ${pick[0]}: ${offered}`});
    return step({thought: 'read the page', toolName: pick[0], toolInput: pick[1]});
""", setup="""
  const summarize = (input) => {
    const text = String(input);
    const found = [...new Set(text.match(/zeta\\d\\dquill/g) || [])];
    const previous = /<summary-so-far>\\n([\\s\\S]*?)\\n<\\/summary-so-far>/.exec(text)[1];
    return `The guide covers ${found.join(', ')}. ` + (previous.startsWith('(nothing') ? '' : previous);
  };
  window.__pageSummaries = 0;
""").replace("""    const schema = ctx.responseConstraint;""", """    const schema = ctx.responseConstraint;
    if (String(input).includes('<page-part')) { window.__pageSummaries++; return summarize(input); }""")


MODEL_LOAD_TIMEOUT_MS = 60_000
IN_PAGE_MODEL = "page-model:models/tiny.gguf"   # the Model menu's values
SERVER_MODEL = "server:"   # the server's first model: it is asked which once chosen
GEMINI_NANO = "prompt-api"


def server_responder(request: ChatRequest):
    """The model server's replies: a question about laptops reads the page; the table
    row with 32 GB answers it; anything else as the suite's scripted agent does."""
    last = request.last_user
    if last.startswith("Observation from read_page: "):
        rows = [line.strip() for line in last.splitlines() if "| 32 GB |" in line]
        return json.dumps({"thought": "The table has it.", "toolName": "none", "toolInput": "",
                           "finalAnswer": f"From the page: {rows[0] if rows else 'nothing'}"})
    message = last.rpartition("User: ")[2].strip()
    if "read_page" in request.offered_tools() and "laptop" in message.lower():
        return json.dumps({"thought": "Read the page.", "toolName": "read_page",
                           "toolInput": {"question": message}, "finalAnswer": ""})
    return agent_responder(request)


@pytest.fixture(scope="module")
def model_server():
    with FakeServer(server_responder, models=("fake-model",), cors=False) as fake:
        yield fake


@pytest.fixture(scope="module")
def tool_server_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def extension(tmp_path_factory, model_server, tool_server_port):
    folder = tmp_path_factory.mktemp("extension")
    return build_test_extension(
        folder / "py-agent", gguf=write_model(folder, "tiny.gguf"), model_url=model_server.url,
        mcp_urls=[f"http://127.0.0.1:{tool_server_port}/nocors/mcp"])


@pytest.fixture(scope="module")
def fixtures():
    server = FixtureServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def browser(playwright, extension, tmp_path_factory):
    opened = ExtensionBrowser(playwright, extension, tmp_path_factory.mktemp("profile"))
    opened.start()
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def tool_server(browser, tool_server_port):
    """tests/mcp_servers.py, on the port built into the extension, started once the
    extension's id is known: like any server made with the mcp package on localhost, it
    refuses another origin than localhost's (403) unless told to accept it. The extension
    connects to its path that sends no CORS headers (the host permission lets it in)."""
    server = python_server(tool_server_port,
                           allow_origins=[f"chrome-extension://{browser.extension_id}"])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def panel(browser, fixtures, tool_server):
    browser.open_tab(fixtures.url + "/selection.html")
    page = browser.open_panel(responderSource=RESPONDER)
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                            timeout=BOOT_TIMEOUT_MS)
    wait_until(page, SHOWN_AFTER_BOOT, timeout_ms=20_000)
    page.problems = problems
    return page


def show(browser, panel, url: str):
    """Open ``url`` in a tab, then come back to the panel (whose page tools read the tab
    used last)."""
    tab = browser.open_tab(url)
    panel.bring_to_front()
    return tab


def prompts(panel) -> list[str]:
    """Every prompt the fake model was sent, in order."""
    return panel.evaluate("window.__fakeLM.calls.filter((c) => c.method === 'prompt' || "
                          "c.method === 'promptStreaming').map((c) => c.input)")


def choose_model(panel, value: str, backend: str, timeout_ms: int = 20_000) -> None:
    """Choose ``value`` in the Model menu; wait until ``backend`` answers."""
    panel.get_by_test_id("model-choice").select_option(value)
    expect(panel.get_by_test_id("status")).to_have_attribute("data-backend", backend,
                                                             timeout=timeout_ms)
    expect(panel.get_by_test_id("chat-input")).to_be_enabled(timeout=timeout_ms)


def policy_problems(panel) -> list[str]:
    return [p for p in panel.problems if "Content Security Policy" in p or "Refused" in p]


def test_the_side_panel_boots_with_the_page_tools_and_no_policy_errors(panel):
    tools = panel.get_by_test_id("tools-list")
    for name in PAGE_TOOLS:
        expect(tools).to_contain_text(name, timeout=20_000)
    assert policy_problems(panel) == []
    manifest = panel.evaluate("chrome.runtime.getManifest()")
    assert manifest["permissions"] == ["activeTab", "scripting", "sidePanel"]
    policy = manifest["content_security_policy"]["extension_pages"]
    assert "'unsafe-eval'" not in policy
    # Manifest V3 refuses blob: among worker sources; thumbnails (img-src) may be blob:
    workers = next(d for d in policy.split(";") if d.strip().startswith("worker-src"))
    assert "blob:" not in workers and "img-src 'self' data: blob:" in policy


def test_the_in_page_model_built_into_the_extension_answers_in_the_side_panel(panel):
    started = []
    panel.on("worker", lambda worker: started.append(worker.url))
    option = panel.get_by_test_id("model-choice").locator(f'option[value="{IN_PAGE_MODEL}"]')
    expect(option).to_have_text("tiny.gguf, in this page (1.0 MB, built in)")
    asked = len(prompts(panel))
    choose_model(panel, IN_PAGE_MODEL, "page-model", MODEL_LOAD_TIMEOUT_MS)
    expect(panel.get_by_test_id("status")).to_contain_text(
        "tiny-random-llama (1.0 MB), running in this page with llama.cpp, single-threaded")
    # llama.cpp's worker came from the extension's own file, and no worker from a Blob
    # (docs/extension.md: the policy cannot name blob:).
    assert any("/llama_worker.js?run=" in url for url in started), started
    assert not [url for url in started if url.startswith("blob:")]
    send(panel, "Convert 3 ounces to grams, please.")
    answer = answer_to(panel, "Convert 3 ounces to grams, please.")
    expect(answer).to_have_attribute("data-state", re.compile("^(answered|incomplete)$"),
                                     timeout=TURN_TIMEOUT_MS * 3)
    assert answer.locator(".text").text_content().strip()
    assert len(prompts(panel)) == asked   # Gemini Nano (the fake) was not asked
    assert policy_problems(panel) == []
    choose_model(panel, GEMINI_NANO, GEMINI_NANO)


def test_a_question_is_answered_from_the_page_and_the_table_reaches_the_prompt(browser, panel,
                                                                              fixtures):
    show(browser, panel, fixtures.url + "/laptops.html")
    answer = chat(panel, "Which developers laptop has 32 GB memory for virtual machines?")
    assert "Heron Pro 16" in answer
    observed = [p for p in prompts(panel) if p.startswith("Observation from read_page")]
    assert observed and "| Heron Pro 16 | 32 GB | 1 TB SSD | 1.9 kg | 1,649 EUR |" in observed[-1]
    assert "Hidden promo" not in observed[-1] and "Screen-reader note" not in observed[-1]


def test_a_quote_in_the_answer_scrolls_the_tab_to_it(browser, panel, fixtures):
    tab = show(browser, panel, fixtures.url + "/article.html")
    answer = chat(panel, "How much is the cancellation fee for a booking at the harbour office?")
    assert "thirty-five euros" in answer
    quote = panel.locator(ASSISTANT).last.get_by_test_id("page-quote")
    expect(quote).to_have_count(1)
    assert tab.evaluate("scrollY") == 0
    quote.click()
    expect(quote).to_have_attribute("data-state", "shown")
    wait_until(tab, "scrollY > 1000")
    # The passage is in view, and highlighted (the highlight registry is the document's).
    assert tab.evaluate("""(() => { const p = [...document.querySelectorAll('p')]
        .find((e) => e.textContent.includes('thirty-five euros')).getBoundingClientRect();
        return p.top >= 0 && p.bottom <= innerHeight; })()""")


def test_hidden_injected_text_never_reaches_a_prompt(browser, panel, fixtures):
    show(browser, panel, fixtures.url + "/injected.html")
    answer = chat(panel, "What does this page say about tomatoes and sun?")
    assert "six to eight hours" in answer
    chat(panel, "Summarize this page")
    everything = "\n".join(prompts(panel))
    assert "Tomatoes need six to eight hours" in everything
    assert "PWNED" not in everything
    assert "Left out: " in everything and "frame(s) on the page were not read" in everything


def test_text_a_person_cannot_see_never_reaches_a_prompt_and_is_counted(browser, panel,
                                                                       fixtures):
    """Issue 38, point 8: text in the background's colour, clipped away, faint through its
    ancestors, scaled to nothing, pushed off by text-indent, covered by another element,
    or a box's clipped tail (unseen.html, tests/e2e/test_page_reader.py) reaches no prompt,
    and the observation says how much was left out and why."""
    show(browser, panel, fixtures.url + "/unseen.html")
    answer = chat(panel, "What does this page say about basil and sun?")
    assert "six hours of sun" in answer
    observed = [p for p in prompts(panel) if p.startswith("Observation from read_page")][-1]
    assert "Lavender needs full sun and little water." in observed
    assert "Left out: 16 pieces of text a person cannot see on the page (" in observed
    assert "in the background's colour" in observed and "covered by another element" in observed
    assert "PWNED" not in "\n".join(prompts(panel))


def test_a_question_where_a_long_page_says_something_finds_its_passages(browser, panel, fixtures):
    show(browser, panel, fixtures.url + "/article.html")
    answer = chat(panel, "Where does the page mention the cancellation fee at the harbour office?")
    assert "thirty-five euros" in answer
    observed = [p for p in prompts(panel) if p.startswith("Observation from find_in_page")][-1]
    assert PLANTED in observed
    # each passage with where it is: the planted sentence's, under its section's heading
    assert re.search(rf"\[part \d+ of \d+, under “Section 17: {marker(17)}”\]\n[^\[]*"
                     + re.escape(PLANTED), observed)
    # The matching passages, not the page: a few of its thirty sections at most.
    sections = [n for n in range(1, ARTICLE_SECTIONS + 1) if marker(n) in observed]
    assert 17 in sections and len(sections) <= 6
    assert len(observed) < 12_000   # the page is about 70,000 characters


def test_a_model_server_named_at_build_time_answers_in_the_side_panel(browser, panel, fixtures,
                                                                       model_server):
    manifest = panel.evaluate("chrome.runtime.getManifest()")
    origin = model_server.url.removesuffix("/v1")
    assert origin + "/*" in manifest["host_permissions"]
    assert origin in manifest["content_security_policy"]["extension_pages"]
    show(browser, panel, fixtures.url + "/laptops.html")
    choose_model(panel, SERVER_MODEL, "server")
    expect(panel.get_by_test_id("status")).to_contain_text(f"fake-model on the model server at {origin}")
    asked, sent = len(prompts(panel)), len(model_server.chat_requests())
    answer = chat(panel, "Which laptop has 32 GB of memory?")
    assert "| Heron Pro 16 | 32 GB |" in answer
    bodies = model_server.chat_requests()[sent:]
    assert any("| Heron Pro 16 | 32 GB | 1 TB SSD |" in str(m.get("content"))
               for body in bodies for m in body["messages"])   # the page reached the server
    assert len(prompts(panel)) == asked   # Gemini Nano (the fake) was not asked
    choose_model(panel, GEMINI_NANO, GEMINI_NANO)


def test_a_tool_server_named_at_build_time_connects_without_cors(panel, tool_server):
    url = tool_server.url + "/nocors/mcp"
    manifest = panel.evaluate("chrome.runtime.getManifest()")
    assert tool_server.url + "/*" in manifest["host_permissions"]
    assert tool_server.url in manifest["content_security_policy"]["extension_pages"]
    item = panel.locator(f'[data-testid="tool-server"][data-url="{url}"]')
    expect(item).to_have_attribute("data-state", "connected", timeout=TURN_TIMEOUT_MS)
    expect(panel.locator('[data-tool-name="weather"]')).to_have_attribute(
        "data-server", "py-agent-test-server")
    assert policy_problems(panel) == []


def test_summarizing_a_page_longer_than_the_window_reads_every_chunk(browser, panel, fixtures):
    show(browser, panel, fixtures.url + "/article.html")
    before = panel.evaluate("window.__pageSummaries")
    answer = chat(panel, "Summarize this page please")
    parts = [p for p in prompts(panel) if "<page-part" in p]
    assert panel.evaluate("window.__pageSummaries") - before >= 2
    for section in range(1, ARTICLE_SECTIONS + 1):
        assert any(marker(section) in p for p in parts), section
    assert answer.startswith("Summary:") and marker(ARTICLE_SECTIONS) in answer


def test_a_5_mb_page_is_read_within_its_cap_and_the_prompt_stays_within_the_window(
        browser, panel, fixtures):
    show(browser, panel, fixtures.url + "/huge.html")
    started = time.monotonic()
    chat(panel, "What is the lighthouse keeper's cat called?")
    seconds = time.monotonic() - started
    observed = [p for p in prompts(panel) if p.startswith("Observation from read_page")][-1]
    assert "only its first" in observed and "5,0" in observed
    assert HUGE_NEEDLE not in observed   # past the cap: said, not silently missing
    window = panel.evaluate("window.__fakeLM.config ? window.__fakeLM.config.contextWindow : 9216")
    assert len(observed) < 6000 and len(observed) / 4 < window
    assert seconds < 60


def test_the_selection_is_what_the_user_selected(browser, panel, fixtures):
    tab = show(browser, panel, fixtures.url + "/selection.html")
    tab.evaluate("""() => { const range = document.createRange();
        range.selectNodeContents(document.getElementById('deposit'));
        getSelection().removeAllRanges(); getSelection().addRange(range); }""")
    answer = chat(panel, "Explain the selected paragraph about the deposit")
    assert "1,200 EUR" in answer
    observed = [p for p in prompts(panel) if p.startswith("Observation from page_selection")][-1]
    assert "twelve months" not in observed   # the selection, not the page


def test_pages_the_extension_may_not_read_say_why(browser, panel, fixtures):
    tab = browser.open_tab("chrome://version")
    panel.bring_to_front()
    said = page_tools_call(panel, "readPage")
    assert said["reason"] == "browser-page" and "may not read" in said["error"]
    answer = chat(panel, "What is on this browser page?")
    assert "The page could not be read" in answer and "browser page" in answer
    tab.close()
    gone = show(browser, panel, fixtures.url + "/laptops.html")
    tab_id = page_tools_call(panel, "readPage")["tabId"]
    gone.close()
    said = page_tools_call(panel, "readPage", {"tab": tab_id})
    assert said["reason"] == "closed" and "closed" in said["error"]


def test_the_panel_keeps_its_session_across_a_tab_switch_and_a_browser_restart(
        browser, panel, fixtures):
    answers = panel.locator(ASSISTANT).count()
    tab = show(browser, panel, fixtures.url + "/selection.html")
    tab.bring_to_front()
    panel.bring_to_front()
    assert panel.locator(ASSISTANT).count() == answers
    session = panel.evaluate("localStorage.length")   # the page's own storage works here
    assert session >= 0
    browser.close()
    browser.start()
    again = browser.open_panel(responderSource=RESPONDER)
    expect(again.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                             timeout=BOOT_TIMEOUT_MS)
    wait_until(again, SHOWN_AFTER_BOOT, timeout_ms=20_000)
    expect(again.locator(ASSISTANT)).to_have_count(answers, timeout=20_000)
    assert again.locator(ASSISTANT).filter(has_text="Heron Pro 16").count() >= 1
