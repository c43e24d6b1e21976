"""The Model menu with in-page models (serve.py --gguf) beside Gemini Nano (the fake
LanguageModel, available): the download with its progress bar and Cancel, the kept files
and Delete, switching back and forth in one session, and every bad input with a message
that says what happened while the model in use stays and nothing is half-kept.

The in-page models are real GGUF files run by the real engine (tests/e2e/page_model_app.py);
only Gemini Nano is a fake, because Chromium here has none.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.page_model_app import start_app
from tests.e2e.pages import (TURN_TIMEOUT_MS, Watch, answer_to, ask_worker, boot, chat,
                             current_session, failed_turn, send, step_responder)

pytestmark = pytest.mark.e2e

LOAD_TIMEOUT_MS = 60_000
# Gemini Nano (the fake) answers with what it remembers of the cat.
REMEMBERS = step_responder("""
    const read = [...ctx.history.map((m) => m.content), text].join('\\n');
    const cat = /Biscuit/.test(read) ? 'Biscuit' : 'nobody';
    return step({thought: 'memory', finalAnswer: `Nano remembers ${cat}.`});""")
# Whether the page's own store keeps the model at url ('kept' in the offer).
KEPT = """async (url) => {
  const absolute = (u) => new URL(u, location.href).href;
  return (await pyAgentPageModels.offered()).find((m) => absolute(m.url) === absolute(url)).kept;
}"""


@pytest.fixture(autouse=True, scope="module")
def prepared(app_server) -> None:
    """The runtime as app_server prepared it."""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    servers, site = start_app(
        tmp_path_factory.mktemp("page_model_menu"),
        ("tiny.gguf", "slow.gguf", "truncated.gguf", "bad_template.gguf"),
        remote=("/cors/not_a_model.gguf", "/cors/missing.gguf", "/nocors/tiny.gguf",
                "/cors/huge.gguf"))
    yield site
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def nano_page(page: Page, site, install_fake_lm) -> Page:
    install_fake_lm(page, responderSource=REMEMBERS)
    boot(page, site.url + "/")
    return page


def choose(page: Page, value: str) -> None:
    page.get_by_test_id("model-choice").select_option(value)


def expect_in_use(page: Page, value: str) -> None:
    expect(page.get_by_test_id("model-choice")).to_have_value(value, timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("chat-input")).to_be_enabled(timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("status")).to_have_attribute(
        "data-backend", value.partition(":")[0])


def test_the_menu_lists_every_model_with_its_size(nano_page: Page, site) -> None:
    options = nano_page.get_by_test_id("model-choice").locator("option")
    # the menu is filled once the worker has said which models the site offers (after
    # ready, with the page models' script loaded on that first use): wait for it
    expect(options).to_have_count(9, timeout=LOAD_TIMEOUT_MS)
    values = options.evaluate_all("nodes => nodes.map(n => n.value)")
    assert values == ["prompt-api", "page-model:models/tiny.gguf", "page-model:models/slow.gguf",
                      "page-model:models/truncated.gguf", "page-model:models/bad_template.gguf",
                      f"page-model:{site.other}/cors/not_a_model.gguf",
                      f"page-model:{site.other}/cors/missing.gguf",
                      f"page-model:{site.other}/nocors/tiny.gguf",
                      f"page-model:{site.other}/cors/huge.gguf"]
    expect(options.nth(1)).to_have_text("tiny.gguf, in this page (1.0 MB download)")
    expect(options.nth(8)).to_have_text("huge.gguf, in this page (40.0 GB download)")
    expect(options.nth(6)).to_have_text("missing.gguf, in this page (downloads once)")
    # Gemini Nano stays the default where Chrome has it; the guide is not shown.
    expect(nano_page.get_by_test_id("status")).to_have_attribute("data-backend", "prompt-api")
    expect(nano_page.get_by_test_id("model-guide")).to_be_hidden()


def test_a_download_shows_its_progress_can_be_cancelled_and_keeps_nothing(
        nano_page: Page, site) -> None:
    page = nano_page
    choose(page, "page-model:models/slow.gguf")
    label = page.get_by_test_id("page-model-progress-label")
    expect(label).to_contain_text("Downloading slow.gguf:", timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("model-choice")).to_be_disabled()
    seen = []
    while len(set(seen)) < 3:                     # the bar moves
        value = float(page.get_by_test_id("page-model-progress").get_attribute("value"))
        if 0 < value < 1:
            seen.append(value)
        page.wait_for_timeout(100)
    assert seen == sorted(seen)
    page.get_by_test_id("page-model-cancel").click()
    note = page.get_by_test_id("page-model-note")
    expect(note).to_contain_text("Cancelled")
    expect(page.get_by_test_id("page-model-progress-row")).to_be_hidden()
    expect(page.get_by_test_id("model-choice")).to_have_value("prompt-api")
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "prompt-api")
    assert page.evaluate(KEPT, "models/slow.gguf") is False
    assert "Nano remembers" in chat(page, "Still there?")      # the model in use stays

    hits = site.hits["/models/slow.gguf"]
    choose(page, "page-model:models/slow.gguf")               # a second try: downloads again
    expect_in_use(page, "page-model:models/slow.gguf")
    assert site.hits["/models/slow.gguf"] == hits + 1
    assert page.evaluate(KEPT, "models/slow.gguf") is True
    kept = page.get_by_test_id("kept-model")
    expect(kept).to_have_count(1)
    expect(kept).to_contain_text("slow.gguf, 1.0 MB")
    expect(kept.get_by_test_id("delete-model-button")).to_be_disabled()   # in use


def test_switching_between_nano_and_an_in_page_model_keeps_the_session_then_delete(
        nano_page: Page, site) -> None:
    page = nano_page
    watch = Watch(page)
    assert chat(page, "My cat is called Biscuit.") == "Nano remembers Biscuit."
    session = current_session(page)
    choose(page, "page-model:models/tiny.gguf")
    expect_in_use(page, "page-model:models/tiny.gguf")
    send(page, "And my dog is called Rex.")
    expect(answer_to(page, "And my dog is called Rex.")).to_have_attribute(
        "data-state", "answered", timeout=TURN_TIMEOUT_MS * 3)
    memory = ask_worker(page, "memory", session_id=session)
    assert [t["user"] for t in memory["recent_turns"]] == ["My cat is called Biscuit.",
                                                           "And my dog is called Rex."]
    choose(page, "prompt-api")
    expect_in_use(page, "prompt-api")
    assert current_session(page) == session
    assert chat(page, "What is my cat called?") == "Nano remembers Biscuit."
    # Back on Nano, the in-page model is unloaded (its memory freed) but kept on disk.
    assert page.evaluate("pyAgentPageModels.models.size") == 0
    kept = page.get_by_test_id("kept-model")
    expect(kept).to_have_count(1)
    page.get_by_test_id("kept-models").locator("summary").click()
    kept.get_by_test_id("delete-model-button").click()
    expect(page.get_by_test_id("page-model-note")).to_contain_text("tiny.gguf was deleted")
    expect(page.get_by_test_id("kept-model")).to_have_count(0)
    assert page.evaluate(KEPT, "models/tiny.gguf") is False
    expect(page.get_by_test_id("model-choice").locator('option[value="page-model:models/tiny.gguf"]')
           ).to_have_text("tiny.gguf, in this page (1.0 MB download)")
    assert not watch.problems, watch.problems


def test_a_failed_turn_is_retried_with_the_in_page_model_chosen_after(nano_page: Page) -> None:
    page = nano_page
    failed = failed_turn(page, "Tell me a joke.")
    choose(page, "page-model:models/tiny.gguf")
    expect_in_use(page, "page-model:models/tiny.gguf")
    failed.get_by_test_id("retry-button").click()
    retried = answer_to(page, "Tell me a joke.")
    expect(retried).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS * 3)
    expect(failed).to_have_attribute("data-retried", "true")


BAD = [
    # (value, what the note says)
    ("{other}/cors/not_a_model.gguf", "not a GGUF model file"),
    ("{other}/cors/missing.gguf", "answered 404"),
    ("{other}/nocors/tiny.gguf", "does not let this page read it (CORS)"),
    ("{other}/cors/huge.gguf", "too large for this browser's memory"),
    ("models/bad_template.gguf", "chat template cannot be applied"),
    ("models/truncated.gguf", "nothing was kept"),
]


def test_bad_inputs_get_a_clear_message_and_the_model_in_use_stays(nano_page: Page, site) -> None:
    page = nano_page
    note = page.get_by_test_id("page-model-note")
    for url, said in BAD:
        url = url.format(other=site.other)
        choose(page, f"page-model:{url}")
        expect(note).to_contain_text(said, timeout=LOAD_TIMEOUT_MS)
        expect(note).to_contain_text("Could not use")
        expect(page.get_by_test_id("model-choice")).to_be_enabled()
        expect(page.get_by_test_id("model-choice")).to_have_value("prompt-api")
        expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "prompt-api")
        assert page.evaluate(KEPT, url) is False, url
        assert page.evaluate("pyAgentPageModels.models.size") == 0, url
    assert "Nano remembers" in chat(page, "Still there?")
    # The cut download starts again from the beginning and is kept whole.
    site.cut[0] = False
    choose(page, "page-model:models/truncated.gguf")
    expect_in_use(page, "page-model:models/truncated.gguf")
    assert page.evaluate(KEPT, "models/truncated.gguf") is True


def test_storage_that_refuses_the_model_keeps_nothing_and_says_so(nano_page: Page, site) -> None:
    """The browser's storage refuses the file (its quota for this site lowered below the
    model's size); the up-front check against navigator.storage.estimate() is
    test_page_model_store.py's (estimate() here does not report the lowered quota)."""
    page = nano_page
    cdp = page.context.new_cdp_session(page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": site.url, "quotaSize": 200_000})
    choose(page, "page-model:models/tiny.gguf")
    note = page.get_by_test_id("page-model-note")
    expect(note).to_contain_text("Not enough storage", timeout=LOAD_TIMEOUT_MS)
    expect(note).to_contain_text("nothing was kept")
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "prompt-api")
    assert page.evaluate(KEPT, "models/tiny.gguf") is False
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": site.url})
    choose(page, "page-model:models/tiny.gguf")
    expect_in_use(page, "page-model:models/tiny.gguf")
