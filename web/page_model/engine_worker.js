/**
 * The in-page model's worker: downloads and keeps the GGUF (model_store.js), loads it
 * into llama.cpp (engine.js) and keeps the Prompt API sessions (chat_sessions.js). The
 * page talks to it through language_model.js; nothing here touches the DOM.
 *
 * Started as a module worker: new Worker('/page_model/engine_worker.js?urls=<json>',
 * {type: 'module'}) where urls = {wllama, wasm, worker, sha256} (the vendored files,
 * from /vendor/manifest.json's page_model entry; worker: llama.cpp's worker as a file,
 * llama_worker_file.js).
 *
 * Protocol (page <-> worker, postMessage; docs/protocols.md has every channel's messages):
 *   call    {type: 'call', id, method, args: [...], requestId?}
 *   result  {type: 'result', id, ok: true, value} | {type: 'result', id, ok: false, error: {name, message, requested?, quota?}}
 *   abort   {type: 'abort', requestId}            aborts the calls tagged requestId (a download too)
 *   events  {type: 'event', event: 'chunk', requestId, text}          a streamed piece of a reply
 *           {type: 'event', event: 'downloadprogress', requestId, loaded, total}
 *           {type: 'event', event: 'contextoverflow', sessionId}
 *
 *   support()                          -> {supported, reason}  (llama.cpp's build needs JSPI and Memory64)
 *   kept(source)                       -> the stored record of source.url, or null
 *   load(source, {contextWindow, threads})  -> engine info (downloads first when not kept)
 *   info()                             -> engine info, or null before load
 *   create(options) / clone(sessionId) -> {sessionId, contextUsage, contextWindow}
 *   prompt(sessionId, input, options)  -> {text, contextUsage, contextWindow, overflowed}
 *   append(sessionId, input)           -> {contextUsage, contextWindow, overflowed}
 *   measure(sessionId, input, options) -> tokens, or null
 *   destroy(sessionId)                 -> true if it existed; its calls in flight fail with InvalidStateError
 *   unload()                           -> unloads the model (sessions are gone)
 */

import { ChatSessions } from './chat_sessions.js';
import { Engine, namedError } from './engine.js';
import { ModelStore } from './model_store.js';

const urls = JSON.parse(new URL(self.location.href).searchParams.get('urls') || '{}');
const store = new ModelStore({ sha256URL: urls.sha256 });
const engine = new Engine(urls);
const inflight = new Map();   // requestId -> Set<{controller, sessionId}>
let sessions = null;
let loadedSource = null;
let loading = null;

const post = (message) => self.postMessage(message);

function toPlainError(error) {
  const out = { name: error?.name || 'Error', message: String(error?.message ?? error) };
  if (error?.requested != null) out.requested = error.requested;
  if (error?.quota != null) out.quota = error.quota;
  return out;
}

function track(requestId, sessionId = null) {
  const entry = { controller: new AbortController(), sessionId };
  if (!inflight.has(requestId)) inflight.set(requestId, new Set());
  inflight.get(requestId).add(entry);
  const done = () => {
    const set = inflight.get(requestId);
    set?.delete(entry);
    if (set && !set.size) inflight.delete(requestId);
  };
  return { signal: entry.controller.signal, done };
}

function requireSessions() {
  if (!sessions) throw namedError('InvalidStateError', 'No model is loaded.');
  return sessions;
}

function supportProblem() {
  if (!WebAssembly.Suspending) return 'this browser lacks WebAssembly JSPI, which the engine build needs';
  try {
    new WebAssembly.Memory({ address: 'i64', initial: 1n });
  } catch {
    return 'this browser lacks WebAssembly Memory64, which the engine build needs';
  }
  return null;
}

// WebAssembly's 64-bit memory holds at most 16 GiB in Chromium; a tab gets a share of the
// device's memory (navigator.deviceMemory, in GB, rounded down), and the model's weights
// need room beside the KV cache, llama.cpp's buffers and the page itself.
const WASM_MEMORY_LIMIT = 16 * 2 ** 30;
const DEVICE_SHARE = 0.6;

function gigabytes(bytes) { return `${(bytes / 1e9).toFixed(1)} GB`; }

/** QuotaExceededError when a model of `size` bytes cannot fit this browser's memory;
 *  `kept`: it was downloaded already (its size was not known before). */
function checkMemory(size, kept = false) {
  if (!size) return;
  const device = Number(self.navigator?.deviceMemory) || null;
  const room = Math.min(WASM_MEMORY_LIMIT, device ? device * 1e9 * DEVICE_SHARE : Infinity);
  if (size <= room) return;
  const why = device && device * 1e9 * DEVICE_SHARE < WASM_MEMORY_LIMIT
    ? `this device reports about ${device} GB of memory, and a tab can use only part of it`
    : 'the engine can address at most 16 GB';
  throw namedError('QuotaExceededError', `This model (${gigabytes(size)}) is too large for this ` +
                   `browser's memory: ${why}. Choose a smaller model; ` +
                   (kept ? 'the file stays kept in this browser until you delete it.' : 'nothing was downloaded.'),
                   { requested: size, quota: Math.floor(room) });
}

