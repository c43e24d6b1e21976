"""What the page says about starting up and about Chrome's model: the boot progress bar,
the model's availability, its download progress, and the guide when it is missing.

The fake LanguageModel (fake_language_model.js) plays the model's states: 'available',
'downloadable' (create() then fires downloadprogress events, and needs a user gesture, as
in Chrome), 'downloading'. Headless Chromium's own LanguageModel is 'unavailable'.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, boot, send, wait_until

pytestmark = pytest.mark.e2e

# Records every value a progress bar takes. A MutationObserver may see several changes
# at once (early boot phases are replayed together), so the sequence is rebuilt from the
# records' old values plus the current one; likewise for the label's text.
RECORD_PROGRESS = r"""
window.__progress = {};
window.__recordProgress = (testid, labelTestid) => {
  const bar = document.querySelector(`[data-testid="${testid}"]`);
  const label = document.querySelector(`[data-testid="${labelTestid}"]`);
  const log = {old: [], labels: [], phases: [], firstVisible: bar.checkVisibility(),
               firstValue: Number(bar.getAttribute('value'))};
  window.__progress[testid] = log;
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.attributeName === 'value') log.old.push(r.oldValue);
      if (r.attributeName === 'data-phase') log.phases.push(r.oldValue);
    }
  }).observe(bar, {attributes: true, attributeOldValue: true,
                   attributeFilter: ['value', 'data-phase']});
  new MutationObserver((records) => {
    for (const r of records) for (const node of r.removedNodes) log.labels.push(node.textContent);
  }).observe(label, {childList: true});
};
window.__progressLog = (testid, labelTestid) => {
  const bar = document.querySelector(`[data-testid="${testid}"]`);
  const label = document.querySelector(`[data-testid="${labelTestid}"]`);
  const log = window.__progress[testid];
  return {values: [...log.old, bar.getAttribute('value')].filter((v) => v !== null).map(Number),
          phases: [...log.phases, bar.dataset.phase],
          labels: [...log.labels, label.textContent],
          firstVisible: log.firstVisible, firstValue: log.firstValue};
};
"""

RECORD_BOOT = RECORD_PROGRESS + r"""
document.addEventListener('DOMContentLoaded',
  () => window.__recordProgress('boot-progress', 'boot-progress-label'));
