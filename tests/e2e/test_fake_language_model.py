"""The fake LanguageModel follows the Prompt API closely enough to test against.

Each test drives the fake directly in the page (no app code) and checks one piece of
spec behaviour: errors and their names, usage accounting, overflow, clone, destroy,
abort, streaming deltas, legacy names, download progress and user activation, response
constraints (schema support per browser, RegExp, prefixes, replies that break them),
sampling modes, browser profiles and the test controls. The spec's own tests run against
it too: test_wpt_prompt_api.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.pages import FAKE_PROFILES

pytestmark = pytest.mark.e2e


@pytest.fixture
def page(quick_page):
    """Each test here takes a new page in a browser profile the file's tests share, its
    storage cleared and checked empty first (conftest.py, tests/e2e/shared_profile.py)."""
    return quick_page

# window.__catch(promise) -> null or a plain description of the rejection.
CATCH = """
window.__catch = async (promiseOrFn) => {
  try { await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn); return null; }
  catch (e) {
    return { name: e.name, message: e.message, requested: e.requested ?? null,
             quota: e.quota ?? null, isDOMException: e instanceof DOMException,
             isTypeError: e instanceof TypeError };
  }
};
"""


@pytest.fixture
def open_page(page, blank_url, install_fake_lm):
    """open_page(**config): a served blank page with the fake installed in that config."""
    def open_(**config):
        install_fake_lm(page, **config)
        page.add_init_script(script=CATCH)
        page.goto(blank_url)
        return page
    return open_


def test_installed_before_page_scripts_in_configured_state(page, blank_url, install_fake_lm):
    install_fake_lm(page, availability="downloadable", contextWindow=1234, replies=["scripted reply"])
    # a later init script stands for the page's own scripts: the fake is already there
    page.add_init_script(script="""
        window.__early = { same: window.LanguageModel === window.__fakeLM.LanguageModel,
                           availability: window.__fakeLM.availability };""")
    page.goto(blank_url)
    early = page.evaluate("window.__early")
    assert early == {"same": True, "availability": "downloadable"}
    result = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        return { window: s.contextWindow, reply: await s.prompt('hi'),
                 after: await LanguageModel.availability() };
    }""")
    assert result == {"window": 1234, "reply": "scripted reply", "after": "available"}


def test_create_validates_initial_prompts_and_availability(open_page):
    page = open_page()
    errors = page.evaluate("""async () => ({
        systemNotFirst: await __catch(LanguageModel.create({ initialPrompts: [
            { role: 'user', content: 'hi' }, { role: 'system', content: 'late' }] })),
        twoSystems: await __catch(LanguageModel.create({ initialPrompts: [
            { role: 'system', content: 'a' }, { role: 'system', content: 'b' }] })),
        badRole: await __catch(LanguageModel.create({ initialPrompts: [{ role: 'tool', content: 'x' }] })),
        good: await __catch(LanguageModel.create({ initialPrompts: [
            { role: 'system', content: 'be brief' }, { role: 'user', content: 'q' },
            { role: 'assistant', content: 'a' }] })),
        systemInPrompt: await __catch(async () => {
            const s = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'x' }] });
            await s.prompt([{ role: 'system', content: 'again' }]);
        }),
        unavailable: await __catch(async () => {
            __fakeLM.setAvailability('unavailable');
            await LanguageModel.create();
        }),
    })""")
    for key in ("systemNotFirst", "twoSystems", "badRole", "systemInPrompt"):
        assert errors[key]["isTypeError"], key
    assert errors["good"] is None
    assert errors["unavailable"]["name"] == "NotSupportedError"
    assert errors["unavailable"]["isDOMException"]


def test_token_counter_is_deterministic_and_unlike_chars_over_4(open_page):
    page = open_page()
    counts = page.evaluate("""() => ({
        hello: __fakeLM.countTokens('Hello, world!'),
        long: __fakeLM.countTokens('internationalization'),
        cjk: __fakeLM.countTokens('日本語です'),
        mixed: __fakeLM.countTokens('abc漢字'),
        spaces: __fakeLM.countTokens('   '),
    })""")
    # 'Hello' 2 + ',' 1 + 'world' 2 + '!' 1; chars/4 would say 4.
    assert counts == {"hello": 6, "long": 5, "cjk": 5, "mixed": 3, "spaces": 0}


