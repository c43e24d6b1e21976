/**
 * The page's in-page models: the GGUF files the site offers (serve.py --gguf, listed in
 * the manifest as `page_models: [{url, name, size, sha256}]`), the one that answers, and
 * the ones kept in this browser. It holds the JavaScript objects (PageModel, ModelStore)
 * for the page's Python UI (web/ui/page_models.py), which calls it with plain values and
 * gets promises back, and gives the model in use to the LLM host under the name
 * 'page-model', where the agent's worker reaches it (py_agent/browser/page_model.py).
 *
 *   const models = new PageModels(host);
 *   await models.offered()           // [{url, name, size, sha256, kept, packaged}]
 *   await models.load(url, (p) => show(p.loaded, p.total))   // download once, check, load
 *   models.cancel()                  // stops a load in flight (AbortError)
 *   models.activate(url)             // the LLM host serves it as 'page-model' from now on
 *   models.keepOnly(url)             // unload every other model (null: all; frees memory)
 *   await models.delete(url)         // forget a kept file
 *
 * A switch from one in-page model to another loads the new one beside the old, which
 * keeps its sessions until the worker has switched (then keepOnly(new)); a failed load
 * unloads only the new one.
 */

import { MANIFEST_URL, PageModel, SITE_ROOT } from './language_model.js';
import { ModelStore } from './model_store.js';

export const API_NAME = 'page-model';

export class PageModels {
  constructor(host, { manifestURL = MANIFEST_URL } = {}) {
    this.host = host;
    this.manifestURL = manifestURL;
    this.models = new Map();   // absolute url -> PageModel (the one in use, and one loading)
    this.current = null;       // absolute url of the one the host serves
    this._manifest = null;
    this._store = null;
    this._cancel = null;
  }

  /** A manifest URL made absolute (models are identified by it, and kept under it). */
  _key(url) { return new URL(url, SITE_ROOT).href; }

  manifest() {
    this._manifest ??= fetch(this.manifestURL).then((response) => {
      if (!response.ok) throw new Error(`cannot read ${this.manifestURL}: HTTP ${response.status}`);
      return response.json();
    });
    return this._manifest;
  }

  async store() {
    if (!this._store) {
      const manifest = await this.manifest();
      const sha256 = manifest.page_model?.sha256;
      this._store = new ModelStore({ sha256URL: sha256 && new URL(sha256, SITE_ROOT).href });
    }
    return this._store;
  }

  async _source(url) {
    const key = this._key(url);
    const source = ((await this.manifest()).page_models ?? []).find((s) => this._key(s.url) === key);
    if (!source) {
      const error = new Error(`This page does not offer the model ${url}.`);
      error.name = 'NotFoundError';
      throw error;
    }
    return source;
  }

  /** The offered models, each with `kept` (its file is in this browser's storage) and
   *  `packaged` (it is a file of the extension itself: nothing to download or delete). */
  async offered() {
    const sources = (await this.manifest()).page_models ?? [];
    const store = await this.store();
    let kept = [];
    try {
      kept = (await store.list()).map((record) => record.url);
    } catch { /* storage unusable: nothing is kept */ }
    return sources.map((source) => ({
      ...source, kept: kept.includes(this._key(source.url)), packaged: store.packaged(this._key(source.url)),
    }));
  }

  /**
   * Download (once) and load the model at `url`; onProgress({loaded, total}) while it
   * downloads. Resolves to the engine's info ({name, contextWindow, threads, ...}).
   */
  async load(url, onProgress = null) {
    const key = this._key(url);
    const source = await this._source(url);
    let model = this.models.get(key);
    if (!model) {
      model = await PageModel.fromManifest({ source: { ...source, url: key }, manifestURL: this.manifestURL });
      this.models.set(key, model);
    }
    const cancel = new AbortController();
    this._cancel = cancel;
    try {
      return await model.load({
        signal: cancel.signal,
        onProgress: (progress) => { try { onProgress?.(progress); } catch (e) { console.error(e); } },
      });
    } catch (error) {
      if (key !== this.current) this.discard(url);   // the one in use stays
      throw error;
    } finally {
      if (this._cancel === cancel) this._cancel = null;
    }
  }

  /** Stop the load in flight, if any. */
  cancel() {
    this._cancel?.abort(new DOMException('Cancelled: the model was not loaded, and a download cut ' +
                                         'short keeps nothing.', 'AbortError'));
  }

  /** The LLM host serves the loaded model at `url` as 'page-model' from now on (sessions
   *  of the one before keep working until it is unloaded). */
  activate(url) {
    const key = this._key(url);
    const model = this.models.get(key);
    if (!model) throw new Error(`The model ${url} is not loaded.`);
    this.current = key;
    this.host.setApi(API_NAME, model);
    return model.info;
  }

  /** Unload every model but the one at `url` (null: every one, and the host serves none). */
  keepOnly(url) {
    const keep = url == null ? null : this._key(url);
    for (const key of [...this.models.keys()]) {
      if (key !== keep) this.discard(key, true);
    }
    if (keep == null || this.current !== keep) {
      this.current = null;
      this.host.setApi(API_NAME, null);
    }
  }

  /** Unload one model (not the one the host serves, unless `evenCurrent`). */
  discard(url, evenCurrent = false) {
    const key = this._key(url);
    if (key === this.current && !evenCurrent) return;
    this.models.get(key)?.terminate();
    this.models.delete(key);
  }

  /** The loaded model's info, or null. */
  info(url) { return this.models.get(this._key(url))?.info ?? null; }

  /** Forget the kept file of `url` (true if there was one). */
  async delete(url) { return (await this.store()).delete(this._key(url)); }

  /** {usage, quota} of this site's storage in bytes (null when the browser will not say). */
  async estimate() { return (await this.store()).estimate(); }
}
