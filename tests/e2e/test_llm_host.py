"""The LLM host serves the Prompt API to a real Web Worker over postMessage.

A small worker (built from a Blob) forwards test commands as `{type: 'llm', ...}`
requests, exactly as the agent worker's bridge does, and reports every message it
receives back to the page, so the tests see what the worker sees.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture
def page(quick_page):
    """Each test here takes a new page in a browser profile the file's tests share, its
    storage cleared and checked empty first (conftest.py, tests/e2e/shared_profile.py)."""
    return quick_page

WORKER_SOURCE = r"""
let nextId = 1;
const pending = new Map();
self.onmessage = (e) => {
  const m = e.data;
  self.postMessage({ type: 'test-seen', msg: m });
  if (m.type === 'llm-result') { pending.get(m.id)?.(m); pending.delete(m.id); return; }
  if (m.type === 'call') {
    const id = nextId++;
    pending.set(id, (res) => self.postMessage({ type: 'test-result', tag: m.tag, res }));
    self.postMessage({ type: 'llm', id, method: m.method, args: m.args });
  }
};
self.postMessage({ type: 'test-ready', hasLanguageModel: typeof LanguageModel !== 'undefined' });
"""

SETUP = """async (workerSource) => {
  const { LLMHost } = await import('/web/llm_host.js');
  window.chunks = []; window.progress = []; window.overflows = []; window.seen = [];
  const host = new LLMHost({
    onChunk: (c) => chunks.push(c),
    onDownloadProgress: (p) => progress.push(p),
    onContextOverflow: (o) => overflows.push(o),
  });
  const url = URL.createObjectURL(new Blob([workerSource], { type: 'text/javascript' }));
  const worker = new Worker(url);
  const ready = new Promise((resolve) => {
    worker.addEventListener('message', (e) => { if (e.data.type === 'test-ready') resolve(e.data); });
  });
  host.attach(worker);
  let tag = 0;
  const waiting = new Map();
  worker.addEventListener('message', (e) => {
    if (e.data.type === 'test-seen') seen.push(e.data.msg);
    if (e.data.type === 'test-result') { waiting.get(e.data.tag)(e.data.res); waiting.delete(e.data.tag); }
  });
  // rpc(method, ...args) -> the {type:'llm-result'} message the worker received
  window.rpc = (method, ...args) => new Promise((resolve) => {
    const t = ++tag; waiting.set(t, resolve);
    worker.postMessage({ type: 'call', tag: t, method, args });
  });
  // value(method, ...args) -> value, or throws the RPC error as JSON
  window.value = async (method, ...args) => {
    const r = await rpc(method, ...args);
    if (!r.ok) throw new Error(JSON.stringify(r.error));
    return r.value;
  };
  window.host = host;
  return ready;
}"""

SYSTEM = [{"role": "system", "content": "You are a helpful agent."},
          {"role": "user", "content": "Example question"},
          {"role": "assistant", "content": "Example answer"}]


@pytest.fixture
def host_page(page, blank_url, install_fake_lm):
    """host_page(fake=True, **config) -> (page, worker info) with an LLMHost serving a worker."""
    def open_(fake: bool = True, **config):
        if fake:
            install_fake_lm(page, **config)
        page.goto(blank_url)
        info = page.evaluate(SETUP, WORKER_SOURCE)
        return page, info
    return open_


def test_worker_reaches_language_model_only_through_host(host_page):
    page, info = host_page()
    assert info["hasLanguageModel"] is False   # the Prompt API is Window-only
    r = page.evaluate("rpc('availability')")
    assert r == {"type": "llm-result", "id": 1, "ok": True,
                 "value": {"availability": "available", "reason": None}}


def test_create_clone_prompt_measure_destroy_round_trip(host_page):
    page, _ = host_page()
    r = page.evaluate("""async (initialPrompts) => {
        const schema = { type: 'object', properties: {
            thought: { type: 'string' }, toolName: { type: 'string', enum: ['none'] },
            toolInput: { type: 'string' }, finalAnswer: { type: 'string' } } };
        const base = await value('create', { initialPrompts, purpose: 'step' });
        const expectedUsage = initialPrompts.reduce((n, m) => n + __fakeLM.measure(m.content), 0);
        const copy = await value('clone', base.sessionId);
        const step = await value('prompt', copy.sessionId, 'User: what is 2+2?', { responseConstraint: schema, purpose: 'step' });
        const measured = await value('measure', copy.sessionId, 'Hello, world!');
        const info = await value('sessionInfo', copy.sessionId);
        const baseInfo = await value('sessionInfo', base.sessionId);
        const promptCall = __fakeLM.callsOf('prompt')[0];
        const destroyed = await value('destroy', copy.sessionId);
        const again = await rpc('destroy', copy.sessionId);
        const afterDestroy = await rpc('prompt', copy.sessionId, 'hi');
        return { base, expectedUsage, copy, step, measured, info, baseInfo, destroyed,
                 again: again.value, afterDestroy: afterDestroy.error,
                 constraintSeen: promptCall.hasConstraint, liveFakes: __fakeLM.sessions().length };
    }""", SYSTEM)
    base, copy, step = r["base"], r["copy"], r["step"]
    assert base["contextWindow"] == 9216
    assert base["contextUsage"] == r["expectedUsage"]
    assert copy["sessionId"] != base["sessionId"]
    assert copy["contextUsage"] == base["contextUsage"]
    assert '"toolName":"none"' in step["text"] and "what is 2+2?" in step["text"]
    assert step["contextUsage"] > copy["contextUsage"] and step["contextWindow"] == 9216
    assert step["overflowed"] is False
    assert r["constraintSeen"] is True
    assert r["measured"] == 10
    assert r["info"] == {"sessionId": copy["sessionId"], "purpose": "step",
                         "contextWindow": 9216, "contextUsage": step["contextUsage"],
                         "samplingMode": "most-predictable"}
    assert r["baseInfo"]["contextUsage"] == base["contextUsage"]   # the clone is independent
    assert r["destroyed"] is True and r["again"] is False
    assert r["afterDestroy"]["name"] == "InvalidStateError"
    assert r["liveFakes"] == 1


def test_streaming_chunks_go_to_page_and_final_text_to_worker(host_page):
    page, _ = host_page(chunkDelayMs=5)
    r = page.evaluate("""async () => {
        __fakeLM.setResponder(() => 'The answer is forty two, of course.');
        const s = await value('create', { initialPrompts: [{ role: 'system', content: 'sys' }] });
        const result = await value('prompt', s.sessionId, 'question', { stream: true, requestId: 'turn-1' });
        const domEvents = [];
        host.addEventListener('chunk', (e) => domEvents.push(e.detail.chunk));
        await value('prompt', s.sessionId, 'again', { stream: true });
        const fromHost = seen.filter(m => m.type !== 'call');
        return { result, chunks, domEvents, fromHost,
                 streamed: __fakeLM.callsOf('promptStreaming').length, plain: __fakeLM.callsOf('prompt').length };
    }""")
    chunks = [c for c in r["chunks"] if c["requestId"] == "turn-1"]
    assert len(chunks) == 7
    assert "".join(c["chunk"] for c in chunks) == r["result"]["text"] == "The answer is forty two, of course."
    assert chunks[0]["chunk"] == "The " and chunks[-1]["text"] == r["result"]["text"]
    assert all(c["text"][c["offset"]:] == c["chunk"] for c in chunks)
    assert chunks[0]["offset"] == 0 and chunks[1]["offset"] == len("The ")
    assert all(c["sessionId"] for c in chunks)
    assert len(r["domEvents"]) == 7
    # no chunk ever reached the worker: only results and the create's download events
    assert {m["type"] for m in r["fromHost"]} == {"llm-result", "llm-event"}
    assert {m.get("event") for m in r["fromHost"] if m["type"] == "llm-event"} == {"downloadprogress"}
    assert not any("chunk" in m or "chunk" in (m.get("value") or {}) for m in r["fromHost"])
    assert (r["streamed"], r["plain"]) == (2, 0)


def test_quota_error_keeps_requested_and_quota(host_page):
    page, _ = host_page(contextWindow=200)
    r = page.evaluate("""async () => {
        const s = await value('create', { initialPrompts: [{ role: 'system', content: 'sys' }] });
        const text = 'token '.repeat(300);
        const res = await rpc('prompt', s.sessionId, text);
        return { s, res, measured: __fakeLM.measure(text) };
    }""")
    assert r["res"]["ok"] is False
    err = r["res"]["error"]
    assert err["name"] == "QuotaExceededError"
    assert err["requested"] == r["measured"]
    assert err["quota"] == 200 - r["s"]["contextUsage"]


def test_abort_by_request_id_and_abort_all_during_streaming(host_page):
    page, _ = host_page(latencyMs=3000)
    r = page.evaluate("""async () => {
        const s = await value('create', {});
        const slow = rpc('prompt', s.sessionId, 'slow one', { requestId: 'turn-7' });
        await new Promise(r => setTimeout(r, 30));
        const aborted = await value('abort', 'turn-7');
        const slowRes = await slow;
        __fakeLM.setLatency(0); __fakeLM.setChunkDelay(150);
        __fakeLM.setResponder(() => 'a b c d e f g h');
        const streaming = rpc('prompt', s.sessionId, 'stream me', { stream: true });
        while (!chunks.length) await new Promise(r => setTimeout(r, 5));
        const abortedAll = await value('abort');
        const streamRes = await streaming;
        const usage = (await value('sessionInfo', s.sessionId)).contextUsage;
        return { aborted, slowRes, abortedAll, streamRes, usage, startUsage: s.contextUsage,
                 chunkCount: chunks.length, inflight: host.inflight.size };
    }""")
    assert r["aborted"] == 1
    assert r["slowRes"]["error"]["name"] == "AbortError"
    assert r["abortedAll"] == 1
    assert r["streamRes"]["error"]["name"] == "AbortError"
    assert r["chunkCount"] < 8
    assert r["usage"] == r["startUsage"]   # the aborted turns left nothing in the session
    assert r["inflight"] == 0


def test_unavailable_and_other_errors_are_mapped(host_page):
    page, _ = host_page(availability="unavailable")
    r = page.evaluate("""async () => {
        const availability = await value('availability');
        const create = (await rpc('create', {})).error;
        __fakeLM.setAvailability('available');
        __fakeLM.failNext('NotAllowedError', { method: 'create' });
        const notAllowed = (await rpc('create', {})).error;
        __fakeLM.failNext('NetworkError', { method: 'create' });
        const network = (await rpc('create', {})).error;
        const s = await value('create', {});
        __fakeLM.failNext('NotReadableError', { method: 'prompt', message: 'filtered output' });
        const other = (await rpc('prompt', s.sessionId, 'x')).error;
        const unknown = (await rpc('teleport')).error;
        return { availability, create, notAllowed, network, other, unknown };
    }""")
    assert r["availability"] == {"availability": "unavailable", "reason": "device"}
    assert r["create"]["name"] == "ModelUnavailableError"
    assert r["create"]["originalName"] == "NotSupportedError"
    assert r["notAllowed"]["name"] == "ModelUnavailableError"
    assert r["notAllowed"]["originalName"] == "NotAllowedError"
    assert r["network"]["name"] == "NetworkError"
    assert r["other"] == {"name": "NotReadableError", "originalName": "NotReadableError",
                          "message": "filtered output"}
    assert r["unknown"]["name"] == "TypeError" and "teleport" in r["unknown"]["message"]


def test_api_absent_reports_unsupported(host_page):
    page, _ = host_page()
    r = page.evaluate("""async () => {
        __fakeLM.uninstall();
        return { absent: !('LanguageModel' in window), availability: await value('availability'),
                 create: (await rpc('create', {})).error };
    }""")
    assert r["absent"]
    assert r["availability"] == {"availability": "unavailable", "reason": "unsupported"}
    assert r["create"]["name"] == "ModelUnavailableError"


def test_real_headless_chromium_api_is_mapped_as_unavailable(host_page):
    """No fake: Debian's headless Chromium has LanguageModel but no Gemini Nano."""
    page, _ = host_page(fake=False)
    r = page.evaluate("""async () => ({ present: typeof LanguageModel,
        availability: await value('availability'), create: (await rpc('create', {})).error })""")
    assert r["availability"]["availability"] == "unavailable"
    assert r["create"]["name"] == "ModelUnavailableError"


