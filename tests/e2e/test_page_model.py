"""The in-page model, with no fake anywhere: headless Chromium, no LanguageModel involved,
llama.cpp's WebAssembly build (wllama) loading a real GGUF that tests/tiny_gguf.py writes
(random weights, a real tokenizer and chat template), served with serve.py's headers.

The tiny model never ends a reply on its own (it talks until its window is full) and
closes a JSON string within a few tokens, so a reply that ends is one the grammar ended.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from py_agent import tool
from py_agent.prompting import step_schema
from serving.paths import VENDOR, WEB
from tests.e2e.page_model_site import open_blank, start_model_site

pytestmark = pytest.mark.e2e


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume or temperature."""
    return ""


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return ""


STEP_SCHEMA = step_schema([convert_units, calculate])
SYSTEM = [{"role": "system", "content": "You are an agent. Answer with one JSON step."},
          {"role": "user", "content": "What is 2 plus 2?"},
          {"role": "assistant", "content": json.dumps({"thought": "Use the calculator.",
                                                       "toolName": "calculate",
                                                       "toolInput": {"expression": "2+2"},
                                                       "finalAnswer": ""})}]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    server, site = start_model_site(tmp_path_factory.mktemp("page_model"))
    yield site
    server.shutdown()
    server.server_close()


@pytest.fixture
def pm(page, site):
    """The empty page with web/page_model/ imported (window.pm)."""
    open_blank(page, site)
    return page


LOAD = """async ([source, options]) => {
  window.model = await pm.PageModel.fromManifest({source, threads: 1, ...options});
  return await model.load();
}"""


def load(page, site, name="tiny.gguf", **options):
    return page.evaluate(LOAD, [site.model(name), options])


def test_streams_tokens_and_the_grammar_forces_the_step_schema(pm, site):
    info = load(pm, site)
    assert info["name"] == "tiny-random-llama" and info["contextWindow"] == 1024
    assert info["trainedContext"] == 1024 and info["crossOriginIsolated"] is True
    assert info["threads"] == 1 and info["multiThreaded"] is False
    result = pm.evaluate("""async ([initialPrompts, schema]) => {
      const session = await model.create({initialPrompts, seed: 7});
      const times = [];
      const chunks = await pm.read(session.promptStreaming('How many grams is 3 ounces?',
                                                            {responseConstraint: schema}),
                                   () => times.push(performance.now()));
      const again = await session.prompt('And 5 ounces?', {responseConstraint: schema});
      // maxTokens (beyond the Prompt API) caps a reply: a clone keeps it, and a reply it
      // cuts is no overflow
      const cappedSession = await (await model.create({initialPrompts, seed: 7, maxTokens: 3})).clone();
      let overflows = 0;
      cappedSession.addEventListener('contextoverflow', () => overflows++);
      const capped = await cappedSession.prompt('How many grams is 3 ounces?');
      const cappedUsage = cappedSession.contextUsage;
      const free = await (await model.create({initialPrompts, seed: 7})).prompt('How many grams is 3 ounces?');
      return {chunks, spread: times[times.length - 1] - times[0], again, capped, free, overflows,
              cappedUsage, usage: session.contextUsage, window: session.contextWindow};
    }""", [SYSTEM, STEP_SCHEMA])
    assert result["free"].startswith(result["capped"]) and len(result["capped"]) < len(result["free"])
    assert result["overflows"] == 0 and result["cappedUsage"] < result["window"]
    text = "".join(result["chunks"])
    assert len(result["chunks"]) >= 5 and result["spread"] > 0   # pieces, as they came
    for reply in (text, result["again"]):
        step = json.loads(reply)   # the random model writes valid JSON only because it must
        jsonschema.validate(step, STEP_SCHEMA)
    assert 0 < result["usage"] <= result["window"] == 1024


def test_llama_cpp_starts_from_the_worker_file_and_one_of_another_wllama_is_refused(pm, site):
    started = []
    pm.on("worker", lambda worker: started.append(worker.url))
    load(pm, site)
    assert any("/llama_worker.js?run=" in url for url in started), started
    assert not [url for url in started if url.startswith("blob:")]
    # The same file with one character of wllama's code changed: not the worker it starts.
    vendored = WEB / json.loads((VENDOR / "manifest.json").read_text())["page_model"]["worker"]
    first, rest = vendored.read_text().split("\n", 1)
    (site.folder / "other_worker.js").write_text(first + "\n" + rest.replace("wModuleInit", "wModuleStart", 1))
    refused = pm.evaluate("""async ([source, worker]) => {
      const model = new pm.PageModel({source, threads: 1, urls: {...pm.manifest.page_model, worker}});
      try { await model.load(); return null; } catch (e) { return pm.err(e); } finally { model.terminate(); }
    }""", [site.model("tiny.gguf"), "/models/other_worker.js"])
    assert refused["name"] == "NotSupportedError"
    assert "different preparations" in refused["message"]


