// The boot snapshot's builder: a module worker the agent worker starts once it is ready
// and found no usable snapshot. It makes the interpreter a boot makes (Pyodide, the
// wheels, the tool modules, the entry module imported: see py_agent/browser/snapshot.py),
// takes a memory snapshot of it and stores it (snapshot_store.js).
//
// Message in: {manifest, parts, entryModule, tools}. Message out: {state: 'saved', bytes,
// ms, imported, skipped} or {state: 'failed', reason}. Run apart from the agent so that
// the agent's live JavaScript objects (which a snapshot cannot hold) never meet it.
import {fetchBytes, loadRuntime, unpackWheels, wheelURLs} from './python_runtime.js';
import {SnapshotStore} from './snapshot_store.js';

const TOOL_DIR = '/home/pyodide/tool_modules';   // as py_agent/browser/tool_loading.py

async function build({manifest, parts, entryModule, tools}) {
  const started = performance.now();
  const wheels = Promise.all(wheelURLs(manifest).map(fetchBytes));
  wheels.catch(() => {});
  const archives = Promise.all((manifest.tool_modules || [])
    .filter((m) => m.archive && !m.error)
    .map((m) => fetchBytes(new URL(m.archive, self.location.origin).href)));
  archives.catch(() => {});
  const {pyodide, sitePackages} = await loadRuntime(manifest, {makeSnapshot: true,
                                                              stdout: () => {}});
  unpackWheels(pyodide, sitePackages, await wheels);
  for (const bytes of await archives) {
    pyodide.unpackArchive(bytes, 'zip', {extractDir: TOOL_DIR});
  }
  const preload = pyodide.pyimport('py_agent.browser.snapshot').preload;
  const report = JSON.parse(preload(entryModule, JSON.stringify(manifest), tools || ''));
  preload.destroy();
  const bytes = pyodide.makeMemorySnapshot();
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