def test_legacy_only_api_and_single_overflow_event(host_page):
    page, _ = host_page(names="legacy", contextWindow=120)
    r = page.evaluate("""async () => {
        __fakeLM.setResponder(() => 'noted');
        const legacy = await value('create', { initialPrompts: [{ role: 'system', content: 'sys' }] });
        const measured = await value('measure', legacy.sessionId, 'Hello, world!');
        let overflowedOnce = null;
        for (let i = 0; i < 10 && !overflowedOnce; i++) {
            const res = await value('prompt', legacy.sessionId, 'filler words for the window number ' + i);
            if (res.overflowed) overflowedOnce = { i, res, count: overflows.length };
        }
        const legacyOverflows = overflows.length;
        __fakeLM.configure({ names: 'both' });
        overflows.length = 0;
        const both = await value('create', { initialPrompts: [{ role: 'system', content: 'sys' }] });
        for (let i = 0; i < 10 && !overflows.length; i++) await value('prompt', both.sessionId, 'filler words for the window number ' + i);
        return { legacy, measured, overflowedOnce, legacyOverflows, bothCount: overflows.length,
                 overflowSession: overflows[0]?.sessionId, both,
                 workerEvents: seen.filter(m => m.type === 'llm-event' && m.event === 'contextoverflow').length };
    }""")
    assert r["legacy"]["contextWindow"] == 120 and r["legacy"]["contextUsage"] == 5
    assert r["measured"] == 10
    assert r["overflowedOnce"]["count"] == 1 and r["overflowedOnce"]["res"]["contextUsage"] <= 120
    assert r["legacyOverflows"] == 1
    assert r["bothCount"] == 1   # a session with both names is not reported twice
    assert r["overflowSession"] == r["both"]["sessionId"]
    assert r["workerEvents"] == 2


