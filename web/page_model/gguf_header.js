/**
 * GGUF header reading: the magic and version, and the metadata the in-page model needs
 * before llama.cpp has loaded the file (the training context length sizes the context
 * window it is loaded with; a special token's text lets the engine count tokens).
 *
 * Hand-written on purpose: llama.cpp reports this metadata only after a load, and the
 * maintained JavaScript GGUF parser (@huggingface/gguf) reads through HTTP ranges and
 * pulls in another package at run time; the format's header is a short, stable
 * length-prefixed list (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
 *
 *   checkMagic(bytes)                 -> null, or a sentence saying why this is not GGUF
 *   readGGUFHeader(blob, {tokenIds})  -> {version, tensorCount, metadata, tokens, headerBytes}
 *   modelFacts(header)                -> {architecture, name, contextLength, chatTemplate, ...}
 * Errors are GGUFError (name 'GGUFError') with a message meant for the user.
 */

export class GGUFError extends Error {
  constructor(message) {
    super(message);
    this.name = 'GGUFError';
  }
}

const MAGIC = 'GGUF';
const VERSIONS = [2, 3];
const CHUNK = 1 << 20;              // bytes read from the blob at a time
const MAX_SHOWN_ARRAY = 64;         // longer arrays are summarized, not kept
const MAX_STRING = 64 << 20;        // a longer string means a corrupt header

// Value types of the GGUF format, and the byte size of the fixed-size ones.
const T = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8,
            ARRAY: 9, U64: 10, I64: 11, F64: 12 };
const FIXED_SIZE = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** Why `bytes` (the first 8 or more bytes of a file) is not a GGUF file, or null if it is. */
export function checkMagic(bytes) {
  const head = new Uint8Array(bytes.buffer ?? bytes, bytes.byteOffset ?? 0, Math.min(8, bytes.byteLength));
  if (head.length < 8) return `the file is too short to be a GGUF model (${head.length} bytes)`;
  const magic = String.fromCharCode(...head.subarray(0, 4));
  if (magic !== MAGIC) {
    const shown = String.fromCharCode(...head.subarray(0, 8)).replace(/[^\x20-\x7e]/g, '.');
    return `this is not a GGUF model file (it starts with "${shown}", a GGUF file with "GGUF")`;
  }
  const version = new DataView(head.buffer, head.byteOffset).getUint32(4, true);
  if (!VERSIONS.includes(version)) return `GGUF version ${version} is not supported (only 2 and 3)`;
  return null;
}

/** Sequential little-endian reader over a Blob, fetching it a chunk at a time. */
class BlobReader {
  constructor(blob) {
    this.blob = blob;
    this.offset = 0;       // file offset of the next unread byte
    this.base = 0;         // file offset of this.bytes[0]
    this.bytes = new Uint8Array(0);
  }

  async need(n) {
    const have = this.base + this.bytes.length - this.offset;
    if (have >= n) return;
    if (this.offset + n > this.blob.size) {
      throw new GGUFError(`the GGUF file is truncated: its header needs byte ${this.offset + n}, ` +
                          `but the file has only ${this.blob.size} bytes`);
    }
    const end = Math.min(this.blob.size, this.offset + Math.max(n, CHUNK));
    this.bytes = new Uint8Array(await this.blob.slice(this.offset, end).arrayBuffer());
    this.base = this.offset;
  }

  view(n) {
    const start = this.offset - this.base;
    this.offset += n;
    return new DataView(this.bytes.buffer, this.bytes.byteOffset + start, n);
  }

  async u32() { await this.need(4); return this.view(4).getUint32(0, true); }

