"""The page names why Chrome's model cannot answer, before the generic guide, for each
reason the LLM host can tell (web/llm_host.js asks availability() again with less):

- a device the model does not run on (unavailable whatever is asked);
- a model that is only downloadable: Chrome downloads it only after a click;
- a language the model does not take: the agent asks without naming it, and answers;
- a cross-origin iframe whose embedder did not allow="language-model" (the fake
  honours the permissions policy there, as Chrome does);

and Microsoft Edge gets its own two lines in the guide.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.pages import BOOT_TIMEOUT_MS, Watch, boot, chat

pytestmark = pytest.mark.e2e

EDGE_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/138.0.0.0 Safari/537.36 Edg/138.0.3309.2")


def reason_comes_before_the_guide(page_or_frame) -> bool:
    return page_or_frame.locator('[data-testid="model-reason"]').evaluate(
        "(node) => Boolean(node.compareDocumentPosition("
        "document.querySelector('[data-testid=model-guide]')) & Node.DOCUMENT_POSITION_FOLLOWING)")


def test_an_unavailable_device_is_named_before_the_guide(page: Page, app_server: str,
                                                         install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page, availability="unavailable")
    boot(page, app_server + "/", wait_for_chat=False)
    reason = page.get_by_test_id("model-reason")
    expect(reason).to_be_visible()
    expect(reason).to_have_attribute("data-reason", "device")
    expect(reason).to_contain_text("unavailable on this device")
    expect(page.get_by_test_id("model-guide")).to_be_visible()
    assert reason_comes_before_the_guide(page)
    expect(page.get_by_test_id("status")).to_contain_text("unavailable on this device")
    expect(page.get_by_test_id("edge-guide")).to_be_hidden()   # Chromium is not Edge
    assert watch.problems == []


def test_a_model_waiting_for_a_click_says_so(page: Page, app_server: str,
                                             install_fake_lm) -> None:
    install_fake_lm(page, availability="downloadable")
    boot(page, app_server + "/")
    box = page.get_by_test_id("model-download")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-reason", "needs-click")
    expect(page.get_by_test_id("download-note")).to_contain_text("only after a click")
    expect(page.get_by_test_id("download-model-button")).to_be_visible()
    expect(page.get_by_test_id("model-reason")).to_be_hidden()
    expect(page.get_by_test_id("model-guide")).to_be_hidden()


def test_an_unsupported_language_is_named_and_the_agent_answers_without_it(
        page: Page, app_server: str, install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page, languages=["es", "ja"])   # no English: the agent declares "en"
    boot(page, app_server + "/")
    reason = page.get_by_test_id("model-reason")
    expect(reason).to_have_attribute("data-reason", "language")
    expect(reason).to_contain_text("English (en)")
    expect(page.get_by_test_id("model-guide")).to_be_hidden()
    assert chat(page, "Hello there") == "You said: Hello there"
    # The agent's sessions were created without naming a language the model lacks.
    created = page.evaluate("() => __fakeLM.callsOf('create').map((c) => c.expectedInputs)")
    assert created and all(entry is None or all("languages" not in e for e in entry)
                           for entry in created)
    assert not [p for p in watch.problems if "pageerror" in p]


def test_a_cross_origin_iframe_without_permission_is_named(page: Page, app_server: str,
                                                           install_fake_lm) -> None:
    """The app framed by another site (localhost embeds 127.0.0.1) without
    allow="language-model". (serve.py forbids framing with frame-ancestors 'none'; a static
    host would not, so the frame's document is served here without that directive.)"""
    port = app_server.rsplit(":", 1)[1]
    embedder = f"http://localhost:{port}/__embed__.html"

    def frameable(route) -> None:
        response = route.fetch()
        headers = dict(response.headers)
        headers["content-security-policy"] = headers.get("content-security-policy", "") \
            .replace("frame-ancestors 'none'", "frame-ancestors *")
        route.fulfill(response=response, headers=headers)

    page.route(app_server + "/", frameable)
    page.route(embedder, lambda route: route.fulfill(
        content_type="text/html", body=f'<!doctype html><title>embedder</title>'
                                       f'<iframe src="{app_server}/" width="900" height="700">'
                                       f'</iframe>'))
    install_fake_lm(page)
    page.goto(embedder)
    frame = page.frame_locator("iframe")
    expect(frame.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                             timeout=BOOT_TIMEOUT_MS)
    reason = frame.get_by_test_id("model-reason")
    expect(reason).to_have_attribute("data-reason", "frame")
    expect(reason).to_contain_text('allow="language-model"')
    expect(frame.get_by_test_id("model-guide")).to_be_visible()
    expect(frame.get_by_test_id("status")).to_contain_text("frame from another site")


def test_edge_gets_its_own_lines(browser: Browser, app_server: str, install_fake_lm) -> None:
    context = browser.new_context(user_agent=EDGE_UA)
    try:
        page = context.new_page()
        install_fake_lm(page, availability="unavailable")
        boot(page, app_server + "/", wait_for_chat=False)
        edge = page.get_by_test_id("edge-guide")
        expect(edge).to_be_visible()
        expect(edge).to_contain_text("Phi-4-mini")
        expect(edge).to_contain_text("edge://flags/#edge-llm-prompt-api-for-phi-mini")
    finally:
        context.close()
