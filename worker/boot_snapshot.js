// The agent worker's side of the boot snapshot: restore the one this browser stored, else
// the one the server made (the manifest's boot_snapshot: serving/boot_snapshot.py), or
// say why not and have one made in the background once the agent is ready
// (snapshot_worker.js).
import {loadRuntime} from './python_runtime.js';
import {siteURL} from './site.js';
import {SnapshotStore, describeChanges, readInto, sha256Hex, snapshotParts}
  from './snapshot_store.js';

// The build (a second Pyodide, ~3 s of CPU) waits until the page has asked nothing for
// this long, so that it does not slow the first turns down.
const BUILD_IDLE_MS = 3000;
const BUILD_TIMEOUT_MS = 180_000;

const FETCH_TIMEOUT_MS = 60_000;

class CorruptSnapshot extends Error {}
class FetchFailed extends Error {}

/**
 * The server's snapshot, arriving (see SnapshotStore.read()): {bytes, arrived, verified}.
 * `bytes` has the snapshot's size at once and fills as the download is unpacked;
 * `arrived` resolves to the milliseconds it took once the last byte is in (FetchFailed or
 * CorruptSnapshot if not); `verified` to '' when the bytes match their checksum, else to
 * what is wrong. (Fetched gzipped and unpacked here, the snapshot crosses from the
 * network to this worker as 11 MB rather than 38: about twice as fast.)
 */
function fetchServed({url, sha256, bytes: size}) {
  const started = performance.now();
  const bytes = new Uint8Array(size);
  const arrived = (async () => {
    let response;
    try {
      response = await fetch(siteURL(url), {signal: AbortSignal.timeout(FETCH_TIMEOUT_MS)});
      if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
    } catch (error) {
      throw new FetchFailed(`it could not be fetched: ${error?.message || error}`);
    }
    try {
      await readInto(response.body.pipeThrough(new DecompressionStream('gzip')), bytes);
    } catch (error) {
      if (error?.name === 'AbortError' || error?.name === 'TimeoutError') {
        throw new FetchFailed(`it could not be fetched: ${error.message}`);
      }
      throw new CorruptSnapshot(`it cannot be unpacked: ${error?.message || error}`);
    }
    return Math.round(performance.now() - started);
  })();
  const verified = arrived.then(() => sha256Hex(bytes)).then(
    (actual) => (actual === sha256 ? '' : `its ${size} bytes do not match their checksum`),
    () => '');   // a failed arrival is arrived's to report
  return {bytes, arrived, verified};
}

export class BootSnapshot {
  /** entry: what this worker runs ("module:function"); snapshotOf: the entry whose
   *  snapshot it restores (one whose imports include this entry's); readOnly: restore
   *  only, never discard, make or keep one (the tool worker: the agent's worker owns
   *  the snapshot). */
  constructor(manifest, {enabled = true, tools = '', entry = '', snapshotOf = entry,
                         readOnly = false} = {}) {
    this.manifest = manifest;
    this.enabled = enabled;
    this.readOnly = readOnly;
    this.tools = tools;
    this.entry = entry;
    this.snapshotEntry = snapshotOf;
    this.parts = snapshotParts(manifest, {tools, entry: snapshotOf});
    this.store = new SnapshotStore(this.parts);
    this.state = enabled ? 'missing' : 'off';
    this.reason = enabled ? '' : 'turned off by the page';
  }

  /** {pyodide} restored from a snapshot, or null (see report()): the one
   *  this browser stored, else the one the server made (the manifest's boot_snapshot),
   *  so that a first visit starts from one too. */
  async restore() {
    if (!this.enabled) return null;
    const found = await this.store.read().catch((error) => (
      {state: 'corrupt', reason: `it could not be read: ${error?.message || error}`}));
    if (found.bytes) {
      const runtime = await this._restoreFrom(found, 'browser');
      if (runtime) return runtime;
      if (!this.readOnly) await this.store.discard();
    } else {
      ({state: this.state, reason: this.reason} = found);
    }
    // Else the server's (a missing one of this browser's is known in a few ms).
    const served = this.manifest.boot_snapshot;
    const changes = served?.url ? describeChanges(served.parts, this.parts) : '';
    if (changes) this.reason += `; the server's is for other code (${changes})`;
    if (!served?.url || changes) return null;
    // Pyodide starts loading while the bytes still download.
    const runtime = await this._restoreFrom(fetchServed(served), 'server');
    if (runtime && found.state !== 'missing' && !this.readOnly) {
      await this.store.discard();   // stale
    }
    if (!runtime) this.reason = `the server's: ${this.reason}`;
    return runtime;
  }

