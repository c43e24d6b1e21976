/**
 * The in-page model's engine: one GGUF loaded into llama.cpp's WebAssembly build through
 * wllama (npm @wllama/wllama, vendored by serve.py), and the few operations the Prompt-API
 * sessions need from it: a chat completion (streamed, constrained by a JSON schema,
 * abortable), a prefill that only reads messages, and token counting.
 *
 * It runs inside the engine worker (engine_worker.js); wllama itself starts one more
 * worker, where llama.cpp's loop runs. Each generated token is one round trip between
 * the two workers, so neither the page's main thread nor the agent's worker sits on that
 * path.
 *
 * Errors carry the names the Prompt API uses: QuotaExceededError {requested, quota}
 * when the messages do not fit the window, NotSupportedError when llama.cpp cannot apply
 * a response constraint, AbortError, and OperationError for anything else the engine
 * reports.
 */

import { GGUFError, modelFacts, readGGUFHeader } from './gguf_header.js';
import { LlamaWorkerFile } from './llama_worker_file.js';

export const DEFAULT_WINDOW_CAP = 4096;   // tokens; see loadOptions() for why
const SLOTS = 2;                           // sequences llama.cpp keeps side by side

/** An Error with a DOMException-like name (and extra fields) that survives postMessage. */
export function namedError(name, message, extra = {}) {
  const error = new Error(message);
  error.name = name;
  Object.assign(error, extra);
  return error;
}

const EXCEEDS = /request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)/;

const OBJECT_KEYWORDS = ['type', 'properties', 'required', 'additionalProperties'];

/**
 * The same constraint in the form llama.cpp's JSON-schema converter follows: it turns an
 * `anyOf` into a choice between its branches and drops the keywords beside it, so a
 * schema like our step schema (properties and required fields, plus an `anyOf` whose
 * branches narrow toolName and toolInput together) would lose its required fields. Each
 * branch gets the keywords beside the `anyOf` merged in (a property both name is the
 * branch's, which narrows it; required fields are the union). Applied at every level.
 */
export function schemaForEngine(schema) {
  if (Array.isArray(schema)) return schema.map(schemaForEngine);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' && value && typeof value === 'object') {
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, schemaForEngine(v)]));
    } else if (['items', 'anyOf', 'oneOf', 'allOf', 'additionalProperties'].includes(key)) {
      out[key] = schemaForEngine(value);
    } else {
      out[key] = value;
    }
  }
  const branches = out.anyOf ?? out.oneOf;
  const beside = OBJECT_KEYWORDS.filter((k) => k in out);
  if (!Array.isArray(branches) || !beside.length) return out;
  const base = Object.fromEntries(beside.map((k) => [k, out[k]]));
  const merged = branches.map((branch) => {
    if (branch === null || typeof branch !== 'object') return branch;
    const result = { ...base, ...branch };
    if (base.properties || branch.properties) {
      result.properties = { ...(base.properties ?? {}), ...(branch.properties ?? {}) };
    }
    if (base.required || branch.required) {
      result.required = [...new Set([...(base.required ?? []), ...(branch.required ?? [])])];
    }
    return result;
  });
  const rest = Object.fromEntries(Object.entries(out).filter(([k]) =>
    !beside.includes(k) && k !== 'anyOf' && k !== 'oneOf'));
  return { ...rest, anyOf: merged };
}

/**
 * Map an error wllama threw to one with a Prompt API name. `nativeError` is the last
 * error llama.cpp logged: when llama.cpp throws inside a request, wllama reports only a
 * garbled reply ("Invalid typed array length"), and the log line says what was wrong.
 */
function engineError(error, { constrained = false, nativeError = null } = {}) {
  if (error?.name === 'AbortError' || error?.name === 'WllamaAbortError') {
    return namedError('AbortError', 'The operation was aborted.');
  }
  let message = String(error?.message ?? error);
  if (/typed array length/i.test(message) && nativeError) message = nativeError;
  const exceeds = EXCEEDS.exec(message);
  if (exceeds) {
    return namedError('QuotaExceededError', message,
                      { requested: Number(exceeds[1]), quota: Number(exceeds[2]) });
  }
  if (constrained && /sampler|grammar|schema|typed array/i.test(message)) {
    return namedError('NotSupportedError',
                      `The in-page model cannot apply this response constraint (${message}).`);
  }
  if (/template/i.test(message)) {
    return namedError('NotSupportedError',
                      `The model's chat template cannot be applied by the engine (${message}).`);
  }
  return namedError('OperationError', `The in-page model failed: ${message}`);
}

export class Engine {
  /**
   * @param {object} urls {wllama: URL of wllama's ES module, wasm: URL of its .wasm,
   *   worker: URL of llama.cpp's worker as a file (llama_worker_file.js says why; without
   *   it wllama starts the worker from a Blob, which an extension does not allow)}
   */
  constructor(urls) {
    this.urls = urls;
    this._workerFile = null;   // a promise of the LlamaWorkerFile, fetched once
    this.wllama = null;
    this.info = null;
    this._separator = null;   // a special token's text (see countTokens)
    this._fillerTokens = null;
    this._messageOverhead = null;
    this._nativeError = null;
  }

