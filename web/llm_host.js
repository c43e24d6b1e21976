/**
 * LLM host: the main-thread end of the agent worker's RPC bridge to Chrome's Prompt API
 * (`window.LanguageModel`, which workers cannot reach). Kept thin: no agent logic here.
 *
 * Besides Chrome's Prompt API, the host serves other APIs of the same shape, by name (the
 * in-page model, web/page_model/, as 'page-model'): setApi(name, api) adds, replaces or
 * (api null) removes one at run time, and a request that names it in `api` is served by
 * it. Only availability, create and info choose an API; every other call goes to the
 * session it names, whichever API made it, so a switch never strands a session.
 *
 * Protocol (worker <-> host, over worker.postMessage):
 *   request  {type: 'llm', id, method, args: [...], api?}      (args positional, may be omitted;
 *                                                               api: a name given to setApi, else Chrome's)
 *   reply    {type: 'llm-result', id, ok: true, value}
 *            {type: 'llm-result', id, ok: false, error: {name, message, originalName, requested?, quota?}}
 *   event    {type: 'llm-event', event: 'downloadprogress', loaded, requestId}
 *            {type: 'llm-event', event: 'contextoverflow', sessionId, requestId}
 *   from the worker, relayed as a 'chunk' event (a model the worker streams itself):
 *            {type: 'llm-event', event: 'chunk', requestId, purpose, conversationId, chunk, text, offset}
 *
 *   availability([options])          -> {availability, reason, languages?}: the reason it can tell,
 *        for a model that cannot answer here: 'unsupported' (no LanguageModel), 'frame' (a
 *        cross-origin frame whose embedder did not allow="language-model"), 'policy' (the
 *        page's permissions policy disallows "language-model"), 'options' (unavailable for
 *        these expectedInputs/expectedOutputs, available without them), 'device' (unavailable
 *        whatever is asked); for one that can: 'language' (these languages are not supported,
 *        but the model is without naming any: the availability is then that one, `languages`
 *        the refused ones, and create() leaves them out from now on), 'downloadable' (Chrome
 *        downloads it only from a user gesture), 'downloading', else null.
 *   create({initialPrompts, purpose, expectedInputs?, expectedOutputs?, requestId?})
 *                                    -> {sessionId, contextWindow, contextUsage, samplingMode, languagesDropped}
 *        purpose 'step' and 'facts' sessions are created with samplingMode 'most-predictable'
 *        where the browser has samplingMode and availability() accepts that mode for the
 *        same options; other purposes, and other browsers, get the browser's default
 *        (samplingMode null in the reply). Languages the browser does not support are left
 *        out (as availability() found, or after create() refused them with NotSupportedError):
 *        a refused option never costs the agent its model.
 *   clone(sessionId, [{requestId}])  -> {sessionId, contextWindow, contextUsage}
 *   prompt(sessionId, text, {responseConstraint?, omitResponseConstraintInput?, purpose?, stream?, requestId?, conversationId?})
 *                                    -> {text, contextUsage, contextWindow, overflowed}
 *        text: a string, or the user message's content parts [{type: 'text', value}, {type:
 *        'image' | 'audio', value: Uint8Array | Blob, mime, name}] (each image or sound made
 *        a Blob of its type; the session must have been created with it in expectedInputs).
 *        An image or sound the model refuses or cannot decode is a MediaInputError.
 *        stream: true uses promptStreaming; each delta goes to the page (onChunk / 'chunk'
 *        event: {sessionId, requestId, purpose, conversationId, chunk, text, offset}: offset is
 *        where chunk starts in text, 0 for a new call) and only the final text to the worker;
 *        conversationId is the agent's chat the prompt is for (the worker's model session is
 *        tagged with it), so the page shows each chat only its own pieces.
 *   append(sessionId, text, [{requestId}]) -> {contextUsage, contextWindow, overflowed}
 *   measure(sessionId, text, [{responseConstraint}]) -> number, or null if the API cannot measure
 *   destroy(sessionId)               -> true if the session existed
 *   destroyAll()                     -> number of sessions destroyed
 *   abort([requestId])               -> number of calls aborted (all in-flight calls without id)
 *   sessionInfo([sessionId])         -> {sessionId, purpose, contextWindow, contextUsage} (or a list)
 *   info()                           -> the API's own description (`api.info`: the in-page model's
 *                                       name, window, threads...), or null (Chrome's has none)
 *
 *   requestId defaults to the message id; calls sharing a requestId are aborted together.
 *   Error names, as Chrome raises them: QuotaExceededError (with requested/quota);
 *   ResponseConstraintError for a prompt or measure that carried a responseConstraint and
 *   failed with NotSupportedError (schema or feature refused), TypeError (not a schema)
 *   or SyntaxError (no compliant reply), so a refused constraint never reads as a missing
 *   model; ModelUnavailableError (other NotSupportedError, NotAllowedError, API missing);
 *   AbortError (the call's signal); InvalidStateError (a session destroyed before or
 *   during the call, or an unknown session id); NetworkError; else the original name.
 *   originalName always keeps the browser's name.
 */