def test_usage_accounting_matches_measure(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const initialPrompts = [{ role: 'system', content: 'You are terse.' },
                                { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello.' }];
        const s = await LanguageModel.create({ initialPrompts });
        const start = s.contextUsage;
        const initialMeasure = await s.measureContextUsage(initialPrompts.slice(1));
        const promptMeasure = await s.measureContextUsage('How are you today?');
        const reply = await s.prompt('How are you today?');
        return { start, initialMeasure, promptMeasure, reply,
                 replyMeasure: await s.measureContextUsage(reply), after: s.contextUsage,
                 expectedStart: __fakeLM.measure('You are terse.') + __fakeLM.measure('Hi') + __fakeLM.measure('Hello.') };
    }""")
    assert r["start"] == r["expectedStart"]
    assert r["promptMeasure"] == 6 + 4   # How, are, you 1 each + today 2 + ? 1, turn markers 4
    assert r["after"] == r["start"] + r["promptMeasure"] + r["replyMeasure"]


def test_quota_exceeded_carries_requested_and_quota(open_page):
    page = open_page(contextWindow=300)
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'sys' }] });
        const big = 'word '.repeat(400);
        const before = s.contextUsage;
        const requested = await s.measureContextUsage(big);
        const err = await __catch(s.prompt(big));
        const streamErr = await __catch(async () => { for await (const _ of s.promptStreaming(big)) {} });
        __fakeLM.configure({ overflowMode: 'reject' });
        await s.prompt('small');
        const used = s.contextUsage;
        // fits next to the initial prompts (so 'evict' would accept it), not next to the turns
        const strict = await __catch(s.prompt('word '.repeat(285)));
        const strictRequested = await s.measureContextUsage('word '.repeat(285));
        __fakeLM.configure({ overflowMode: 'evict' });
        const evicting = await __catch(s.prompt('word '.repeat(285)));
        return { evicting, before, afterErr: before, requested, err, streamErr, used, strict, strictRequested,
                 tooBigCreate: await __catch(LanguageModel.create({ initialPrompts: [{ role: 'system', content: big }] })) };
    }""")
    err = r["err"]
    assert err["name"] == "QuotaExceededError" and err["isDOMException"]
    assert err["requested"] == r["requested"]
    assert err["quota"] == 300 - r["before"]
    assert r["streamErr"]["name"] == "QuotaExceededError"
    # spec prefill rule: requested = usage + input, quota = the whole window
    assert r["strict"]["name"] == "QuotaExceededError"
    assert r["strict"]["requested"] == r["used"] + r["strictRequested"]
    assert r["strict"]["quota"] == 300
    assert r["evicting"] is None   # the default mode drops old turns instead
    assert r["tooBigCreate"]["name"] == "QuotaExceededError"
    assert r["tooBigCreate"]["quota"] == 300


def test_overflow_evicts_oldest_turns_and_fires_contextoverflow(open_page):
    page = open_page(contextWindow=120)
    r = page.evaluate("""async () => {
        __fakeLM.setResponder(() => 'ok');
        const s = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'keep me' }] });
        let viaAttr = 0, viaListener = 0;
        s.oncontextoverflow = () => viaAttr++;
        s.addEventListener('contextoverflow', () => viaListener++);
        const usages = [];
        for (let i = 0; i < 8; i++) { await s.prompt(`turn ${i} ` + 'lorem '.repeat(12)); usages.push(s.contextUsage); }
        const [info] = __fakeLM.sessions();
        return { viaAttr, viaListener, usages, window: s.contextWindow, first: info.history[0],
                 hasTurn0: info.history.some(m => m.content.startsWith('turn 0')),
                 hasTurn7: info.history.some(m => m.content.startsWith('turn 7')) };
    }""")
    assert r["viaAttr"] >= 1 and r["viaAttr"] == r["viaListener"]
    assert max(r["usages"]) <= r["window"]
    assert r["first"] == {"role": "system", "content": "keep me"}
    assert not r["hasTurn0"] and r["hasTurn7"]


def test_clone_copies_history_and_usage_independently(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const seen = [];
        __fakeLM.setResponder((input, ctx) => { seen.push({ sessionId: ctx.sessionId, history: ctx.history.map(m => m.content) }); return 'reply to ' + input; });
        const base = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'sys' }] });
        await base.prompt('first');
        const copy = await base.clone();
        const same = copy.contextUsage === base.contextUsage && copy.contextWindow === base.contextWindow;
        await copy.prompt('second');
        return { same, seen, baseUsage: base.contextUsage, copyUsage: copy.contextUsage,
                 ids: [__fakeLM.idOf(base), __fakeLM.idOf(copy)] };
    }""")
    assert r["same"]
    assert r["seen"][1]["history"] == ["sys", "first", "reply to first"]
    assert r["seen"][1]["sessionId"] == r["ids"][1] != r["ids"][0]
    assert r["copyUsage"] > r["baseUsage"]


def test_destroy_rejects_pending_and_later_calls_with_invalid_state(open_page):
    page = open_page(latencyMs=2000)
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        const pending = __catch(s.prompt('slow'));
        await new Promise(r => setTimeout(r, 20));
        s.destroy();
        const syncStream = (() => { try { s.promptStreaming('x'); return null; } catch (e) { return e.name; } })();
        return { pending: await pending, prompt: await __catch(s.prompt('again')),
                 measure: await __catch(s.measureContextUsage('x')), clone: await __catch(s.clone()),
                 append: await __catch(s.append('x')), syncStream, live: __fakeLM.sessions().length };
    }""")
    assert r["pending"]["name"] == "InvalidStateError"   # as Chrome: not an AbortError
    assert r["pending"]["isDOMException"]
    for key in ("prompt", "measure", "clone", "append"):
        assert r[key]["name"] == "InvalidStateError", key
    assert r["syncStream"] == "InvalidStateError"
    assert r["live"] == 0


