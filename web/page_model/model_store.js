/**
 * Download a GGUF model once and keep it in the browser, with progress and cancel.
 *
 * Kept in Cache Storage, not OPFS: a cache.put() of a streamed body commits only when
 * the whole stream has arrived, so an interrupted, cancelled or refused download never
 * leaves a half-written file that looks complete; the body read back is a disk-backed
 * Blob that llama.cpp reads in place; and Cache Storage works the same in a page and in
 * a worker on every engine. (OPFS could resume a download by appending, but needs our
 * own bookkeeping of partial files; a download here restarts instead.)
 *
 * A model among the site's own files where Cache Storage cannot hold it (Cache Storage
 * keeps http(s) URLs only, and an extension's files are chrome-extension:// ones) is
 * packaged: it is on disk already, inside the extension, so it is read where it is,
 * never copied, and cannot be deleted.
 *
 * A model counts as kept only when its record is there too: the record (url, name, size,
 * SHA-256, when) is written after the body has been checked, so a tab closed between
 * the two leaves a body without a record, which is deleted on the next look.
 *
 * Checks: the GGUF magic in the first bytes (a 404 page or any other file is refused
 * before it is stored), the size (the expected one when known, else Content-Length),
 * and the SHA-256 when known. Errors have Prompt-API-like names and messages for the user:
 * NetworkError (HTTP error, unreachable, CORS refused, interrupted), DataError (not GGUF,
 * wrong size, wrong checksum), QuotaExceededError (storage full), AbortError (cancelled).
 *
 *   const store = new ModelStore({sha256URL: '/vendor/hash-wasm-4.13.0/index.esm.min.js'});
 *   const {blob, record} = await store.download({url, size, sha256, name},
 *                                               {signal, onProgress: ({loaded, total}) => ...});
 *   await store.get(url)      // the kept Blob, or null
 *   await store.list()        // records of the kept models
 *   await store.delete(url)   // true if something was deleted
 *   store.packaged(url)       // true for a file of the extension itself (read in place)
 */

import { checkMagic } from './gguf_header.js';

export const DEFAULT_CACHE = 'py-agent-models';
const PROGRESS_EVERY_MS = 100;

function storeError(name, message, extra = {}) {
  const error = new Error(message);
  error.name = name;
  Object.assign(error, extra);
  return error;
}

function megabytes(bytes) {
  return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
}

export class ModelStore {
  /**
   * @param {object} options cacheName (default 'py-agent-models'); sha256URL, the URL of
   *   hash-wasm's ES module (its streaming SHA-256; WebCrypto can only hash a whole buffer)
   */
  constructor({ cacheName = DEFAULT_CACHE, sha256URL } = {}) {
    this.cacheName = cacheName;
    this.sha256URL = sha256URL;
    this._inflight = new Map();   // url -> download promise
  }

  _key(url) { return new URL(url, globalThis.location?.href).href; }
  _bodies() { return caches.open(this.cacheName); }
  _records() { return caches.open(`${this.cacheName}-records`); }

  /** True when `url` is one of the site's own files that Cache Storage cannot hold (an
   *  extension's): the model is read in place. */
  packaged(url) {
    const key = new URL(this._key(url));
    return !/^https?:$/.test(key.protocol) && key.origin === globalThis.location?.origin;
  }

  /** A packaged model's Blob, checked against the size the manifest gives. */
  async _readPackaged(source) {
    const url = this._key(source.url);
    let blob;
    try {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      blob = await response.blob();
    } catch (error) {
      throw storeError('NotFoundError', `The model ${url} is missing from this extension (${error.message}); ` +
                       'build the extension again.');
    }
    if (source.size && blob.size !== source.size) {
      throw storeError('DataError', `The model ${url} is ${megabytes(blob.size)}, not the expected ` +
                       `${megabytes(source.size)}: build the extension again.`);
    }
    return blob;
  }

  /** The record of a kept model, or null (and an unfinished leftover is deleted). */
  async record(url) {
    const key = this._key(url);
    if (this.packaged(key)) return { url: key, name: key.split('/').pop(), size: null, sha256: null, packaged: true };
    const [bodies, records] = await Promise.all([this._bodies(), this._records()]);
    const [body, record] = await Promise.all([bodies.match(key), records.match(key)]);
    if (body && record) {
      const data = await record.json();
      if (Number(body.headers.get('X-Model-Size')) === data.size) return data;
    }
    if (body || record) await this.delete(key);
    return null;
  }

