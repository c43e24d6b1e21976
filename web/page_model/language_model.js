/**
 * The in-page model with the shape of the Prompt API: a `PageModel` answers
 * availability() and create() like `window.LanguageModel`, and its sessions have
 * prompt(), promptStreaming(), append(), measureContextUsage(), clone(), destroy(),
 * contextUsage, contextWindow and 'contextoverflow'. So the LLM host (web/llm_host.js)
 * serves it to the agent's worker unchanged:
 *
 *   import {PageModel} from '/page_model/language_model.js';
 *   const model = await PageModel.fromManifest({source: {url: '/models/gemma.gguf', size, sha256, name}});
 *   const host = new LLMHost({api: model});
 *
 * The model itself runs in a worker of its own (engine_worker.js; llama.cpp runs in a
 * worker that one starts), so neither this page nor the agent's worker waits on it.
 * create() downloads the GGUF the first time (reported through the create monitor's
 * 'downloadprogress' events, as Chrome reports its own model's download; a signal
 * cancels it) and loads it; later visits load it from the browser's Cache Storage.
 *
 * Beyond the Prompt API: `info` (after a load) says which model runs and how:
 * {name, contextWindow, trainedContext, threads, multiThreaded, crossOriginIsolated,
 * fileSize, ...}; create() also takes samplingMode ('most-predictable'), temperature,
 * topK, seed and maxTokens (the longest reply); load(), kept(), unload() and terminate()
 * manage the engine.
 */

import { Replies } from '../replies.js';

// The site's root is the folder above this one, whatever path the site lives at (serve.py
// serves it at /, a static build anywhere); the manifest's URLs are relative to it.
export const SITE_ROOT = new URL('../', import.meta.url);
export const MANIFEST_URL = new URL('vendor/manifest.json', SITE_ROOT).href;
const WORKER_URL = new URL('page_model/engine_worker.js', SITE_ROOT).href;

/** The manifest's page_model URLs made absolute (they are relative to the site's root). */
function engineURLs(entry) {
  return Object.fromEntries(Object.entries(entry).map(([k, v]) => [k, new URL(v, SITE_ROOT).href]));
}

function domError(name, message, extra = {}) {
  if (name === 'TypeError') return new TypeError(message);
  if (name === 'QuotaExceededError' && typeof globalThis.QuotaExceededError === 'function') {
    const init = {};
    if (extra.requested != null) init.requested = extra.requested;
    if (extra.quota != null) init.quota = extra.quota;
    return new QuotaExceededError(message, init);
  }
  const error = new DOMException(message, name);
  for (const key of ['requested', 'quota']) {
    if (extra[key] != null) Object.defineProperty(error, key, { value: extra[key] });
  }
  return error;
}

const abortError = () => domError('AbortError', 'The operation was aborted.');
const destroyedError = () => domError('InvalidStateError', 'The model execution session has been destroyed.');

/** The worker, and calls to it: call(method, args, {signal}) -> value. */
class EngineClient {
  constructor(workerURL, urls) {
    const url = new URL(workerURL, globalThis.location.href);
    url.searchParams.set('urls', JSON.stringify(urls));
    this.worker = new Worker(url, { type: 'module', name: 'page-model' });
    // Calls waiting for their result (docs/protocols.md). No timer: a call is bounded by
    // its signal (the LLM host's, which the agent's deadline for the step aborts; the
    // user's Cancel for a download).
    this.replies = new Replies({
      prefix: 'c', timeoutMs: null,
      toError: (error) => domError(error?.name || 'Error', String(error?.message ?? ''), error ?? {}),
    });
    this.sessions = new Map();     // sessionId -> PageModelSession
    this.worker.addEventListener('message', (event) => this._receive(event.data));
    this.worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      this.replies.close(domError('OperationError', `The in-page model's worker failed: ${event.message || 'see the console'}`));
    });
  }

  _receive(message) {
    if (message?.type === 'result') {
      this.replies.settle(message);
    } else if (message?.type === 'event') {
      if (message.event === 'contextoverflow') {
        this.sessions.get(message.sessionId)?._overflowed();
      } else {
        this.replies.event(message.requestId, message);
      }
    }
  }

  /** Call `method`; an abort of `signal` rejects at once and stops the call in the worker. */
  call(method, args = [], { signal = null, onEvent = null } = {}) {
    let id = null;
    const result = this.replies.request((issued) => {
      id = issued;
      this.worker.postMessage({ type: 'call', id, method, args });
    }, { signal, onEvent, onAbort: () => this.worker.postMessage({ type: 'abort', requestId: id }) });
    result.catch(() => {});
    return result;
  }

  terminate() {
    this.worker.terminate();
    this.replies.close(domError('InvalidStateError', 'The in-page model was shut down.'));
  }
}

