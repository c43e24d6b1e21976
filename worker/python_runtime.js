// Starting Pyodide with py_agent's wheels, fresh or from a memory snapshot: shared by the
// agent worker (agent_worker.js) and the snapshot builder (snapshot_worker.js), so that a
// snapshot is taken of exactly the interpreter a boot makes.
import {siteURL} from './site.js';

export async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Absolute URLs of the py_agent wheel and its vendored dependencies' wheels. */
export function wheelURLs(manifest) {
  return [manifest.py_agent.wheel, ...(manifest.dependencies || []).map((d) => d.wheel)]
    .map(siteURL);
}

/**
 * Start loading Pyodide's two scripts at once, before loadRuntime() needs them: a boot
 * does this while it still reads its snapshot and fetches the wheels. (Pyodide fetches
 * its wasm itself as soon as loadPyodide() starts.)
 */
export function startRuntimeDownloads(manifest) {
  for (const script of ['pyodide.mjs', 'pyodide.asm.mjs']) {
    import(`${siteURL(manifest.pyodide.indexURL)}${script}`).catch(() => {});   // imported again later
  }
}

/**
 * loadPyodide() for our worker; resolves to {pyodide}.
 *
 * snapshot: the bytes of a memory snapshot to restore (Pyodide's experimental
 * `_loadSnapshot`), which may still be arriving; verified: a promise that resolves once
 * they are all in and sound, and throws to stop the restore. Pyodide 314 reads only the
 * snapshot's length before it has made its module (loadPyodide: prepareSnapshot, then
 * createPyodideModule), so the wasm compiles and instantiates while the bytes arrive;
 * our createPyodideModule awaits `verified` before returning the module, and only then
 * does Pyodide copy them in. makeSnapshot: allow pyodide.makeMemorySnapshot() later.
 * indexURL: where Pyodide's files are (default: the manifest's, in this site; Node
 * passes a folder).
 *
 * Pyodide 314 sizes the restored heap from the `INITIAL_MEMORY` setting, which its
 * build ignores (the wasm module's memory has a fixed initial size): restoring a heap
 * bigger than that fails with "RangeError: offset is out of bounds". So the module is
 * created by our own `createPyodideModule`, which grows the memory to the snapshot's size
 * before Pyodide copies the snapshot in.
 */
export async function loadRuntime(manifest, {snapshot = null, verified = null,
                                             makeSnapshot = false, stdout, stderr,
                                             indexURL = siteURL(manifest.pyodide.indexURL)} = {}) {
  const {loadPyodide} = await import(`${indexURL}pyodide.mjs`);
  const options = {
    indexURL,
    stdout: stdout ?? ((line) => console.log(`[python] ${line}`)),
    stderr: stderr ?? ((line) => console.warn(`[python] ${line}`)),
  };
  if (makeSnapshot) options._makeSnapshot = true;
  if (snapshot) {
    const {default: createModule} = await import(`${indexURL}pyodide.asm.mjs`);
    options._loadSnapshot = snapshot;
    options.createPyodideModule = async (settings) => {
      const module = await createModule(settings);
      const bytes = await snapshot;
      await verified;   // every byte is in, and sound
      if (module.HEAP8.length < bytes.length && !module.growMemory(bytes.length)) {
        throw new Error(`cannot grow the heap to the snapshot's ${bytes.length} bytes`);
      }
      return module;
    };
  }
  const pyodide = await loadPyodide(options);
  return {pyodide};
}

// Where the wheels live in Pyodide's file system: each one whole, imported from as a zip
// archive (Python's zipimport, as Pyodide's own standard library is).
export const WHEEL_DIR = '/home/pyodide/wheels';

/** The file name of a wheel's URL (a wheel's name says what it holds, so it is unique). */
export function wheelFileName(url) {
  return decodeURIComponent(new URL(url, 'http://site/').pathname.split('/').pop());
}

/**
 * Make pure-Python wheels importable: each is written whole into WHEEL_DIR and put on
 * sys.path, where Python imports from it as from a zip archive. A few milliseconds,
 * where unpacking them took 0.16-0.35 s (and micropip 0.4-0.8 s); and after a snapshot's
 * restore nothing else is needed: the snapshot's sys.path names the same files, and a
 * module imported later (or a data file read with importlib.resources) comes from them.
 * wheels: [{url, bytes}].
 */
export function installWheels(pyodide, wheels) {
  pyodide.FS.mkdirTree(WHEEL_DIR);
  const paths = wheels.map(({url, bytes}) => {
    const path = `${WHEEL_DIR}/${wheelFileName(url)}`;
    pyodide.FS.writeFile(path, bytes);
    return path;
  });
  return paths;
}

/** Put the wheels' paths (installWheels()) on sys.path, once (a restored interpreter
 *  has them already). */
export function addToSysPath(pyodide, paths) {
  const sys = pyodide.pyimport('sys');
  const sysPath = sys.path;
  try {
    const now = sysPath.toJs();
    for (const path of paths) if (!now.includes(path)) sysPath.append(path);
  } finally {
    sysPath.destroy();
    sys.destroy();
  }
}
