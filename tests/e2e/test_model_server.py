"""The page with ``serve.py --model-url``: an OpenAI-compatible server answers instead of
Gemini Nano (headless Chromium's LanguageModel is 'unavailable', and no fake is installed).

The server is tests/fake_openai_server.py over real HTTP on another port (so another
origin: the worker fetches it directly, through CORS and the CSP's connect-src); the
worker streams its server-sent events and runs the same agent, memory and IndexedDB.
"""

from __future__ import annotations

import socket
import threading

import pytest
from playwright.sync_api import Page, expect

from serving.http_server import make_server
from serving.model_server import model_server_from_args
from tests.e2e.pages import (ASSISTANT, TURN_TIMEOUT_MS, USER, Watch, boot, chat,
                             current_session, send)
from tests.fake_openai_server import Fail, FakeServer, agent_responder

pytestmark = pytest.mark.e2e

# Small enough that a few turns compact (the agent's prefix planner scales memory to it).
WINDOW = 1500
# Records every chunk the page hears of, and every text the newest answer's first step
# thought shows (each time the page redraws it, not only when a chunk arrives: the page
# draws at most every 80 ms, and a loaded page may draw the whole thought after its last
# chunk).
RECORD_CHUNKS = """() => {
  window.__chunks = [];
  window.__shown = [];
  window.pyAgentLLM.addEventListener('chunk', (event) => window.__chunks.push(event.detail));
  const messages = document.querySelector('[data-testid="messages"]');
  new MutationObserver(() => {
    const answers = messages.querySelectorAll('[data-role="assistant"]');
    const thought = answers.length && answers[answers.length - 1].querySelector('.thought');
    const text = thought ? thought.textContent : '';
    if (text && text !== window.__shown[window.__shown.length - 1]) window.__shown.push(text);
  }).observe(messages, {childList: true, subtree: true, characterData: true});
}"""


@pytest.fixture(autouse=True, scope="module")
def prepared(app_server) -> None:
    """The runtime as app_server prepared it. (Not prepared again here: prepare() prunes
    tool module archives it does not know, which another test process may be serving.)"""


def serve_with(model_url: str, **options):
    options.setdefault("environ", {})
    model_server = model_server_from_args(model_url, **options)
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, model_server=model_server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def model_server():
    with FakeServer(agent_responder, models=("fake-model", "other-model")) as fake:
        yield fake


@pytest.fixture(scope="module")
def served(model_server):
    server = serve_with(model_server.url, model="fake-model", context_window=WINDOW)
    yield server.url
    server.shutdown()
    server.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_server_answers_with_a_tool_streams_compacts_and_is_remembered_after_reload(
        page: Page, served: str, model_server: FakeServer) -> None:
    watch = Watch(page)
    boot(page, served + "/")
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-backend", "server")
    expect(status).to_contain_text("fake-model")
    expect(page.get_by_test_id("model-state")).to_have_text("Model: fake-model (server)")
    expect(page.get_by_test_id("model-guide")).to_be_hidden()
    expect(page.get_by_test_id("model-choice")).to_have_value("server:fake-model")

    page.evaluate(RECORD_CHUNKS)
    model_server.chunk_pause_s = 0.25   # paced like a slow model: the page draws a reply as
    try:                                # it grows, at most every 80 ms (0.1 s was too
                                        # close to a loaded main thread's redraws)
        answer = chat(page, "What is 17 times 23?")
    finally:
        model_server.chunk_pause_s = 0.0
    assert "391" in answer
    expect(page.locator(ASSISTANT).last.get_by_test_id("trace")).to_contain_text("calculate")
    # The step streamed in pieces (server-sent events read by the worker's fetch).
    pieces = [c for c in page.evaluate("window.__chunks") if c["purpose"] == "step"]
    by_request: dict[str, list[str]] = {}
    for piece in pieces:
        by_request.setdefault(piece["requestId"], []).append(piece["text"])
    assert len(by_request) == 2 and all(len(texts) > 3 for texts in by_request.values())
    for texts in by_request.values():   # each step's reply grows piece by piece
        assert all(a == b[:len(a)] and len(a) < len(b) for a, b in zip(texts, texts[1:]))
    # ...and the page showed the first step's thought growing as it came: part of it
    # before the whole (one part at least: the thought spans about four chunks, and a page
    # whose main thread is busy may join the middle ones into one redraw).
    shown = page.evaluate("window.__shown")
    assert "This needs arithmetic." in shown, shown
    first = shown[:shown.index("This needs arithmetic.")]
    assert first and all("This needs arithmetic.".startswith(t) and t != "This needs arithmetic."
                         for t in first), shown
    bodies = model_server.chat_requests()
    assert bodies and all(b["model"] == "fake-model" and b["stream"] for b in bodies)

    # Enough turns for the 1,500-token window to compact (the summary from the server).
    # (as many as it takes, at most twelve: the trigger depends on the planned prefix)
    panel = page.get_by_test_id("memory-panel")
    for topic in ["rivers", "volcanoes", "comets", "glaciers", "deserts", "forests", "reefs",
                  "canyons", "auroras", "geysers", "islands", "caves"]:
        chat(page, f"Tell me about {topic}: their history, how they form and change, and "
                   f"why people travel far to see {topic} with their own eyes.")
        if panel.get_attribute("data-compactions") not in (None, "0"):
            break
    expect(panel).not_to_have_attribute("data-compactions", "0", timeout=TURN_TIMEOUT_MS)
    expect(panel).to_have_attribute("data-state", "idle", timeout=TURN_TIMEOUT_MS)
    assert any("running summary" in str(b["messages"][0]["content"]) for b in
               model_server.chat_requests())

    session = current_session(page)
    boot(page, served + "/")
    assert current_session(page) == session
    expect(page.locator(USER).first).to_contain_text("What is 17 times 23?")
    expect(panel).not_to_have_attribute("data-compactions", "0")
    answer = chat(page, "What did I ask you before?")
    assert "Earlier you asked" in answer or "From my notes" in answer, answer
    assert not watch.problems, watch.problems


