/*
 * A fake `window.LanguageModel` (Chrome's Prompt API) for end-to-end tests.
 *
 * Install it with Playwright before any page script runs:
 *
 *     page.add_init_script(script="window.__fakeLMConfig = {...}")   # optional
 *
 * (a responder given as source, responderSource, is eval'ed, which the app page's CSP
 * forbids: there, put the function itself in the config as `responder`, as
 * tests/e2e/pages.py's fake_lm_config_script does)
 *     page.add_init_script(path="tests/e2e/fake_language_model.js")
 *
 * (the `install_fake_lm` fixture in conftest.py does both). The fake follows
 * the current spec and what Chromium 156 exposes to web pages:
 *
 *   static availability(options)  'available' | 'downloadable' | 'downloading' | 'unavailable'
 *   static create({initialPrompts, monitor, signal, expectedInputs, expectedOutputs, ...})
 *   session.prompt(input, {responseConstraint, omitResponseConstraintInput, signal})
 *   session.promptStreaming(...)   ReadableStream of *delta* string chunks
 *   session.append(input, {signal}), session.measureContextUsage(input, options)
 *   session.contextUsage, session.contextWindow, 'contextoverflow' + oncontextoverflow
 *   session.clone({signal}), session.destroy()
 * plus, unless config.names === 'current', the legacy aliases inputUsage, inputQuota,
 * measureInputUsage() and 'quotaoverflow' + onquotaoverflow (Chrome keeps them only in
 * extensions; config.names: 'both' (default) | 'current' | 'legacy').
 *
 * Errors, as Chrome raises them: create() when unavailable -> NotSupportedError; create()
 * when a download is needed and the page never had a user gesture -> NotAllowedError;
 * input too large for the window -> QuotaExceededError with `requested` and `quota`;
 * aborted signal or destroy() during a call -> AbortError (or the signal's reason);
 * any call on a destroyed session -> InvalidStateError; a system message anywhere but
 * first -> TypeError. expectedInputs/expectedOutputs are validated (known types, outputs
 * only text, languages among config.languages, else 'unavailable'), kept in the
 * call log (entry.expectedInputs/expectedOutputs), and, as in Chrome, a console warning
 * says so when availability() or create() names no output language.
 *
 * Token counting (deterministic, deliberately unlike chars/4 so calibration matters):
 *   - each CJK ideograph, kana or hangul syllable = 1 token;
 *   - each run of other letters/digits = ceil(length / 4) tokens ("internationalization"
 *     = 5, "a" = 1);
 *   - each punctuation or symbol character = 1 token; whitespace is free;
 *   - each message costs 4 more tokens (turn markers); a string input is one user message;
 *   - a responseConstraint (unless omitResponseConstraintInput) adds one message holding
 *     JSON.stringify(schema);
 *   - a reply costs what measureContextUsage(reply) would (tokens + 4).
 *   window.__fakeLM.countTokens(text) exposes the per-text part.
 *
 * Overflow (config.overflowMode):
 *   'evict' (default, what Chrome does): when usage + input > window, the oldest non-initial
 *     messages are dropped until it fits and 'contextoverflow' fires; only when the input
 *     cannot fit even next to the initial prompts does it reject with QuotaExceededError
 *     {requested: measured input, quota: contextWindow - initial prompts' usage}.
 *   'reject' (the spec's prefill algorithm): reject when usage + input > window with
 *     {requested: usage + input, quota: contextWindow}; nothing is dropped.
 *
 * Test control: `window.__fakeLM` (each member is documented where `control` is defined
 * near the end): configure(config), reset(config), setAvailability(a), setResponder(fn),
 * setResponderSource(src), queueReplies(...), clearReplies(), failNext(name, {method,
 * message, requested, quota}), setLatency(ms), setChunkDelay(ms), calls, callsOf(method),
 * clearCalls(), countTokens(text), measure(text), sessions(), idOf(session),
 * defaultResponder, install(), uninstall(), LanguageModel.
 */