def test_abort_signal_rejects_and_leaves_no_trace(open_page):
    page = open_page(latencyMs=300, chunkDelayMs=60)
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        const pre = new AbortController(); pre.abort();
        const preAborted = await __catch(s.prompt('x', { signal: pre.signal }));
        const before = s.contextUsage;
        const c = new AbortController();
        const p = __catch(s.prompt('x', { signal: c.signal }));
        setTimeout(() => c.abort(), 30);
        const mid = await p;
        const afterPrompt = s.contextUsage;
        __fakeLM.setLatency(0);
        __fakeLM.setResponder(() => 'one two three four five six seven eight');
        const c2 = new AbortController();
        const chunks = [];
        const streamErr = await __catch(async () => {
            for await (const chunk of s.promptStreaming('x', { signal: c2.signal })) { chunks.push(chunk); if (chunks.length === 2) c2.abort(); }
        });
        const createAborted = await __catch(LanguageModel.create({ signal: pre.signal }));
        return { preAborted, mid, before, afterPrompt, streamErr, chunks, afterStream: s.contextUsage, createAborted };
    }""")
    assert r["preAborted"]["name"] == "AbortError"
    assert r["mid"]["name"] == "AbortError"
    assert r["afterPrompt"] == r["before"]
    assert r["streamErr"]["name"] == "AbortError"
    assert r["chunks"] == ["one ", "two "]
    assert r["afterStream"] == r["before"]
    assert r["createAborted"]["name"] == "AbortError"


def test_prompt_streaming_yields_delta_chunks(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        __fakeLM.setResponder(() => 'alpha beta gamma delta');
        const s = await LanguageModel.create();
        const stream = s.promptStreaming('go');
        const isStream = stream instanceof ReadableStream;
        const chunks = [];
        for await (const chunk of stream) chunks.push(chunk);
        __fakeLM.configure({ chunkSize: 5 });
        const fixed = [];
        for await (const chunk of s.promptStreaming('go')) fixed.push(chunk);
        return { isStream, chunks, fixed, log: __fakeLM.callsOf('promptStreaming').length,
                 history: __fakeLM.sessions()[0].history.map(m => m.content) };
    }""")
    assert r["isStream"]
    assert r["chunks"] == ["alpha ", "beta ", "gamma ", "delta"]
    assert r["fixed"] == ["alpha", " beta", " gamm", "a del", "ta"]
    assert r["log"] == 2
    assert r["history"] == ["go", "alpha beta gamma delta", "go", "alpha beta gamma delta"]