def test_download_progress_is_forwarded(host_page):
    page, _ = host_page(availability="downloadable", downloadSteps=2)
    r = page.evaluate("""async () => {
        const s = await value('create', { initialPrompts: [], requestId: 'boot' });
        return { s, progress, worker: seen.filter(m => m.type === 'llm-event' && m.event === 'downloadprogress').map(m => m.loaded),
                 availability: await value('availability') };
    }""")
    loaded = [p["loaded"] for p in r["progress"]]
    assert loaded[0] == 0 and loaded[-1] == 1 and len(loaded) == 4
    assert all(p["requestId"] == "boot" for p in r["progress"])
    assert r["worker"] == loaded
    assert r["availability"]["availability"] == "available"


def test_destroy_all_frees_every_session(host_page):
    page, _ = host_page()
    r = page.evaluate("""async () => {
        const a = await value('create', {});
        await value('clone', a.sessionId);
        await value('create', {});
        const before = (await value('sessionInfo')).length;
        const n = await value('destroyAll');
        return { before, n, after: (await value('sessionInfo')).length, fakes: __fakeLM.sessions().length,
                 destroyCalls: __fakeLM.callsOf('destroy').length };
    }""")
    assert r == {"before": 3, "n": 3, "after": 0, "fakes": 0, "destroyCalls": 3}