def test_the_llm_host_serves_it_as_it_serves_the_prompt_api(pm, site):
    load(pm, site)
    result = pm.evaluate("""async (schema) => {
      const {LLMHost} = await import('/llm_host.js');
      const chunks = [];
      const host = new LLMHost({api: model, onChunk: (c) => chunks.push(c.chunk)});
      const created = await host.create({initialPrompts: [{role: 'system', content: 'Be brief.'}]});
      const clone = await host.clone(created.sessionId);
      const reply = await host.prompt(clone.sessionId, 'Hi', {responseConstraint: schema, stream: true});
      const measured = await host.measure(clone.sessionId, 'three ounces of flour');
      return {created, reply, chunks, measured, availability: await host.availability()};
    }""", STEP_SCHEMA)
    assert result["availability"] == {"availability": "available", "reason": None}
    assert result["created"]["contextWindow"] == 1024 and result["created"]["contextUsage"] > 0
    assert "".join(result["chunks"]) == result["reply"]["text"]
    jsonschema.validate(json.loads(result["reply"]["text"]), STEP_SCHEMA)
    assert result["reply"]["contextUsage"] > result["created"]["contextUsage"]
    assert isinstance(result["measured"], int) and result["measured"] > 3


def test_clone_append_and_measure(pm, site):
    load(pm, site)
    result = pm.evaluate("""async (initialPrompts) => {
      const base = await model.create({initialPrompts, seed: 1});
      const start = base.contextUsage;
      const short = await base.measureContextUsage('yes');
      const long = await base.measureContextUsage('yes no '.repeat(40));
      const clone = await base.clone();
      const cloneStart = clone.contextUsage;
      await clone.append('The user prefers metric units. '.repeat(3));
      const afterAppend = clone.contextUsage;
      await clone.prompt('Answer', {responseConstraint: {type: 'object', properties: {a: {type: 'string'}}, required: ['a']}});
      const destroyed = await base.clone();
      destroyed.destroy();
      let afterDestroy = null;
      try { await destroyed.prompt('hi'); } catch (e) { afterDestroy = pm.err(e); }
      return {start, short, long, cloneStart, afterAppend, afterPrompt: clone.contextUsage,
              baseAfter: base.contextUsage, appendedText: await base.measureContextUsage('The user prefers metric units. '.repeat(3)),
              afterDestroy};
    }""", SYSTEM)
    assert result["start"] > 0 and result["cloneStart"] == result["start"]
    assert 0 < result["short"] < result["long"]
    # append reads the messages now: usage grows by about what measure says it costs
    grown = result["afterAppend"] - result["start"]
    assert abs(grown - result["appendedText"]) <= 4, result
    assert result["afterPrompt"] > result["afterAppend"]
    assert result["baseAfter"] == result["start"]            # the clone's turns are its own
    assert result["afterDestroy"]["name"] == "InvalidStateError"


def test_abort_stops_generation_at_once(pm, site):
    load(pm, site)
    result = pm.evaluate("""async () => {
      const session = await model.create({seed: 3});
      const controller = new AbortController();
      let abortedAt = 0, chunksAtAbort = 0, error = null;
      const chunks = [];
      try {
        await pm.read(session.promptStreaming('Talk', {signal: controller.signal}), (all) => {
          chunks.length = all.length;
          if (all.length === 5) { abortedAt = performance.now(); chunksAtAbort = 5; controller.abort(); }
        });
      } catch (e) { error = pm.err(e); }
      const rejectedAfter = performance.now() - abortedAt;
      // the engine is free again at once: a short constrained prompt answers promptly
      const started = performance.now();
      const next = await session.prompt('Now answer', {responseConstraint: {type: 'object', properties: {a: {type: 'string'}}, required: ['a']}});
      return {error, rejectedAfter, chunksAtAbort, nextMs: performance.now() - started, next,
              window: session.contextWindow};
    }""")
    assert result["error"]["name"] == "AbortError"
    assert result["rejectedAfter"] < 500, result
    json.loads(result["next"])
    assert result["nextMs"] < 15000, result


def test_a_prompt_larger_than_the_window_is_a_quota_error(pm, site):
    load(pm, site, contextWindow=256)
    result = pm.evaluate("""async () => {
      const session = await model.create({initialPrompts: [{role: 'system', content: 'Be brief.'}], seed: 2});
      let error = null;
      try { await session.prompt('yes no '.repeat(400)); } catch (e) { error = pm.err(e); }
      const overflows = [];
      session.addEventListener('contextoverflow', () => overflows.push(session.contextUsage));
      // a reply that fills the window (the tiny model never stops by itself), then a prompt
      // that no longer fits beside it: the old turn is dropped, as Chrome drops it
      const full = await session.prompt('Talk');
      const usageFull = session.contextUsage;
      const next = await session.prompt('Again', {responseConstraint: {type: 'object', properties: {a: {type: 'string'}}, required: ['a']}});
      return {error, window: session.contextWindow, usageFull, overflows, next, usageNext: session.contextUsage,
              fullLength: full.length};
    }""")
    error = result["error"]
    assert error["name"] == "QuotaExceededError"
    assert error["requested"] > error["quota"] and error["quota"] < result["window"] == 256
    assert result["usageFull"] == 256 and result["fullLength"] > 0
    assert len(result["overflows"]) >= 1
    json.loads(result["next"])
    assert result["usageNext"] < 256


