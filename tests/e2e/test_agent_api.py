"""``web/agent.js`` in a page of your own: one agent, two chats streaming at the same time.

The page is an empty document of the app's origin (as a user's page beside the site),
the model the fake Prompt API, pacing its streamed words so that the two turns really
overlap. Each ``stream()`` must show only its own chat's answer as it grows.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.e2e.pages import Watch, step_responder

pytestmark = pytest.mark.e2e

BLANK = "/__agent_api_blank__.html"

# Each chat's answer names its chat in every word, so a word of the other chat's answer
# in a stream is visible at once.
NAMED_ANSWER = step_responder("""
    const message = text.slice(text.lastIndexOf('User: ') + 6).trim();
    const name = /alpha/i.test(message) ? 'alpha' : /beta/i.test(message) ? 'beta' : 'other';
    const words = Array.from({length: 16}, (_, i) => `${name}${i + 1}`);
    return step({thought: `About ${name}.`, finalAnswer: words.join(' ')});
""")

TWO_STREAMS = """async () => {
  const {createAgent} = await import('/agent.js');
  const agent = await createAgent({session: 'alpha'});
  const order = [];   // which chat each streamed text belonged to, in arrival order
  async function follow(session, text) {
    const texts = [];
    let result = null;
    for await (const item of agent.stream(text, {session})) {
      if (item.type === 'text') { texts.push(item.text); order.push(session); }
      if (item.type === 'result') result = item.result;
    }
    return {texts, answer: result.answer, status: result.status};
  }
  try {
    const [alpha, beta] = await Promise.all([
      follow('alpha', 'Tell me about alpha, please.'),
      follow('beta', 'Tell me about beta, please.')]);
    return {alpha, beta, order};
  } finally {
    agent.close();
  }
}"""


def open_blank(page: Page, app_server: str) -> None:
    page.route(app_server + BLANK, lambda route: route.fulfill(
        status=200, content_type="text/html",
        body="<!doctype html><meta charset=utf-8><title>my page</title>"))
    page.goto(app_server + BLANK)


def test_two_chats_streaming_at_once_each_show_only_their_own_answer(
        page: Page, app_server: str, install_fake_lm) -> None:
    watch = Watch(page)
    install_fake_lm(page, responderSource=NAMED_ANSWER, chunkDelayMs=25)
    open_blank(page, app_server)
    streams = page.evaluate(TWO_STREAMS)
    for name in ("alpha", "beta"):
        stream = streams[name]
        answer = " ".join(f"{name}{i}" for i in range(1, 17))
        assert stream["status"] == "answered" and stream["answer"] == answer
        # It grew word by word, and every text shown was its own answer so far.
        assert len(stream["texts"]) >= 8, stream["texts"]
        assert all(answer.startswith(text) for text in stream["texts"]), stream["texts"]
    # The two streams really ran at the same time: each had texts before the other ended.
    order = streams["order"]
    assert order.index("alpha") < len(order) - 1 - order[::-1].index("beta")
    assert order.index("beta") < len(order) - 1 - order[::-1].index("alpha")
    assert watch.problems == []


SEND_A_PICTURE = """async (b64) => {
  const {createAgent} = await import('/agent.js');
  const agent = await createAgent({session: 'pictures'});
  try {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const file = new File([bytes], 'dot.png', {type: 'image/png'});
    const inputs = await agent.modelInputs();
    const sent = await agent.send('What is this?', {attachments: [file]});
    const streamed = [];
    for await (const item of agent.stream('And this sound?', {attachments: [new Blob([bytes])]})) {
      if (item.type === 'result') streamed.push(item.result);
    }
    const turns = await agent.transcript();
    const kept = await agent.attachment(turns[0].attachments[0].id);
    return {inputs, sent, streamed: streamed[0], turns,
            kept: {name: kept.name, type: kept.type, width: kept.width, size: kept.blob.size}};
  } finally {
    agent.close();
  }
}"""


def test_send_and_stream_take_files_and_blobs_as_attachments(
        page: Page, app_server: str, install_fake_lm) -> None:
    import base64

    from tests.unit.media_samples import png
    install_fake_lm(page)
    open_blank(page, app_server)
    r = page.evaluate(SEND_A_PICTURE, base64.b64encode(png(6, 4)).decode())
    assert r["inputs"]["image"]["supported"] is True
    assert r["sent"]["status"] == "answered"
    assert "I received: image (image/png, 6×4" in r["sent"]["answer"]
    assert "I received: image (image/png, 6×4" in r["streamed"]["answer"]   # a Blob, sniffed
    assert [t["attachments"][0]["name"] for t in r["turns"]] == ["dot.png", "attachment"]
    assert r["kept"] == {"name": "dot.png", "type": "image/png", "width": 6,
                         "size": len(png(6, 4))}
