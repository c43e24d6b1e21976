"""Pictures and sounds in the page, with the fake Prompt API (docs/attachments.md).

A picture attached with the Attach button, one pasted and one dropped into the message
box reach the model as image parts of the turn's message (the fake decodes them and its
answer names what it received); a recording reaches it as an audio part (Chromium's
fake microphone); each bad input says why and the typed text stays; a reload keeps the
picture in the transcript, and a later turn sends no bytes.
"""

from __future__ import annotations

import base64
import io
import math
import struct
import wave

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import CHROMIUM_FLAGS
from tests.e2e.pages import TURN_TIMEOUT_MS, answer_to, boot, install_fake_lm_scripts, reload
from tests.unit.media_samples import HEIC, PDF, png

pytestmark = pytest.mark.e2e

FAKE_MICROPHONE = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]


def tone_wav(seconds: float, rate: int = 16000, amplitude: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", int(amplitude * math.sin(i / 8)))
                                 for i in range(int(rate * seconds))))
    return buffer.getvalue()


@pytest.fixture
def open_page(browser, browser_context_args, app_server):
    """open_page(**fake_config) -> page: the app booted with the fake model, in a
    context of its own."""
    contexts = []

    def open_(**config) -> Page:
        context = browser.new_context(**browser_context_args)
        contexts.append(context)
        page = context.new_page()
        install_fake_lm_scripts(page, config)
        boot(page, app_server + "/")
        return page

    yield open_
    for context in contexts:
        context.close()


GIVE = """async ([how, files]) => {
  const made = files.map(({name, type, b64, size, jpeg, pad}) => {
    if (b64 !== undefined) {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      return Promise.resolve(new File([bytes], name, {type}));
    }
    if (jpeg) {   // a large photo drawn here, padded to the size asked for
      const canvas = new OffscreenCanvas(jpeg[0], jpeg[1]);
      const context = canvas.getContext('2d');
      context.fillStyle = '#3a7'; context.fillRect(0, 0, jpeg[0], jpeg[1]);
      context.fillStyle = '#a37'; context.fillRect(0, 0, jpeg[0] / 2, jpeg[1] / 2);
      return canvas.convertToBlob({type: 'image/jpeg'}).then((blob) =>
        new File([blob, new Uint8Array(pad || 0)], name, {type: 'image/jpeg'}));
    }
    return Promise.resolve(new File([new Uint8Array(size)], name, {type}));
  });
  const transfer = new DataTransfer();
  for (const file of await Promise.all(made)) transfer.items.add(file);
  const box = document.querySelector('[data-testid="chat-input"]');
  if (how === 'input') {
    const input = document.querySelector('[data-testid="attach-input"]');
    input.files = transfer.files;
    input.dispatchEvent(new Event('change', {bubbles: true}));
  } else if (how === 'paste') {
    box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: transfer, bubbles: true, cancelable: true}));
  } else {
    box.dispatchEvent(new DragEvent('drop', {dataTransfer: transfer, bubbles: true, cancelable: true}));
  }
}"""


def give(page: Page, how: str, *files: dict) -> None:
    page.evaluate(GIVE, [how, list(files)])


def file_of(name: str, data: bytes, mime: str = "") -> dict:
    return {"name": name, "type": mime, "b64": base64.b64encode(data).decode()}


def pending(page: Page, count: int):
    chips = page.get_by_test_id("pending-attachment")
    expect(chips).to_have_count(count, timeout=TURN_TIMEOUT_MS)
    return chips


def media_sent(page: Page) -> list[list[dict]]:
    """The media of each step prompt the fake received, in order."""
    return page.evaluate("__fakeLM.calls.filter((c) => c.method === 'promptStreaming' || "
                         "c.method === 'prompt').map((c) => c.media)")