  /** Restore `found` ({bytes, arrived, verified}: a snapshot still arriving, see
   *  fetchServed); null if that fails. Pyodide compiles its wasm while the bytes arrive
   *  (python_runtime.js's loadRuntime waits for them only before it copies them in). */
  async _restoreFrom(found, source) {
    const damage = found.arrived.then(() => found.verified, (error) => {
      throw error instanceof FetchFailed || error instanceof CorruptSnapshot ? error
        : new CorruptSnapshot(`it could not be read: ${error?.message || error}`);
    }).then((problem) => {
      if (problem) throw new CorruptSnapshot(problem);
    });
    damage.catch(() => {});   // awaited by loadRuntime
    try {
      const runtime = await loadRuntime(this.manifest, {snapshot: found.bytes, verified: damage});
      const module = JSON.stringify(this.entry.split(':')[0]);
      if (!runtime.pyodide.runPython(`import sys; ${module} in sys.modules`)) {
        throw new Error(`the restored interpreter has not imported ${this.entry}`);
      }
      // Every boot from this snapshot would otherwise draw the same "random" numbers.
      runtime.pyodide.runPython('import random; random.seed()');
      const ms = await found.arrived;
      const {bytes} = found;
      this.state = 'restored';
      this.source = source;
      if (source === 'server' && !this.readOnly) this.servedBytes = bytes;
      this.reason = source === 'server'
        ? `${bytes.length} bytes made by the server, fetched in ${ms} ms`
        : `${bytes.length} bytes, read in ${ms} ms`;
      return runtime;
    } catch (error) {
      this.state = error instanceof CorruptSnapshot ? 'corrupt'
        : error instanceof FetchFailed ? 'missing' : 'rejected';
      this.reason = String(error?.message || error).trim().split('\n')[0];
      return null;
    }
  }

  /** The fields the 'pyodide-loaded' boot phase carries. */
  report() {
    return {snapshot: this.state, snapshot_reason: this.reason,
            ...(this.source ? {snapshot_source: this.source} : {})};
  }

  /** Once the agent is ready: without a restored snapshot, make one in the background;
   *  post({type: 'snapshot', state: 'saved' | 'failed', ...}) says how it went.
   *  lastActivity() is when the page last sent a message (performance.now()). */
  buildIfNeeded(post, lastActivity = () => 0) {
    const keep = this.state === 'restored' && this.source === 'server' && this.servedBytes;
    if (!this.enabled || this.readOnly || (this.state === 'restored' && !keep)) return;
    const waitForIdle = () => {
      const idle = performance.now() - lastActivity();
      if (idle < BUILD_IDLE_MS) setTimeout(waitForIdle, BUILD_IDLE_MS - idle);
      else if (keep) this._keepServed(post);
      else this._build(post);
    };
    setTimeout(waitForIdle, BUILD_IDLE_MS);
  }

  /** Store the server's snapshot, as restored, where this browser keeps its own: the
   *  next visit reads it from Cache Storage rather than fetching and unpacking it again
   *  (about 0.3 s sooner), and has it even when the HTTP cache has dropped it. */
  async _keepServed(post) {
    const bytes = this.servedBytes;
    this.servedBytes = null;
    const started = performance.now();
    try {
      await this.store.write(bytes);
      post({type: 'snapshot', after: this.state, state: 'saved', source: 'server',
            bytes: bytes.length, ms: Math.round(performance.now() - started)});
    } catch (error) {
      post({type: 'snapshot', after: this.state, state: 'failed', source: 'server',
            reason: `it could not be stored: ${error?.message || error}`});
    }
  }

  _build(post) {
    const builder = new Worker(new URL('./snapshot_worker.js', import.meta.url),
                               {type: 'module', name: 'py-agent-snapshot'});
    let timer = null;
    const finish = (result) => {
      clearTimeout(timer);
      builder.terminate();
      post({type: 'snapshot', after: this.state, ...result});
    };
    timer = setTimeout(() => finish({state: 'failed', reason: 'timed out'}), BUILD_TIMEOUT_MS);
    builder.onmessage = (event) => finish(event.data);
    builder.onerror = (event) => {
      event.preventDefault();
      finish({state: 'failed', reason: event.message || 'the snapshot worker failed to load'});
    };
    builder.postMessage({manifest: this.manifest, parts: this.parts,
                         entry: this.snapshotEntry, tools: this.tools});
  }
}