async function load(source, options, requestId) {
  const same = loadedSource && loadedSource.url === new URL(source.url, self.location.href).href;
  if (same && engine.info) return engine.info;
  checkMemory(source.size);
  if (loading) await loading.catch(() => {});
  const run = (async () => {
    if (engine.info) {
      sessions?.destroyAll();
      await engine.unload();
      sessions = null;
      loadedSource = null;
    }
    const { signal, done } = track(requestId);
    try {
      const { blob } = await store.fetchModel(source, {
        signal,
        onProgress: ({ loaded, total }) => post({ type: 'event', event: 'downloadprogress', requestId, loaded, total }),
      });
      if (signal.aborted) throw namedError('AbortError', 'Loading the model was cancelled.');
      checkMemory(blob.size, true);   // its size may not have been known before the download
      let info;
      try {
        info = await engine.load(blob, options);
      } catch (error) {
        // A file llama.cpp cannot use (its format, its chat template) is of no use kept.
        if (error?.name !== 'NotSupportedError') throw error;
        await store.delete(source.url).catch(() => {});
        throw namedError(error.name, `${error.message} The file was not kept.`);
      }
      sessions = new ChatSessions(engine, (sessionId) => post({ type: 'event', event: 'contextoverflow', sessionId }));
      loadedSource = { ...source, url: new URL(source.url, self.location.href).href };
      return { ...info, source: loadedSource };
    } finally {
      done();
    }
  })();
  loading = run;
  try {
    return await run;
  } finally {
    if (loading === run) loading = null;
  }
}

/** A call on a session: tracked for abort and for destroy(); errors after destroy say so. */
async function sessionCall(sessionId, requestId, fn) {
  const all = requireSessions();
  const { signal, done } = track(requestId, sessionId);
  try {
    return await fn(all, signal);
  } catch (error) {
    if (!all.sessions.has(sessionId)) {
      throw namedError('InvalidStateError', 'The model execution session has been destroyed.');
    }
    throw error;
  } finally {
    done();
  }
}

// Each method: (call, ...args) where call = {requestId}.
const METHODS = {
  support() {
    const reason = supportProblem();
    return { supported: reason == null, reason };
  },
  kept(_call, source) { return store.record(source.url); },
  load({ requestId }, source, options = {}) { return load(source, options, requestId); },
  info() { return engine.info ? { ...engine.info, source: loadedSource } : null; },
  async create({ requestId }, options = {}) {
    const { signal, done } = track(requestId);
    try {
      return await requireSessions().create(options, signal);
    } finally {
      done();
    }
  },
  clone(_call, sessionId) { return requireSessions().clone(sessionId); },
  prompt({ requestId }, sessionId, input, options = {}) {
    return sessionCall(sessionId, requestId, (all, signal) => all.prompt(sessionId, input, options, {
      signal,
      onText: options.stream ? (text) => post({ type: 'event', event: 'chunk', requestId, text }) : null,
    }));
  },
  append({ requestId }, sessionId, input) {
    return sessionCall(sessionId, requestId, (all, signal) => all.append(sessionId, input, { signal }));
  },
  measure(_call, sessionId, input, options = {}) { return requireSessions().measure(sessionId, input, options); },
  destroy(_call, sessionId) {
    const existed = sessions?.destroy(sessionId) ?? false;
    for (const set of inflight.values()) {
      for (const entry of set) {
        if (entry.sessionId === sessionId) entry.controller.abort();
      }
    }
    return existed;
  },
  async unload() {
    sessions?.destroyAll();
    for (const set of inflight.values()) for (const entry of set) entry.controller.abort();
    sessions = null;
    loadedSource = null;
    await engine.unload();
    return true;
  },
};

self.addEventListener('message', async (event) => {
  const message = event.data;
  if (message?.type === 'abort') {
    for (const entry of inflight.get(message.requestId) ?? []) entry.controller.abort();
    return;
  }
  if (message?.type !== 'call') return;
  const { id, method, args = [] } = message;
  const requestId = message.requestId ?? id;
  try {
    const fn = METHODS[method];
    if (!fn) throw new TypeError(`unknown method: ${method}`);
    const value = await fn({ requestId }, ...args);
    post({ type: 'result', id, ok: true, value: value ?? null });
  } catch (error) {
    post({ type: 'result', id, ok: false, error: toPlainError(error) });
  }
});
