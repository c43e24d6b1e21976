// Runs worker/embedder/use_m3.js under Node.js for tests/unit/test_embedding_parity.py:
// reads {weights: {url, size, sha256}, kernel, ids: [[...], ...]} as JSON on stdin and
// prints {vectors: [[...], ...]} (or {error: {name, message}}). File URLs are read from
// disk: Node's fetch does not take them; Cache Storage does not exist here.
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';

globalThis.location = {href: `file://${process.cwd()}/`};
const networkFetch = globalThis.fetch;
globalThis.fetch = async (url) => {
  if (!String(url).startsWith('file:')) return networkFetch(url);
  try {
    return new Response(readFileSync(fileURLToPath(url)));
  } catch (error) {
    return new Response('missing', {status: 404});
  }
};
const input = JSON.parse(readFileSync(0, 'utf8'));
const {loadUseM3} = await import(new URL('../../worker/embedder/use_m3.js', import.meta.url));
try {
  const model = await loadUseM3({weights: input.weights, kernel: input.kernel});
  const vectors = input.ids.map((ids) => Array.from(model.encode(Int32Array.from(ids))));
  process.stdout.write(JSON.stringify({vectors}));
} catch (error) {
  process.stdout.write(JSON.stringify({error: {name: error.name, message: error.message}}));
}