const UNAVAILABLE_NAMES = new Set(['NotSupportedError', 'NotAllowedError', 'ModelUnavailableError']);
// What the Prompt API raises for an image or a sound it refuses (a session not created for
// it) or cannot read (undecodable bytes: InvalidStateError for images, DataError for sound
// in Chrome; EncodingError in the explainer; SecurityError for a cross-origin source).
const MEDIA_NAMES = new Set(['NotSupportedError', 'DataError', 'EncodingError', 'SecurityError',
                             'InvalidStateError', 'TypeError']);

/** The prompt input for the API: a string as it is; content parts as one user message
 * whose images and sounds are Blobs of their type. `media`: whether it has any. */
export function promptInput(input) {
  if (!Array.isArray(input)) return { input, media: false };
  const content = input.map((part) => (part.type === 'text'
    ? { type: 'text', value: String(part.value ?? '') }
    : { type: part.type,
        value: part.value instanceof Blob ? part.value : new Blob([part.value], { type: part.mime || '' }) }));
  return { input: [{ role: 'user', content }], media: content.some((p) => p.type !== 'text') };
}
const CONSTRAINT_NAMES = new Set(['NotSupportedError', 'TypeError', 'SyntaxError']);
// Purposes whose replies should be the model's most likely ones: ReAct steps and fact extraction.
const PREDICTABLE_PURPOSES = new Set(['step', 'facts']);
const PREDICTABLE = 'most-predictable';

/** A plain, structured-cloneable error for the worker. */
export function toRpcError(err) {
  const originalName = err?.originalName || err?.name || 'Error';
  let name = err?.name || 'Error';
  if (UNAVAILABLE_NAMES.has(name)) name = 'ModelUnavailableError';
  const out = { name, originalName, message: String(err?.message ?? err ?? 'unknown error') };
  if (originalName === 'QuotaExceededError') {
    out.requested = Number.isFinite(err?.requested) ? err.requested : null;
    out.quota = Number.isFinite(err?.quota) ? err.quota : null;
  }
  return out;
}

