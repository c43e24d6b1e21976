"""The fake LanguageModel's pictures and sound, held to the Prompt API's explainer.

The explainer's multimodal rules, each as one check on the fake driven directly in a
page (no app code): a session takes image or audio content only when it declared them
in ``expectedInputs`` (NotSupportedError otherwise), and never in an assistant message;
a picture may be given as a Blob, a BufferSource, ImageData, a canvas, an ImageBitmap
or a loaded image element; bytes that do not decode are refused when the call runs
(Chrome's names: InvalidStateError for an image, DataError for a sound); an aborted call
rejects with the signal's reason; a picture in the initial prompts counts in the
session's usage. The fake names what it received ("image (image/png, 64×48, …)"), which
is how the app's tests see that a picture really arrived. (WPT's multimodal files were
run against the fake while it was built; tests/wpt/SOURCE.md says why they are not here.)
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

# window.__catch(fn) -> null or the rejection's name; window.__png(w, h) -> a PNG Blob.
HELPERS = """
window.__catch = async (fn) => {
  try { await fn(); return null; } catch (e) { return e.name; }
};
window.__png = async (width, height) => {
  const canvas = new OffscreenCanvas(width, height);
  const context = canvas.getContext('2d');
  context.fillStyle = '#c00';
  context.fillRect(0, 0, width, height);
  return canvas.convertToBlob({ type: 'image/png' });
};
window.__wav = (seconds) => {
  const rate = 8000, samples = Math.round(rate * seconds), view = new DataView(new ArrayBuffer(44 + samples * 2));
  const text = (at, s) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  text(0, 'RIFF'); view.setUint32(4, 36 + samples * 2, true); text(8, 'WAVEfmt ');
  view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
  view.setUint32(24, rate, true); view.setUint32(28, rate * 2, true); view.setUint16(32, 2, true);
  view.setUint16(34, 16, true); text(36, 'data'); view.setUint32(40, samples * 2, true);
  for (let i = 0; i < samples; i++) view.setInt16(44 + i * 2, Math.round(8000 * Math.sin(i / 5)), true);
  return new Blob([view.buffer], { type: 'audio/wav' });
};
window.__ask = (session, parts, options) =>
  session.prompt([{ role: 'user', content: parts }], options);