  /** The kept model's Blob (read from disk as needed), or null. */
  async get(url) {
    if (this.packaged(url)) return this._readPackaged({ url });
    const record = await this.record(url);
    if (!record) return null;
    const body = await (await this._bodies()).match(this._key(url));
    const blob = body ? await body.blob() : null;
    return blob && blob.size === record.size ? blob : null;
  }

  /** Records of every kept model. */
  async list() {
    const records = await this._records();
    const found = [];
    for (const request of await records.keys()) {
      const record = await this.record(request.url);
      if (record) found.push(record);
    }
    return found;
  }

  /** Delete a kept (or half-kept) model; true if anything was there. */
  async delete(url) {
    const key = this._key(url);
    if (this.packaged(key)) return false;
    const [bodies, records] = await Promise.all([this._bodies(), this._records()]);
    const [a, b] = await Promise.all([bodies.delete(key), records.delete(key)]);
    return a || b;
  }

  /** {usage, quota} of this origin's storage, in bytes (null when the browser will not say). */
  async estimate() {
    try {
      const { usage = null, quota = null } = await navigator.storage.estimate();
      return { usage, quota };
    } catch {
      return { usage: null, quota: null };
    }
  }

  /** Throw QuotaExceededError when `bytes` more would not fit this origin's storage. */
  async _checkRoom(bytes) {
    const { usage, quota } = await this.estimate();
    if (quota != null && usage != null && bytes > quota - usage) {
      throw storeError('QuotaExceededError', `Not enough storage for this model: it needs ` +
                       `${megabytes(bytes)}, and this browser allows this site ${megabytes(quota - usage)} ` +
                       'more. Delete a kept model or free some disk space; nothing was kept.',
                       { requested: bytes, quota: quota - usage });
    }
  }

  /**
   * The kept model, or download and keep it. source: {url, size?, sha256?, name?}.
   * onProgress({loaded, total}) during a download; signal cancels it.
   */
  async fetchModel(source, { signal = null, onProgress = null } = {}) {
    if (this.packaged(source.url)) {
      return { blob: await this._readPackaged(source), record: await this.record(source.url), downloaded: false };
    }
    const blob = await this.get(source.url);
    if (blob) {
      const record = await this.record(source.url);
      if ((source.sha256 && record.sha256 !== source.sha256.toLowerCase()) ||
          (source.size && record.size !== source.size)) {
        await this.delete(source.url);   // kept from another version of the file
      } else {
        return { blob, record, downloaded: false };
      }
    }
    return { ...(await this.download(source, { signal, onProgress })), downloaded: true };
  }

  /** Download and keep `source` (one download per URL at a time). */
  download(source, options = {}) {
    const key = this._key(source.url);
    if (!this._inflight.has(key)) {
      const run = this._download({ ...source, url: key }, options)
        .finally(() => this._inflight.delete(key));
      this._inflight.set(key, run);
    }
    return this._inflight.get(key);
  }