def test_pictures_attached_pasted_and_dropped_reach_the_model_as_image_parts(open_page):
    page = open_page()
    expect(page.get_by_test_id("model-inputs")).to_have_attribute("data-image", "yes")
    give(page, "input", file_of("one.png", png(40, 30), "image/png"))
    give(page, "paste", file_of("two.png", png(20, 10)))
    give(page, "drop", file_of("three.png", png(8, 64), "image/png"))
    chips = pending(page, 3)
    expect(chips.get_by_test_id("attachment-thumb")).to_have_count(3)
    page.get_by_test_id("chat-input").fill("What are these?")
    page.get_by_test_id("send-button").click()
    answer = answer_to(page, "What are these?")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_contain_text(
        f"I received: image (image/png, 40×30, {len(png(40, 30)):,} bytes); "
        "image (image/png, 20×10")
    expect(answer.locator(".text")).to_contain_text("image (image/png, 8×64")
    sent = [m for m in media_sent(page) if m]
    assert [(m["width"], m["height"]) for m in sent[0]] == [(40, 30), (20, 10), (8, 64)]
    # the sent message shows them; the composer is empty again
    expect(page.get_by_test_id("message-attachment")).to_have_count(3)
    expect(page.get_by_test_id("pending-attachment")).to_have_count(0)

    # a later turn sends no bytes: the model reads only text about them
    before = len(media_sent(page))
    page.get_by_test_id("chat-input").fill("And the first one again?")
    page.get_by_test_id("send-button").click()
    expect(answer_to(page, "And the first one again?")).to_have_attribute(
        "data-state", "answered", timeout=TURN_TIMEOUT_MS)
    assert all(m == [] for m in media_sent(page)[before:])
    context = page.evaluate("__fakeLM.calls.filter((c) => c.method === 'promptStreaming')"
                            ".at(-1).context")
    assert "one.png" in context and "base64" not in context

    # a reload keeps the pictures in the transcript, drawn from the archive
    reload(page)
    thumbs = page.get_by_test_id("message-attachment").get_by_test_id("attachment-thumb")
    expect(thumbs).to_have_count(3)
    expect(thumbs.first).to_have_attribute("data-state", "shown", timeout=TURN_TIMEOUT_MS)
    expect(thumbs.first).to_have_attribute("data-width", "40")


def test_a_large_photo_is_scaled_down_and_bad_files_say_why_keeping_the_text(open_page):
    page = open_page()
    box = page.get_by_test_id("chat-input")
    box.fill("Please look at this")
    note = page.get_by_test_id("attach-note")
    # not a picture or a sound, whatever its name
    give(page, "input", file_of("receipt.jpg", PDF, "image/jpeg"))
    expect(note).to_contain_text("receipt.jpg is not an image or a sound (it is a PDF document)")
    # a picture cut short
    give(page, "drop", file_of("cut.png", png(30, 30)[:40], "image/png"))
    expect(note).to_contain_text("cut.png could not be decoded as a PNG")
    # HEIC, which this browser cannot decode
    give(page, "input", file_of("IMG_0001.HEIC", HEIC))
    expect(note).to_contain_text("IMG_0001.HEIC is a HEIC picture, which this browser cannot decode")
    # over the cap: refused before it is read
    give(page, "drop", {"name": "huge.png", "type": "image/png", "size": 70 * 1024 * 1024})
    expect(note).to_contain_text("huge.png is 70.0 MB; a file may be at most 64.0 MB")
    # a sound too long, and one silent
    give(page, "input", file_of("talk.wav", tone_wav(125, rate=4000)))
    expect(note).to_contain_text("talk.wav lasts 125 s; a sound may last at most 120 s")
    give(page, "input", file_of("quiet.wav", tone_wav(1, amplitude=0)))
    expect(note).to_contain_text("quiet.wav is silent")
    expect(page.get_by_test_id("pending-attachment")).to_have_count(0)
    # an SVG goes as a picture of it, never as markup
    give(page, "input", file_of("logo.svg", b'<svg xmlns="http://www.w3.org/2000/svg" '
                                b'width="30" height="20"><rect width="30" height="20" '
                                b'fill="red"/><script>window.svgRan=1</script></svg>'))
    # a 50 MB photo: scaled down in a worker before it goes
    give(page, "drop", {"name": "big.jpg", "jpeg": [6000, 4000], "pad": 50 * 1024 * 1024})
    chips = pending(page, 2)
    expect(chips.nth(1)).to_contain_text("scaled down from 6000×4000", timeout=TURN_TIMEOUT_MS)
    assert page.evaluate("document.querySelectorAll('svg').length === 0 && !window.svgRan")
    # ten at once: the first that fit are kept, the rest named
    give(page, "input", *[file_of(f"p{i}.png", png(4, 4), "image/png") for i in range(10)])
    expect(note).to_contain_text("at most 4")
    pending(page, 4)
    expect(box).to_have_value("Please look at this")   # the typed text never went
    page.get_by_test_id("remove-attachment").nth(3).click()
    page.get_by_test_id("remove-attachment").nth(2).click()
    pending(page, 2)
    page.get_by_test_id("send-button").click()
    answer = answer_to(page, "Please look at this")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    sent = [m for m in media_sent(page) if m][0]
    assert [(m["type"], m["width"], m["height"]) for m in sent] == [
        ("image/png", 30, 20), ("image/jpeg", 2048, 1365)]


