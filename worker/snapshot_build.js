// Making a boot snapshot: the interpreter a boot makes (Pyodide, py_agent's wheels, the
// tool modules' archives, the entry module imported: see py_agent/browser/snapshot.py),
// then Pyodide's memory snapshot of it. Shared by the browser's builder
// (snapshot_worker.js) and serve.py's (serving/make_boot_snapshot.mjs, under Node.js),
// so that both hold exactly what a boot imports.
import {addToSysPath, installWheels, loadRuntime} from './python_runtime.js';

export const TOOL_DIR = '/home/pyodide/tool_modules';   // as py_agent/browser/worker_tool_modules.py

/** The manifest's wheel and tool module archive URLs, as the boot fetches them. */
export function snapshotInputs(manifest) {
  return {
    wheels: [manifest.py_agent.wheel, ...(manifest.dependencies || []).map((d) => d.wheel)],
    archives: (manifest.tool_modules || []).filter((m) => m.archive && !m.error)
      .map((m) => m.archive),
  };
}

/**
 * {bytes, imported, skipped}: a memory snapshot of a fresh interpreter after the boot's
 * imports (entry: "module:function", the entry point it is for). readBytes(url) gives the bytes (a Uint8Array) of a URL of the manifest;
 * loadOptions go to loadRuntime (Node passes its own indexURL).
 */
export async function buildSnapshot(manifest, {readBytes, entry, tools = '',
                                               loadOptions = {}}) {
  const inputs = snapshotInputs(manifest);
  const wheels = Promise.all(inputs.wheels.map(async (url) => ({url, bytes: await readBytes(url)})));
  wheels.catch(() => {});
  const archives = Promise.all(inputs.archives.map(readBytes));
  archives.catch(() => {});
  const {pyodide} = await loadRuntime(manifest, {
    makeSnapshot: true, stdout: () => {}, ...loadOptions});
  // As a boot does (agent_worker.js): the snapshot's sys.path names these files, which
  // a boot writes again after the restore.
  addToSysPath(pyodide, installWheels(pyodide, await wheels));
  for (const bytes of await archives) {
    pyodide.unpackArchive(bytes, 'zip', {extractDir: TOOL_DIR});
  }
  const preload = pyodide.pyimport('py_agent.browser.snapshot').preload;
  const report = JSON.parse(preload(entry, JSON.stringify(manifest), tools || ''));
  preload.destroy();
  return {bytes: pyodide.makeMemorySnapshot(), ...report};
}
