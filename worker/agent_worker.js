// The agent worker's bootstrap: a module Web Worker that starts Pyodide, installs the
// py_agent wheel and hands control to a Python entry point.
//
// Messages to the page:
//   {type: 'boot', phase, ms, took, at}   phase is 'pyodide-loaded', 'packages-installed',
//                                     'agent-imported', then 'ready' (sent when the entry
//                                     calls boot.ready()); ms is the time since this
//                                     script started, took the time the phase itself took,
//                                     at the moment it was sent in ms since the Unix epoch
//                                     (performance.timeOrigin-based, so comparable with
//                                     the page's clock: bench/boot.py uses it).
//   {type: 'error', where, message, traceback}   any JS or Python exception, during boot
//                                     or later. `where` says which phase or channel.
// Anything else is posted by the Python entry point itself (docs/protocols.md lists it all).
//
// Query parameters of this script's URL (the page passes them through):
//   entry=module:function   run another entry point (only modules under py_agent); tests
//                           use it to make boot fail on purpose.
//   install=micropip        install the wheel with micropip instead of importing it as
//                           a zip (kept for measurements; see bench/boot.py).
//   snapshot=off            boot without the memory snapshot (and make none); the tool
//                           worker inherits it.
//   embedder=off            no sentence embedder (py_agent/browser/embedder.py): the
//                           agent ranks tools and recalls turns by their words only.
//
// Boot snapshot (boot_snapshot.js): a boot restores the stored memory snapshot of an
// interpreter that has imported py_agent and the tool modules; the 'pyodide-loaded'
// phase says {snapshot: 'restored' | 'missing' | 'stale' | 'corrupt' | 'rejected' |
// 'off', snapshot_reason}. Without one, once ready, the worker has one made in the
// background and posts {type: 'snapshot', state: 'saved' | 'failed', ...}.
//
// The Python entry point is called as `await main(boot)` once py_agent imports. `boot`
// (see makeBootContext) has: post(msg) to the page; onMessage(fn) to receive page
// messages (those sent earlier are queued and replayed); ready(details) to say it
// accepts messages (this sends the 'ready' phase); openStore() (the IdbStore of
// idb_store.js, opened while Pyodide loads); importModule(url) (JS import());
// fetchBytes(url) (a Uint8Array; the tool modules' archives are already on their way);
// reportError(where, error); manifest; params. An exception it raises, in a message
// handler or in an asyncio task, reaches the page as {type: 'error'}.

import {BootSnapshot} from './boot_snapshot.js';
import {addToSysPath, fetchBytes, installWheels, loadRuntime, startRuntimeDownloads, wheelURLs}
  from './python_runtime.js';
import {siteURL} from './site.js';

// The Python entry point, "module:function".
const ENTRY = 'py_agent.browser.main:main';
// The tool worker's (py_agent/browser/tool_worker.py): this script again, which the
// agent's entry starts once it is ready (a second boot beside this one took a third of
// the two cores of a small machine, and "ready" needs no tool worker).
const TOOL_WORKER_ENTRY = 'py_agent.browser.tool_worker:main';
// The Python half of this bootstrap: runs the entry point, reports exceptions that
// escape asyncio tasks, and says what a boot from the snapshot imported that the
// snapshot did not hold (the snapshot holds it too).
const BOOTSTRAP = 'py_agent.browser.bootstrap';

const started = performance.now();
const params = new URL(self.location.href).searchParams;
let lastMark = started;
let phase = 'start';         // what is running now, for error reports
let pyodide = null;

const post = (message) => self.postMessage(message);

function mark(name, extra = {}) {
  const now = performance.now();
  post({type: 'boot', phase: name, ms: Math.round(now - started),
        took: Math.round(now - lastMark), at: performance.timeOrigin + now, ...extra});
  lastMark = now;
}