def test_a_cross_origin_picture_dropped_by_address_is_explained(open_page, static_server):
    page = open_page()
    page.get_by_test_id("chat-input").fill("what is this")
    page.evaluate("""(url) => {
      const transfer = new DataTransfer();
      transfer.setData('text/uri-list', url);
      document.querySelector('[data-testid="chat-input"]').dispatchEvent(
        new DragEvent('drop', {dataTransfer: transfer, bubbles: true, cancelable: true}));
    }""", static_server + "/docs/screenshots/phone.png")
    expect(page.get_by_test_id("attach-note")).to_contain_text(
        "may not be read by this page (its site does not allow it)")
    expect(page.get_by_test_id("chat-input")).to_have_value("what is this")


def test_a_model_that_takes_text_only_says_so_and_keeps_everything(open_page):
    page = open_page(mediaInputs=[])
    inputs = page.get_by_test_id("model-inputs")
    expect(inputs).to_have_attribute("data-image", "no")
    expect(inputs).to_contain_text("takes no image input on this device")
    expect(page.get_by_test_id("record-button")).to_be_hidden()
    give(page, "input", file_of("chart.png", png(10, 10), "image/png"))
    pending(page, 1)
    page.get_by_test_id("chat-input").fill("Which bar is tallest?")
    page.get_by_test_id("send-button").click()
    expect(page.get_by_test_id("attach-note")).to_contain_text(
        "takes no image input on this device")
    expect(page.get_by_test_id("chat-input")).to_have_value("Which bar is tallest?")
    pending(page, 1)
    assert page.evaluate("__fakeLM.callsOf('promptStreaming').length") == 0


@pytest.fixture
def microphone_page(browser_type, browser_type_launch_args, app_server):
    browser = browser_type.launch(**{**browser_type_launch_args,
                                     "args": [*CHROMIUM_FLAGS, *FAKE_MICROPHONE]})
    context = browser.new_context()
    page = context.new_page()
    install_fake_lm_scripts(page, {})
    boot(page, app_server + "/")
    yield page
    browser.close()


def test_a_recording_reaches_the_model_as_an_audio_part(microphone_page):
    page = microphone_page
    record = page.get_by_test_id("record-button")
    expect(record).to_be_visible(timeout=TURN_TIMEOUT_MS)
    record.click()
    expect(record).to_have_attribute("aria-pressed", "true", timeout=TURN_TIMEOUT_MS)
    page.wait_for_timeout(1500)
    record.click()
    chip = pending(page, 1)
    expect(chip).to_have_attribute("data-kind", "audio")
    page.get_by_test_id("chat-input").fill("What did I say?")
    page.get_by_test_id("send-button").click()
    answer = answer_to(page, "What did I say?")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_contain_text("I received: audio (audio/wav")
    sent = [m for m in media_sent(page) if m][0]
    assert sent[0]["kind"] == "audio" and 1.0 < sent[0]["seconds"] < 5.0


# ------------------------------------------------------------------ a model server

@pytest.fixture
def served_with_server(app_server):
    """serve_with(vision) -> (url, fake server): the app with an OpenAI-compatible fake as
    its model (and no Prompt API), whose model sees or does not."""
    import threading

    from serving.http_server import make_server
    from serving.model_server import model_server_from_args
    from tests.fake_openai_server import FakeServer, agent_responder
    opened = []

    def serve_with(vision: bool):
        fake = FakeServer(agent_responder, vision=vision)
        server = make_server("127.0.0.1", 0, quiet=True, model_server=model_server_from_args(
            fake.url, model="fake-model", context_window=8192, environ={}))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        opened.append((fake, server))
        return server.url, fake

    yield serve_with
    for fake, server in opened:
        server.shutdown()
        server.server_close()
        fake.close()