  async _download(source, { signal, onProgress }) {
    const { url } = source;
    const expectedHash = source.sha256 ? source.sha256.toLowerCase() : null;
    if (source.size) await this._checkRoom(source.size);
    let response;
    try {
      response = await fetch(url, { signal, cache: 'no-store', credentials: 'same-origin' });
    } catch (error) {
      if (signal?.aborted) throw storeError('AbortError', 'The download was cancelled; nothing was kept.');
      throw storeError('NetworkError', `The model at ${url} could not be reached: the network failed, or ` +
                       'its server does not let this page read it (CORS).');
    }
    if (!response.ok) {
      throw storeError('NetworkError', `The model could not be downloaded: ${url} answered ` +
                       `${response.status} ${response.statusText || ''}`.trim() + '.');
    }
    const announced = Number(response.headers.get('Content-Length')) || null;
    if (source.size && announced && announced !== source.size && !response.headers.get('Content-Encoding')) {
      await response.body?.cancel();
      throw storeError('DataError', `The file at ${url} is ${megabytes(announced)}, not the expected ` +
                       `${megabytes(source.size)}: it is another file; nothing was kept.`);
    }
    const total = source.size ?? announced;
    if (!source.size && total) {
      try {
        await this._checkRoom(total);
      } catch (error) {
        await response.body?.cancel();
        throw error;
      }
    }
    navigator.storage?.persist?.().catch(() => {});   // ask not to be evicted; fine if refused

    const { createSHA256 } = await import(this.sha256URL);
    const hasher = await createSHA256();
    hasher.init();
    let loaded = 0;
    let head = new Uint8Array(0);
    let lastReport = 0;
    let refusal = null;   // our own reason for stopping the stream, if any
    const refuse = (controller, problem) => {
      refusal = storeError('DataError', `The file at ${url} cannot be used: ${problem}; nothing was kept.`);
      controller.error(refusal);
    };
    const report = (force = false) => {
      const now = Date.now();
      if (onProgress && (force || now - lastReport >= PROGRESS_EVERY_MS)) {
        lastReport = now;
        try { onProgress({ loaded, total }); } catch (error) { console.error(error); }
      }
    };
    const check = new TransformStream({
      transform(chunk, controller) {
        if (head.length < 8) {
          head = concat(head, chunk.subarray(0, 8 - head.length));
          if (head.length >= 8) {
            const problem = checkMagic(head);
            if (problem) { refuse(controller, problem); return; }
          }
        }
        hasher.update(chunk);
        loaded += chunk.length;
        report();
        controller.enqueue(chunk);
      },
      flush(controller) {
        if (head.length < 8) refuse(controller, checkMagic(head));
      },
    });
    report(true);
    const bodies = await this._bodies();
    let failure = null;
    const piped = response.body.pipeThrough(check, signal ? { signal } : {});
    try {
      await bodies.put(url, new Response(piped, {
        headers: { 'Content-Type': 'application/octet-stream', 'X-Model-Size': String(total ?? '') },
      }));
    } catch (error) {
      failure = refusal ?? error;
    }
    if (!failure && total && loaded !== total) {
      failure = storeError('NetworkError', `The download of ${url} ended after ${megabytes(loaded)} of ` +
                           `${megabytes(total)}; nothing was kept. Try again.`);
    }
    let sha256 = null;
    if (!failure) {
      sha256 = hasher.digest('hex');
      if (expectedHash && sha256 !== expectedHash) {
        failure = storeError('DataError', `The file at ${url} does not have the expected SHA-256 ` +
                             `(${expectedHash.slice(0, 12)}…, it has ${sha256.slice(0, 12)}…); nothing was kept.`);
      }
    }
    if (failure) {
      await this.delete(url).catch(() => {});
      throw downloadFailure(failure, signal, { url, loaded, total });
    }
    if (!total) {   // the size was unknown: record what arrived, so the record matches the body
      await bodies.put(url, new Response(await (await bodies.match(url)).blob(), {
        headers: { 'Content-Type': 'application/octet-stream', 'X-Model-Size': String(loaded) },
      }));
    }
    const record = { url, name: source.name ?? url.split('/').pop(), size: loaded, sha256, storedAt: Date.now() };
    await (await this._records()).put(url, new Response(JSON.stringify(record), {
      headers: { 'Content-Type': 'application/json' },
    }));
    report(true);
    const blob = await (await bodies.match(url)).blob();
    return { blob, record };
  }
}

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** The error to show for a failed download (our own, a quota refusal, a cancel, a cut). */
function downloadFailure(error, signal, { url, loaded, total }) {
  if (signal?.aborted) return storeError('AbortError', 'The download was cancelled; nothing was kept.');
  if (['DataError', 'NetworkError', 'AbortError'].includes(error?.name) && error.message.includes('nothing was kept')) {
    return error;
  }
  if (error?.name === 'QuotaExceededError') {
    return storeError('QuotaExceededError', `Not enough storage to keep this model (${megabytes(total ?? loaded)}). ` +
                      'Delete a kept model or free some disk space; nothing was kept.');
  }
  const got = total ? `${megabytes(loaded)} of ${megabytes(total)}` : megabytes(loaded);
  return storeError('NetworkError', `The download of ${url} was interrupted after ${got}; nothing was kept. ` +
                    'Try again.');
}