def test_legacy_names_are_off_by_default(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        let fired = 0;
        s.addEventListener('quotaoverflow', () => fired++);
        return { legacy: ['inputQuota', 'inputUsage', 'measureInputUsage', 'onquotaoverflow'].filter(n => n in s),
                 current: ['contextWindow', 'contextUsage', 'measureContextUsage', 'oncontextoverflow'].filter(n => n in s),
                 names: __fakeLM.config.names };
    }""")
    assert r == {"legacy": [], "names": "current",
                 "current": ["contextWindow", "contextUsage", "measureContextUsage", "oncontextoverflow"]}


def test_legacy_names_equal_current_ones_and_can_be_switched(open_page):
    page = open_page(names="both")
    r = page.evaluate("""async () => {
        __fakeLM.configure({ contextWindow: 80 });
        __fakeLM.setResponder(() => 'fine');
        const s = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'sys' }] });
        await s.prompt('hello there');
        let legacyFired = 0, currentFired = 0;
        s.onquotaoverflow = () => legacyFired++;
        s.oncontextoverflow = () => currentFired++;
        for (let i = 0; i < 6; i++) await s.prompt('some words to fill the window ' + i);
        const both = { usage: [s.inputUsage, s.contextUsage], quota: [s.inputQuota, s.contextWindow],
                       measure: [await s.measureInputUsage('abc def'), await s.measureContextUsage('abc def')],
                       legacyFired, currentFired };
        __fakeLM.configure({ names: 'current' });
        const current = { hasLegacy: 'inputQuota' in s || 'measureInputUsage' in s || 'onquotaoverflow' in s,
                          hasCurrent: 'contextWindow' in s && 'measureContextUsage' in s };
        __fakeLM.configure({ names: 'legacy' });
        const legacy = { hasCurrent: 'contextWindow' in s || 'measureContextUsage' in s || 'oncontextoverflow' in s,
                         quota: s.inputQuota };
        return { both, current, legacy };
    }""")
    both = r["both"]
    assert both["usage"][0] == both["usage"][1] > 0
    assert both["quota"] == [80, 80]
    assert both["measure"][0] == both["measure"][1] > 0
    assert both["legacyFired"] >= 1 and both["legacyFired"] == both["currentFired"]
    assert r["current"] == {"hasLegacy": False, "hasCurrent": True}
    assert r["legacy"] == {"hasCurrent": False, "quota": 80}


def test_monitor_receives_downloadprogress(open_page):
    page = open_page(availability="downloadable", downloadSteps=3)
    r = page.evaluate("""async () => {
        const viaListener = [], viaAttr = [];
        let total = null, isProgress = false;
        await LanguageModel.create({ monitor(m) {
            m.addEventListener('downloadprogress', e => { viaListener.push(e.loaded); total = e.total; isProgress = e instanceof ProgressEvent; });
            m.ondownloadprogress = e => viaAttr.push(e.loaded);
        } });
        const after = await LanguageModel.availability();
        const again = [];
        await LanguageModel.create({ monitor(m) { m.addEventListener('downloadprogress', e => again.push(e.loaded)); } });
        return { viaListener, viaAttr, total, isProgress, after, again };
    }""")
    loaded = r["viaListener"]
    assert loaded[0] == 0 and loaded[-1] == 1 and len(loaded) == 5
    assert loaded == sorted(loaded)
    assert r["viaAttr"] == loaded
    assert r["total"] == 1 and r["isProgress"]
    assert r["after"] == "available"
    assert r["again"] == [0, 1]   # already downloaded: just the two mandatory events


def test_response_constraint_reaches_responder_and_default_replies(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const schema = { type: 'object', required: ['thought', 'toolName', 'toolInput', 'finalAnswer'],
            properties: { thought: { type: 'string' }, toolName: { type: 'string', enum: ['convert_units', 'none'] },
                          toolInput: { type: 'string' }, finalAnswer: { type: 'string' } } };
        const facts = { type: 'object', properties: { facts: { type: 'array', items: { type: 'object',
            properties: { kind: { enum: ['preference', 'need'] }, text: { type: 'string' } } } } } };
        const s = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'agent' }] });
        const step = JSON.parse(await s.prompt('Tools: convert_units\\nUser: How many grams is 3 ounces?', { responseConstraint: schema }));
        const factsReply = JSON.parse(await s.prompt('Extract facts', { responseConstraint: facts }));
        const summary = await s.prompt('Summarize the conversation so far: we planned a trip to Kyoto.');
        const withC = await s.measureContextUsage('x', { responseConstraint: schema });
        const omitted = await s.measureContextUsage('x', { responseConstraint: schema, omitResponseConstraintInput: true });
        const plain = await s.measureContextUsage('x');
        const omitWithout = await __catch(s.prompt('x', { omitResponseConstraintInput: true }));
        let ctx = null;
        __fakeLM.setResponder(async (input, c) => { ctx = c; return JSON.stringify(
            { thought: 't', toolName: 'none', toolInput: '', finalAnswer: 'a' }); });
        await s.prompt('again', { responseConstraint: schema });
        const log = __fakeLM.callsOf('prompt');
        return { step, factsReply, summary, withC, omitted, plain, omitWithout,
                 ctxConstraint: ctx.responseConstraint, ctxSession: ctx.sessionId,
                 logged: log.map(c => c.hasConstraint), firstConstraint: log[0].constraint };
    }""")
    step = r["step"]
    assert step["toolName"] == "none"
    assert step["toolInput"] == ""
    assert "How many grams is 3 ounces?" in step["finalAnswer"]
    assert step["thought"]
    assert r["factsReply"] == {"facts": []}
    assert r["summary"].startswith("Summary:")
    assert r["withC"] > r["omitted"] == r["plain"]
    assert r["omitWithout"]["isTypeError"]
    assert r["ctxConstraint"]["properties"]["toolName"]["enum"] == ["convert_units", "none"]
    assert r["ctxSession"].startswith("fake-")
    assert r["logged"] == [True, True, False, True]
    assert r["firstConstraint"]["required"][0] == "thought"


