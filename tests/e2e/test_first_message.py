"""The first message counts, whatever model answers: a Send (or Enter) from the first
paint on, while the agent is still starting, is queued, shown as queued, and answered
once the agent and its model are ready; on a first visit and after a reload.

Each backend the page can start with gets the same test: Chrome's Prompt API (the fake
LanguageModel) and an OpenAI-compatible model server (serve.py --model-url, with
tests/fake_openai_server.py over real HTTP; headless Chromium's own LanguageModel says
'unavailable', so the worker picks the server). The in-page model (serve.py --gguf, a
real tiny GGUF run by llama.cpp in the page, no LanguageModel at all) gets its own: its
message waits for the model to load from the browser's storage as well.
"""

from __future__ import annotations

import threading
import time

import pytest
from playwright.sync_api import Page, expect

from serving.http_server import make_server
from serving.model_server import model_server_from_args
from tests.e2e.page_model_app import NO_PROMPT_API, start_app
from tests.e2e.pages import (BOOT_TIMEOUT_MS, TURN_TIMEOUT_MS, USER, Watch, answer_to, boot,
                             chat, current_session, tool_call_responder, wait_until)
from tests.fake_openai_server import FakeServer, agent_responder

pytestmark = pytest.mark.e2e

CALC = tool_call_responder(
    "[[/what is (\\d+) times (\\d+)/i, (m) => ['calculate', "
    "JSON.stringify({expression: `${m[1]} * ${m[2]}`})]]]")

# Notes whether the composer ever showed a queued message (and the hint saying so), from
# the document's parsing on: the queue may be short, too short to catch by polling.
WATCH_QUEUE = """(() => {
  window.__queue = {shown: false, hint: ''};
  document.addEventListener('DOMContentLoaded', () => {
    const form = document.querySelector('[data-testid="composer"]');
    const hint = document.querySelector('[data-testid="chat-hint"]');
    const check = () => {
      if (form.getAttribute('data-queued') === 'true') {
        window.__queue.shown = true;
        window.__queue.hint = window.__queue.hint || hint.textContent;
      }
    };
    new MutationObserver(check).observe(document.body,
      {attributes: true, subtree: true, childList: true, characterData: true});
  });
})();"""


@pytest.fixture(autouse=True, scope="module")
def prepared(app_server) -> None:
    """The runtime as app_server prepared it (the model server's app below serves it)."""


@pytest.fixture(scope="module")
def model_server_app():
    """serve.py with --model-url pointing at the fake OpenAI-compatible server."""
    with FakeServer(agent_responder, models=("fake-model",)) as fake:
        model_server = model_server_from_args(fake.url, model="fake-model", environ={})
        server = make_server("127.0.0.1", 0, quiet=True, embedder=False, model_server=model_server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield server.url
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["prompt-api", "server"])
def backend(request, page: Page, install_fake_lm) -> tuple[str, str]:
    """(backend name, the page's URL) with that backend answering."""
    if request.param == "prompt-api":
        install_fake_lm(page, responderSource=CALC)
        return request.param, request.getfixturevalue("app_server") + "/"
    return request.param, request.getfixturevalue("model_server_app") + "/"


# The agent worker's messages from its 'ready' on are held until __releaseReady() (the
# page's own listeners are added after this one, so they see nothing before): a send at
# first paint then always finds the agent starting, however fast it starts.
HOLD_READY = """(() => {
  const Real = window.Worker, held = [];
  let holding = false, released = false;
  window.__readyHeld = () => holding;
  window.Worker = class extends Real {
    constructor(url, options) {
      super(url, options);
      if (options?.name !== 'agent') return;
      this.addEventListener('message', (event) => {
        if (released) return;
        if (event.data?.type === 'boot' && event.data.phase === 'ready') holding = true;
        if (holding) { event.stopImmediatePropagation(); held.push(event.data); }
      });
      window.__releaseReady = () => {
        released = true;
        for (const data of held.splice(0)) this.dispatchEvent(new MessageEvent('message', {data}));
      };
    }
  };
})();"""


def send_at_first_paint(page: Page, url: str, text: str, *, enter: bool = False) -> bool:
    """Load ``url`` and send ``text`` as soon as the message box exists (with the Send
    button, or Enter), the agent's 'ready' held back until it is sent (HOLD_READY).
    Whether the page's Python was up by then."""
    page.add_init_script(script=HOLD_READY)
    page.goto(url, wait_until="commit")
    box = page.get_by_test_id("chat-input")
    box.wait_for()
    box.fill(text)
    ui_up = page.evaluate("globalThis.pyAgentUIUp === true")
    if enter:
        box.press("Enter")
    else:
        page.get_by_test_id("send-button").click()
    assert page.get_by_test_id("status").get_attribute("data-state") != "ready"
    wait_until(page, "typeof window.__releaseReady === 'function'", BOOT_TIMEOUT_MS)
    page.evaluate("window.__releaseReady()")
    return ui_up