@pytest.mark.parametrize("vision", [True, False])
def test_a_model_server_gets_data_urls_or_its_refusal_is_explained(page, served_with_server,
                                                                   vision):
    url, fake = served_with_server(vision)
    page.add_init_script("delete window.LanguageModel")
    boot(page, url + "/")
    expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "server")
    give(page, "input", file_of("chart.png", png(24, 16), "image/png"))
    pending(page, 1)
    page.get_by_test_id("chat-input").fill("Which bar is tallest?")
    page.get_by_test_id("send-button").click()
    answer = answer_to(page, "Which bar is tallest?")
    if vision:
        expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
        expect(answer.locator(".text")).to_contain_text("I received: image (image/png, 24×16")
        sent = [m for body in fake.chat_requests() for m in body["messages"]
                if isinstance(m.get("content"), list)]
        part = next(p for p in sent[0]["content"] if p["type"] == "image_url")
        assert part["image_url"]["url"].startswith("data:image/png;base64,")
        return
    expect(answer).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_contain_text("The model 'fake-model'")
    expect(answer.locator(".text")).to_contain_text("does not take images")
    text_only = answer.get_by_test_id("send-text-only")
    expect(text_only).to_be_enabled()
    text_only.click()
    again = page.locator('[data-role="assistant"]').last
    expect(again).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(again.locator(".text")).to_have_text("You said: Which bar is tallest?")
    # and the page now says so before the next try
    expect(page.get_by_test_id("model-inputs")).to_have_attribute("data-image", "no",
                                                                  timeout=TURN_TIMEOUT_MS)


def test_a_picture_too_large_for_a_small_window_is_scaled_down_in_the_worker(open_page):
    page = open_page(contextWindow=4096)
    give(page, "drop", {"name": "wide.jpg", "jpeg": [2048, 2048]})
    pending(page, 1)
    page.get_by_test_id("chat-input").fill("What is in it?")
    page.get_by_test_id("send-button").click()
    answer = answer_to(page, "What is in it?")
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    sent = [m for m in media_sent(page) if m][0]
    # 2048×2048 is 64 tiles, 4,104 tokens: more than this window's room; half fits
    assert (sent[0]["width"], sent[0]["height"]) == (1024, 1024)
    measured = page.evaluate("__fakeLM.callsOf('measureContextUsage').filter((c) => "
                             "c.media.length).map((c) => c.media[0].width)")
    assert measured[0] == 2048 and measured[-1] == 1024   # measured, scaled, measured again


def test_a_silent_recording_is_refused_and_nothing_is_sent(browser_type, browser_type_launch_args,
                                                          app_server, tmp_path):
    silence = tmp_path / "silence.wav"
    silence.write_bytes(tone_wav(3, amplitude=0))
    browser = browser_type.launch(**{**browser_type_launch_args, "args": [
        *CHROMIUM_FLAGS, *FAKE_MICROPHONE, f"--use-file-for-fake-audio-capture={silence}"]})
    try:
        page = browser.new_context().new_page()
        install_fake_lm_scripts(page, {})
        boot(page, app_server + "/")
        page.get_by_test_id("chat-input").fill("Can you hear me?")
        record = page.get_by_test_id("record-button")
        record.click()
        expect(record).to_have_attribute("aria-pressed", "true", timeout=TURN_TIMEOUT_MS)
        page.wait_for_timeout(1200)
        record.click()
        expect(page.get_by_test_id("attach-note")).to_contain_text(
            "The recording is silent", timeout=TURN_TIMEOUT_MS)
        expect(page.get_by_test_id("pending-attachment")).to_have_count(0)
        expect(page.get_by_test_id("chat-input")).to_have_value("Can you hear me?")
    finally:
        browser.close()


def test_a_recording_stops_by_itself_at_its_limit_and_says_so(microphone_page):
    """The page's recorder (web/attachments.js) with a one-second limit instead of 60."""
    result = microphone_page.evaluate("""async () => {
      const {Recorder} = await import(new URL('attachments.js', document.baseURI).href);
      let limited = 0;
      const recorder = new Recorder({limitSeconds: 1, onLimit: () => { limited += 1; }});
      await recorder.start();
      await new Promise((resolve) => setTimeout(resolve, 1800));
      const item = await recorder.stop();
      return {limited, note: item.note, seconds: item.seconds, type: item.type};
    }""")
    assert result["limited"] == 1 and result["type"] == "audio/wav"
    assert result["note"] == "stopped at 1 s, the longest a recording may be"
    assert 0.5 < result["seconds"] < 1.5   # what came after the limit was not recorded