// Turn anything thrown (a PythonError, a JS Error, a rejected non-Error) into the
// readable {message, traceback} the page shows.
function describe(error) {
  if (error && error.constructor && error.constructor.name === 'PythonError') {
    const text = String(error.message).trimEnd();
    const lines = text.split('\n');
    return {message: lines[lines.length - 1], traceback: text};
  }
  if (error instanceof Error) {
    return {message: `${error.name}: ${error.message}`, traceback: error.stack || ''};
  }
  return {message: String(error), traceback: ''};
}

function reportError(where, error) {
  const {message, traceback} = describe(error);
  console.error(`[agent worker] ${where}: ${traceback || message}`);
  post({type: 'error', where, message, traceback});
}

self.addEventListener('error', (event) => {
  event.preventDefault();
  reportError('worker', event.error ?? event.message);
});
self.addEventListener('unhandledrejection', (event) => {
  event.preventDefault();
  reportError('worker:promise', event.reason);
});

// The agent's storage: IndexedDB opens (and its one-time migration runs) while Pyodide
// loads, rather than after it; the entry point takes the store with boot.openStore().
let storeOpening = null;
function openStore() {
  storeOpening ??= import('./idb_store.js').then((module) => module.IdbStore.open());
  return storeOpening;
}

// Page messages that arrive before the entry listens are kept, then handed over.
const pending = [];
let handler = null;
let lastMessageAt = 0;        // when the page last asked something (see BootSnapshot)
self.addEventListener('message', (event) => {
  lastMessageAt = performance.now();
  if (handler) deliver(event.data); else pending.push(event.data);
});

function deliver(data) {
  try {
    const result = handler(data);
    if (result && typeof result.then === 'function') {
      result.catch((error) => reportError('message', error));
    }
  } catch (error) {
    reportError('message', error);
  }
}

// What the entry point gets: a small, stable surface over the worker. lateImports()
// lists the modules imported since a snapshot's restore that it did not hold (null
// without a restore): the 'ready' phase carries them (docs/startup.md).
function makeBootContext(manifest, prefetched, lateImports) {
  return {
    manifest,
    params: Object.fromEntries(params),
    // Post a message to the page; Python dicts become plain objects.
    post(message) {
      post(message && typeof message.toJs === 'function'
        ? message.toJs({dict_converter: Object.fromEntries, create_pyproxies: false})
        : message);
    },
    // Receive page messages: handler(data), sync or async. Replaces any earlier one.
    onMessage(callback) {
      if (handler && typeof handler.destroy === 'function') handler.destroy();
      handler = typeof callback.copy === 'function' ? callback.copy() : callback;
      while (pending.length) deliver(pending.shift());
    },
    // The entry accepts messages now: tell the page (with optional details).
    ready(details) {
      phase = 'running';
      const extra = details && typeof details.toJs === 'function'
        ? details.toJs({dict_converter: Object.fromEntries, create_pyproxies: false})
        : details;
      const imported = lateImports();
      const now = performance.now();
      post({type: 'boot', phase: 'ready', ms: Math.round(now - started),
            took: Math.round(now - lastMark), at: performance.timeOrigin + now,
            ...(imported ? {imported_after_restore: imported} : {}),
            ...(extra ? {details: extra} : {})});
      lastMark = now;
    },
    // The agent's IndexedDB store (idb_store.js's IdbStore), opening since the boot began.
    openStore,
    // import() for Python (which cannot spell it): a same-origin JS module, e.g. a bridge;
    // a relative URL is relative to this script (worker/).
    importModule(url) {
      return import(new URL(url, self.location.href).href);
    },
    // GET a file of the site as bytes (a prefetched one is taken from the prefetch).
    fetchBytes(url) {
      const early = prefetched.get(url);
      prefetched.delete(url);
      return early ?? fetchBytes(siteURL(url));
    },
    // The absolute URL of a URL of the manifest (they are relative to the site).
    siteURL,
    reportError,
  };
}

