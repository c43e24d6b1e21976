// The boot snapshot's place in Cache Storage, and what it depends on.
//
// One entry per worker configuration (its `tools` and `entry` parameters), holding the
// snapshot's bytes and, in headers, the parts it was made from (Pyodide's version, the
// py_agent wheel's hash, the dependency wheels, the tool module archives, which are
// content-addressed) and the SHA-256 of the bytes. read() says why a snapshot cannot be
// used: 'missing', 'stale' (naming what changed) or 'corrupt'; Pyodide itself rejects a
// snapshot of another build, which the caller reports as 'rejected'.

import {SITE_ROOT} from './site.js';

export const CACHE_NAME = 'py-agent-boot-snapshot';
// Bump when the snapshot's contents change in a way the manifest does not show (what
// snapshot_worker.js imports, or how it is restored).
export const SNAPSHOT_FORMAT = 3;   // 3: the wheels imported as zip archives; its size stored

/** What a snapshot for this manifest and configuration depends on (JSON-able). */
export function snapshotParts(manifest, {tools = '', entry = ''} = {}) {
  return {
    format: SNAPSHOT_FORMAT,
    pyodide: manifest.pyodide.version,
    py_agent: manifest.py_agent.sha256 || manifest.py_agent.wheel,
    dependencies: (manifest.dependencies || []).map((d) => d.wheel),
    tool_modules: Object.fromEntries((manifest.tool_modules || []).map(
      (m) => [m.name, [m.archive, ...(m.requirements || []), m.error || ''].join(' ')])),
    tools: tools || '',
    entry: entry || '',
  };
}

/** Which parts differ between two snapshotParts(), in words ('' when none). */
export function describeChanges(stored, wanted) {
  const changes = [];
  const names = {format: 'the snapshot format', pyodide: 'the Pyodide version',
                 py_agent: 'the py_agent wheel', dependencies: "py_agent's dependencies",
                 tools: 'the chosen tool modules', entry: 'the entry point'};
  for (const [key, name] of Object.entries(names)) {
    if (JSON.stringify(stored?.[key]) !== JSON.stringify(wanted[key])) changes.push(name);
  }
  const before = stored?.tool_modules || {}, after = wanted.tool_modules;
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (!(name in after)) changes.push(`tool module ${name} removed`);
    else if (!(name in before)) changes.push(`tool module ${name} added`);
    else if (before[name] !== after[name]) changes.push(`tool module ${name} changed`);
  }
  return changes.join(', ');
}

/** Read a stream of bytes into `out`, which it must fill exactly (else an Error). */
export async function readInto(stream, out) {
  let length = 0;
  const reader = stream.getReader();
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    if (length + value.length > out.length) {
      await reader.cancel();
      throw new Error(`more than the ${out.length} bytes expected`);
    }
    out.set(value, length);
    length += value.length;
  }
  if (length !== out.length) throw new Error(`${length} bytes where ${out.length} were expected`);
}

export async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

export class SnapshotStore {
  constructor(parts) {
    this.parts = parts;
    const scope = new URLSearchParams({tools: parts.tools, entry: parts.entry});
    // Under the site's own path: two sites of one origin keep a snapshot each.
    this.request = new Request(new URL(`__py_agent_boot_snapshot__?${scope}`, SITE_ROOT).href);
  }

  /** {bytes, arrived, verified} of a snapshot made for these parts, or {state, reason}
   *  why there is none. It answers once the stored description is read: `bytes` has the
   *  snapshot's size and fills as the body is read, `arrived` resolves to the
   *  milliseconds it took once the last byte is in, and `verified` then to '' when they
   *  match their checksum, else to the reason they are corrupt. So the caller starts
   *  Pyodide meanwhile, and awaits them only before the bytes are used. */
  async read() {
    const started = performance.now();
    let response;
    try {
      response = await (await caches.open(CACHE_NAME)).match(this.request);
    } catch (error) {
      return {state: 'missing', reason: `Cache Storage is not usable: ${error.message}`};
    }
    if (!response) return {state: 'missing', reason: 'no snapshot stored yet'};
    let stored = null;
    try {
      stored = JSON.parse(decodeURIComponent(response.headers.get('x-snapshot-parts') || 'null'));
    } catch { /* reported as corrupt below */ }
    if (!stored) return {state: 'corrupt', reason: 'its description is unreadable'};
    const changes = describeChanges(stored, this.parts);
    if (changes) return {state: 'stale', reason: `changed since it was made: ${changes}`};
    const size = Number(response.headers.get('x-snapshot-bytes'));
    if (!Number.isSafeInteger(size) || size <= 0) {
      return {state: 'corrupt', reason: 'its size is unreadable'};
    }
    const bytes = new Uint8Array(size);
    const arrived = readInto(response.body, bytes)
      .then(() => Math.round(performance.now() - started));
    const expected = response.headers.get('x-snapshot-sha256');
    const verified = arrived.then(() => sha256Hex(bytes)).then(
      (actual) => (actual === expected ? '' : `its ${size} bytes do not match their checksum`),
      () => '');   // a failed read is arrived's to report
    return {bytes, arrived, verified};
  }

  /** Store a snapshot made for these parts (replacing any other of this scope). */
  async write(bytes) {
    const headers = {
      'content-type': 'application/octet-stream',
      'x-snapshot-parts': encodeURIComponent(JSON.stringify(this.parts)),  // headers are ASCII
      'x-snapshot-sha256': await sha256Hex(bytes),
      'x-snapshot-bytes': String(bytes.length),
    };
    await (await caches.open(CACHE_NAME)).put(this.request, new Response(bytes, {headers}));
  }

  async discard() {
    try {
      await (await caches.open(CACHE_NAME)).delete(this.request);
    } catch { /* nothing to discard */ }
  }
}
