"""Downloading and keeping a GGUF in the browser (web/page_model/model_store.js), against
a local server: progress, a kept model loaded with no network, checks (GGUF magic,
size, SHA-256), cancel, a 404, a cut-off response, storage quota, delete."""

from __future__ import annotations

import pytest

from tests.e2e.page_model_site import SETUP, open_blank, start_model_site

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    server, site = start_model_site(tmp_path_factory.mktemp("page_model_store"))
    yield site
    server.shutdown()
    server.server_close()


@pytest.fixture
def pm(page, site):
    open_blank(page, site)
    return page


FETCH = """async (source) => {
  const progress = [];
  try {
    const {blob, record, downloaded} = await pm.store.fetchModel(source, {onProgress: (p) => progress.push(p)});
    const head = new TextDecoder().decode(await blob.slice(0, 4).arrayBuffer());
    return {size: blob.size, head, record, downloaded, progress};
  } catch (e) { return {error: pm.err(e), progress, kept: await pm.store.record(source.url)}; }
}"""


def test_download_with_progress_then_kept_with_no_network(pm, site):
    source = site.model("tiny.gguf")
    first = pm.evaluate(FETCH, source)
    assert first["downloaded"] is True and first["head"] == "GGUF"
    assert first["size"] == source["size"] == first["record"]["size"]
    assert first["record"]["sha256"] == source["sha256"]
    loaded = [p["loaded"] for p in first["progress"]]
    assert loaded[0] == 0 and loaded[-1] == source["size"] and loaded == sorted(loaded)
    assert all(p["total"] == source["size"] for p in first["progress"])
    hits = site.hits["/models/tiny.gguf"]
    again = pm.evaluate(FETCH, source)
    assert again["downloaded"] is False and again["size"] == source["size"]
    assert site.hits["/models/tiny.gguf"] == hits                 # no request this time
    listed = pm.evaluate("() => pm.store.list()")
    assert [r["name"] for r in listed] == ["tiny.gguf"]
    assert pm.evaluate("(url) => pm.store.delete(url)", source["url"]) is True
    assert pm.evaluate("(url) => pm.store.record(url)", source["url"]) is None
    assert pm.evaluate("() => pm.store.list()") == []


def test_a_kept_model_loads_after_a_reload_without_the_network(pm, site):
    source = site.model("tiny.gguf")
    pm.evaluate(FETCH, source)
    hits = site.hits["/models/tiny.gguf"]
    pm.reload()
    pm.evaluate(SETUP)
    info = pm.evaluate("""async (source) => {
      const model = await pm.PageModel.fromManifest({source, threads: 1});
      const before = await model.availability();
      const info = await model.load();
      return {before, name: info.name};
    }""", source)
    assert info == {"before": "available", "name": "tiny-random-llama"}
    assert site.hits["/models/tiny.gguf"] == hits


def test_checks_refuse_wrong_files_and_keep_nothing(pm, site):
    tiny = site.model("tiny.gguf")
    wrong_hash = pm.evaluate(FETCH, {**tiny, "url": "/models/tiny.gguf?hash", "sha256": "0" * 64})
    assert wrong_hash["error"]["name"] == "DataError"
    assert "SHA-256" in wrong_hash["error"]["message"] and wrong_hash["kept"] is None
    wrong_size = pm.evaluate(FETCH, {**tiny, "url": "/models/tiny.gguf?size", "size": tiny["size"] + 1})
    assert wrong_size["error"]["name"] == "DataError" and wrong_size["kept"] is None
    not_gguf = pm.evaluate(FETCH, {"url": "/models/not_a_model.gguf"})
    assert not_gguf["error"]["name"] == "DataError"
    assert 'starts with "<!doctyp"' in not_gguf["error"]["message"] and not_gguf["kept"] is None
    missing = pm.evaluate(FETCH, {"url": "/models/missing.gguf"})
    assert missing["error"]["name"] == "NetworkError" and "404" in missing["error"]["message"]
    cut = pm.evaluate(FETCH, {"url": "/models/truncated.gguf"})
    assert cut["error"]["name"] == "NetworkError" and cut["kept"] is None
    assert "nothing was kept" in cut["error"]["message"]
    assert pm.evaluate("() => pm.store.list()") == []


def test_cancel_stops_the_download_and_keeps_nothing(pm, site):
    result = pm.evaluate("""async () => {
      const controller = new AbortController();
      const progress = [];
      let error = null;
      const started = performance.now();
      try {
        await pm.store.fetchModel({url: '/models/slow.gguf'}, {signal: controller.signal, onProgress: (p) => {
          progress.push(p.loaded);
          if (p.loaded > 0 && !controller.signal.aborted) controller.abort();
        }});
      } catch (e) { error = pm.err(e); }
      return {error, ms: performance.now() - started, progress, kept: await pm.store.record('/models/slow.gguf'),
              size: (await (await fetch('/models/tiny.gguf')).blob()).size};
    }""")
    assert result["error"]["name"] == "AbortError" and "cancelled" in result["error"]["message"]
    assert result["kept"] is None
    assert max(result["progress"]) < result["size"]          # stopped part way
    assert result["ms"] < 5000


def test_a_model_larger_than_the_storage_quota_is_refused_up_front(pm, site):
    result = pm.evaluate(FETCH, {"url": "/models/tiny.gguf?huge", "size": 10 ** 15})
    assert result["error"]["name"] == "QuotaExceededError"
    assert "Not enough storage" in result["error"]["message"] and result["kept"] is None