def test_controls_fail_next_queue_replies_and_log(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        __fakeLM.queueReplies('one', { text: 'two' }, { error: { name: 'NotReadableError', message: 'filtered' } });
        const replies = [await s.prompt('a'), await s.prompt('b'), await __catch(s.prompt('c'))];
        __fakeLM.failNext('NetworkError', { method: 'create' });
        const createErr = await __catch(LanguageModel.create());
        __fakeLM.failNext('QuotaExceededError', { requested: 10, quota: 5 });
        const quotaErr = await __catch(s.prompt('d'));
        const fallback = await s.prompt('User: hello fake');
        return { replies, createErr, quotaErr, fallback,
                 methods: __fakeLM.calls.map(c => c.method),
                 sessionIds: __fakeLM.callsOf('prompt').map(c => c.sessionId),
                 inputs: __fakeLM.callsOf('prompt').map(c => c.input) };
    }""")
    assert r["replies"][:2] == ["one", "two"]
    assert r["replies"][2]["name"] == "NotReadableError"
    assert r["createErr"]["name"] == "NetworkError"
    assert r["quotaErr"] == {**r["quotaErr"], "name": "QuotaExceededError", "requested": 10, "quota": 5}
    assert r["fallback"] == "You said: hello fake"
    assert r["methods"][:2] == ["create", "prompt"]
    assert len(set(r["sessionIds"])) == 1
    assert r["inputs"] == ["a", "b", "c", "d", "User: hello fake"]


STEP_SCHEMA = {
    "type": "object",
    "properties": {"thought": {"type": "string"},
                   "toolName": {"type": "string", "enum": ["calculator", "none"]},
                   "toolInput": {"anyOf": [{"type": "string"}, {"type": "object"}]},
                   "finalAnswer": {"type": "string"}},
    "required": ["thought", "toolName", "toolInput", "finalAnswer"],
    "additionalProperties": False,
    "anyOf": [{"properties": {"toolName": {"const": "calculator"},
                              "toolInput": {"type": "object",
                                            "properties": {"expression": {"type": "string"}},
                                            "required": ["expression"]}}},
              {"properties": {"toolName": {"const": "none"}, "toolInput": {"type": "string"}}}],
}

# ask(schemaSupport) -> how each constraint fares: null (answered) or the error's name and message.
REFUSALS = """async ([step, support]) => {
    __fakeLM.configure({ schemaSupport: support });
    const s = await LanguageModel.create();
    const ask = (c) => __catch(s.prompt('User: hi', { responseConstraint: c }));
    const circular = {}; circular.self = circular;
    return {
        step: await ask(step),
        plain: await ask({ type: 'object', properties: { a: { type: 'string' } } }),
        soup: await ask({ type: 'soup' }),
        unknownKeyword: await ask({ type: 'string', flavour: 'salty' }),
        notKeyword: await ask({ type: 'array', uniqueItems: true }),
        circular: await ask(circular),
        regex: await ask(/^yes|no$/),
        lookahead: await ask(/^foo(?!bar)$/),
        notAnObject: await __catch(async () => s.prompt('hi', { responseConstraint: 'a string' })),
    };
}"""


def test_schema_support_follows_the_configured_browser(open_page):
    page = open_page()
    chrome = page.evaluate(REFUSALS, [STEP_SCHEMA, "chrome"])
    assert chrome["step"] is None and chrome["plain"] is None and chrome["regex"] is None
    for key in ("soup", "unknownKeyword", "notKeyword", "circular", "lookahead"):
        assert chrome[key]["name"] == "NotSupportedError" and chrome[key]["isDOMException"], key
    assert "uniqueItems" in chrome["notKeyword"]["message"]
    assert chrome["notAnObject"]["isTypeError"]

    strict = page.evaluate(REFUSALS, [STEP_SCHEMA, "strict"])
    assert strict["step"]["name"] == "NotSupportedError" and "anyOf" in strict["step"]["message"]
    assert strict["plain"] is None and strict["regex"] is None

    edge = page.evaluate(REFUSALS, [STEP_SCHEMA, "edge"])
    assert edge["step"]["name"] == "NotSupportedError" and edge["plain"] is None

    none = page.evaluate(REFUSALS, [STEP_SCHEMA, "none"])
    assert none["plain"]["name"] == none["regex"]["name"] == "NotSupportedError"
    assert none["notAnObject"]["isTypeError"]   # still checked first, as Chrome does


def test_a_reply_that_breaks_the_constraint_is_a_syntax_error(open_page):
    page = open_page()
    r = page.evaluate("""async (step) => {
        const s = await LanguageModel.create();
        __fakeLM.queueReplies('not json', '{"thought": "t"}', 'not json');
        const broken = await __catch(s.prompt('x', { responseConstraint: step }));
        const partial = await __catch(s.prompt('x', { responseConstraint: step }));
        const streamed = await __catch(async () => { for await (const _ of s.promptStreaming('x', { responseConstraint: /^\\d+$/ })) {} });
        const usage = s.contextUsage;
        __fakeLM.configure({ replyCheck: 'off' });
        __fakeLM.queueReplies('not json');
        const passed = await s.prompt('x', { responseConstraint: step });
        const plain = await s.prompt('anything goes');
        return { broken, partial, streamed, usage, passed, plain };
    }""", STEP_SCHEMA)
    for key in ("broken", "partial", "streamed"):
        assert r[key]["name"] == "SyntaxError" and r[key]["isDOMException"], key
    assert r["usage"] == 0   # the refused replies left nothing in the session
    assert r["passed"] == "not json"
    assert r["plain"] == "You said: anything goes"


def test_regexp_constraints_prefixes_and_their_token_cost(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        const date = await s.prompt('When?', { responseConstraint: /^\\d{4}-\\d{2}-\\d{2}$/ });
        const answer = await s.prompt([{ role: 'user', content: 'Greet me' },
            { role: 'assistant', content: 'Dear ', prefix: true }], { responseConstraint: /^Dear [A-Z][a-z]+!$/ });
        const deviating = await __catch(s.prompt([{ role: 'user', content: 'Greet me' },
            { role: 'assistant', content: 'Hi', prefix: true }], { responseConstraint: /^Dear [A-Z][a-z]+!$/ }));
        const jsonRest = await s.prompt([{ role: 'user', content: 'Rate it' },
            { role: 'assistant', content: '{"score": ', prefix: true }],
            { responseConstraint: { type: 'object', properties: { score: { type: 'integer', minimum: 3 } }, required: ['score'] } });
        const last = __fakeLM.sessions()[0].history.at(-1);
        const plain = await s.measureContextUsage('x');
        const regex = await s.measureContextUsage('x', { responseConstraint: /^a+$/ });
        const schema = await s.measureContextUsage('x', { responseConstraint: { type: 'string' } });
        return { date, answer, deviating, jsonRest, last, plain, regex, schema };
    }""")
    assert r["date"] == "0000-00-00"
    assert r["answer"] == "Aa!"   # continues the prefix: "Dear Aa!"
    assert r["deviating"]["name"] == "NotSupportedError"
    assert r["jsonRest"] == "3}"
    assert r["last"] == {"role": "assistant", "content": '{"score": 3}'}   # prefix and reply, one message
    assert r["regex"] == r["plain"] < r["schema"]   # only a JSON schema is sent to the model