function entrySpec() {
  const requested = params.get('entry');
  if (!requested) return ENTRY;
  // Only py_agent's own modules may be picked from the URL.
  if (!/^py_agent(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$/.test(requested)) {
    throw new Error(`entry "${requested}" is not a py_agent module:function`);
  }
  return requested;
}

async function boot() {
  phase = 'options';
  const spec = entrySpec();
  const installer = params.get('install') === 'micropip' ? 'micropip' : 'zip';

  if (spec === ENTRY) openStore().catch(() => {});   // the entry awaits it and reports a failure

  phase = 'manifest';
  const manifestURL = siteURL('vendor/manifest.json');
  const response = await fetch(manifestURL);
  if (!response.ok) {
    throw new Error(`GET ${manifestURL}: HTTP ${response.status} ` +
                    '(run `python serve.py` to prepare web/vendor)');
  }
  const manifest = await response.json();
  startRuntimeDownloads(manifest);
  // py_agent's wheel, then its own pure-Python dependencies, vendored by serve.py.
  const [wheelURL, ...dependencyURLs] = wheelURLs(manifest);
  // Start downloading the wheels while Pyodide loads.
  const wheels = installer === 'zip'
    ? Promise.all([wheelURL, ...dependencyURLs].map(
      async (url) => ({url, bytes: await fetchBytes(url)}))) : null;
  wheels?.catch(() => {});  // awaited below; avoid an early unhandled rejection
  // The tool modules' archives too (small; the entry point picks which to load).
  const prefetched = new Map();
  for (const module of manifest.tool_modules ?? []) {
    if (!module.archive) continue;
    const bytes = fetchBytes(siteURL(module.archive));
    bytes.catch(() => {});  // the entry point awaits it and reports a failure
    prefetched.set(module.archive, bytes);
  }

  phase = 'load-pyodide';
  const snapshot = new BootSnapshot(manifest, {
    enabled: params.get('snapshot') !== 'off' && manifest.snapshots !== false &&
      installer === 'zip',
    tools: params.get('tools') || '', entry: spec,
    // The tool worker restores the agent's snapshot (the agent's entry imports the tool
    // worker's, and the tool modules are the same): it never makes or keeps one of its
    // own (~38 MB each), and a restarted one starts in a fraction of a second.
    ...(spec === TOOL_WORKER_ENTRY ? {snapshotOf: ENTRY, readOnly: true} : {})});
  const restored = await snapshot.restore();
  pyodide = (restored ?? await loadRuntime(manifest)).pyodide;
  mark('pyodide-loaded', snapshot.report());

  phase = 'install-packages';
  if (installer === 'zip') {
    // After a restore too: the snapshot holds memory, not files. Its sys.path names
    // these files already; a module imported later (lazily) is read from them.
    const paths = installWheels(pyodide, await wheels);
    if (!restored) addToSysPath(pyodide, paths);
  } else {
    await pyodide.loadPackage(siteURL(manifest.micropip.wheel),
                              {messageCallback: () => {}});
    const micropip = pyodide.pyimport('micropip');
    for (const url of dependencyURLs) await micropip.install(url);
    await micropip.install(wheelURL);
    micropip.destroy();
  }
  mark('packages-installed');

  phase = 'import-agent';
  pyodide.pyimport('py_agent').destroy();
  mark('agent-imported');

  phase = 'entry';
  const bootstrap = pyodide.pyimport(BOOTSTRAP);
  const lateImports = () => {
    const imported = bootstrap.imported_after_restore();
    if (imported == null) return null;
    const names = imported.toJs();
    imported.destroy();
    return names;
  };
  await bootstrap.run_entry(spec, makeBootContext(manifest, prefetched, lateImports));
  snapshot.buildIfNeeded(post, () => lastMessageAt);
}

boot().catch((error) => reportError(phase === 'running' ? 'entry' : `boot:${phase}`, error));