def test_a_refused_response_constraint_is_its_own_error(host_page):
    """NotSupportedError (schema or feature refused), TypeError (not a schema) and
    SyntaxError (no compliant reply) on a constrained prompt are ResponseConstraintError,
    never ModelUnavailableError; the same NotSupportedError without a constraint is not."""
    page, _ = host_page(schemaSupport="strict")
    r = page.evaluate("""async () => {
        const s = await value('create', { initialPrompts: [{ role: 'system', content: 'sys' }] });
        const withAnyOf = { type: 'object', anyOf: [{ properties: { a: { type: 'string' } } }] };
        const refused = (await rpc('prompt', s.sessionId, 'x', { responseConstraint: withAnyOf })).error;
        const streamed = (await rpc('prompt', s.sessionId, 'x', { responseConstraint: withAnyOf, stream: true })).error;
        const notSchema = (await rpc('prompt', s.sessionId, 'x', { responseConstraint: 42 })).error;
        __fakeLM.queueReplies('not json');
        const broken = (await rpc('prompt', s.sessionId, 'x', { responseConstraint: { type: 'object' } })).error;
        const measured = (await rpc('measure', s.sessionId, 'x', { responseConstraint: 'nope' })).error;
        const fine = await value('prompt', s.sessionId, 'x', { responseConstraint: { type: 'object' } });
        __fakeLM.failNext('NotSupportedError', { method: 'prompt', message: 'untested language' });
        const unconstrained = (await rpc('prompt', s.sessionId, 'x')).error;
        return { refused, streamed, notSchema, broken, measured, fine, unconstrained };
    }""")
    for key, original in (("refused", "NotSupportedError"), ("streamed", "NotSupportedError"),
                          ("notSchema", "TypeError"), ("broken", "SyntaxError"),
                          ("measured", "TypeError")):
        assert r[key]["name"] == "ResponseConstraintError", key
        assert r[key]["originalName"] == original, key
    assert "anyOf" in r["refused"]["message"]
    assert r["fine"]["text"] == "{}"
    assert r["unconstrained"]["name"] == "ModelUnavailableError"
    assert r["unconstrained"]["originalName"] == "NotSupportedError"


