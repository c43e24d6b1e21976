/**
 * llama.cpp's worker started from a file of the site rather than from a Blob.
 *
 * wllama joins its worker's code into a string at run time and starts it from a blob:
 * URL. A Chrome extension's pages may not start workers from blob: (Manifest V3 refuses
 * a policy that allows it), so serve.py writes that same code once, as a file beside
 * wllama (vendor/wllama-<version>/llama_worker.js; serving/llama_worker.mjs makes it with
 * wllama's own code), and while wllama loads a model, this module answers its
 * URL.createObjectURL() for that Blob with the file's URL instead. The one part of the
 * code that differs from start to start, its first line (RUN_OPTIONS: the wasm file's URL,
 * the thread count), goes to the file in its URL (?run=JSON).
 *
 * The shim is checked, not trusted: the rest of the Blob must equal the file byte for
 * byte, or loading fails and says why (a file from another wllama version). Only
 * workers have FileReaderSync, which reads the Blob at once; the engine runs in one.
 * docs/extension.md has the measurements and the other ways that were tried.
 */

const FIRST_LINE = 'const RUN_OPTIONS = ';

function namedError(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

export class LlamaWorkerFile {
  /** `url`: where the file is; `code`: its text. */
  constructor(url, code) {
    const cut = code.indexOf('\n');
    if (!code.startsWith(FIRST_LINE) || cut < 0) {
      throw namedError('NotSupportedError', `${url} is not llama.cpp's worker as serve.py writes it.`);
    }
    this.url = new URL(url, globalThis.location?.href).href;
    this.rest = code.slice(cut + 1);
  }

  static async fetch(url) {
    const response = await fetch(url);
    if (!response.ok) {
      throw namedError('NotSupportedError', `llama.cpp's worker file could not be read (${url}: HTTP ${response.status}).`);
    }
    return new LlamaWorkerFile(url, await response.text());
  }

  /**
   * The file's URL for `object` when it is the Blob of llama.cpp's worker; null for
   * anything else (those keep their blob: URL).
   */
  urlFor(object) {
    if (typeof FileReaderSync !== 'function' || !(object instanceof Blob) ||
        !/javascript/.test(object.type) || object.size < this.rest.length) {
      return null;
    }
    const code = new FileReaderSync().readAsText(object);
    if (!code.startsWith(FIRST_LINE)) return null;
    const cut = code.indexOf('\n');
    if (code.slice(cut + 1) !== this.rest) {
      throw namedError('NotSupportedError', `${this.url} is not the worker this version of wllama ` +
                       'starts: the two come from different preparations. Prepare again (serve.py ' +
                       '--prepare-only, or build the site or extension again).');
    }
    const options = code.slice(FIRST_LINE.length, cut).replace(/[;\s]+$/, '');
    JSON.parse(options);   // a plain object literal, or this is not the code expected
    const url = new URL(this.url);
    url.searchParams.set('run', options);
    return url.href;
  }

  /**
   * Run `load` (which has wllama start its worker) with wllama's worker Blob answered by
   * this file; a worker that then fails to start (a missing file, a policy that refuses
   * it) fails `load` instead of leaving it waiting for an answer that never comes.
   */
  async during(load) {
    const file = this;
    const originalCreate = URL.createObjectURL;
    const OriginalWorker = globalThis.Worker;
    let failed;
    const failure = new Promise((_, reject) => { failed = reject; });
    URL.createObjectURL = function createObjectURL(object) {
      return file.urlFor(object) ?? originalCreate.call(URL, object);
    };
    globalThis.Worker = class extends OriginalWorker {
      constructor(url, options) {
        super(url, options);
        if (String(url).startsWith(file.url)) {
          this.addEventListener('error', (event) => failed(namedError('NotSupportedError',
            `llama.cpp's worker did not start (${event.message || file.url}).`)), { once: true });
        }
      }
    };
    try {
      return await Promise.race([load(), failure]);
    } finally {
      URL.createObjectURL = originalCreate;
      globalThis.Worker = OriginalWorker;
    }
  }
}