function hostError(name, message) {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** `err` from a call that carried a responseConstraint: the constraint's own error when the
 * browser refused it or could not comply, else `err` itself. */
function constraintError(err) {
  if (!CONSTRAINT_NAMES.has(err?.name)) return err;
  const e = hostError('ResponseConstraintError', String(err?.message ?? err));
  e.originalName = err.name;
  return e;
}

export class LLMHost extends EventTarget {
  /**
   * @param {object} [options]
   * @param {object} [options.api] the LanguageModel class to use (default: window.LanguageModel,
   *   looked up on every call; pass `api: null` to simulate a browser without it)
   * @param {function} [options.onChunk] ({sessionId, requestId, chunk, text}) for streamed deltas
   * @param {function} [options.onDownloadProgress] ({loaded, requestId})
   * @param {function} [options.onContextOverflow] ({sessionId, requestId})
   */
  constructor(options = {}) {
    super();
    this._options = options;
    this._apis = new Map();      // name -> an API, or a promise of one (setApi)
    this.sessions = new Map();   // sessionId -> {session, purpose, requestId}
    this.inflight = new Map();   // requestId -> Set<AbortController>
    this._nextSession = 1;
    this._ports = new Set();
    this._predictable = new Map();   // JSON of [API name, expected options] -> Promise<boolean>
    this._dropLanguages = false;     // the browser refused the languages asked for
  }

  get api() {
    return 'api' in this._options ? this._options.api : globalThis.LanguageModel;
  }

  /**
   * Serve requests that name `name` with `api` (a LanguageModel-shaped object, or a
   * promise of one, awaited by the calls that need it); `api` null removes it. Sessions
   * already made keep working with the API that made them.
   */
  setApi(name, api) {
    if (!name) throw new TypeError('setApi needs a name (Chrome\'s Prompt API is the default)');
    if (api == null) this._apis.delete(name);
    else this._apis.set(name, api);
    this._predictable.clear();
  }

  /** The API for requests naming `name` (null: Chrome's, or the constructor's `api`). */
  async _apiNamed(name) {
    if (name == null) return this.api;
    const api = await this._apis.get(name);
    if (!api) throw hostError('ModelUnavailableError', `No model "${name}" is set up in this page.`);
    return api;
  }

  // ------------------------------------------------------------ transport

  /** Serve requests from a Worker (or MessagePort); returns a function that detaches. */
  attach(target) {
    const listener = (event) => {
      const msg = event.data;
      if (msg && msg.type === 'llm') {
        this.handle(msg).then((reply) => target.postMessage(reply));
      } else if (msg && msg.type === 'llm-event' && msg.event === 'chunk') {
        // A model the worker reaches itself (an OpenAI-compatible server) streams there;
        // its pieces come here to reach the page as the Prompt API's do.
        const {type: _type, event: _event, ...detail} = msg;
        this._emit('chunk', detail, this._options.onChunk, true);
      }
    };
    target.addEventListener('message', listener);
    if (typeof target.start === 'function') target.start();
    this._ports.add(target);
    return () => { target.removeEventListener('message', listener); this._ports.delete(target); };
  }

  /** Run one request message and build its reply (never throws). */
  async handle(msg) {
    const { id, method, args = [], api = null } = msg;
    try {
      const fn = METHODS[method];
      if (!fn) throw hostError('TypeError', `unknown method: ${method}`);
      const value = await fn.call(this, { id, api }, ...(Array.isArray(args) ? args : [args]));
      return { type: 'llm-result', id, ok: true, value: value === undefined ? null : value };
    } catch (err) {
      return { type: 'llm-result', id, ok: false, error: toRpcError(err) };
    }
  }

  /** Tell the page (callback + DOM event) and, unless `pageOnly`, the attached workers. */
  _emit(type, detail, callback, pageOnly = false) {
    try { callback?.(detail); } catch (e) { console.error(e); }
    this.dispatchEvent(new CustomEvent(type, { detail }));
    if (pageOnly) return;
    for (const port of this._ports) port.postMessage({ type: 'llm-event', event: type, ...detail });
  }

  // ------------------------------------------------------------ helpers

  async _requireApi(name = null) {
    const api = await this._apiNamed(name);
    if (!api || typeof api.create !== 'function') {
      throw hostError('ModelUnavailableError', 'The Prompt API (LanguageModel) is not supported in this browser.');
    }
    return api;
  }

  _entry(sessionId) {
    const entry = this.sessions.get(sessionId);
    if (!entry) throw hostError('InvalidStateError', `unknown or destroyed session: ${sessionId}`);
    return entry;
  }

  _track(requestId) {
    const controller = new AbortController();
    let set = this.inflight.get(requestId);
    if (!set) { set = new Set(); this.inflight.set(requestId, set); }
    set.add(controller);
    const done = () => {
      set.delete(controller);
      if (!set.size && this.inflight.get(requestId) === set) this.inflight.delete(requestId);
    };
    return { signal: controller.signal, done };
  }

  /**
   * 'most-predictable' for a purpose that wants it, where the browser has samplingMode and
   * availability() with these options accepts that mode (asked once per option set); else null.
   */
  async _samplingModeFor(api, name, purpose, expected) {
    if (!PREDICTABLE_PURPOSES.has(purpose) || !('samplingMode' in (api.prototype ?? {}))) return null;
    const key = JSON.stringify([name, expected]);
    if (!this._predictable.has(key)) {
      this._predictable.set(key, Promise.resolve()
        .then(() => api.availability({ ...expected, samplingMode: PREDICTABLE }))
        .then((a) => a !== 'unavailable', () => false));
    }
    return (await this._predictable.get(key)) ? PREDICTABLE : null;
  }

  _register(session, purpose, requestId) {
    const sessionId = `s${this._nextSession++}`;
    const entry = { session, purpose: purpose ?? null, requestId, overflowed: false };
    const onOverflow = () => {
      entry.overflowed = true;
      this._emit('contextoverflow', { sessionId, requestId: entry.requestId }, this._options.onContextOverflow);
    };
    // Listen to one of the two names: current Chrome fires 'contextoverflow', older
    // builds (and extensions) 'quotaoverflow'; a session with both would fire twice.
    const type = 'oncontextoverflow' in session || !('onquotaoverflow' in session) ? 'contextoverflow' : 'quotaoverflow';
    session.addEventListener?.(type, onOverflow);
    this.sessions.set(sessionId, entry);
    return { sessionId, ...usage(session), samplingMode: session.samplingMode ?? null };
  }

  // ------------------------------------------------------------ public (also via RPC)

  /** `options.api` names the API to ask (see setApi); Chrome's by default. */
  async availability({ api: name = null, ...options } = {}) {
    const api = name == null ? this.api : this._apis.has(name) ? await this._apis.get(name) : null;
    if (!api || typeof api.availability !== 'function') return { availability: 'unavailable', reason: 'unsupported' };
    const availability = await api.availability(options);
    if (availability !== 'unavailable') {
      return { availability, reason: ['downloadable', 'downloading'].includes(availability) ? availability : null };
    }
    return this._whyUnavailable(api, options);
  }

  /** Why the model is unavailable with `options`: the first of a blocked frame or page, a
   * language, other options, the device; asking availability() again with less. */
  async _whyUnavailable(api, options) {
    const blocked = policyBlock();
    if (blocked) return { availability: 'unavailable', reason: blocked };
    const unavailable = (reason) => ({ availability: 'unavailable', reason });
    const languages = declaredLanguages(options);
    const ask = (opts) => Promise.resolve(api.availability(opts)).catch(() => 'unavailable');
    if (languages.length) {
      const without = await ask(withoutLanguages(options));
      if (without !== 'unavailable') {
        this._dropLanguages = true;
        return { availability: without, reason: 'language', languages };
      }
    }
    if (options.expectedInputs || options.expectedOutputs) {
      if (await ask({}) !== 'unavailable') return unavailable('options');
    }
    return unavailable('device');
  }

  /** The description the API named `name` gives of itself (`api.info`), or null. */
  async info(name = null) {
    if (name != null && !this._apis.has(name)) return null;
    return (await this._apiNamed(name))?.info ?? null;
  }

  /** `api` names the API (see setApi); Chrome's by default. Only Chrome's model download
   *  is reported as 'downloadprogress': another API's page loads its model itself. */
  async create({ initialPrompts = [], purpose = null, expectedInputs, expectedOutputs, requestId, api: name = null } = {}, rpcId = null) {
    const api = await this._requireApi(name);
    const rid = requestId ?? rpcId;
    const { signal, done } = this._track(rid);
    const options = { initialPrompts, signal };
    if (name == null) {
      options.monitor = (m) => m.addEventListener('downloadprogress', (e) => {
        this._emit('downloadprogress', { loaded: e.loaded, requestId: rid }, this._options.onDownloadProgress);
      });
    }
    let expected = {};
    if (expectedInputs) expected.expectedInputs = expectedInputs;
    if (expectedOutputs) expected.expectedOutputs = expectedOutputs;
    const languagesDropped = this._dropLanguages && declaredLanguages(expected).length > 0;
    if (languagesDropped) expected = withoutLanguages(expected);
    Object.assign(options, expected);
    try {
      const samplingMode = await this._samplingModeFor(api, name, purpose, expected);
      if (samplingMode) options.samplingMode = samplingMode;
      let session;
      try {
        session = await api.create(options);
      } catch (err) {
        const refused = ['NotSupportedError', 'TypeError'].includes(err?.name);
        if (refused && samplingMode) {
          // A browser that listed the mode but refuses it at create(): remember, and go on without.
          this._predictable.set(JSON.stringify([name, expected]), Promise.resolve(false));
          delete options.samplingMode;
        } else if (err?.name === 'NotSupportedError' && declaredLanguages(expected).length) {
          // Languages this browser does not support: asked without them from now on.
          this._dropLanguages = true;
          return this.create({ initialPrompts, purpose, expectedInputs, expectedOutputs, requestId: rid, api: name });
        } else {
          throw err;
        }
        session = await api.create(options);
      }
      return { ...this._register(session, purpose, rid), languagesDropped: this._dropLanguages };
    } finally {
      done();
    }
  }

  async clone(sessionId, { requestId } = {}, rpcId = null) {
    const entry = this._entry(sessionId);
    const rid = requestId ?? rpcId;
    const { signal, done } = this._track(rid);
    try {
      const session = await entry.session.clone({ signal });
      return this._register(session, entry.purpose, rid);
    } finally {
      done();
    }
  }

  /** `err` from a call that carried an image or a sound: a MediaInputError when the model
   * refused or could not read it (the session itself being alive), else `err`. */
  _mediaError(err, sessionId) {
    if (!MEDIA_NAMES.has(err?.name) || !this.sessions.has(sessionId)) return err;
    if (err.name === 'NotSupportedError' && !/image|audio|input|media/i.test(String(err.message))) return err;
    const e = hostError('MediaInputError', `${err.name}: ${err.message}`);
    e.originalName = err.name;
    return e;
  }

  async prompt(sessionId, rawText, opts = {}, rpcId = null) {
    const entry = this._entry(sessionId);
    const { input: text, media } = promptInput(rawText);
    const { responseConstraint, omitResponseConstraintInput, stream = false, purpose, conversationId = null } = opts;
    const requestId = opts.requestId ?? rpcId;
    const { signal, done } = this._track(requestId);
    const options = { signal };
    if (responseConstraint != null) options.responseConstraint = responseConstraint;
    if (omitResponseConstraintInput) options.omitResponseConstraintInput = true;
    entry.overflowed = false;
    entry.requestId = requestId;
    entry.lastPurpose = purpose ?? entry.purpose;
    const session = entry.session;
    try {
      let result = '';
      if (stream) {
        const reader = session.promptStreaming(text, options).getReader();
        try {
          for (;;) {
            const { value, done: finished } = await reader.read();
            if (finished) break;
            const chunk = String(value);   // current Chrome streams deltas
            result += chunk;
            this._emit('chunk', { sessionId, requestId, purpose: entry.lastPurpose, conversationId, chunk, text: result, offset: result.length - chunk.length }, this._options.onChunk, true);
          }
        } finally {
          reader.releaseLock();
        }
      } else {
        result = await session.prompt(text, options);
      }
      return { text: result, ...usage(session), overflowed: entry.overflowed };
    } catch (err) {
      const mediaErr = media ? this._mediaError(err, sessionId) : err;
      if (mediaErr !== err) throw mediaErr;
      throw responseConstraint != null ? constraintError(err) : err;
    } finally {
      done();
    }
  }

  async append(sessionId, text, { requestId } = {}, rpcId = null) {
    const entry = this._entry(sessionId);
    const { signal, done } = this._track(requestId ?? rpcId);
    entry.overflowed = false;
    try {
      await entry.session.append(text, { signal });
      return { ...usage(entry.session), overflowed: entry.overflowed };
    } finally {
      done();
    }
  }

  async measure(sessionId, rawText, { responseConstraint } = {}) {
    const { session } = this._entry(sessionId);
    const { input: text, media } = promptInput(rawText);
    const fn = session.measureContextUsage ?? session.measureInputUsage;
    if (typeof fn !== 'function') return null;
    const options = responseConstraint != null ? { responseConstraint } : {};
    let n;
    try {
      n = await fn.call(session, text, options);
    } catch (err) {
      const mediaErr = media ? this._mediaError(err, sessionId) : err;
      if (mediaErr !== err) throw mediaErr;
      throw responseConstraint != null ? constraintError(err) : err;
    }
    return Number.isFinite(n) ? n : null;
  }

  destroy(sessionId) {
    const entry = this.sessions.get(sessionId);
    if (!entry) return false;
    this.sessions.delete(sessionId);
    entry.session.destroy();
    return true;
  }

  destroyAll() {
    const ids = [...this.sessions.keys()];
    for (const id of ids) this.destroy(id);
    return ids.length;
  }

  /** Abort the calls tagged `requestId`, or every in-flight call when it is null/undefined. */
  abort(requestId = null) {
    const keys = requestId == null ? [...this.inflight.keys()] : [requestId];
    let n = 0;
    for (const key of keys) {
      for (const controller of this.inflight.get(key) ?? []) {
        controller.abort(new DOMException('Stopped by the user.', 'AbortError'));
        n += 1;
      }
    }
    return n;
  }

  sessionInfo(sessionId = null) {
    const info = (id, e) => ({ sessionId: id, purpose: e.purpose, ...usage(e.session),
                               samplingMode: e.session.samplingMode ?? null });
    if (sessionId == null) return [...this.sessions].map(([id, e]) => info(id, e));
    return info(sessionId, this._entry(sessionId));
  }
}

/** 'frame' or 'policy' when the "language-model" permissions policy disallows the Prompt
 * API here (a browser that does not know the feature says nothing), else null. */
function policyBlock() {
  const policy = globalThis.document?.permissionsPolicy ?? globalThis.document?.featurePolicy;
  if (!policy || typeof policy.allowsFeature !== 'function') return null;
  const known = typeof policy.features !== 'function' || policy.features().includes('language-model');
  if (!known || policy.allowsFeature('language-model')) return null;
  return inCrossOriginFrame() ? 'frame' : 'policy';
}

function inCrossOriginFrame() {
  try {
    return window.top !== window && window.top.location.origin !== window.location.origin;
  } catch {
    return true;   // the top window's location cannot even be read: another origin
  }
}

/** The languages `options` declares for its text input and output. */
function declaredLanguages(options) {
  const found = new Set();
  for (const key of ['expectedInputs', 'expectedOutputs']) {
    for (const entry of Array.isArray(options?.[key]) ? options[key] : []) {
      for (const language of Array.isArray(entry?.languages) ? entry.languages : []) found.add(language);
    }
  }
  return [...found];
}

/** `options` with the same expected types but no languages named. */
function withoutLanguages(options) {
  const out = { ...options };
  for (const key of ['expectedInputs', 'expectedOutputs']) {
    if (Array.isArray(options[key])) {
      out[key] = options[key].map(({ languages: _languages, ...rest }) => rest);
    }
  }
  return out;
}

function usage(session) {
  return {
    contextWindow: session.contextWindow ?? session.inputQuota ?? null,
    contextUsage: session.contextUsage ?? session.inputUsage ?? null,
  };
}

// RPC dispatch: ({id, api}, ...args) -> value. The rpc id is the default requestId; api is
// the request's API name (null: Chrome's).
const METHODS = {
  availability({ api }, options) { return this.availability({ ...options, api }); },
  create({ id, api }, options) { return this.create({ ...options, api }, id); },
  clone({ id }, sessionId, options) { return this.clone(sessionId, options, id); },
  prompt({ id }, sessionId, text, options) { return this.prompt(sessionId, text, options, id); },
  append({ id }, sessionId, text, options) { return this.append(sessionId, text, options, id); },
  measure(_call, sessionId, text, options) { return this.measure(sessionId, text, options); },
  destroy(_call, sessionId) { return this.destroy(sessionId); },
  destroyAll() { return this.destroyAll(); },
  abort(_call, requestId) { return this.abort(requestId); },
  sessionInfo(_call, sessionId) { return this.sessionInfo(sessionId); },
  info({ api }) { return this.info(api); },
};