def test_a_session_destroyed_mid_prompt_fails_as_chrome_fails_it(host_page):
    page, _ = host_page(latencyMs=1500)
    r = page.evaluate("""async () => {
        const s = await value('create', {});
        const pending = rpc('prompt', s.sessionId, 'slow', { requestId: 'turn-1' });
        await new Promise((resolve) => setTimeout(resolve, 50));
        const fake = host.sessions.get(s.sessionId).session;
        fake.destroy();        // destroyed under the host, as Chrome does when the model goes away
        const inFlight = (await pending).error;
        const later = (await rpc('prompt', s.sessionId, 'again')).error;
        const gone = (await rpc('prompt', 'no-such-session', 'x')).error;
        return { inFlight, later, gone, inflight: host.inflight.size };
    }""")
    assert r["inFlight"]["name"] == r["inFlight"]["originalName"] == "InvalidStateError"
    assert r["later"]["name"] == "InvalidStateError"
    assert r["gone"]["name"] == "InvalidStateError"
    assert r["inflight"] == 0


SAMPLING = """async () => {
    const created = {};
    for (const purpose of ['step', 'facts', 'summary']) {
        created[purpose] = (await value('create', { initialPrompts: [], purpose,
            expectedInputs: [{ type: 'text', languages: ['en'] }],
            expectedOutputs: [{ type: 'text', languages: ['en'] }] })).samplingMode;
    }
    return { created, sent: __fakeLM.callsOf('create').map(c => c.samplingMode),
             probes: __fakeLM.callsOf('availability').map(c => c.samplingMode) };
}"""


def test_steps_and_facts_ask_for_predictable_sampling_where_chrome_offers_it(host_page):
    page, _ = host_page()
    r = page.evaluate(SAMPLING)
    assert r["created"] == {"step": "most-predictable", "facts": "most-predictable",
                            "summary": "balanced"}
    assert r["sent"] == ["most-predictable", "most-predictable", None]
    assert r["probes"] == ["most-predictable"]   # asked once for these options