  /**
   * Load a GGUF Blob. Options: contextWindow (tokens per session; default: the model's
   * training context, at most DEFAULT_WINDOW_CAP), threads (default: wllama's, half the
   * cores, 1 when the page is not cross-origin isolated).
   */
  async load(blob, { contextWindow = null, threads = null } = {}) {
    if (this.wllama) throw namedError('InvalidStateError', 'A model is already loaded.');
    let header;
    try {
      header = await readGGUFHeader(blob, { tokenIds: [] });
    } catch (error) {
      if (error instanceof GGUFError) throw namedError('NotSupportedError', `Cannot load the model: ${error.message}.`);
      throw error;
    }
    const facts = modelFacts(header);
    const wanted = [facts.bosTokenId, facts.eosTokenId].filter((id) => Number.isInteger(id));
    if (wanted.length) {
      const { tokens } = await readGGUFHeader(blob, { tokenIds: wanted });
      this._separator = tokens[facts.bosTokenId] ?? tokens[facts.eosTokenId] ?? null;
    }
    const trained = facts.contextLength ?? DEFAULT_WINDOW_CAP;
    // The window is what one session may hold. Prompt processing in WebAssembly runs at
    // tens to hundreds of tokens per second, and every slot's KV cache is memory the
    // tab holds, so a window far beyond what a small model's agent uses only costs.
    const window = Math.max(64, Math.min(contextWindow ?? Math.min(trained, DEFAULT_WINDOW_CAP), trained));
    const isolated = Boolean(globalThis.crossOriginIsolated);
    const { Wllama } = await import(this.urls.wllama);
    if (this.urls.worker && !this._workerFile) {
      this._workerFile = LlamaWorkerFile.fetch(this.urls.worker);
      this._workerFile.catch(() => { this._workerFile = null; });   // tried again next time
    }
    const workerFile = this._workerFile ? await this._workerFile : null;
    let templateProblem = null;   // what llama.cpp said about the chat template, if anything
    const wllama = new Wllama({ default: this.urls.wasm }, {
      logger: quietLogger((text) => {
        this._nativeError = text;
        if (templateProblem == null && TEMPLATE_PROBLEM.test(text)) templateProblem = text;
      }),
    });
    wllama.setCompat(null);   // never fetch the compatibility build from a CDN
    const params = {
      n_ctx: window * SLOTS, n_parallel: SLOTS, kv_unified: false, n_gpu_layers: 0,
    };
    if (threads != null) params.n_threads = threads;
    else if (!isolated) params.n_threads = 1;
    const start = () => wllama.loadModel([blob], params);
    try {
      await (workerFile ? workerFile.during(start) : start());
    } catch (error) {
      await wllama.exit().catch(() => {});
      const message = String(error?.message ?? error);
      if (/memory|allocate|OOM|out of bounds/i.test(message)) {
        throw namedError('QuotaExceededError', `The model is too large for this browser's memory (${message}).`);
      }
      throw namedError('NotSupportedError', `Cannot load the model: ${message}`);
    }
    const loaded = wllama.getLoadedContextInfo();
    if (!loaded.n_ctx) {
      // llama.cpp loaded the weights but its server did not start: with a chat template
      // it cannot parse or render, every later request would abort the WebAssembly.
      await wllama.exit().catch(() => {});
      throw startError(templateProblem);
    }
    this.wllama = wllama;
    this.info = {
      name: facts.name, architecture: facts.architecture, sizeLabel: facts.sizeLabel,
      fileSize: blob.size, trainedContext: loaded.n_ctx_train ?? trained,
      contextWindow: loaded.n_ctx / SLOTS, slots: SLOTS,
      threads: wllama.getNumThreads(), multiThreaded: wllama.isMultithread(),
      crossOriginIsolated: isolated, hasChatTemplate: Boolean(facts.chatTemplate),
      engine: `wllama ${this.urls.version ?? ''}`.trim(),
    };
    return this.info;
  }

  _require() {
    if (!this.wllama) throw namedError('InvalidStateError', 'No model is loaded.');
    return this.wllama;
  }

