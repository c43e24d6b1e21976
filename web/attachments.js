/*
 * Attachments on the page: files the user attaches, pastes, drops or records, made ready
 * to send (docs/attachments.md). Loaded on first use (the UI imports it the first time a
 * file or the microphone is used): nothing here is on the page's start-up path.
 *
 *   const {prepareAll, Recorder} = await import('./attachments.js');
 *   const {added, refused} = await prepareAll(files, alreadyPending);
 *
 * prepareAll() checks each file before it is read whole (a size cap, then its first bytes:
 * an image or a sound, whatever its name says), then:
 *   - an image is decoded and, when large or in a format models do not take, scaled down
 *     and re-encoded in a worker of its own (attachment_worker.js: createImageBitmap and
 *     OffscreenCanvas), so a 50 MB photo costs the page nothing;
 *   - an SVG is drawn by an <img> (which runs no script) onto a canvas: only the raster
 *     ever leaves here, never the markup;
 *   - a sound is decoded, refused when too long or silent, and made a 16 kHz mono WAV
 *     (what every backend takes).
 * Each ready one is {name, type, kind, size, width, height, seconds, blob, note}; each
 * refused one {name, reason, message}, the message saying why for the user.
 *
 * Recorder records from the microphone (getUserMedia, MediaRecorder), stops by itself at
 * MAX_RECORDING_SECONDS and gives the recording through the same checks.
 */

export const MAX_FILE_BYTES = 64 * 1024 * 1024;   // refused before it is read whole
export const MAX_ATTACHMENTS = 4;                 // per message (py_agent's cap too)
export const MAX_SIDE = 2048;                     // a picture's longest side once sent
export const MAX_SEND_BYTES = 4 * 1024 * 1024;    // a picture larger than this is re-encoded
export const MAX_AUDIO_SECONDS = 120;             // a sound file (py_agent's cap too)
export const MAX_RECORDING_SECONDS = 60;          // a recording stops by itself here
export const SILENCE_RMS = 0.002;                 // below this a sound is silent (-54 dBFS)
const SENDABLE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);
const WAV_RATE = 16000;
const DECODE_TIMEOUT_MS = 60000;   // a picture or sound that takes longer is given up on

/** `promise`, or a rejection once `ms` have passed (what it was doing is named). */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const NAMES = {
  'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/gif': 'GIF', 'image/webp': 'WebP',
  'image/bmp': 'BMP', 'image/x-icon': 'ICO', 'image/tiff': 'TIFF', 'image/heic': 'HEIC',
  'image/avif': 'AVIF', 'image/svg+xml': 'SVG', 'audio/wav': 'WAV', 'audio/mpeg': 'MP3',
  'audio/ogg': 'Ogg', 'audio/flac': 'FLAC', 'audio/webm': 'WebM', 'audio/mp4': 'M4A',
  'audio/aac': 'AAC', 'audio/aiff': 'AIFF', 'application/pdf': 'PDF document',
  'application/zip': 'ZIP archive', 'text/plain': 'text file', 'video/mp4': 'MP4 video',
};

const starts = (bytes, sig, at = 0) => sig.every((b, i) => bytes[at + i] === b);
const ascii = (bytes, at, n) => String.fromCharCode(...bytes.slice(at, at + n));