@pytest.mark.parametrize("config", [{"samplingModes": None}, {"samplingModes": ["balanced"]}],
                         ids=["no-sampling-mode", "mode-not-offered"])
def test_no_sampling_mode_is_sent_where_the_browser_does_not_offer_it(host_page, config):
    page, _ = host_page(**config)
    r = page.evaluate(SAMPLING)
    assert r["sent"] == [None, None, None]
    if config["samplingModes"] is None:
        assert r["created"] == {"step": None, "facts": None, "summary": None}
        assert r["probes"] == []          # no attribute: not even asked
    else:
        assert r["created"] == {"step": "balanced", "facts": "balanced", "summary": "balanced"}
        assert r["probes"] == ["most-predictable"]   # asked, and availability said no


EXPECTED_EN = {"expectedInputs": [{"type": "text", "languages": ["en"]}],
               "expectedOutputs": [{"type": "text", "languages": ["en"]}]}


@pytest.mark.parametrize("config, options, reply", [
    ({"availability": "unavailable"}, EXPECTED_EN, {"availability": "unavailable",
                                                    "reason": "device"}),
    ({"availability": "downloadable"}, EXPECTED_EN, {"availability": "downloadable",
                                                     "reason": "downloadable"}),
    ({"availability": "downloading"}, EXPECTED_EN, {"availability": "downloading",
                                                    "reason": "downloading"}),
    ({}, {"expectedOutputs": [{"type": "image"}]}, {"availability": "unavailable",
                                                    "reason": "options"}),
    ({"languages": ["es", "ja"]}, EXPECTED_EN, {"availability": "available",
                                                "reason": "language", "languages": ["en"]}),
], ids=["device", "downloadable", "downloading", "options", "language"])
def test_availability_names_the_reason_it_can_tell(host_page, config, options, reply):
    page, _ = host_page(**config)
    assert page.evaluate("(options) => value('availability', options)", options) == reply


def test_languages_the_browser_refuses_are_left_out_and_the_model_answers(host_page):
    """A refused option must not end the turn: create() asks again without the languages
    (remembered, so later sessions are created without them at once)."""
    page, _ = host_page(languages=["es", "ja"])
    r = page.evaluate("""async (expected) => {
        const first = await value('create', { initialPrompts: [], purpose: 'step', ...expected });
        const reply = await value('prompt', first.sessionId, 'hi');
        const second = await value('create', { initialPrompts: [], purpose: 'summary', ...expected });
        return { first, second, reply: reply.text,
                 creates: __fakeLM.callsOf('create').map((c) => JSON.stringify(c.expectedInputs)) };
    }""", EXPECTED_EN)
    assert r["first"]["languagesDropped"] and r["second"]["languagesDropped"]
    assert r["reply"]
    # The first create was refused with the languages; every later one went without them.
    assert ['"languages"' in c for c in r["creates"]] == [True, False, False]


def test_a_frame_the_policy_blocks_is_named(host_page, static_server):
    """A cross-origin frame without allow="language-model": the host in that frame says
    'frame' (the fake, like Chrome, reports the model unavailable there)."""
    page, _ = host_page()
    other = static_server.replace("127.0.0.1", "localhost")

    def embeddable(route) -> None:   # a cross-origin frame in a page that requires CORP
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers,
                                                  "cross-origin-resource-policy": "cross-origin"})

    page.route(other + "/**", embeddable)
    page.evaluate("""(src) => new Promise((resolve) => {
        const frame = document.createElement('iframe');
        frame.src = src; frame.onload = resolve; document.body.append(frame);
    })""", other + "/__e2e__/blank.html")
    frame = page.frames[1]
    r = frame.evaluate("""async () => {
        const { LLMHost } = await import('/web/llm_host.js');
        const host = new LLMHost();
        return { availability: await host.availability({}),
                 allowed: document.featurePolicy.allowsFeature('language-model') };
    }""")
    assert r == {"availability": {"availability": "unavailable", "reason": "frame"},
                 "allowed": False}