  async u64() {
    await this.need(8);
    const value = this.view(8).getBigUint64(0, true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new GGUFError('the GGUF header holds an impossible length');
    return Number(value);
  }

  async string() {
    const length = await this.u64();
    if (length > MAX_STRING) throw new GGUFError('the GGUF header holds an impossibly long string');
    await this.need(length);
    const start = this.offset - this.base;
    this.offset += length;
    return new TextDecoder().decode(this.bytes.subarray(start, start + length));
  }

  async skip(n) {
    if (this.offset + n > this.blob.size) {
      throw new GGUFError(`the GGUF file is truncated: its header needs byte ${this.offset + n}, ` +
                          `but the file has only ${this.blob.size} bytes`);
    }
    this.offset += n;
  }

  async scalar(type) {
    const size = FIXED_SIZE[type];
    if (size === undefined) throw new GGUFError(`the GGUF header holds an unknown value type (${type})`);
    await this.need(size);
    const v = this.view(size);
    switch (type) {
      case T.U8: return v.getUint8(0);
      case T.I8: return v.getInt8(0);
      case T.U16: return v.getUint16(0, true);
      case T.I16: return v.getInt16(0, true);
      case T.U32: return v.getUint32(0, true);
      case T.I32: return v.getInt32(0, true);
      case T.F32: return v.getFloat32(0, true);
      case T.BOOL: return v.getUint8(0) !== 0;
      case T.U64: return Number(v.getBigUint64(0, true));
      case T.I64: return Number(v.getBigInt64(0, true));
      default: return v.getFloat64(0, true);
    }
  }
}

/**
 * Read the header of a GGUF file. `tokenIds`: ids whose text in tokenizer.ggml.tokens is
 * wanted (returned in `tokens`); other long arrays are summarized as {arrayOf, length}.
 */
export async function readGGUFHeader(blob, { tokenIds = [] } = {}) {
  const reader = new BlobReader(blob);
  await reader.need(Math.min(blob.size, 8));
  const problem = checkMagic(reader.bytes);
  if (problem) throw new GGUFError(problem);
  reader.offset = 4;
  const version = await reader.u32();
  const tensorCount = await reader.u64();
  const kvCount = await reader.u64();
  const metadata = {};
  const tokens = {};
  const wanted = new Set(tokenIds);
  for (let i = 0; i < kvCount; i++) {
    const key = await reader.string();
    const type = await reader.u32();
    if (type === T.STRING) {
      metadata[key] = await reader.string();
    } else if (type === T.ARRAY) {
      const itemType = await reader.u32();
      const length = await reader.u64();
      const keep = length <= MAX_SHOWN_ARRAY;
      const items = keep ? [] : null;
      if (itemType === T.STRING) {
        for (let j = 0; j < length; j++) {
          if (keep || (key === 'tokenizer.ggml.tokens' && wanted.has(j))) {
            const text = await reader.string();
            if (keep) items.push(text);
            if (key === 'tokenizer.ggml.tokens' && wanted.has(j)) tokens[j] = text;
          } else {
            await reader.skip(await reader.u64());
          }
        }
      } else if (FIXED_SIZE[itemType] !== undefined) {
        if (keep) for (let j = 0; j < length; j++) items.push(await reader.scalar(itemType));
        else await reader.skip(length * FIXED_SIZE[itemType]);
      } else {
        throw new GGUFError(`the GGUF header holds an array of an unsupported type (${itemType})`);
      }
      metadata[key] = keep ? items : { arrayOf: itemType, length };
    } else {
      metadata[key] = await reader.scalar(type);
    }
  }
  return { version, tensorCount, metadata, tokens, headerBytes: reader.offset };
}

/** The facts the model menu and the engine use, from a header. */
export function modelFacts(header) {
  const m = header.metadata;
  const architecture = m['general.architecture'] ?? null;
  const tokenList = m['tokenizer.ggml.tokens'];
  return {
    architecture,
    name: m['general.name'] ?? null,
    sizeLabel: m['general.size_label'] ?? null,
    fileType: m['general.file_type'] ?? null,
    contextLength: architecture ? (m[`${architecture}.context_length`] ?? null) : null,
    chatTemplate: m['tokenizer.chat_template'] ?? null,
    vocabularySize: Array.isArray(tokenList) ? tokenList.length : tokenList?.length ?? null,
    bosTokenId: m['tokenizer.ggml.bos_token_id'] ?? null,
    eosTokenId: m['tokenizer.ggml.eos_token_id'] ?? null,
  };
}