/** The type of a file from its first bytes (py_agent/attachments/sniffing.py's table). */
export function sniff(bytes) {
  const tag = ascii(bytes, 0, 4);
  if (tag === 'RIFF' && ascii(bytes, 8, 4) === 'WAVE') return 'audio/wav';
  if (tag === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return 'image/webp';
  if (tag === 'FORM' && ['AIFF', 'AIFC'].includes(ascii(bytes, 8, 4))) return 'audio/aiff';
  if (starts(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(bytes, 0, 2) === 'BM') return 'image/bmp';
  if (starts(bytes, [0, 0, 1, 0])) return 'image/x-icon';
  if (ascii(bytes, 0, 4) === 'II*\0' || ascii(bytes, 0, 4) === 'MM\0*') return 'image/tiff';
  if (tag === 'fLaC') return 'audio/flac';
  if (tag === 'OggS') return 'audio/ogg';
  if (starts(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return 'audio/webm';
  if (ascii(bytes, 0, 5) === '%PDF-') return 'application/pdf';
  if (starts(bytes, [0x50, 0x4b, 0x03, 0x04])) return 'application/zip';
  if (ascii(bytes, 4, 4) === 'ftyp') {
    const brands = [];
    for (let at = 8; at < Math.min(bytes.length, 64); at += 4) brands.push(ascii(bytes, at, 4));
    if (brands.some((b) => b === 'avif' || b === 'avis')) return 'image/avif';
    if (brands.some((b) => ['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1'].includes(b))) return 'image/heic';
    if (['M4A ', 'M4B ', 'M4P '].includes(brands[0])) return 'audio/mp4';
    return 'video/mp4';
  }
  if (ascii(bytes, 0, 3) === 'ID3' || (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0 &&
      (bytes[1] & 0x06) !== 0 && (bytes[2] & 0xf0) !== 0xf0)) return 'audio/mpeg';
  if (bytes[0] === 0xff && (bytes[1] & 0xf6) === 0xf0) return 'audio/aac';
  const text = new TextDecoder().decode(bytes).replace(/^\ufeff/, '').trimStart().toLowerCase();
  if (text.startsWith('<') && text.includes('<svg')) return 'image/svg+xml';
  if (bytes.length && bytes.every((b) => b >= 32 || b === 9 || b === 10 || b === 13)) return 'text/plain';
  return 'application/octet-stream';
}

export function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

class Refused extends Error {
  constructor(reason, message) { super(message); this.reason = reason; }
}

// ------------------------------------------------------------------ pictures

let worker = null;
let nextCall = 1;
const calls = new Map();

/** The picture worker, started on first use and kept. */
function pictureWorker() {
  if (!worker) {
    worker = new Worker(new URL('./attachment_worker.js', import.meta.url), {type: 'module'});
    worker.onmessage = ({data}) => {
      const call = calls.get(data.id);
      if (!call) return;
      calls.delete(data.id);
      (data.ok ? call.resolve : call.reject)(data.ok ? data : new Error(data.error));
    };
    worker.onerror = (event) => {
      for (const call of calls.values()) call.reject(new Error(event.message || 'the picture worker failed'));
      calls.clear();
      worker = null;
    };
  }
  return worker;
}

function inWorker(blob, options) {
  const id = nextCall++;
  const call = new Promise((resolve, reject) => {
    calls.set(id, {resolve, reject});
    pictureWorker().postMessage({id, blob, ...options});
  });
  return within(call, DECODE_TIMEOUT_MS, 'decoding the picture').finally(() => calls.delete(id));
}

/** An SVG as a PNG: drawn by an <img> (no script runs in an image), never put in the page. */
async function rasteriseSvg(blob) {
  const url = URL.createObjectURL(new Blob([blob], {type: 'image/svg+xml'}));
  try {
    const image = new Image();
    image.src = url;
    await within(image.decode(), DECODE_TIMEOUT_MS, 'drawing the SVG');
    const width = image.naturalWidth || 512;
    const height = image.naturalHeight || 512;
    const scale = Math.min(1, MAX_SIDE / Math.max(width, height));
    const canvas = new OffscreenCanvas(Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale)));
    const context = canvas.getContext('2d');
    context.fillStyle = '#fff';
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    return {blob: await canvas.convertToBlob({type: 'image/png'}), width: canvas.width, height: canvas.height};
  } catch {
    throw new Refused('undecodable', 'could not be drawn: the SVG is damaged or uses what an image may not');
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function preparePicture(file, type) {
  if (type === 'image/svg+xml') {
    const drawn = await rasteriseSvg(file);
    return {type: 'image/png', ...drawn, note: 'an SVG, sent as a picture of it'};
  }
  const reencode = !SENDABLE_IMAGES.has(type) || file.size > MAX_SEND_BYTES;
  let done;
  try {
    done = await inWorker(file, {maxSide: MAX_SIDE, reencode,
                                 output: type === 'image/jpeg' || type === 'image/webp' ||
                                   type === 'image/heic' || type === 'image/avif' ? 'image/jpeg' : 'image/png'});
  } catch {
    if (type === 'image/heic' || type === 'image/avif' || type === 'image/tiff') {
      throw new Refused('unsupported', `is a ${NAMES[type]} picture, which this browser cannot ` +
                        'decode: save it as JPEG or PNG and attach that');
    }
    throw new Refused('undecodable', `could not be decoded as a ${NAMES[type] || 'picture'}: the file ` +
                      'may be damaged or cut short');
  }
  const scaled = done.width !== done.originalWidth || done.height !== done.originalHeight;
  return {type: done.blob ? done.blob.type : type, blob: done.blob || file, width: done.width,
          height: done.height,
          note: scaled ? `scaled down from ${done.originalWidth}×${done.originalHeight}` : ''};
}

// ------------------------------------------------------------------ sounds

/** A mono 16-bit WAV of `samples` (Float32Array) at `rate`. */
export function wav(samples, rate = WAV_RATE) {
  const out = new DataView(new ArrayBuffer(44 + samples.length * 2));
  const text = (at, s) => { for (let i = 0; i < s.length; i++) out.setUint8(at + i, s.charCodeAt(i)); };
  text(0, 'RIFF'); out.setUint32(4, 36 + samples.length * 2, true); text(8, 'WAVE');
  text(12, 'fmt '); out.setUint32(16, 16, true); out.setUint16(20, 1, true); out.setUint16(22, 1, true);
  out.setUint32(24, rate, true); out.setUint32(28, rate * 2, true); out.setUint16(32, 2, true);
  out.setUint16(34, 16, true); text(36, 'data'); out.setUint32(40, samples.length * 2, true);
  for (let i = 0; i < samples.length; i++) {
    out.setInt16(44 + i * 2, Math.max(-1, Math.min(1, samples[i])) * 0x7fff, true);
  }
  return new Blob([out.buffer], {type: 'audio/wav'});
}

async function prepareSound(file, type, {limit = MAX_AUDIO_SECONDS} = {}) {
  let decoded;
  try {
    decoded = await within(new OfflineAudioContext(1, 1, WAV_RATE).decodeAudioData(await file.arrayBuffer()),
                           DECODE_TIMEOUT_MS, 'decoding the sound');
  } catch {
    throw new Refused('undecodable', `could not be decoded as ${NAMES[type] || 'sound'}: the file may be ` +
                      'damaged, cut short, or in a format this browser cannot play');
  }
  if (decoded.duration > limit + 0.5) {
    throw new Refused('too-long', `lasts ${Math.round(decoded.duration)} s; a sound may last at most ${limit} s`);
  }
  const frames = Math.max(1, Math.ceil(decoded.duration * WAV_RATE));
  const context = new OfflineAudioContext(1, frames, WAV_RATE);
  const source = context.createBufferSource();
  source.buffer = decoded;
  source.connect(context.destination);
  source.start();
  const samples = (await within(context.startRendering(), DECODE_TIMEOUT_MS, 'converting the sound'))
    .getChannelData(0);
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  if (Math.sqrt(sum / samples.length) < SILENCE_RMS) {
    throw new Refused('silent', 'is silent: nothing was heard (is the microphone muted?)');
  }
  return {type: 'audio/wav', blob: wav(samples), seconds: decoded.duration, note: ''};
}

// ------------------------------------------------------------------ files

/** One file made ready, or a Refused error saying why not. */
export async function prepare(file) {
  const name = file.name || 'attachment';
  if (file.size > MAX_FILE_BYTES) {
    throw new Refused('too-large', `is ${sizeText(file.size)}; a file may be at most ${sizeText(MAX_FILE_BYTES)}`);
  }
  if (!file.size) throw new Refused('empty', 'is empty');
  const head = new Uint8Array(await file.slice(0, 512).arrayBuffer());
  const type = sniff(head);
  const kind = type.split('/')[0];
  if (kind !== 'image' && kind !== 'audio') {
    throw new Refused('not-media', `is not an image or a sound (it is a ${NAMES[type] || 'file of an unknown kind'})`);
  }
  const ready = kind === 'image' ? await preparePicture(file, type) : await prepareSound(file, type);
  return {name, kind, size: ready.blob.size, width: ready.width ?? null, height: ready.height ?? null,
          seconds: ready.seconds ?? null, ...ready};
}

/** Every file made ready or refused, in order; `pending` attachments are there already
 *  (more than MAX_ATTACHMENTS in all refuses the rest). */
export async function prepareAll(files, pending = 0) {
  const added = [];
  const refused = [];
  const list = [...files];
  for (const file of list) {
    const name = file.name || 'attachment';
    if (pending + added.length >= MAX_ATTACHMENTS) {
      refused.push({name, reason: 'too-many',
                    message: `${list.length + pending} attachments is too many for one message: ` +
                             `at most ${MAX_ATTACHMENTS}; the first ${MAX_ATTACHMENTS} are kept`});
      continue;
    }
    try {
      added.push(await prepare(file));
    } catch (error) {
      refused.push({name, reason: error.reason || 'failed', message: `${name} ${error.message}`});
    }
  }
  return {added, refused};
}

/** A picture dropped from another page comes as an address: read it when the page may. */
export async function fromAddress(url) {
  let response;
  try {
    response = await fetch(url, {mode: 'cors', credentials: 'omit'});
  } catch {
    throw new Refused('cross-origin', `The picture at ${new URL(url, location.href).host} may not be read ` +
                      'by this page (its site does not allow it): save it, then attach the file');
  }
  if (!response.ok) throw new Refused('unreadable', `The picture at ${url} could not be fetched (${response.status})`);
  const blob = await response.blob();
  return new File([blob], url.split('/').pop().split('?')[0] || 'picture', {type: blob.type});
}

// ------------------------------------------------------------------ the microphone

/** Records from the microphone: start() asks for it, stop() gives the recording, made
 *  ready as a sound file is (a Refused error when silent); it stops by itself at
 *  MAX_RECORDING_SECONDS and then calls onLimit. */
export class Recorder {
  constructor({onLimit = null, limitSeconds = MAX_RECORDING_SECONDS} = {}) {
    this.onLimit = onLimit;
    this.limitSeconds = limitSeconds;
    this.recorder = null;
    this.chunks = [];
    this.stopped = null;
    this.timer = null;
    this.hitLimit = false;
  }

  async start() {
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({audio: true});
    } catch (error) {
      throw new Refused('no-microphone', error?.name === 'NotAllowedError'
        ? 'The microphone may not be used: allow it for this page in the browser, then try again'
        : `No microphone could be opened (${error?.message || error})`);
    }
    this.recorder = new MediaRecorder(stream);
    this.recorder.ondataavailable = (event) => { if (event.data.size) this.chunks.push(event.data); };
    this.stopped = new Promise((resolve) => { this.recorder.onstop = resolve; });
    this.recorder.start(250);
    this.started = performance.now();
    this.timer = setTimeout(() => {   // the limit: stop recording now, then say so
      this.hitLimit = true;
      if (this.recorder.state !== 'inactive') this.recorder.stop();
      this.onLimit?.();
    }, this.limitSeconds * 1000);
  }

  /** The recording, made ready ({name, type: 'audio/wav', blob, seconds, ...}). */
  async stop() {
    clearTimeout(this.timer);
    if (!this.recorder) throw new Refused('not-recording', 'Nothing is being recorded');
    if (this.recorder.state !== 'inactive') this.recorder.stop();
    await this.stopped;
    for (const track of this.recorder.stream.getTracks()) track.stop();
    const blob = new Blob(this.chunks, {type: this.recorder.mimeType || 'audio/webm'});
    const name = `recording-${new Date().toISOString().slice(11, 19).replaceAll(':', '')}.wav`;
    try {
      const ready = await prepareSound(blob, 'audio/webm', {limit: this.limitSeconds + 1});
      return {name, kind: 'audio', size: ready.blob.size, width: null, height: null, ...ready,
              note: this.hitLimit ? `stopped at ${this.limitSeconds} s, the longest a recording may be` : ''};
    } catch (error) {
      error.message = `The recording ${error.message}`;
      throw error;
    }
  }

  cancel() {
    clearTimeout(this.timer);
    if (this.recorder && this.recorder.state !== 'inactive') this.recorder.stop();
    for (const track of this.recorder?.stream.getTracks() ?? []) track.stop();
  }
}