"""


@pytest.fixture
def page(quick_page, blank_url, install_fake_lm):
    install_fake_lm(quick_page)
    quick_page.add_init_script(script=HELPERS)
    quick_page.goto(blank_url)
    return quick_page


def test_content_a_session_did_not_declare_is_refused(page):
    names = page.evaluate("""async () => {
      const plain = await LanguageModel.create();
      const seeing = await LanguageModel.create({ expectedInputs: [{ type: 'image' }] });
      const png = await __png(8, 8);
      return {
        image: await __catch(() => __ask(plain, [{ type: 'text', value: 'what is it' },
                                                  { type: 'image', value: png }])),
        audio: await __catch(() => __ask(seeing, [{ type: 'audio', value: __wav(0.2) }])),
        assistant: await __catch(() => seeing.prompt([
          { role: 'user', content: 'look' },
          { role: 'assistant', content: [{ type: 'image', value: png }] }])),
        declared: await __catch(() => __ask(seeing, [{ type: 'image', value: png }])),
      };
    }""")
    assert names == {"image": "NotSupportedError", "audio": "NotSupportedError",
                     "assistant": "NotSupportedError", "declared": None}


def test_a_picture_is_taken_in_each_form_the_explainer_lists_and_named_with_its_size(page):
    replies = page.evaluate("""async () => {
      const s = await LanguageModel.create({ expectedInputs: [{ type: 'image' }] });
      const blob = await __png(64, 48);
      const bytes = await blob.arrayBuffer();
      const canvas = document.createElement('canvas');
      canvas.width = 20; canvas.height = 10;
      canvas.getContext('2d').fillRect(0, 0, 20, 10);
      const image = new Image();
      image.src = URL.createObjectURL(await __png(30, 40));
      await image.decode();
      const forms = {
        blob, arrayBuffer: bytes, view: new Uint8Array(bytes),
        imageData: new ImageData(16, 12), canvas, image,
        bitmap: await createImageBitmap(await __png(7, 9)),
      };
      const out = {};
      for (const [name, value] of Object.entries(forms)) {
        out[name] = await __ask(s, [{ type: 'text', value: 'describe' }, { type: 'image', value }]);
      }
      return out;
    }""")
    expected = {"blob": "64×48", "arrayBuffer": "64×48", "view": "64×48", "imageData": "16×12",
                "canvas": "20×10", "image": "30×40", "bitmap": "7×9"}
    for form, size in expected.items():
        assert "image" in replies[form] and size in replies[form], (form, replies[form])


def test_a_sound_is_taken_and_named_with_its_length(page):
    reply = page.evaluate("""async () => {
      const s = await LanguageModel.create({ expectedInputs: [{ type: 'audio' }] });
      return __ask(s, [{ type: 'text', value: 'transcribe' }, { type: 'audio', value: __wav(1.5) }]);
    }""")
    assert "audio" in reply and "1.5" in reply, reply


def test_bytes_that_do_not_decode_are_refused_when_the_call_runs(page):
    names = page.evaluate("""async () => {
      const s = await LanguageModel.create({ expectedInputs: [{ type: 'image' }, { type: 'audio' }] });
      const junk = new Blob([new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])]);
      const truncated = (await (await __png(32, 32)).arrayBuffer()).slice(0, 40);
      const broken = new Image();
      broken.src = 'data:image/png;base64,AAAA';
      await broken.decode().catch(() => {});
      return {
        junkImage: await __catch(() => __ask(s, [{ type: 'image', value: junk }])),
        truncatedImage: await __catch(() => __ask(s, [{ type: 'image', value: truncated }])),
        brokenElement: await __catch(() => __ask(s, [{ type: 'image', value: broken }])),
        junkSound: await __catch(() => __ask(s, [{ type: 'audio', value: junk }])),
        stillUsable: await __catch(() => __ask(s, [{ type: 'text', value: 'hello' }])),
      };
    }""")
    assert names == {"junkImage": "InvalidStateError", "truncatedImage": "InvalidStateError",
                     "brokenElement": "InvalidStateError", "junkSound": "DataError",
                     "stillUsable": None}


def test_an_aborted_call_with_a_picture_rejects_with_the_signals_reason(page):
    names = page.evaluate("""async () => {
      const s = await LanguageModel.create({ expectedInputs: [{ type: 'image' }] });
      const png = await __png(8, 8);
      const early = new AbortController();
      early.abort();
      const late = new AbortController();
      const running = __ask(s, [{ type: 'image', value: png }], { signal: late.signal });
      late.abort();
      return { early: await __catch(() => __ask(s, [{ type: 'image', value: png }],
                                                  { signal: early.signal })),
               late: await __catch(() => running) };
    }""")
    assert names == {"early": "AbortError", "late": "AbortError"}


def test_a_picture_in_the_initial_prompts_counts_in_the_usage_and_is_remembered(page):
    result = page.evaluate("""async () => {
      const png = await __png(512, 256);
      const plain = await LanguageModel.create({ initialPrompts: [
        { role: 'user', content: [{ type: 'text', value: 'this is my cat' }] }] });
      const seeing = await LanguageModel.create({ expectedInputs: [{ type: 'image' }],
        initialPrompts: [{ role: 'user', content: [{ type: 'text', value: 'this is my cat' },
                                                    { type: 'image', value: png }] }] });
      return { plain: plain.contextUsage, seeing: seeing.contextUsage,
               reply: await seeing.prompt('what did I show you?') };
    }""")
    assert result["seeing"] > result["plain"]     # a picture costs tokens
    assert "512×256" in result["reply"]           # and the session keeps it in its context