(() => {
  'use strict';

  const DEFAULTS = {
    availability: 'available',   // what availability() reports and create() honours
    contextWindow: 9216,         // tokens per session
    names: 'both',               // 'both' | 'current' | 'legacy' attribute/method names
    overflowMode: 'evict',       // 'evict' | 'reject'
    latencyMs: 0,                // delay before a reply (prompt and first stream chunk)
    chunkDelayMs: 0,             // delay between streamed chunks
    chunkSize: 0,                // 0: one chunk per word; n: n characters per chunk
    downloadSteps: 4,            // intermediate downloadprogress events when downloading
    downloadStepMs: 5,           // delay between downloadprogress events
    requireUserActivation: true, // create() needs sticky activation to start a download
    languages: ['en', 'es', 'ja'],  // supported expectedInputs/expectedOutputs languages
    responderSource: null,       // JS source of a responder function (for init config)
    replies: [],                 // scripted replies consumed before the responder
  };

  const CJK = /[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]|[\u{20000}-\u{2fa1f}]/u;
  const PIECE = /[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]|[\u{20000}-\u{2fa1f}]|(?:(?![\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f])[\p{L}\p{N}\p{M}_])+|[^\s\p{L}\p{N}\p{M}_]/gu;
  const MESSAGE_OVERHEAD = 4;

  function countTokens(text) {
    let tokens = 0;
    for (const match of String(text).matchAll(PIECE)) {
      const piece = match[0];
      if (CJK.test(piece)) tokens += 1;
      else if (/^[\p{L}\p{N}\p{M}_]/u.test(piece)) tokens += Math.ceil(piece.length / 4);
      else tokens += 1;
    }
    return tokens;
  }

  // ---------------------------------------------------------------- state

  const state = {
    config: { ...DEFAULTS },
    availability: DEFAULTS.availability,
    responder: null,
    replies: [],
    failures: [],   // [{name, message, method, requested, quota}]
    log: [],
    sessions: new Map(),   // fakeId -> session
    nextId: 1,
  };

  function configure(config = {}) {
    const { responder, responderSource, replies, availability, ...rest } = config;
    Object.assign(state.config, rest);
    if (availability !== undefined) state.availability = availability;
    if (responderSource) state.responder = (0, eval)(`(${responderSource})`);
    if (typeof responder === 'function') state.responder = responder;
    if (Array.isArray(replies)) state.replies.push(...replies);
  }

  function record(method, sessionId, input, options = {}) {
    const entry = {
      method,
      sessionId,
      input: typeof input === 'string' ? input : JSON.stringify(input),
      hasConstraint: options.responseConstraint != null,
      constraint: options.responseConstraint ?? null,
      time: performance.now(),
    };
    state.log.push(entry);
    return entry;
  }

  // availability() and create() entries also keep the declared expectedInputs/Outputs.
  function recordExpected(entry, options) {
    entry.expectedInputs = options.expectedInputs ?? null;
    entry.expectedOutputs = options.expectedOutputs ?? null;
  }

  // ---------------------------------------------------------------- errors

  function domError(name, message, extra = {}) {
    if (name === 'TypeError') return new TypeError(message);
    if (name === 'RangeError') return new RangeError(message);
    if (name === 'QuotaExceededError') {
      const { requested = null, quota = null } = extra;
      if (typeof QuotaExceededError === 'function') {
        const init = {};
        if (requested != null) init.requested = requested;
        if (quota != null) init.quota = quota;
        return new QuotaExceededError(message, init);
      }
      const e = new DOMException(message, 'QuotaExceededError');
      Object.defineProperties(e, { requested: { value: requested }, quota: { value: quota } });
      return e;
    }
    return new DOMException(message, name);
  }

  function abortError(message = 'The operation was aborted.') {
    return new DOMException(message, 'AbortError');
  }

  function takeFailure(method) {
    const i = state.failures.findIndex((f) => !f.method || f.method === method);
    if (i < 0) return null;
    const [f] = state.failures.splice(i, 1);
    return domError(f.name, f.message || `Injected ${f.name} in ${method}`, f);
  }

  function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) { reject(signal.reason ?? abortError()); return; }
      const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
      function onAbort() { clearTimeout(timer); reject(signal.reason ?? abortError()); }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // ---------------------------------------------------------------- messages

  const ROLES = ['system', 'user', 'assistant'];
  const TYPES = ['text', 'image', 'audio', 'tool-call', 'tool-response'];

  /** Canonical form: [{role, content: string, prefix}] (text only; other media become markers). */
  function canonicalize(input, hasAppendedInput) {
    if (typeof input === 'string') return [{ role: 'user', content: input, prefix: false }];
    if (!Array.isArray(input)) return [{ role: 'user', content: String(input), prefix: false }];
    if (input.length === 0) return [{ role: 'user', content: '', prefix: false }];
    const messages = [];
    input.forEach((message, index) => {
      if (message === null || typeof message !== 'object') {
        throw new TypeError('Each message must be an object with role and content.');
      }
      const { role, content, prefix = false } = message;
      if (!ROLES.includes(role)) {
        throw new TypeError(`Failed to read the 'role' property: '${role}' is not a valid LanguageModelMessageRole.`);
      }
      if (content === undefined) throw new TypeError("Required member 'content' is undefined.");
      if (role === 'system' && (hasAppendedInput || index > 0)) {
        throw new TypeError('A system message must be the first message, and only the first.');
      }
      if (prefix && (role !== 'assistant' || index !== input.length - 1)) {
        throw new DOMException('Only the last message may be a prefix, and it must be an assistant message.', 'SyntaxError');
      }
      let text = '';
      if (typeof content === 'string') {
        text = content;
      } else if (Array.isArray(content)) {
        for (const part of content) {
          if (!part || !TYPES.includes(part.type)) throw new TypeError('Invalid message content type.');
          if (part.type === 'text') {
            if (typeof part.value !== 'string') throw new TypeError('Text content must be a string.');
            text += part.value;
          } else if (role === 'assistant') {
            throw new DOMException('Assistant messages may only hold text.', 'NotSupportedError');
          } else {
            text += `[${part.type}]`;
          }
        }
      } else {
        text = String(content);
      }
      messages.push({ role, content: text, prefix: Boolean(prefix) });
      hasAppendedInput = true;
    });
    return messages;
  }

  function messagesUsage(messages) {
    return messages.reduce((n, m) => n + countTokens(m.content) + MESSAGE_OVERHEAD, 0);
  }

  function constraintUsage(options) {
    if (options.responseConstraint == null || options.omitResponseConstraintInput) return 0;
    return countTokens(JSON.stringify(options.responseConstraint)) + MESSAGE_OVERHEAD;
  }

  function checkPromptOptions(options) {
    const c = options.responseConstraint;
    if (options.omitResponseConstraintInput && c == null) {
      throw new TypeError('omitResponseConstraintInput requires a responseConstraint.');
    }
    if (c != null && (typeof c !== 'object' || Array.isArray(c))) {
      throw new TypeError('responseConstraint must be a JSON schema object or a RegExp.');
    }
  }

  // ---------------------------------------------------------------- default replies

  function lastUserText(messages) {
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role === 'user') return messages[i].content;
    }
    return '';
  }

  /** The user's own words inside a templated prompt: the last "User: ..." style line, or the last line. */
  function userMessage(text) {
    const lines = String(text).split('\n').map((l) => l.trim()).filter(Boolean);
    for (let i = lines.length - 1; i >= 0; i--) {
      const m = /^(?:user|user message|question|message)\s*:\s*(.+)$/i.exec(lines[i]);
      if (m) return m[1];
    }
    return lines.length ? lines[lines.length - 1] : '';
  }

  function clip(text, n) {
    const t = String(text).replace(/\s+/g, ' ').trim();
    return t.length > n ? `${t.slice(0, n - 1)}…` : t;
  }

  function exampleFor(schema, key, ctx) {
    if (!schema || typeof schema !== 'object') return null;
    if (Array.isArray(schema.enum)) {
      if (key === 'toolName' && schema.enum.includes('none')) return 'none';
      return schema.enum[0];
    }
    if ('const' in schema) return schema.const;
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
    if (type === 'object' || schema.properties) {
      const out = {};
      for (const [name, sub] of Object.entries(schema.properties || {})) out[name] = exampleFor(sub, name, ctx);
      return out;
    }
    if (type === 'array') {
      const n = schema.minItems || 0;
      return Array.from({ length: n }, () => exampleFor(schema.items, key, ctx));
    }
    if (type === 'integer' || type === 'number') return schema.minimum ?? 0;
    if (type === 'boolean') return false;
    if (type === 'null') return null;
    if (key === 'thought') return `The user said "${clip(ctx.message, 80)}"; I can answer directly.`;
    if (key === 'finalAnswer' || key === 'answer') return `You said: ${clip(ctx.message, 200)}`;
    if (key === 'summary') return `Summary: ${clip(ctx.message, 160)}`;
    const s = '';
    return schema.minLength ? s.padEnd(schema.minLength, 'x') : s;
  }

  /**
   * Default replies: a step JSON (toolName 'none', finalAnswer echoing the user) for a
   * schema with a toolName enum, a value satisfying any other JSON schema, a short
   * "Summary: ..." for summary/compaction prompts, else "You said: ...".
   */
  function defaultResponder(input, { responseConstraint, messages }) {
    const message = userMessage(lastUserText(messages) || input);
    const ctx = { message };
    if (responseConstraint instanceof RegExp) return '';
    if (responseConstraint && typeof responseConstraint === 'object') {
      const props = responseConstraint.properties || {};
      if (props.toolName && Array.isArray(props.toolName.enum)) {
        return JSON.stringify({
          thought: `The user said "${clip(message, 80)}"; I can answer directly.`,
          toolName: props.toolName.enum.includes('none') ? 'none' : props.toolName.enum[0],
          toolInput: '',
          finalAnswer: `You said: ${clip(message, 200)}`,
        });
      }
      return JSON.stringify(exampleFor(responseConstraint, '', ctx));
    }
    const whole = String(input);
    if (/summar|compact|condense|compress/i.test(whole)) {
      const words = whole.replace(/\s+/g, ' ').trim().split(' ').slice(-40).join(' ');
      return `Summary: ${clip(words, 200)}`;
    }
    return `You said: ${clip(message, 200)}`;
  }

  async function produceReply(session, method, inputText, messages, options) {
    const ctx = {
      history: session._history.map(({ role, content }) => ({ role, content })),
      messages: messages.map(({ role, content }) => ({ role, content })),
      responseConstraint: options.responseConstraint ?? null,
      sessionId: session._fakeId,
      method,
    };
    if (state.replies.length) {
      const scripted = state.replies.shift();
      if (scripted && typeof scripted === 'object') {
        if (scripted.error) throw domError(scripted.error.name, scripted.error.message || scripted.error.name, scripted.error);
        return String(scripted.text ?? '');
      }
      return String(scripted);
    }
    const responder = state.responder || defaultResponder;
    return String(await responder(inputText, ctx));
  }

  // ---------------------------------------------------------------- the fake class

  const CONSTRUCT = Symbol('construct');

  function hasName(kind) {
    const names = state.config.names;
    return names === 'both' || names === kind;
  }

  class FakeCreateMonitor extends EventTarget {
    #handler = null;
    get ondownloadprogress() { return this.#handler; }
    set ondownloadprogress(fn) {
      if (this.#handler) this.removeEventListener('downloadprogress', this.#handler);
      this.#handler = typeof fn === 'function' ? fn : null;
      if (this.#handler) this.addEventListener('downloadprogress', this.#handler);
    }
  }

  function checkExpected(list, what) {
    if (list === undefined) return 'available';
    if (!Array.isArray(list)) throw new TypeError(`${what} must be a sequence.`);
    let result = 'available';
    for (const e of list) {
      if (!e || !TYPES.includes(e.type)) throw new TypeError(`Invalid ${what} type.`);
      if (what === 'expectedOutputs' && e.type !== 'text') result = 'unavailable';
      for (const lang of e.languages || []) {
        let tag;
        try { [tag] = Intl.getCanonicalLocales(lang); } catch { throw new RangeError(`Invalid language tag: ${lang}`); }
        const base = tag.split('-')[0];
        if (!state.config.languages.includes(tag) && !state.config.languages.includes(base)) result = 'unavailable';
      }
    }
    return result;
  }

  // Chrome warns (on the console) when availability() or create() names no output language.
  const NO_OUTPUT_LANGUAGE = 'No output language was specified in a LanguageModel API request. ' +
    'An output language should be specified to ensure optimal output quality and properly ' +
    'attest to output safety. Please specify a supported output language code: ';

  function optionsAvailability(options) {
    const outputs = Array.isArray(options.expectedOutputs) ? options.expectedOutputs : [];
    if (!outputs.some((e) => e && Array.isArray(e.languages) && e.languages.length)) {
      console.warn(NO_OUTPUT_LANGUAGE + `[${state.config.languages.join(', ')}]`);
    }
    const a = checkExpected(options.expectedInputs, 'expectedInputs');
    const b = checkExpected(options.expectedOutputs, 'expectedOutputs');
    if (a === 'unavailable' || b === 'unavailable') return 'unavailable';
    return state.availability;
  }

  class LanguageModel extends EventTarget {
    #handlers = { contextoverflow: null, quotaoverflow: null };

    constructor(token, init) {
      super();
      if (token !== CONSTRUCT) throw new TypeError('Illegal constructor');
      this._fakeId = `fake-${state.nextId++}`;
      this._window = init.contextWindow;
      this._initial = init.initial;            // messages never evicted
      this._initialUsage = messagesUsage(init.initial);
      this._history = init.history;            // all messages, initial first
      this._usage = init.usage;
      this._expected = init.expected;
      this._destroyed = false;
      this._destroyController = new AbortController();
      this._queue = Promise.resolve();
      state.sessions.set(this._fakeId, this);
    }

    // ----- static API

    static async availability(options = {}) {
      recordExpected(record('availability', null, '', {}), options);
      const failure = takeFailure('availability');
      if (failure) throw failure;
      return optionsAvailability(options);
    }

    static create(options = {}) {
      const signal = options.signal;
      if (signal?.aborted) return Promise.reject(signal.reason ?? abortError());
      let initial;
      let availability;
      try {
        availability = optionsAvailability(options);
        initial = options.initialPrompts === undefined ? [] : canonicalize(options.initialPrompts, false);
      } catch (e) {
        return Promise.reject(e);
      }
      recordExpected(record('create', null, options.initialPrompts ?? [], {}), options);
      const failure = takeFailure('create');
      if (failure) return Promise.reject(failure);
      if (availability === 'unavailable') {
        return Promise.reject(domError('NotSupportedError', 'Unable to create a text session because the service is not running.'));
      }
      const needsDownload = availability === 'downloadable' || availability === 'downloading';
      if (needsDownload && state.config.requireUserActivation && !navigator.userActivation?.hasBeenActive) {
        return Promise.reject(domError('NotAllowedError', 'Requires a user gesture when availability is "downloading" or "downloadable".'));
      }
      const monitor = new FakeCreateMonitor();
      if (typeof options.monitor === 'function') {
        try { options.monitor(monitor); } catch (e) { return Promise.reject(e); }
      }
      return (async () => {
        // downloadprogress: always 0 and 1 (per the explainer), with steps in between
        // when something had to be downloaded.
        const steps = needsDownload ? state.config.downloadSteps : 0;
        for (let i = 0; i <= steps + 1; i++) {
          await sleep(needsDownload ? state.config.downloadStepMs : 0, signal);
          const loaded = i === 0 ? 0 : i === steps + 1 ? 1 : i / (steps + 1);
          monitor.dispatchEvent(new ProgressEvent('downloadprogress', { loaded, total: 1, lengthComputable: true }));
        }
        if (needsDownload) state.availability = 'available';
        const usage = messagesUsage(initial);
        const window = state.config.contextWindow;
        if (usage > window) {
          throw domError('QuotaExceededError', 'The initial prompts are too large.', { requested: usage, quota: window });
        }
        return new LanguageModel(CONSTRUCT, {
          contextWindow: window, initial, history: initial.slice(), usage,
          expected: { inputs: options.expectedInputs, outputs: options.expectedOutputs },
        });
      })();
    }

    // ----- attributes

    get contextUsage() { return this._usage; }
    get contextWindow() { return this._window; }
    get oncontextoverflow() { return this.#handlers.contextoverflow; }
    set oncontextoverflow(fn) { this.#setHandler('contextoverflow', fn); }

    #setHandler(type, fn) {
      if (this.#handlers[type]) this.removeEventListener(type, this.#handlers[type]);
      this.#handlers[type] = typeof fn === 'function' ? fn : null;
      if (this.#handlers[type]) this.addEventListener(type, this.#handlers[type]);
    }

    // ----- helpers

    #ensureAlive() {
      if (this._destroyed) throw domError('InvalidStateError', 'The model execution session has been destroyed.');
    }

    #signalFor(options) {
      const signals = [this._destroyController.signal];
      if (options.signal) signals.push(options.signal);
      return AbortSignal.any(signals);
    }

    /** Runs `op` after earlier prompts/appends of this session, rejecting at once on abort. */
    #enqueue(signal, op) {
      const run = this._queue.then(() => {
        if (signal.aborted) throw signal.reason ?? abortError();
        return op();
      });
      this._queue = run.catch(() => {});
      return new Promise((resolve, reject) => {
        const onAbort = () => reject(signal.reason ?? abortError());
        signal.addEventListener('abort', onAbort, { once: true });
        run.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
      });
    }

    /** Make room for `requested` tokens or throw QuotaExceededError; returns whether it overflowed. */
    #reserve(requested) {
      const window = this._window;
      if (state.config.overflowMode === 'reject') {
        if (this._usage + requested > window) {
          throw domError('QuotaExceededError', 'The input is too large.', { requested: this._usage + requested, quota: window });
        }
        return false;
      }
      if (this._initialUsage + requested > window) {
        throw domError('QuotaExceededError', 'The input is too large.', { requested, quota: window - this._initialUsage });
      }
      return this._usage + requested > window;
    }

    #evictUntil(extra) {
      let overflowed = false;
      while (this._usage + extra > this._window && this._history.length > this._initial.length) {
        const [dropped] = this._history.splice(this._initial.length, 1);
        this._usage -= countTokens(dropped.content) + MESSAGE_OVERHEAD;
        overflowed = true;
      }
      if (overflowed) {
        if (hasName('current')) this.dispatchEvent(new Event('contextoverflow'));
        if (hasName('legacy')) this.dispatchEvent(new Event('quotaoverflow'));
      }
    }

    #commit(messages, requested, reply) {
      this.#evictUntil(requested);
      this._history.push(...messages);
      this._usage += requested;
      if (reply !== null) {
        const replyUsage = countTokens(reply) + MESSAGE_OVERHEAD;
        this.#evictUntil(replyUsage);
        this._history.push({ role: 'assistant', content: reply, prefix: false });
        this._usage += replyUsage;
      }
    }

    #prepare(method, input, options) {
      checkPromptOptions(options);
      const messages = canonicalize(input, this._usage > 0 || this._history.length > 0);
      const requested = messagesUsage(messages) + constraintUsage(options);
      const inputText = typeof input === 'string' ? input : messages.map((m) => m.content).join('\n');
      return { messages, requested, inputText };
    }

    // ----- prompting

    // What prompt and promptStreaming share: log, scripted failure, reserve, wait, reply.
    async #generate(method, prepared, signal, options) {
      const { messages, requested, inputText } = prepared;
      record(method, this._fakeId, inputText, options);
      const failure = takeFailure(method);
      if (failure) throw failure;
      this.#reserve(requested);
      await sleep(state.config.latencyMs, signal);
      return produceReply(this, method, inputText, messages, options);
    }

    prompt(input, options = {}) {
      try { this.#ensureAlive(); } catch (e) { return Promise.reject(e); }
      const signal = this.#signalFor(options);
      if (signal.aborted) return Promise.reject(signal.reason ?? abortError());
      let prepared;
      try { prepared = this.#prepare('prompt', input, options); } catch (e) { return Promise.reject(e); }
      const { messages, requested } = prepared;
      return this.#enqueue(signal, async () => {
        const reply = await this.#generate('prompt', prepared, signal, options);
        if (signal.aborted) throw signal.reason ?? abortError();
        this.#commit(messages, requested, reply);
        return reply;
      });
    }

    promptStreaming(input, options = {}) {
      this.#ensureAlive();
      const signal = this.#signalFor(options);
      let prepared = null;
      let early = null;
      try { prepared = this.#prepare('promptStreaming', input, options); } catch (e) { early = e; }
      const session = this;
      let cancelled = false;
      return new ReadableStream({
        start(controller) {
          if (early) { controller.error(early); return; }
          if (signal.aborted) { controller.error(signal.reason ?? abortError()); return; }
          const { messages, requested } = prepared;
          session.#enqueue(signal, async () => {
            const reply = await session.#generate('promptStreaming', prepared, signal, options);
            const size = state.config.chunkSize;
            const chunks = size > 0
              ? reply.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) || []
              : reply.match(/\s*\S+\s*/g) || (reply ? [reply] : []);
            for (let i = 0; i < chunks.length; i++) {
              if (i > 0) await sleep(state.config.chunkDelayMs, signal);
              if (cancelled) throw abortError('The stream was cancelled.');
              controller.enqueue(chunks[i]);
            }
            if (signal.aborted) throw signal.reason ?? abortError();
            session.#commit(messages, requested, reply);
          }).then(() => { if (!cancelled) controller.close(); },
            (e) => { if (!cancelled) controller.error(e); });
        },
        cancel() { cancelled = true; },
      });
    }

    append(input, options = {}) {
      try { this.#ensureAlive(); } catch (e) { return Promise.reject(e); }
      const signal = this.#signalFor(options);
      if (signal.aborted) return Promise.reject(signal.reason ?? abortError());
      let prepared;
      try { prepared = this.#prepare('append', input, {}); } catch (e) { return Promise.reject(e); }
      const { messages, requested, inputText } = prepared;
      return this.#enqueue(signal, async () => {
        record('append', this._fakeId, inputText, {});
        const failure = takeFailure('append');
        if (failure) throw failure;
        this.#reserve(requested);
        await sleep(0, signal);
        this.#commit(messages, requested, null);
      });
    }

    measureContextUsage(input, options = {}) {
      try { this.#ensureAlive(); } catch (e) { return Promise.reject(e); }
      const signal = this.#signalFor(options);
      if (signal.aborted) return Promise.reject(signal.reason ?? abortError());
      return (async () => {
        const { requested, inputText } = this.#prepare('measureContextUsage', input, options);
        record('measureContextUsage', this._fakeId, inputText, options);
        const failure = takeFailure('measureContextUsage');
        if (failure) throw failure;
        await sleep(0, signal);
        return requested;
      })();
    }

    clone(options = {}) {
      try { this.#ensureAlive(); } catch (e) { return Promise.reject(e); }
      const signal = this.#signalFor(options);
      if (signal.aborted) return Promise.reject(signal.reason ?? abortError());
      return (async () => {
        record('clone', this._fakeId, '', {});
        const failure = takeFailure('clone');
        if (failure) throw failure;
        await sleep(0, signal);
        return new LanguageModel(CONSTRUCT, {
          contextWindow: this._window,
          initial: this._initial.map((m) => ({ ...m })),
          history: this._history.map((m) => ({ ...m })),
          usage: this._usage,
          expected: this._expected,
        });
      })();
    }

    destroy() {
      if (this._destroyed) return;
      record('destroy', this._fakeId, '', {});
      this._destroyed = true;
      this._destroyController.abort(abortError('The model execution session has been destroyed.'));
      state.sessions.delete(this._fakeId);
    }
  }

  // Current and legacy member names; applyNames() shows the set config.names asks for,
  // so that `'inputQuota' in session` feature-detects as it would in that browser.
  const proto = LanguageModel.prototype;
  const current = {
    contextUsage: Object.getOwnPropertyDescriptor(proto, 'contextUsage'),
    contextWindow: Object.getOwnPropertyDescriptor(proto, 'contextWindow'),
    oncontextoverflow: Object.getOwnPropertyDescriptor(proto, 'oncontextoverflow'),
    measureContextUsage: Object.getOwnPropertyDescriptor(proto, 'measureContextUsage'),
  };
  const legacyHandlers = new WeakMap();
  const legacy = {
    inputUsage: { get() { return this._usage; }, configurable: true },
    inputQuota: { get() { return this._window; }, configurable: true },
    onquotaoverflow: {
      get() { return legacyHandlers.get(this) ?? null; },
      set(fn) {
        const old = legacyHandlers.get(this);
        if (old) this.removeEventListener('quotaoverflow', old);
        legacyHandlers.delete(this);
        if (typeof fn === 'function') { legacyHandlers.set(this, fn); this.addEventListener('quotaoverflow', fn); }
      },
      configurable: true,
    },
    measureInputUsage: {
      value: function measureInputUsage(input, options) { return current.measureContextUsage.value.call(this, input, options); },
      writable: true, configurable: true,
    },
  };

  /** Apply config.names: define exactly the member names that browser generation has. */
  function applyNames() {
    for (const [key, desc] of Object.entries(current)) {
      if (hasName('current')) Object.defineProperty(proto, key, desc);
      else delete proto[key];
    }
    for (const [key, desc] of Object.entries(legacy)) {
      if (hasName('legacy')) Object.defineProperty(proto, key, desc);
      else delete proto[key];
    }
  }

  // ---------------------------------------------------------------- control object

  const control = {
    /** Merge config (see DEFAULTS); `availability`, `responder`, `responderSource`, `replies` allowed. */
    configure(config) { configure(config); applyNames(); return control.config; },
    get config() { return { ...state.config, availability: state.availability }; },
    setAvailability(value) { state.availability = value; },
    get availability() { return state.availability; },
    /** fn(input, {history, messages, responseConstraint, sessionId, method}) -> string | Promise<string>; null restores the default. */
    setResponder(fn) { state.responder = typeof fn === 'function' ? fn : null; },
    setResponderSource(source) { state.responder = source ? (0, eval)(`(${source})`) : null; },
    /** Queue replies: strings, {text}, or {error: {name, message, requested, quota}}; used FIFO before the responder. */
    queueReplies(...replies) { state.replies.push(...replies.flat()); return state.replies.length; },
    clearReplies() { state.replies.length = 0; },
    /** The next call (of `method`, if given) rejects with a DOMException named `name`. */
    failNext(name, { method = null, message = '', requested = null, quota = null } = {}) {
      state.failures.push({ name, method, message, requested, quota });
    },
    setLatency(ms) { state.config.latencyMs = ms; },
    setChunkDelay(ms) { state.config.chunkDelayMs = ms; },
    /** Calls so far: {method, sessionId, input, hasConstraint, constraint, time}. */
    get calls() { return state.log.slice(); },
    callsOf(method) { return state.log.filter((c) => c.method === method); },
    clearCalls() { state.log.length = 0; },
    countTokens,
    measure(text) { return countTokens(text) + MESSAGE_OVERHEAD; },
    /** Live (not destroyed) sessions: {sessionId, contextUsage, contextWindow, history}. */
    sessions() {
      return [...state.sessions.values()].map((s) => ({
        sessionId: s._fakeId, contextUsage: s._usage, contextWindow: s._window,
        history: s._history.map(({ role, content }) => ({ role, content })),
      }));
    },
    idOf(session) { return session?._fakeId ?? null; },
    defaultResponder,
    /** Back to DEFAULTS (plus `config`), forgetting replies, failures and the log. */
    reset(config = {}) {
      state.config = { ...DEFAULTS };
      state.availability = DEFAULTS.availability;
      state.responder = null;
      state.replies = [];
      state.failures = [];
      state.log = [];
      configure(config);
      applyNames();
    },
    /** Put the fake (back) on window. */
    install() {
      Object.defineProperty(window, 'LanguageModel', { value: LanguageModel, writable: true, configurable: true, enumerable: false });
    },
    /** Remove LanguageModel from window, as in a browser without the Prompt API. */
    uninstall() { delete window.LanguageModel; },
    LanguageModel,
  };

  control.reset(window.__fakeLMConfig || {});
  control.install();
  Object.defineProperty(window, '__fakeLM', { value: control, configurable: true });
})();