class CreateMonitor extends EventTarget {}

export class PageModel {
  /**
   * @param {object} options
   *   source         {url, size?, sha256?, name?}: the GGUF to use
   *   urls           {wllama, wasm, sha256}: the vendored engine files (fromManifest reads them)
   *   contextWindow  tokens per session (default: the model's, at most 4096)
   *   threads        llama.cpp threads (default: half the cores where the page is
   *                  cross-origin isolated, else 1)
   *   workerURL      where engine_worker.js is served
   */
  constructor({ source, urls, contextWindow = null, threads = null, workerURL = WORKER_URL }) {
    if (!source?.url) throw new TypeError('PageModel needs a source {url}.');
    this.source = source;
    this.options = { contextWindow, threads };
    this.engine = new EngineClient(workerURL, urls);
    this.info = null;
    this._loading = null;
  }

  /** A PageModel whose engine files come from serve.py's manifest. */
  static async fromManifest(options) {
    const response = await fetch(options.manifestURL ?? MANIFEST_URL);
    if (!response.ok) throw new Error(`cannot read ${MANIFEST_URL}: ${response.status}`);
    const manifest = await response.json();
    if (!manifest.page_model) throw new Error('the manifest names no page_model engine: run serve.py --prepare-only');
    return new PageModel({ ...options, urls: engineURLs(manifest.page_model) });
  }

  /** 'available' (kept in this browser), 'downloadable', 'downloading' or 'unavailable'. */
  async availability(options = {}) {
    for (const expected of [...(options.expectedInputs ?? []), ...(options.expectedOutputs ?? [])]) {
      if (expected?.type && expected.type !== 'text') return 'unavailable';
    }
    const { supported } = await this.engine.call('support');
    if (!supported) return 'unavailable';
    if (this.info) return 'available';
    if (this._loading) return 'downloading';
    return (await this.engine.call('kept', [this.source])) ? 'available' : 'downloadable';
  }

  /** Download (when not kept) and load the model; onProgress({loaded, total}). */
  load({ signal = null, onProgress = null } = {}) {
    if (this.info) return Promise.resolve(this.info);
    if (!this._loading) {
      this._loading = this.engine.call('load', [this.source, this.options], {
        signal,
        onEvent: (event) => {
          if (event.event === 'downloadprogress') onProgress?.({ loaded: event.loaded, total: event.total });
        },
      }).then((info) => { this.info = info; return info; })
        .finally(() => { this._loading = null; });
    }
    return this._loading;
  }

  /** The stored record of this model ({url, size, sha256, storedAt}), or null. */
  kept() { return this.engine.call('kept', [this.source]); }

  /** LanguageModel.create(): {initialPrompts, monitor, signal, samplingMode, temperature, topK, seed, maxTokens, expectedInputs}. */
  async create(options = {}) {
    const { monitor, signal, initialPrompts, samplingMode, temperature, topK, seed, maxTokens } = options;
    if (signal?.aborted) throw signal.reason ?? abortError();
    for (const expected of options.expectedInputs ?? []) {
      if (expected?.type && expected.type !== 'text') {
        throw domError('NotSupportedError', `The in-page model reads text only, not ${expected.type}.`);
      }
    }
    const watcher = new CreateMonitor();
    if (typeof monitor === 'function') monitor(watcher);
    const progress = (loaded, total) => watcher.dispatchEvent(Object.assign(new Event('downloadprogress'), {
      loaded: total ? loaded / total : 0, bytes: loaded, total,
    }));
    progress(0, 1);
    await this.load({ signal, onProgress: ({ loaded, total }) => progress(loaded, total || loaded || 1) });
    progress(1, 1);
    const sessionOptions = { initialPrompts, samplingMode, temperature, topK, seed, maxTokens };
    for (const key of Object.keys(sessionOptions)) if (sessionOptions[key] === undefined) delete sessionOptions[key];
    const described = await this.engine.call('create', [sessionOptions], { signal });
    return new PageModelSession(this.engine, described);
  }