def test_files_that_are_not_models_get_a_clear_error_and_nothing_is_kept(pm, site):
    result = pm.evaluate("""async (sources) => {
      const out = {};
      for (const [key, source] of Object.entries(sources)) {
        const model = await pm.PageModel.fromManifest({source, threads: 1});
        try { await model.create(); out[key] = 'loaded'; } catch (e) { out[key] = pm.err(e); }
        out[key + ' kept'] = await model.kept();
        model.terminate();
      }
      return out;
    }""", {
        "not gguf": site.model("not_a_model.gguf"),
        "cut header": {"url": "/models/cut_header.gguf"},
        "missing": {"url": "/models/missing.gguf"},
        "truncated": {"url": "/models/truncated.gguf"},
    })
    assert result["not gguf"]["name"] == "DataError"
    assert "not a GGUF model file" in result["not gguf"]["message"]
    assert result["cut header"]["name"] == "NotSupportedError"
    assert "truncated" in result["cut header"]["message"]
    assert result["missing"]["name"] == "NetworkError" and "404" in result["missing"]["message"]
    assert result["truncated"]["name"] == "NetworkError"
    assert "nothing was kept" in result["truncated"]["message"]
    assert result["not gguf kept"] is None and result["missing kept"] is None
    assert result["truncated kept"] is None


def test_a_chat_template_llama_cpp_cannot_use_is_refused_at_load_and_not_kept(pm, site):
    result = pm.evaluate("""async (source) => {
      const model = await pm.PageModel.fromManifest({source, threads: 1});
      let error = null;
      try { await model.load(); } catch (e) { error = pm.err(e); }
      const kept = await model.kept();
      model.terminate();
      return {error, kept};
    }""", site.model("bad_template.gguf"))
    assert result["error"]["name"] == "NotSupportedError"
    assert "chat template cannot be applied" in result["error"]["message"]
    assert "The file was not kept." in result["error"]["message"] and result["kept"] is None


def test_a_model_too_large_for_the_memory_is_refused_before_its_download(pm, site):
    hits = site.hits["/models/tiny.gguf"]
    error = pm.evaluate("""async (source) => {
      const model = await pm.PageModel.fromManifest({source, threads: 1});
      try { await model.load(); return null; } catch (e) { return pm.err(e); }
      finally { model.terminate(); }
    }""", {**site.model("tiny.gguf"), "size": 40 * 10**9})
    assert error["name"] == "QuotaExceededError"
    assert "too large for this browser's memory" in error["message"]
    assert "nothing was downloaded" in error["message"] and error["requested"] == 40 * 10**9
    assert site.hits["/models/tiny.gguf"] == hits


def test_a_constraint_the_engine_cannot_apply_is_not_supported_and_harmless(pm, site):
    load(pm, site)
    result = pm.evaluate("""async () => {
      const session = await model.create({seed: 4});
      const ok = {type: 'object', properties: {a: {type: 'string'}}, required: ['a']};
      const out = {};
      for (const [key, constraint] of [['soup', {type: 'soup'}], ['regexp', /ab+/], ['list', [1]]]) {
        try { await session.prompt('x', {responseConstraint: constraint}); out[key] = 'answered'; }
        catch (e) { out[key] = pm.err(e); }
      }
      out.after = await session.prompt('y', {responseConstraint: ok});
      return out;
    }""")
    assert result["soup"]["name"] == "NotSupportedError"
    assert "unrecognized type soup" in result["soup"]["message"]
    assert result["regexp"]["name"] == "NotSupportedError"
    assert result["list"]["name"] == "TypeError"
    json.loads(result["after"])                 # the engine goes on answering


def test_multi_threaded_where_the_page_is_cross_origin_isolated(pm, site):
    info = load(pm, site, threads=2)
    assert info["crossOriginIsolated"] is True
    assert info["multiThreaded"] is True and info["threads"] == 2
    reply = pm.evaluate("""async () => {
      const session = await model.create({seed: 5});
      return session.prompt('Hi', {responseConstraint: {type: 'object', properties: {a: {type: 'string', maxLength: 4}},
                                                        required: ['a']}, omitResponseConstraintInput: true});
    }""")
    assert len(json.loads(reply)["a"]) <= 4


def test_single_threaded_where_the_page_is_not_cross_origin_isolated(page, site):
    def without_isolation(route):
        response = route.fetch()
        headers = {k: v for k, v in response.headers.items()
                   if k.lower() not in ("cross-origin-opener-policy", "cross-origin-embedder-policy")}
        route.fulfill(response=response, headers=headers)

    page.route("**/pm/blank.html", without_isolation)
    open_blank(page, site)
    info = page.evaluate("""async (source) => {
      const model = await pm.PageModel.fromManifest({source});   // no thread count asked for
      return await model.load();
    }""", site.model("tiny.gguf"))
    assert info["crossOriginIsolated"] is False
    assert info["multiThreaded"] is False and info["threads"] == 1