def test_download_needs_a_fresh_gesture_and_create_consumes_it(open_page):
    page = open_page(availability="downloadable", downloadStepMs=50)
    page.evaluate("""() => {
        const button = document.createElement('button');
        button.id = 'twice';
        button.textContent = 'download';
        button.onclick = () => {
            window.firstCreate = __catch(LanguageModel.create());
            window.during = LanguageModel.availability();   // the download runs now
            // As if that download were gone: starting another needs another gesture.
            __fakeLM.setAvailability('downloadable');
            window.secondCreate = __catch(LanguageModel.create());
        };
        document.body.append(button);
    }""")
    # page.evaluate runs as a user gesture; opening a window consumes it, as WPT does.
    no_gesture = page.evaluate("""async () => {
        window.open('about:blank', '_blank')?.close();
        return { active: navigator.userActivation.isActive, result: await __catch(LanguageModel.create()) };
    }""")
    assert no_gesture["active"] is False
    assert no_gesture["result"]["name"] == "NotAllowedError"
    page.click("#twice")
    r = page.evaluate("""async () => ({ first: await firstCreate, second: await secondCreate,
                                       during: await during, after: await LanguageModel.availability() })""")
    assert r["first"] is None
    assert r["during"] == "downloading"
    assert r["second"]["name"] == "NotAllowedError"
    assert r["after"] == "available"
    downloading = page.evaluate("""async () => {
        window.open('about:blank', '_blank')?.close();
        __fakeLM.setAvailability('downloading');
        return __catch(LanguageModel.create());   // no gesture needed once a download runs
    }""")
    assert downloading is None