  /** Unload the model (its sessions end); the next create() loads it again. */
  async unload() {
    this.info = null;
    await this.engine.call('unload');
  }

  /** Stop the worker for good. */
  terminate() {
    this.info = null;
    this.engine.terminate();
  }
}

export class PageModelSession extends EventTarget {
  #engine;
  #handler = null;

  constructor(engine, { sessionId, contextUsage, contextWindow }) {
    super();
    this.#engine = engine;
    this.sessionId = sessionId;
    this.contextUsage = contextUsage;
    this.contextWindow = contextWindow;
    this.destroyed = false;
    this.destroyedController = new AbortController();
    engine.sessions.set(sessionId, this);
  }

  get oncontextoverflow() { return this.#handler; }
  set oncontextoverflow(fn) {
    if (this.#handler) this.removeEventListener('contextoverflow', this.#handler);
    this.#handler = typeof fn === 'function' ? fn : null;
    if (this.#handler) this.addEventListener('contextoverflow', this.#handler);
  }

  _overflowed() { this.dispatchEvent(new Event('contextoverflow')); }

  #signal(options) {
    const signals = [this.destroyedController.signal];
    if (options?.signal) signals.push(options.signal);
    return AbortSignal.any(signals);
  }

  #update(value) {
    if (value?.contextUsage != null) this.contextUsage = value.contextUsage;
    if (value?.contextWindow != null) this.contextWindow = value.contextWindow;
    return value;
  }

  #call(method, args, options = {}, onEvent = null) {
    if (this.destroyed) return Promise.reject(destroyedError());
    return this.#engine.call(method, [this.sessionId, ...args], { signal: this.#signal(options), onEvent });
  }

  static #promptOptions(options = {}) {
    const out = {};
    if (options.responseConstraint != null) out.responseConstraint = options.responseConstraint;
    if (options.omitResponseConstraintInput) out.omitResponseConstraintInput = true;
    return out;
  }

  async prompt(input, options = {}) {
    const value = await this.#call('prompt', [input, PageModelSession.#promptOptions(options)], options);
    return this.#update(value).text;
  }

  /** A ReadableStream of the reply's pieces (deltas, as current Chrome streams). */
  promptStreaming(input, options = {}) {
    if (this.destroyed) throw destroyedError();
    const signal = this.#signal(options);
    if (signal.aborted) throw signal.reason ?? abortError();
    const cancel = new AbortController();
    const both = AbortSignal.any([signal, cancel.signal]);
    return new ReadableStream({
      start: (controller) => {
        this.#engine.call('prompt', [this.sessionId, input, { ...PageModelSession.#promptOptions(options), stream: true }],
          { signal: both, onEvent: (event) => { if (event.event === 'chunk') controller.enqueue(event.text); } })
          .then((value) => { this.#update(value); controller.close(); },
                (error) => { if (!cancel.signal.aborted) controller.error(error); });
      },
      cancel: () => cancel.abort(),
    });
  }

  async append(input, options = {}) {
    this.#update(await this.#call('append', [input], options));
  }

  measureContextUsage(input, options = {}) {
    return this.#call('measure', [input, PageModelSession.#promptOptions(options)], options);
  }

  async clone(options = {}) {
    const described = await this.#call('clone', [], options);
    return new PageModelSession(this.#engine, described);
  }

  destroy() {
    if (this.destroyed) return;
    this.destroyed = true;
    this.destroyedController.abort(destroyedError());
    this.#engine.sessions.delete(this.sessionId);
    this.#engine.call('destroy', [this.sessionId]).catch(() => {});
  }
}