def expect_queued_then_answered(page: Page, text: str, answer: str) -> None:
    """``text`` was queued (and said so), then sent once, and answered with ``answer``."""
    reply = answer_to(page, text)
    expect(reply).to_have_attribute("data-state", "answered",
                                    timeout=BOOT_TIMEOUT_MS + TURN_TIMEOUT_MS)
    expect(reply.locator(".text")).to_contain_text(answer)
    queue = page.evaluate("window.__queue")
    assert queue["shown"] and "queued" in queue["hint"], queue
    expect(page.get_by_test_id("chat-input")).to_have_value("")
    expect(page.get_by_test_id("composer")).not_to_have_attribute("data-queued", "true")
    expect(page.locator(USER).filter(has_text=text)).to_have_count(1)


def test_a_send_at_first_paint_is_queued_and_answered(page: Page, backend) -> None:
    name, url = backend
    watch = Watch(page)
    page.add_init_script(script=WATCH_QUEUE)
    send_at_first_paint(page, url, "What is 17 times 23?")
    expect_queued_then_answered(page, "What is 17 times 23?", "391")
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", name)
    assert not watch.problems, watch.problems


def test_an_enter_at_first_paint_after_a_reload_is_answered_in_the_same_session(
        page: Page, backend) -> None:
    name, url = backend
    page.add_init_script(script=WATCH_QUEUE)
    boot(page, url)
    assert "42" in chat(page, "What is 6 times 7?")
    session = current_session(page)

    send_at_first_paint(page, url, "What is 17 times 23?", enter=True)
    expect_queued_then_answered(page, "What is 17 times 23?", "391")
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", name)
    assert current_session(page) == session
    expect(page.locator(USER)).to_have_count(2)
    expect(page.locator(USER).first).to_contain_text("What is 6 times 7?")


def test_a_send_before_the_page_python_is_up_shows_as_queued_at_once(
        page: Page, backend) -> None:
    """The page's Python is held back (its modules' bundle is not served until the
    message is sent): index.html's own script shows the message as queued at once."""
    name, url = backend
    page.add_init_script(script=WATCH_QUEUE)
    held, released = [], []

    def hold(route) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)
    page.route("**/ui-bundle.json", hold)
    page.goto(url, wait_until="commit")
    box = page.get_by_test_id("chat-input")
    box.wait_for()
    box.fill("What is 17 times 23?")
    page.get_by_test_id("send-button").click()
    assert page.evaluate("globalThis.pyAgentUIUp === true") is False
    expect(page.get_by_test_id("composer")).to_have_attribute("data-queued", "true")
    expect(page.get_by_test_id("chat-hint")).to_contain_text("queued")
    expect(box).not_to_be_editable()
    expect(box).to_have_value("What is 17 times 23?")

    deadline = time.monotonic() + BOOT_TIMEOUT_MS / 1000
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the page never asked for its UI modules"
    assert page.evaluate("globalThis.pyAgentUIUp === true") is False
    released.append(True)
    for route in held:
        route.continue_()
    wait_until(page, "globalThis.pyAgentUIUp === true", BOOT_TIMEOUT_MS)
    expect_queued_then_answered(page, "What is 17 times 23?", "391")
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", name)


@pytest.fixture(scope="module")
def page_model_app(tmp_path_factory):
    """serve.py with --gguf offering the tiny GGUF (tests/e2e/page_model_app.py)."""
    servers, site = start_app(tmp_path_factory.mktemp("first_message"), ("tiny.gguf",))
    yield site
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_send_at_first_paint_with_the_in_page_model_chosen_is_queued_and_answered(
        page: Page, page_model_app) -> None:
    site = page_model_app
    url = site.url + "/"
    watch = Watch(page)
    page.add_init_script(script=NO_PROMPT_API)
    page.add_init_script(script=WATCH_QUEUE)
    boot(page, url, wait_for_chat=False)
    page.get_by_test_id("page-model-offer-button").click()       # the first visit chooses it
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "page-model",
                                                            timeout=BOOT_TIMEOUT_MS)
    expect(page.get_by_test_id("chat-input")).to_be_enabled(timeout=BOOT_TIMEOUT_MS)
    downloads = site.hits["/models/tiny.gguf"]

    send_at_first_paint(page, url, "Hello from the first paint")
    reply = answer_to(page, "Hello from the first paint")
    expect(reply).to_have_attribute("data-state", "answered",
                                    timeout=BOOT_TIMEOUT_MS + TURN_TIMEOUT_MS * 3)
    expect(reply.locator(".text")).not_to_be_empty()
    queue = page.evaluate("window.__queue")
    assert queue["shown"] and "queued" in queue["hint"], queue
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "page-model")
    expect(page.locator(USER).filter(has_text="Hello from the first paint")).to_have_count(1)
    assert site.hits["/models/tiny.gguf"] == downloads   # loaded from the browser's storage
    assert not watch.problems, watch.problems
