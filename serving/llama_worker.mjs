// llama.cpp's worker as a file: serve.py runs this once per wllama version, when it copies
// @wllama/wllama into web/vendor/ (serving/runtimes.py), to write llama_worker.js beside it.
//
// Why: wllama writes its worker's code at run time (its RUN_OPTIONS, the emscripten glue
// and its own worker loop, joined into one string) and starts it from a Blob URL. A Chrome
// extension's pages may not start workers from blob: (Manifest V3 refuses such a policy),
// so the engine (web/page_model/llama_worker_file.js) has wllama start this file instead.
//
// The code is wllama's own, not a copy of its recipe: this script runs wllama's
// ProxyToWorker.moduleInit() in Node with Worker and URL.createObjectURL standing in, takes
// the code it would have started, and writes it with one change: RUN_OPTIONS, the only part
// that differs from one start to the next, is read from the file's URL (?run=JSON).
// Anything unexpected (ProxyToWorker gone, a worker that is not a module, a part besides
// RUN_OPTIONS that changes with the options) stops the preparation with a message.
//
//   node serving/llama_worker.mjs PACKAGE_DIR OUT_FILE

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolveObjectURL } from 'node:buffer';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const FIRST_LINE = 'const RUN_OPTIONS = ';
const READ_OPTIONS = "JSON.parse(new URL(self.location.href).searchParams.get('run'));";

function fail(message) {
  console.error(`llama_worker.mjs: ${message}`);
  process.exit(1);
}

/** wllama's module with its ProxyToWorker exported (it is internal to the bundle). */
async function wllamaInternals(packageDir) {
  const source = readFileSync(join(packageDir, 'esm', 'index.js'), 'utf8');
  if (!/\bvar ProxyToWorker = class\b/.test(source)) {
    fail('this wllama has no ProxyToWorker class, which starts its worker: the way it does ' +
         'changed, so llama_worker.js cannot be made (docs/extension.md).');
  }
  const folder = mkdtempSync(join(tmpdir(), 'wllama-'));
  try {
    const copy = join(folder, 'index.mjs');
    writeFileSync(copy, `${source}\nexport const __pyAgentInternals = { ProxyToWorker };\n`);
    return (await import(pathToFileURL(copy).href)).__pyAgentInternals;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** The code wllama starts its worker from, for these run options. */
async function workerCode(ProxyToWorker, { nbThread }) {
  const started = [];
  const objectURLs = new Map();
  const originalCreate = URL.createObjectURL;
  URL.createObjectURL = (blob) => {
    const url = originalCreate.call(URL, blob);
    objectURLs.set(url, blob);
    return url;
  };
  globalThis.Worker = class {
    constructor(url, options) { started.push({ url, options }); }
    postMessage() {}
    terminate() {}
  };
  if (!globalThis.navigator) globalThis.navigator = { userAgent: 'Node.js' };   // Node 20 has none
  const quiet = { debug() {}, log() {}, info() {}, warn() {}, error() {} };
  const resources = { wasmPath: 'https://wasm.invalid/wllama.wasm', compat: false, noWebGPU: true };
  const proxy = new ProxyToWorker(resources, nbThread, false, quiet);
  proxy.moduleInit([]).catch(() => {});   // waits for a worker that never answers
  for (let turn = 0; turn < 100 && !started.length; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  URL.createObjectURL = originalCreate;
  if (started.length !== 1) fail(`wllama started ${started.length} workers, not one`);
  const [{ url, options }] = started;
  if (options?.type !== 'module') fail('wllama no longer starts its worker as a module');
  const blob = objectURLs.get(url) ?? resolveObjectURL(url);
  if (!blob) fail('wllama no longer starts its worker from a Blob');
  return blob.text();
}

/** [first line, the rest] of a worker's code; the first line sets RUN_OPTIONS. */
function split(code) {
  const cut = code.indexOf('\n');
  const first = code.slice(0, cut);
  if (!first.startsWith(FIRST_LINE)) fail(`wllama's worker no longer starts with ${FIRST_LINE}...`);
  return [first, code.slice(cut + 1)];
}

const [packageDir, out] = process.argv.slice(2);
if (!packageDir || !out) fail('usage: node serving/llama_worker.mjs PACKAGE_DIR OUT_FILE');
const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const { ProxyToWorker } = await wllamaInternals(packageDir);
const [, single] = split(await workerCode(ProxyToWorker, { nbThread: 0 }));
const [, multi] = split(await workerCode(ProxyToWorker, { nbThread: 4 }));
if (single !== multi) fail("wllama's worker code changes with the thread count, not only its RUN_OPTIONS");
if (single.includes('wasm.invalid')) fail("wllama's worker code names the wasm file outside RUN_OPTIONS");
writeFileSync(out, `${FIRST_LINE}${READ_OPTIONS}  // llama.cpp's worker from @wllama/wllama ` +
                   `${version}, made by serve.py (serving/llama_worker.mjs)\n${single}`);