def test_a_server_error_is_said_clearly_and_the_turn_is_kept(
        page: Page, served: str, model_server: FakeServer) -> None:
    boot(page, served + "/")
    model_server.push(Fail(500, "The GPU fell over.", type="server_error"))
    send(page, "Hello after the crash")
    failed = page.locator(ASSISTANT).last
    expect(failed).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    expect(failed).to_contain_text("The GPU fell over.")
    expect(page.locator(USER).last.locator(".text")).to_have_text("Hello after the crash")
    expect(failed).to_have_attribute("data-saved", "true")   # kept, to retry
    failed.get_by_test_id("retry-button").click()
    retried = page.locator(ASSISTANT).last
    expect(retried).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(retried.locator(".text")).to_have_text("You said: Hello after the crash")


def test_an_unreachable_server_is_said_clearly_and_loses_no_turn(page: Page) -> None:
    port = free_port()
    server = serve_with(f"http://127.0.0.1:{port}/v1", model="absent-model")
    try:
        boot(page, server.url + "/")
        status = page.get_by_test_id("status")
        expect(status).to_have_attribute("data-backend", "server")
        expect(status).to_contain_text("not answering")
        send(page, "Is anybody there?")
        failed = page.locator(ASSISTANT).last
        expect(failed).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
        expect(failed).to_contain_text(f"127.0.0.1:{port}")
        expect(failed).to_contain_text("running")
        expect(page.locator(USER).last.locator(".text")).to_have_text("Is anybody there?")
        expect(failed).to_have_attribute("data-saved", "true")
        expect(page.get_by_test_id("chat-input")).to_be_enabled()
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_lets_no_page_in_is_reached_through_serve_py(page: Page) -> None:
    with FakeServer(agent_responder, cors=False, api_key="sk-e2e-secret") as fake:
        direct = serve_with(fake.url, model="fake-model")
        keyed = serve_with(fake.url, model="fake-model",
                           environ={"PY_AGENT_API_KEY": "sk-e2e-secret"})
        try:
            # Directly, the browser's CORS check stops the worker's fetch: the page says so.
            boot(page, direct.url + "/")
            expect(page.get_by_test_id("status")).to_contain_text("CORS")
            # Through serve.py, which adds the key: it answers, and the page never sees it.
            boot(page, keyed.url + "/")
            assert "391" in chat(page, "What is 17 times 23?")
            assert "sk-e2e-secret" not in page.content()
            manifest = page.evaluate("fetch('/vendor/manifest.json').then(r => r.text())")
            assert "sk-e2e-secret" not in manifest and '"/model/v1"' in manifest
        finally:
            for server in (direct, keyed):
                server.shutdown()
                server.server_close()


def test_without_gemini_nano_or_a_server_the_page_says_what_to_do(
        page: Page, app_server: str) -> None:
    boot(page, app_server + "/", wait_for_chat=False)
    expect(page.get_by_test_id("status")).to_contain_text("model server")
    hint = page.get_by_test_id("model-server-hint")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("python serve.py --model-url")
    expect(page.get_by_test_id("model-choice-row")).to_be_hidden()
    expect(page.get_by_test_id("chat-input")).to_be_disabled()


def test_the_user_switches_model_and_the_choice_is_kept(
        page: Page, served: str, model_server: FakeServer) -> None:
    boot(page, served + "/")
    choice = page.get_by_test_id("model-choice")
    values = choice.locator("option").evaluate_all("nodes => nodes.map(n => n.value)")
    # Gemini Nano is listed where Chrome has it; this Chromium's says 'unavailable'.
    assert values == ["server:fake-model", "server:other-model"]
    choice.select_option("server:other-model")
    expect(page.get_by_test_id("model-state")).to_have_text("Model: other-model (server)")
    chat(page, "Hello from the other model")
    assert model_server.chat_requests()[-1]["model"] == "other-model"

    boot(page, served + "/")   # the next visit starts with the choice
    expect(page.get_by_test_id("model-state")).to_have_text("Model: other-model (server)")
    expect(choice).to_have_value("server:other-model")
    choice.select_option("server:fake-model")
    expect(page.get_by_test_id("model-state")).to_have_text("Model: fake-model (server)")
