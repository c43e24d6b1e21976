"""The real sentence embedder in the page (USE multilingual v3, 31.7 MB, from the wheel
serve.py extracts): the first answer does not wait for it; once loaded, a request in
Spanish is offered the right tool by meaning, a paraphrased question brings back the
turn of another chat that shares no word with it, and after a reload the model comes
from Cache Storage with the network refused, and the vectors from IndexedDB.

Few tests, one app served with the embedder (every other e2e file serves the app
without it, or passes ?embedder=off): each boot of a new profile downloads the model.
"""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import Page, expect

from serving.http_server import make_server
from tests.e2e.pages import ask_worker, boot, chat, current_session, open_chat, wait_until

pytestmark = pytest.mark.e2e

SISTER = "My sister Anna is moving to Lisbon next spring for her new job at the hospital."
PARAPHRASE = "where is my sibling relocating to?"
SPANISH = "¿cuántos kilos son 150 libras?"
LOAD_TIMEOUT_MS = 180_000

# The worker's messages, kept from the moment this runs (the embedder's status, turns'
# events), for the checks below.
LISTEN = """() => {
  window.__worker = [];
  window.pyAgentWorker.worker.addEventListener('message', (event) => {
    const data = event.data;
    if (data && (data.type === 'embedder' || (data.type === 'event' &&
        data.event.type === 'tools_retrieved'))) {
      window.__worker.push(JSON.parse(JSON.stringify(data)));
    }
  });
}"""


@pytest.fixture(scope="module")
def embed_server():
    server = make_server("127.0.0.1", 0, quiet=True, tool_worker=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()


def offers(page: Page) -> list[dict]:
    return page.evaluate("() => window.__worker.filter(m => m.type === 'event')"
                         ".map(m => m.event.data)")


def statuses(page: Page) -> list[dict]:
    return page.evaluate("() => window.__worker.filter(m => m.type === 'embedder')")


def wait_for_task(page: Page, task: str) -> None:
    wait_until(page, f"window.__worker.some(m => m.type === 'embedder' && m.task === "
                     f"'{task}' && m.progress === 1)", LOAD_TIMEOUT_MS)


def test_the_first_answer_does_not_wait_then_meaning_ranks_tools_and_recall(
        page: Page, embed_server: str, install_fake_lm) -> None:
    open_chat(page, embed_server, install_fake_lm)
    page.evaluate(LISTEN)
    chat(page, "hi! what's 70 kg in pounds?")           # at once, while the model loads
    first = offers(page)[0]
    assert first["dense"] in ("loading", "tools not embedded yet")   # answered lexically
    chat(page, SISTER)
    wait_for_task(page, "tools embedded")
    ready = [s for s in statuses(page) if s["state"] == "ready"]
    assert ready and ready[0]["space"].startswith("use-m3/")
    expect(page.get_by_test_id("status")).to_have_attribute("data-embedder", "ready")

    chat(page, SPANISH)
    spanish = offers(page)[-1]
    assert spanish["dense"] == "used"
    names = [t["name"] for t in spanish["tools"]]
    assert "convert_units" in names
    convert = next(t for t in spanish["tools"] if t["name"] == "convert_units")
    assert "sentence vectors" in convert["why"]["signals"]

    first_chat = current_session(page)
    page.get_by_test_id("new-session-button").click()
    chat(page, "Hello again")                           # another chat
    other = current_session(page)
    assert other != first_chat

    def recalled() -> list[dict]:
        return ask_worker(page, "recall", query=PARAPHRASE)   # every chat not private
    hits = []
    for _ in range(60):                               # the new turns' vectors, in the background
        hits = recalled()
        if hits and "meaning" in hits[0]["why"]["signals"]:
            break
        page.wait_for_timeout(500)
    assert hits and "Lisbon" in hits[0]["text"] and "meaning" in hits[0]["why"]["signals"]
    assert hits[0]["session_id"] == first_chat

    # A reload reads the model from Cache Storage: the network may refuse it now.
    page.route("**/weights.npz", lambda route: route.abort())
    page.reload()
    boot(page, page.url)
    page.evaluate(LISTEN)
    wait_until(page, "window.__worker.some(m => m.type === 'embedder' && "
                     "(m.state === 'ready' || m.state === 'failed'))", LOAD_TIMEOUT_MS)
    assert not [s for s in statuses(page) if s["state"] == "failed"]
    kept = page.evaluate("async () => (await (await caches.open('py-agent-embedder')).keys())"
                         ".map(r => r.url.split('/').pop()).sort()")
    assert kept == ["matmul.wasm", "pure_tokenizer.py", "sp.model", "weights.npz"]
    hits = []
    for _ in range(60):
        hits = recalled()
        if hits and "meaning" in hits[0]["why"]["signals"]:
            break
        page.wait_for_timeout(500)
    assert hits and "Lisbon" in hits[0]["text"] and "meaning" in hits[0]["why"]["signals"]
