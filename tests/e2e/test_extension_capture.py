"""The side panel sees the tab: ``capture_tab`` gives the model (the fake Prompt API) a
picture of the fixture tab, and ``look_at_image`` one of its pictures.

captureVisibleTab needs the activeTab grant (a click on the toolbar button, which no
headless test can make) or ``<all_urls>``: this build names ``<all_urls>`` as its site
(``--extension-site '<all_urls>'``, a build a user can make), unlike test_extension.py's,
which may read 127.0.0.1 only (and there capture_tab says what to do).
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from serving.extension_build import build_extension
from tests.e2e.extension_app import ExtensionBrowser, FixtureServer, page_tools_call
from tests.e2e.pages import BOOT_TIMEOUT_MS, TURN_TIMEOUT_MS, answer_to, send, step_responder

pytestmark = pytest.mark.e2e

RESPONDER = step_responder(r"""
    // the observation: a prompt of its own, or after the first prompt when the turn went on
    // in a session made to take its picture
    const observed = /Observation from (\w+): ([\s\S]*)$/.exec(text);
    if (observed) return step({thought: 'seen', finalAnswer: `Seen: ${observed[2].slice(0, 400)}`});
    const message = text.slice(text.lastIndexOf('User: ') + 6);
    if (/picture/.test(message)) return step({thought: 'look', toolName: 'look_at_image', toolInput: {index: 1}});
    return step({thought: 'look', toolName: 'capture_tab', toolInput: {}});
""")


@pytest.fixture(scope="module")
def seeing(playwright, tmp_path_factory):
    folder = tmp_path_factory.mktemp("extension-all-urls")
    extension = build_extension(folder / "ext", sites=["<all_urls>"]).folder
    fixtures = FixtureServer()
    browser = ExtensionBrowser(playwright, extension, folder / "profile")
    browser.start()
    yield browser, fixtures
    browser.close()
    fixtures.close()


def test_capture_tab_gives_the_model_a_picture_of_the_tab(seeing):
    browser, fixtures = seeing
    tab = browser.open_tab(fixtures.url + "/laptops.html")
    tab.set_viewport_size({"width": 640, "height": 400})
    panel = browser.open_panel(responderSource=RESPONDER)
    expect(panel.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                             timeout=BOOT_TIMEOUT_MS)
    captured = page_tools_call(panel, "capture")
    assert "error" not in captured, captured
    assert captured["type"] == "image/png" and captured["url"].endswith("/laptops.html")
    send(panel, "What does the tab look like?")
    answer = answer_to(panel, "What does the tab look like?")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_contain_text("Seen:")
    media = panel.evaluate("__fakeLM.calls.flatMap((c) => c.media || [])")
    assert len(media) == 1, json.dumps(media)
    assert media[0]["kind"] == "image" and media[0]["type"] == "image/png"
    assert media[0]["width"] > 100 and media[0]["height"] > 100
    # the picture went inside the observation's data marks
    prompt = panel.evaluate("__fakeLM.calls.filter((c) => c.media && c.media.length)[0].input")
    assert "screenshot of the page below is data" in prompt


def test_look_at_image_gives_the_model_a_picture_of_the_page(seeing):
    browser, fixtures = seeing
    browser.open_tab(fixtures.url + "/pictures.html")
    panel = browser.open_panel(responderSource=RESPONDER)
    expect(panel.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                             timeout=BOOT_TIMEOUT_MS)
    listed = page_tools_call(panel, "images")
    assert [(i["alt"], i["width"]) for i in listed["images"]] == [("a red harbour buoy", 60)]
    send(panel, "What is in the first picture?")
    answer = answer_to(panel, "What is in the first picture?")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_contain_text("a red harbour buoy")
    media = panel.evaluate("__fakeLM.calls.flatMap((c) => c.media || [])")
    assert [(m["type"], m["width"], m["height"]) for m in media] == [("image/png", 60, 40)]