def test_sampling_mode_where_the_browser_has_it_and_not_elsewhere(open_page):
    page = open_page()
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create({ samplingMode: 'most-predictable' });
        const copy = await s.clone();
        const plain = await LanguageModel.create();
        const modes = [s.samplingMode, copy.samplingMode, plain.samplingMode];
        __fakeLM.configure({ samplingModes: ['balanced'] });
        const narrow = { availability: await LanguageModel.availability({ samplingMode: 'most-predictable' }),
                         create: await __catch(LanguageModel.create({ samplingMode: 'most-predictable' })) };
        const invalid = await __catch(LanguageModel.create({ samplingMode: 'wild' }));
        __fakeLM.configure({ samplingModes: null });
        const without = await LanguageModel.create({ samplingMode: 'most-predictable' });
        return { modes, narrow, invalid,
                 withoutHas: 'samplingMode' in without, withoutValue: without.samplingMode,
                 withoutAvailability: await LanguageModel.availability({ samplingMode: 'creative' }),
                 logged: __fakeLM.callsOf('create').map(c => c.samplingMode) };
    }""")
    assert r["modes"] == ["most-predictable", "most-predictable", "balanced"]
    assert r["narrow"]["availability"] == "unavailable"
    assert r["narrow"]["create"]["name"] == "NotSupportedError"
    assert r["invalid"]["isTypeError"]
    assert r["withoutHas"] is False and r["withoutValue"] is None
    assert r["withoutAvailability"] == "available"   # an unknown option is ignored
    assert r["logged"][:2] == ["most-predictable", None]


def test_profiles_change_window_languages_and_schema_support(open_page):
    page = open_page(**FAKE_PROFILES["edge"])
    r = page.evaluate("""async () => {
        const english = [{ type: 'text', languages: ['en'] }];
        const spanish = [{ type: 'text', languages: ['es'] }];
        const s = await LanguageModel.create({ expectedInputs: english, expectedOutputs: english });
        return { window: s.contextWindow, english: await LanguageModel.availability({ expectedOutputs: english }),
                 spanish: await LanguageModel.availability({ expectedOutputs: spanish }),
                 anyOf: await __catch(s.prompt('x', { responseConstraint: { anyOf: [{ type: 'string' }] } })),
                 sampling: 'samplingMode' in s };
    }""")
    assert r == {**r, "window": 4096, "english": "available", "spanish": "unavailable", "sampling": False}
    assert r["anyOf"]["name"] == "NotSupportedError"


def test_a_system_message_after_input_is_refused_even_while_a_prompt_runs(open_page):
    page = open_page(latencyMs=200)
    r = page.evaluate("""async () => {
        const s = await LanguageModel.create();
        const first = s.prompt('hello');   // not answered yet
        const system = await __catch(s.prompt([{ role: 'system', content: 'late' }]));
        const measured = await s.measureContextUsage([{ role: 'system', content: 'be brief' }]);
        await first;
        return { system, measured };
    }""")
    assert r["system"]["isTypeError"]
    assert r["measured"] > 0   # measuring is not adding: the session's rule does not apply