"""


def progress_log(page: Page, testid: str, label: str) -> dict:
    return page.evaluate("([t, l]) => window.__progressLog(t, l)", [testid, label])


def assert_moves(values: list[float], at_least: int) -> None:
    """A bar that only ever moves forward, from 0..1, through several values."""
    assert values == sorted(values), values
    assert all(0 <= v <= 1 for v in values), values
    assert len(set(values)) >= at_least, values


def test_boot_progress_names_each_phase_then_hides(page: Page, app_server: str,
                                                   install_fake_lm) -> None:
    install_fake_lm(page)
    page.add_init_script(script=RECORD_BOOT)
    boot(page, app_server + "/", wait_for_chat=False)
    log = progress_log(page, "boot-progress", "boot-progress-label")
    # The bar was on screen from the first paint (static HTML, before Python runs).
    assert log["firstVisible"] is True and 0 < log["firstValue"] < 0.2
    # It moved forward once per boot phase and reached the end at 'ready'.
    assert_moves(log["values"], at_least=5)
    assert log["values"][-1] == 1
    assert [p for p in log["phases"] if p in ("pyodide-loaded", "packages-installed",
                                              "agent-imported", "ready")] == [
        "pyodide-loaded", "packages-installed", "agent-imported", "ready"]
    # Each phase was named while it ran.
    labels = " | ".join(log["labels"])
    for words in ("Loading the page", "Loading Python (Pyodide)", "Installing",
                  "Importing the agent", "starting the agent"):
        assert words in labels, labels
    assert re.search(r"step \d of 5", labels)
    expect(page.get_by_test_id("boot-progress")).to_be_hidden()
    expect(page.get_by_test_id("status")).to_contain_text("Ready")
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "available")
    expect(page.get_by_test_id("model-download")).to_be_hidden()


def test_download_progress_on_first_send(page: Page, app_server: str,
                                         install_fake_lm) -> None:
    install_fake_lm(page, availability="downloadable", downloadSteps=6, downloadStepMs=250)
    page.add_init_script(script=RECORD_PROGRESS)
    warnings = []
    page.on("console", lambda m: m.type == "warning" and warnings.append(m.text))
    boot(page, app_server + "/", wait_for_chat=False)
    status = page.get_by_test_id("status")
    # Before: the page says the model is not here yet and that sending starts the download.
    expect(status).to_contain_text("will download on first use")
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "downloadable")
    expect(page.get_by_test_id("model-download")).to_be_visible()
    expect(page.get_by_test_id("download-note")).to_contain_text("the first time you send")
    expect(page.get_by_test_id("download-progress")).to_be_hidden()
    page.evaluate("window.__recordProgress('download-progress', 'download-progress-label')")

    send(page, "Hello while you download")   # the click is the user gesture Chrome wants
    bar = page.get_by_test_id("download-progress")
    expect(bar).to_be_visible()
    expect(page.get_by_test_id("download-progress-label")).to_contain_text(
        re.compile(r"Downloading Gemini Nano: \d+%"))
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "downloading")
    expect(status).to_contain_text("Downloading the on-device model")

    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    expect(bar).to_be_hidden()
    expect(page.get_by_test_id("model-download")).to_be_hidden()
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "available")
    expect(status).to_have_attribute("data-model", "available")
    log = progress_log(page, "download-progress", "download-progress-label")
    assert_moves(log["values"], at_least=4)
    assert log["values"][-1] == 1
    assert any(re.search(r": [1-9]\d?%", text) for text in log["labels"]), log["labels"]
    assert page.evaluate("__fakeLM.callsOf('create').length") >= 1

    # Every availability() and create(), the page's (status, download) and the worker's
    # (the agent's sessions, and what the model takes besides text: a picture or a sound
    # declared after the text), said it works on English text, so Chrome had nothing to
    # warn about.
    english = [{"type": "text", "languages": ["en"]}]
    calls = page.evaluate("[...__fakeLM.callsOf('availability'), ...__fakeLM.callsOf('create')]"
                          ".map((c) => [c.method, c.expectedInputs, c.expectedOutputs])")
    assert {method for method, _, _ in calls} == {"availability", "create"}
    assert all(inputs[:1] == english and outputs == english
               and all(extra in ({"type": "image"}, {"type": "audio"}) for extra in inputs[1:])
               for _, inputs, outputs in calls), calls
    assert not [w for w in warnings if "output language" in w], warnings


def test_download_now_button(page: Page, app_server: str, install_fake_lm) -> None:
    install_fake_lm(page, availability="downloadable", downloadSteps=4, downloadStepMs=250)
    boot(page, app_server + "/", wait_for_chat=False)
    button = page.get_by_test_id("download-model-button")
    expect(button).to_be_visible()
    button.click()
    expect(page.get_by_test_id("download-progress")).to_be_visible()
    expect(button).to_be_hidden()
    expect(page.get_by_test_id("download-progress")).to_be_hidden(timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "available")
    expect(page.get_by_test_id("status")).to_contain_text("Gemini Nano runs on this device")
    # The session made only to start the download is not kept.
    wait_until(page, "__fakeLM.sessions().length === 0")
    # And chatting works at once, without another download.
    send(page, "Are you there?")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("download-progress")).to_be_hidden()


def test_model_downloading_elsewhere(page: Page, app_server: str, install_fake_lm) -> None:
    install_fake_lm(page, availability="downloading")
    boot(page, app_server + "/", wait_for_chat=False)
    expect(page.get_by_test_id("status")).to_contain_text("Chrome is downloading")
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "downloading")
    expect(page.get_by_test_id("download-note")).to_contain_text("Chrome is downloading")
    expect(page.get_by_test_id("download-model-button")).to_be_hidden()
    expect(page.get_by_test_id("chat-input")).to_be_enabled()


def test_guide_when_the_model_is_unavailable(page: Page, app_server: str) -> None:
    # Headless Chromium's real LanguageModel (if any) has no model behind it.
    boot(page, app_server + "/", wait_for_chat=False)
    guide = page.get_by_test_id("model-guide")
    expect(guide).to_be_visible()
    expect(page.get_by_test_id("model-state")).to_have_attribute("data-model", "unavailable")
    for text in ("Chrome 148", "on by default", "22 GB", "16 GB of RAM",
                 "chrome://on-device-internals", "chrome://flags/#prompt-api-for-gemini-nano",
                 "Enabled BypassPerfRequirement", "Meanwhile", "saved sessions",
                 "memory inspector", "tools"):
        expect(guide).to_contain_text(text)
    expect(page.get_by_test_id("model-download")).to_be_hidden()
    expect(page.get_by_test_id("boot-progress")).to_be_hidden()
    expect(page.get_by_test_id("chat-input")).to_be_disabled()
    # What the guide says still works does: the sessions, the memory panel, the tools.
    expect(page.get_by_test_id("session-list").locator('[aria-current="true"]')).to_have_count(1)
    expect(page.get_by_test_id("memory-info")).to_contain_text("Nothing remembered yet")
    expect(page.get_by_test_id("tools-panel").locator("[data-tool-name]").first).to_be_visible()
