// serve.py's boot snapshot builder, run under Node.js: the same snapshot a browser makes
// (worker/snapshot_build.js), made once on the server so that even a browser's first
// visit restores one. Pyodide's snapshot holds the heap and globals reached by a path
// from globalThis, so one made here restores in a browser's worker.
//
//   node serving/make_boot_snapshot.mjs REQUEST.json
//
// REQUEST: {manifest, web_root, out, entry ("module:function"), tools}. Writes the
// snapshot to `out` and prints {parts, sha256, bytes, imported, skipped, ms} as JSON.
import {createHash} from 'node:crypto';
import {readFileSync, renameSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

import {buildSnapshot} from '../worker/snapshot_build.js';
import {snapshotParts} from '../worker/snapshot_store.js';

const started = performance.now();
const request = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const {manifest, web_root: webRoot, out, entry, tools = ''} = request;
// Here the manifest's URLs are files under web/.
const fileOf = (url) => join(webRoot, new URL(url, 'http://server/').pathname);
const {bytes, ...report} = await buildSnapshot(manifest, {
  entry, tools,
  readBytes: async (url) => new Uint8Array(readFileSync(fileOf(url))),
  loadOptions: {stderr: () => {}, indexURL: fileOf(manifest.pyodide.indexURL) + '/'},
});
writeFileSync(`${out}.part`, bytes);
renameSync(`${out}.part`, out);
process.stdout.write(JSON.stringify({
  parts: snapshotParts(manifest, {tools, entry}),
  sha256: createHash('sha256').update(bytes).digest('hex'),
  bytes: bytes.length, ms: Math.round(performance.now() - started), ...report,
}) + '\n');
