// The boot snapshot's builder in the browser: a module worker the agent worker starts
// once it is ready and found no usable snapshot. It builds the snapshot
// (snapshot_build.js) and stores it in Cache Storage (snapshot_store.js).
//
// Message in: {manifest, parts, entry, tools}. Message out: {state: 'saved', bytes,
// ms, imported, skipped} or {state: 'failed', reason}. Run apart from the agent so that
// the agent's live JavaScript objects (which a snapshot cannot hold) never meet it.
import {fetchBytes} from './python_runtime.js';
import {siteURL} from './site.js';
import {buildSnapshot} from './snapshot_build.js';
import {SnapshotStore} from './snapshot_store.js';

async function build({manifest, parts, entry, tools}) {
  const started = performance.now();
  const {bytes, ...report} = await buildSnapshot(manifest, {
    entry, tools,
    readBytes: (url) => fetchBytes(siteURL(url))});
  await new SnapshotStore(parts).write(bytes);
  return {state: 'saved', bytes: bytes.length, ms: Math.round(performance.now() - started),
          ...report};
}

self.addEventListener('message', async (event) => {
  try {
    self.postMessage(await build(event.data));
  } catch (error) {
    // A Python traceback ends with the exception; a JS error starts with it.
    const text = String(error?.message || error).trim();
    const lines = text.split('\n');
    const python = error?.constructor?.name === 'PythonError';
    console.warn(`[snapshot worker] ${error?.stack || text}`);
    self.postMessage({state: 'failed', reason: python ? lines[lines.length - 1] : lines[0]});
  }
});