  /**
   * One chat completion over `messages` ([{role, content}]). Options: schema (a JSON
   * schema the reply must match), prefill (only read the messages: no generation
   * prompt, one token), onText(delta) for streaming, signal, temperature, topK, seed,
   * maxTokens (the longest reply).
   * Returns {text, promptTokens, completionTokens, finish} ('stop', or 'length' when the
   * window filled up).
   */
  async complete(messages, { schema = null, prefill = false, onText = null, signal = null,
                             temperature = 1, topK = 3, seed = null, maxTokens = null } = {}) {
    const wllama = this._require();
    if (signal?.aborted) throw namedError('AbortError', 'The operation was aborted.');
    const request = {
      messages, stream: true, stream_options: { include_usage: true }, cache_prompt: true,
      abortSignal: signal ?? undefined, temperature, top_k: topK,
    };
    if (seed != null) request.seed = seed;
    if (maxTokens != null) request.max_tokens = maxTokens;
    if (prefill) Object.assign(request, { add_generation_prompt: false, max_tokens: 1 });
    if (schema != null) {
      request.response_format = {
        type: 'json_schema', json_schema: { name: 'response', schema: schemaForEngine(schema), strict: true },
      };
    }
    let text = '';
    let usage = {};
    let timings = null;
    let finishReason = null;
    request.onData = (chunk) => {
      if (chunk?.usage) usage = chunk.usage;
      if (chunk?.timings) timings = chunk.timings;
      const choice = chunk?.choices?.[0];
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      const delta = choice?.delta?.content;
      if (delta && !prefill) {
        text += delta;
        onText?.(delta);
      }
    };
    this._nativeError = null;
    try {
      await wllama.createChatCompletion(request);
    } catch (error) {
      throw engineError(error, { constrained: schema != null, nativeError: this._nativeError });
    }
    const finish = finishReason ?? 'stop';
    return {
      text: prefill ? '' : text,
      promptTokens: usage.prompt_tokens ?? null,
      completionTokens: prefill ? 0 : usage.completion_tokens ?? null,
      finish: prefill ? 'stop' : finish,
      timings,
    };
  }

  /**
   * Exact number of tokens of `text`, without running the model. wllama 3 has no
   * tokenizer call, but llama.cpp tokenizes a request before anything else and refuses
   * one longer than the window, saying how long it was: so the text is sent followed by
   * a special token (where the tokenizer always splits) and a filler that makes the
   * request too long, and the filler's own count, learned once, is subtracted. Null when
   * the model has no special token to split at.
   */
  async countTokens(text) {
    this._require();
    if (this._separator == null) return null;
    if (this._fillerTokens == null) {
      this._filler = this._separator + ' a'.repeat(this.info.contextWindow + 8);
      this._fillerTokens = await this._overflowCount(this._filler);
      if (this._fillerTokens == null) return null;
    }
    const total = await this._overflowCount(String(text) + this._filler);
    return total == null ? null : total - this._fillerTokens;
  }

  async _overflowCount(prompt) {
    try {
      await this.wllama.createCompletion({ prompt, max_tokens: 1, cache_prompt: false });
    } catch (error) {
      const exceeds = EXCEEDS.exec(String(error?.message ?? ''));
      if (exceeds) return Number(exceeds[1]);
      throw engineError(error);
    }
    return null;   // it fit after all: this engine counts differently than expected
  }

  /**
   * Tokens one message adds beyond its text (the chat template's turn markers and the
   * generation prompt), measured once with a prefill-free count of a single message.
   */
  async messageOverhead() {
    if (this._messageOverhead != null) return this._messageOverhead;
    const probe = 'a';
    const [raw, framed] = await Promise.all([
      this.countTokens(probe),
      this._chatCount([{ role: 'user', content: probe + this._filler }]),
    ]);
    if (raw == null || framed == null) return 0;
    this._messageOverhead = Math.max(0, framed - this._fillerTokens - raw);
    return this._messageOverhead;
  }

  async _chatCount(messages) {
    try {
      await this.wllama.createChatCompletion({ messages, max_tokens: 1, cache_prompt: false });
    } catch (error) {
      const exceeds = EXCEEDS.exec(String(error?.message ?? ''));
      if (exceeds) return Number(exceeds[1]);
      throw engineError(error);
    }
    return null;
  }

  async unload() {
    const wllama = this.wllama;
    this.wllama = null;
    this.info = null;
    this._fillerTokens = null;
    this._messageOverhead = null;
    await wllama?.exit();
  }
}

// What llama.cpp logs when it cannot use a model's chat template.
const TEMPLATE_PROBLEM = /chat template|template pars|Parser Error/i;

/** The error for a model whose engine did not start (`templateProblem`: llama.cpp's line). */
function startError(templateProblem) {
  if (templateProblem) {
    const said = templateProblem.replace(/^.*?(chat template|Parser Error)/i, '$1').trim();
    return namedError('NotSupportedError', "This model's chat template cannot be applied by the " +
                      `in-page engine (llama.cpp: ${said}). Choose another model, or a GGUF of this ` +
                      'one with a standard chat template.');
  }
  return namedError('NotSupportedError', 'Cannot load the model: llama.cpp did not start it.');
}

/**
 * wllama's logger, minus its debug chatter and the refusals countTokens() provokes;
 * `onError(text)` gets each warning and error line llama.cpp logs (see engineError).
 */
function quietLogger(onError) {
  const expected = (args) => args.some((a) => EXCEEDS.test(String(a?.message ?? a)) ||
                                          /exceed_context_size_error/.test(JSON.stringify(a ?? '')));
  return {
    debug() {},
    log() {},
    warn: (...args) => {
      if (expected(args)) return;
      const text = args.filter((a) => typeof a === 'string').join(' ').trim();
      if (TEMPLATE_PROBLEM.test(text)) onError(text);
      console.warn('[page model]', ...args);
    },
    error: (...args) => {
      if (expected(args)) return;
      const text = args.filter((a) => typeof a === 'string').join(' ').trim();
      if (text && !/typed array|stack trace/i.test(text)) onError(text);
      console.error('[page model]', ...args);
    },
  };
}
