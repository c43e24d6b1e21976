// The agent worker's side of the boot snapshot: restore the stored one, or say why not
// and have one made in the background once the agent is ready (snapshot_worker.js).
import {loadRuntime} from './python_runtime.js';
import {SnapshotStore, snapshotParts} from './snapshot_store.js';

// The build (a second Pyodide, ~3 s of CPU) waits until the page has asked nothing for
// this long, so that it does not slow the first turns down.
const BUILD_IDLE_MS = 3000;
const BUILD_TIMEOUT_MS = 180_000;

class CorruptSnapshot extends Error {}

export class BootSnapshot {
  constructor(manifest, {enabled = true, tools = '', entry = ''} = {}) {
    this.manifest = manifest;
    this.enabled = enabled;
    this.tools = tools;
    this.entryModule = entry.split(':')[0];
    this.parts = snapshotParts(manifest, {tools, entry});
    this.store = new SnapshotStore(this.parts);
    this.state = enabled ? 'missing' : 'off';
    this.reason = enabled ? '' : 'turned off by the page';
  }

  /** {pyodide, sitePackages} restored from the stored snapshot, or null (see report()). */
  async restore() {
    if (!this.enabled) return null;
    const found = await this.store.read().catch((error) => (
      {state: 'corrupt', reason: `it could not be read: ${error?.message || error}`}));
    if (!found.bytes) {
      ({state: this.state, reason: this.reason} = found);
      return null;
    }
    const damage = found.verified.then((problem) => {
      if (problem) throw new CorruptSnapshot(problem);
    });
    damage.catch(() => {});   // awaited by loadRuntime
    try {
      const runtime = await loadRuntime(this.manifest, {snapshot: found.bytes,
                                                        verified: damage});
      const module = JSON.stringify(this.entryModule);
      if (!runtime.pyodide.runPython(`import sys; ${module} in sys.modules`)) {
        throw new Error(`the restored interpreter has not imported ${this.entryModule}`);
      }
      this.state = 'restored';
      this.reason = `${found.bytes.length} bytes, read in ${found.ms} ms`;
      return runtime;
    } catch (error) {
      this.state = error instanceof CorruptSnapshot ? 'corrupt' : 'rejected';
      this.reason = String(error?.message || error).trim().split('\n')[0];
      await this.store.discard();
      return null;
    }
  }

  /** The fields the 'pyodide-loaded' boot phase carries. */
  report() {
    return {snapshot: this.state, snapshot_reason: this.reason};
  }

  /** Once the agent is ready: without a restored snapshot, make one in the background;
   *  post({type: 'snapshot', state: 'saved' | 'failed', ...}) says how it went.
   *  lastActivity() is when the page last sent a message (performance.now()). */
  buildIfNeeded(post, lastActivity = () => 0) {
    if (!this.enabled || this.state === 'restored') return;
    const waitForIdle = () => {
      const idle = performance.now() - lastActivity();
      if (idle >= BUILD_IDLE_MS) this._build(post);
      else setTimeout(waitForIdle, BUILD_IDLE_MS - idle);
    };
    setTimeout(waitForIdle, BUILD_IDLE_MS);
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
                         entryModule: this.entryModule, tools: this.tools});
  }
}
