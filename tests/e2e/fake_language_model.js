/*
 * A fake `window.LanguageModel` (Chrome's Prompt API) for end-to-end tests.
 *
 * Install it with Playwright before any page script runs, after its constraint engine:
 *
 *     page.add_init_script(script="window.__fakeLMConfig = {...}")   # optional
 *     page.add_init_script(path="tests/e2e/fake_constraints.js")
 *     page.add_init_script(path="tests/e2e/fake_language_model.js")
 *
 * (tests/e2e/pages.py's install_fake_lm_scripts does all three; a responder given as
 * source, responderSource, is eval'ed, which the app page's CSP forbids: there, put the
 * function itself in the config as `responder`, as pages.fake_lm_config_script does).
 *
 * It follows the Prompt API spec, and Chromium 156 where the spec leaves a choice; the
 * web-platform-tests under tests/wpt hold it to that (tests/e2e/test_wpt_prompt_api.py):
 *
 *   static availability(options)  'available' | 'downloadable' | 'downloading' | 'unavailable'
 *   static create({initialPrompts, monitor, signal, expectedInputs, expectedOutputs, samplingMode})
 *   session.prompt(input, {responseConstraint, omitResponseConstraintInput, signal})
 *   session.promptStreaming(...)   ReadableStream of *delta* string chunks
 *   session.append(input, {signal}), session.measureContextUsage(input, options)
 *   session.contextUsage, session.contextWindow, session.samplingMode,
 *   'contextoverflow' + oncontextoverflow, session.clone({signal}), session.destroy()
 * and, only with config.names 'both' or 'legacy', the names Chrome keeps for extensions:
 * inputUsage, inputQuota, measureInputUsage() and 'quotaoverflow' + onquotaoverflow.
 *
 * Errors, as Chrome raises them:
 *   - create() when unavailable -> NotSupportedError; in a frame the 'language-model'
 *     permissions policy does not allow -> NotAllowedError (and availability()
 *     'unavailable'); when the model is 'downloadable' without transient user activation
 *     -> NotAllowedError (create() consumes the activation); from a detached frame ->
 *     InvalidStateError;
 *   - input too large for the window -> QuotaExceededError with `requested` and `quota`;
 *   - a call on a destroyed session, in flight or later -> InvalidStateError; an aborted
 *     signal -> its reason (promptStreaming() throws it at once, as Chrome does);
 *   - a system message anywhere but first in the session -> TypeError; `prefix` on any
 *     message but a last assistant one -> SyntaxError; image/audio content the session
 *     did not declare in expectedInputs, or in an assistant message -> NotSupportedError;
 *   - image or audio content is decoded as Chrome decodes it, when the call runs: bytes
 *     (a Blob, a BufferSource) that are no image -> InvalidStateError, no sound ->
 *     DataError (the explainer says EncodingError for both; Chrome's tests assert these);
 *     an image element not loaded (or broken) -> InvalidStateError; a cross-origin image
 *     the page may not read -> SecurityError; an aborted call -> AbortError;
 *   - responseConstraint: not an object or RegExp -> TypeError; a schema that is
 *     malformed or uses a keyword the configured browser lacks (config.schemaSupport), or
 *     a prefix that cannot lead to a compliant reply -> NotSupportedError; a reply (from
 *     a responder or a script) that breaks the constraint -> SyntaxError, unless
 *     config.replyCheck is 'off'.
 *
 * Token counting (deterministic, deliberately unlike chars/4 so calibration matters):
 *   - each CJK ideograph, kana or hangul syllable = 1 token;
 *   - each run of other letters/digits = ceil(length / 4) tokens ("internationalization"
 *     = 5, "a" = 1);
 *   - each punctuation or symbol character = 1 token; whitespace is free;
 *   - each message costs 4 more tokens (turn markers); a string input is one user message;
 *   - a JSON-schema responseConstraint (unless omitResponseConstraintInput) adds one
 *     message holding JSON.stringify(schema); a RegExp adds nothing (Chrome sends only
 *     schemas to the model);
 *   - a reply costs what measureContextUsage(reply) would (tokens + 4);
 *   - an image costs 64 tokens per 256×256 tile it spans (a picture the agent must scale
 *     down to fit is possible), a sound 6.25 tokens a second (Gemma 3n's encoders), + 8.
 *   window.__fakeLM.countTokens(text) exposes the per-text part.
 *
 * What the model received: each call's log entry has `media` ([{kind, type, bytes, width,
 * height, seconds}] of its input), and the default replies name the media of the input
 * (or, for input without any, of the session's context): "I received: image (image/png,
 * 64×48, 1,234 bytes)", so a test sees what really arrived.
 *
 * Overflow (config.overflowMode):
 *   'evict' (default, what Chrome does): when usage + input > window, the oldest non-initial
 *     messages are dropped until it fits and 'contextoverflow' fires; only when the input
 *     cannot fit even next to the initial prompts does it reject with QuotaExceededError
 *     {requested: measured input, quota: contextWindow - initial prompts' usage}.
 *   'reject' (the spec's prefill algorithm): reject when usage + input > window with
 *     {requested: usage + input, quota: contextWindow}; nothing is dropped.
 *
 * What real browsers differ in, as knobs (see DEFAULTS): schemaSupport, contextWindow,
 * languages, samplingModes (null: a browser without samplingMode), names, mediaInputs
 * (the media kinds the device's model takes: [] for a text-only one).
 *
 * Test control: `window.__fakeLM` (each member is documented where `control` is defined
 * near the end): configure(config), reset(config), setAvailability(a), setResponder(fn),
 * setResponderSource(src), queueReplies(...), clearReplies(), failNext(name, {method,
 * message, requested, quota}), setLatency(ms), setChunkDelay(ms), calls, callsOf(method),
 * clearCalls(), countTokens(text), measure(text), sessions(), idOf(session),
 * defaultResponder, install(), uninstall(), LanguageModel.
 */
(() => {
  'use strict';

  const constraints = window.__fakeLMConstraints;
  if (!constraints) throw new Error('fake_language_model.js needs fake_constraints.js installed first');

  // Chrome's sampling modes (its WPT lists seven; the spec's enum has the five without "slightly-").
  const SAMPLING_MODES = ['most-predictable', 'predictable', 'slightly-predictable', 'balanced',
    'slightly-creative', 'creative', 'most-creative'];

  const DEFAULTS = {
    availability: 'available',   // what availability() reports and create() honours
    contextWindow: 9216,         // tokens per session (Chrome's Gemini Nano on desktop)
    names: 'current',            // 'current' | 'both' | 'legacy' attribute/method names
    overflowMode: 'evict',       // 'evict' | 'reject'
    latencyMs: 0,                // delay before a reply (prompt and first stream chunk)
    chunkDelayMs: 0,             // delay between streamed chunks
    chunkSize: 0,                // 0: one chunk per word; n: n characters per chunk
    downloadSteps: 4,            // intermediate downloadprogress events when downloading
    downloadStepMs: 5,           // delay between downloadprogress events
    requireUserActivation: true, // create() needs transient activation while 'downloadable'
    languages: ['en', 'es', 'ja'],  // supported expectedInputs/expectedOutputs languages
    schemaSupport: 'chrome',     // 'chrome' | 'strict' | 'edge' | 'none' | [keywords]
    samplingModes: SAMPLING_MODES,  // supported modes; null: no samplingMode in this browser
    replyCheck: 'strict',        // 'strict': a reply breaking the constraint -> SyntaxError; 'off'
    responderSource: null,       // JS source of a responder function (for init config)
    replies: [],                 // scripted replies consumed before the responder
    mediaInputs: ['image', 'audio'],  // what this device's model takes besides text: others
                                      // make availability() with them 'unavailable'
  };

  const CJK = /[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]|[\u{20000}-\u{2fa1f}]/u;
  const PIECE = /[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]|[\u{20000}-\u{2fa1f}]|(?:(?![\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f])[\p{L}\p{N}\p{M}_])+|[^\s\p{L}\p{N}\p{M}_]/gu;
  const MESSAGE_OVERHEAD = 4;

  function countTokens(text) {
    let tokens = 0;
    for (const match of String(text).matchAll(PIECE)) {
      const piece = match[0];
      if (CJK.test(piece)) tokens += 1;
      else if (/^[\p{L}\p{N}\p{M}_]/u.test(piece)) tokens += Math.ceil(piece.length / 4);
      else tokens += 1;
    }
    return tokens;
  }

  // ---------------------------------------------------------------- state

  const state = {
    config: { ...DEFAULTS },
    availability: DEFAULTS.availability,
    responder: null,
    replies: [],
    failures: [],   // [{name, message, method, requested, quota}]
    log: [],
    sessions: new Map(),   // fakeId -> session
    nextId: 1,
  };

  function configure(config = {}) {
    const { responder, responderSource, replies, availability, ...rest } = config;
    Object.assign(state.config, rest);
    if (availability !== undefined) state.availability = availability;
    if (responderSource) state.responder = (0, eval)(`(${responderSource})`);
    if (typeof responder === 'function') state.responder = responder;
    if (Array.isArray(replies)) state.replies.push(...replies);
  }

  function record(method, sessionId, input, options = {}) {
    const c = options.responseConstraint;
    const entry = {
      method,
      sessionId,
      input: typeof input === 'string' ? input : JSON.stringify(input),
      hasConstraint: c != null,
      constraint: c instanceof RegExp ? { regex: c.source, flags: c.flags } : c ?? null,
      omitConstraintInput: options.omitResponseConstraintInput === true,
      media: [],
      time: performance.now(),
    };
    state.log.push(entry);
    return entry;
  }

  // availability() and create() entries also keep the declared options.
  function recordOptions(entry, options) {
    entry.expectedInputs = options.expectedInputs ?? null;
    entry.expectedOutputs = options.expectedOutputs ?? null;
    entry.samplingMode = options.samplingMode ?? null;
  }

  // ---------------------------------------------------------------- errors

  function domError(name, message, extra = {}) {
    if (name === 'TypeError') return new TypeError(message);
    if (name === 'RangeError') return new RangeError(message);
    if (name === 'QuotaExceededError') {
      const { requested = null, quota = null } = extra;
      if (typeof QuotaExceededError === 'function') {
        const init = {};
        if (requested != null) init.requested = requested;
        if (quota != null) init.quota = quota;
        return new QuotaExceededError(message, init);
      }
      const e = new DOMException(message, 'QuotaExceededError');
      Object.defineProperties(e, { requested: { value: requested }, quota: { value: quota } });
      return e;
    }
    return new DOMException(message, name);
  }

  const DESTROYED = 'The model execution session has been destroyed.';

  function abortError(message = 'The operation was aborted.') {
    return new DOMException(message, 'AbortError');
  }

  function takeFailure(method) {
    const i = state.failures.findIndex((f) => !f.method || f.method === method);
    if (i < 0) return null;
    const [f] = state.failures.splice(i, 1);
    return domError(f.name, f.message || `Injected ${f.name} in ${method}`, f);
  }

  function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) { reject(signal.reason ?? abortError()); return; }
      const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
      function onAbort() { clearTimeout(timer); reject(signal.reason ?? abortError()); }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // ---------------------------------------------------------------- the page's state

  /** A frame whose browsing context is gone (a removed iframe) has no defaultView. */
  function detached() {
    return !document.defaultView;
  }

  /** The 'language-model' permissions policy (default allowlist 'self'). */
  function policyAllows() {
    const policy = document.permissionsPolicy || document.featurePolicy;
    if (!policy || typeof policy.allowsFeature !== 'function') return true;
    return policy.allowsFeature('language-model');
  }

  // Transient activation, as create() consumes it: the page's own activation state, less
  // the gestures a create() already used. (The fake cannot consume the browser's
  // activation itself; it remembers what it consumed since the last gesture it saw.)
  const activation = { seen: 0, consumed: -1 };
  for (const type of ['keydown', 'mousedown', 'pointerdown', 'pointerup', 'touchend']) {
    window.addEventListener(type, (event) => { if (event.isTrusted) activation.seen += 1; }, true);
  }
  function takeActivation() {
    if (!navigator.userActivation?.isActive || activation.consumed === activation.seen) return false;
    activation.consumed = activation.seen;
    return true;
  }

  // ---------------------------------------------------------------- messages

  const ROLES = ['system', 'user', 'assistant'];
  const TYPES = ['text', 'image', 'audio', 'tool-call', 'tool-response'];

  const isBufferSource = (v) => v instanceof ArrayBuffer || ArrayBuffer.isView(v);
  function isImageSource(v) {
    const kinds = ['HTMLImageElement', 'SVGImageElement', 'HTMLVideoElement', 'HTMLCanvasElement',
      'ImageBitmap', 'OffscreenCanvas', 'VideoFrame', 'Blob', 'ImageData'];
    return isBufferSource(v) || kinds.some((k) => typeof window[k] === 'function' && v instanceof window[k]);
  }
  const isAudioSource = (v) => isBufferSource(v) || v instanceof Blob
    || (typeof AudioBuffer === 'function' && v instanceof AudioBuffer);

  /** The content types a session (or a create() call) accepts: text and what it declared. */
  function expectedTypes(expectedInputs) {
    return new Set(['text', ...(Array.isArray(expectedInputs) ? expectedInputs.map((e) => e?.type) : [])]);
  }

  /**
   * The spec's "validate and canonicalize a prompt": [{role, content: string, prefix}]
   * (other media become markers such as "[image]"). `hasContext` is whether the session
   * already holds input (then no system message may come).
   */
  function canonicalize(input, hasContext, types) {
    if (typeof input === 'string') return [{ role: 'user', content: input, prefix: false }];
    if (!Array.isArray(input)) return [{ role: 'user', content: String(input), prefix: false }];
    if (input.length === 0) return [{ role: 'user', content: '', prefix: false }];
    const messages = [];
    input.forEach((message, index) => {
      if (message === null || typeof message !== 'object') {
        throw new TypeError('Each message must be an object with role and content.');
      }
      const { role, content, prefix = false } = message;
      if (!ROLES.includes(role)) {
        throw new TypeError(`Failed to read the 'role' property: '${role}' is not a valid LanguageModelMessageRole.`);
      }
      if (content === undefined) throw new TypeError("Required member 'content' is undefined.");
      if (prefix && (role !== 'assistant' || index !== input.length - 1)) {
        throw domError('SyntaxError', 'Only the last message may be a prefix, and it must be an assistant message.');
      }
      if (role === 'system' && (hasContext || index > 0)) {
        throw new TypeError('A system message must be the first message, and only the first.');
      }
      let text = '';
      const media = [];
      if (typeof content === 'string') {
        text = content;
      } else if (Array.isArray(content)) {
        for (const part of content) {
          if (!part || !TYPES.includes(part.type)) throw new TypeError('Invalid message content type.');
          if (role === 'assistant' && part.type !== 'text') {
            throw domError('NotSupportedError', 'Assistant messages may only hold text.');
          }
          if (part.type === 'text') {
            if (typeof part.value !== 'string') throw new TypeError('Text content must be a string.');
            text += part.value;
            continue;
          }
          if (!types.has(part.type)) {
            throw domError('NotSupportedError', `The session was not created to take ${part.type} input (expectedInputs).`);
          }
          if (part.type === 'image' && !isImageSource(part.value)) throw new TypeError('Image content must be an ImageBitmapSource or a BufferSource.');
          if (part.type === 'audio' && !isAudioSource(part.value)) throw new TypeError('Audio content must be an AudioBuffer, a BufferSource or a Blob.');
          text += `[${part.type}]`;
          media.push({ kind: part.type, value: part.value });
        }
      } else {
        text = String(content);
      }
      messages.push({ role, content: text, prefix: Boolean(prefix), media, mediaTokens: 0 });
    });
    return messages;
  }

  function messageUsage(m) {
    return countTokens(m.content) + MESSAGE_OVERHEAD + (m.mediaTokens || 0);
  }

  function messagesUsage(messages) {
    return messages.reduce((n, m) => n + messageUsage(m), 0);
  }

  // ---------------------------------------------------------------- images and sounds

  const IMAGE_TILE = 256;
  const TILE_TOKENS = 64;
  const AUDIO_TOKENS_PER_SECOND = 6.25;
  const MEDIA_OVERHEAD = 8;

  function bufferBlob(value) {
    if (value instanceof Blob) return value;
    const view = ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
      : new Uint8Array(value);
    return new Blob([view]);
  }

  /** An image's facts ({kind, type, bytes, width, height}), decoded as Chrome would. */
  async function decodeImage(value) {
    const undecodable = () => domError('InvalidStateError', 'The image could not be decoded.');
    if (typeof HTMLImageElement === 'function' && value instanceof HTMLImageElement) {
      if (!value.complete || !value.naturalWidth) {
        try { await value.decode(); } catch { throw undecodable(); }
      }
      if (!value.naturalWidth) throw undecodable();
      try {   // a cross-origin image the page may not read
        const probe = new OffscreenCanvas(1, 1).getContext('2d');
        probe.drawImage(value, 0, 0, 1, 1);
        probe.getImageData(0, 0, 1, 1);
      } catch (e) {
        if (e?.name === 'SecurityError') throw domError('SecurityError', 'Cross-origin image data may not be used.');
      }
      return { kind: 'image', type: 'element', bytes: null, width: value.naturalWidth, height: value.naturalHeight };
    }
    if (isBufferSource(value) || value instanceof Blob) {
      const blob = bufferBlob(value);
      let bitmap;
      try { bitmap = await createImageBitmap(blob); } catch { throw undecodable(); }
      const facts = { kind: 'image', type: blob.type || 'bytes', bytes: blob.size, width: bitmap.width, height: bitmap.height };
      bitmap.close();
      return facts;
    }
    if (typeof ImageData === 'function' && value instanceof ImageData) {
      return { kind: 'image', type: 'ImageData', bytes: value.data.byteLength, width: value.width, height: value.height };
    }
    if (typeof VideoFrame === 'function' && value instanceof VideoFrame) {
      return { kind: 'image', type: 'VideoFrame', bytes: null, width: value.displayWidth, height: value.displayHeight };
    }
    let bitmap;
    try { bitmap = await createImageBitmap(value); } catch (e) {
      if (e?.name === 'SecurityError') throw domError('SecurityError', 'Cross-origin image data may not be used.');
      throw undecodable();
    }
    const facts = { kind: 'image', type: value.constructor?.name || 'image', bytes: null, width: bitmap.width, height: bitmap.height };
    bitmap.close();
    return facts;
  }

  /** A sound's facts ({kind, type, bytes, seconds}), decoded as Chrome would. */
  async function decodeAudio(value) {
    if (typeof AudioBuffer === 'function' && value instanceof AudioBuffer) {
      return { kind: 'audio', type: 'AudioBuffer', bytes: null, seconds: value.duration };
    }
    const blob = bufferBlob(value);
    try {
      const context = new OfflineAudioContext(1, 1, 16000);
      const decoded = await context.decodeAudioData(await blob.arrayBuffer());
      return { kind: 'audio', type: blob.type || 'bytes', bytes: blob.size, seconds: decoded.duration };
    } catch {
      throw domError('DataError', 'The audio data could not be decoded.');
    }
  }

  function mediaTokens(facts) {
    if (facts.kind === 'audio') return Math.ceil((facts.seconds || 0) * AUDIO_TOKENS_PER_SECOND) + MEDIA_OVERHEAD;
    const tiles = Math.max(1, Math.ceil(facts.width / IMAGE_TILE)) * Math.max(1, Math.ceil(facts.height / IMAGE_TILE));
    return tiles * TILE_TOKENS + MEDIA_OVERHEAD;
  }

  function describeMedia(facts) {
    const details = [facts.type];
    if (facts.width) details.push(`${facts.width}×${facts.height}`);
    if (facts.seconds != null) details.push(`${facts.seconds.toFixed(1)} s`);
    if (facts.bytes != null) details.push(`${facts.bytes.toLocaleString('en-US')} bytes`);
    return `${facts.kind} (${details.join(', ')})`;
  }

  /** Decode the media of `messages` (once), setting each message's token cost and facts;
   * rejects as Chrome does for media it cannot read, or with the signal's reason. */
  async function decodeMessages(messages, signal) {
    for (const message of messages) {
      if (!message.media?.length || message.facts) continue;
      const facts = [];
      for (const item of message.media) {
        if (signal?.aborted) throw signal.reason ?? abortError();
        facts.push(await (item.kind === 'image' ? decodeImage(item.value) : decodeAudio(item.value)));
      }
      if (signal?.aborted) throw signal.reason ?? abortError();
      message.facts = facts;
      message.mediaTokens = facts.reduce((n, f) => n + mediaTokens(f), 0);
      let index = 0;
      message.content = message.content.replace(/\[(image|audio)\]/g, (marker) => {
        const f = facts[index++];
        return f ? `[${describeMedia(f)}]` : marker;
      });
    }
  }

  const factsOf = (messages) => messages.flatMap((m) => m.facts || []);

  // ---------------------------------------------------------------- response constraints

  /** The prompt options' constraint, checked as Chrome does before anything is sent. */
  function parseConstraint(options) {
    const c = options.responseConstraint;
    if (c == null) {
      if (options.omitResponseConstraintInput) throw new TypeError('omitResponseConstraintInput requires a responseConstraint.');
      return null;
    }
    if (c instanceof RegExp) return { regex: c };
    if (typeof c === 'object' || typeof c === 'function') return { schemaObject: c };
    throw new TypeError('Constraint type is not supported.');
  }

  /** The constraint as the model service sees it, or NotSupportedError (as Chrome's engine refuses). */
  function compileConstraint(constraint) {
    if (!constraint) return null;
    const support = state.config.schemaSupport;
    if (support === 'none') throw domError('NotSupportedError', 'responseConstraint is not supported.');
    if (constraint.regex) {
      try {
        return { regex: constraint.regex, engine: constraints.compileRegex(constraint.regex) };
      } catch (e) {
        throw domError('NotSupportedError', `The request is invalid - the regular expression uses ${e.message}.`);
      }
    }
    let schema;
    try {
      schema = JSON.parse(JSON.stringify(constraint.schemaObject));
    } catch (e) {
      throw domError('NotSupportedError', `Response constraint is not a supported JSON schema: ${e.message}`);
    }
    const keywords = Array.isArray(support) ? support : constraints.KEYWORD_SETS[support];
    if (!keywords) throw new Error(`fake LanguageModel: unknown schemaSupport ${JSON.stringify(support)}`);
    const problem = constraints.schemaProblem(schema, keywords);
    if (problem) throw domError('NotSupportedError', `Response constraint is not a supported JSON schema: ${problem}.`);
    return { schema };
  }

  function constraintUsage(constraint, options) {
    if (!constraint?.schemaObject || options.omitResponseConstraintInput) return 0;
    try {
      return countTokens(JSON.stringify(constraint.schemaObject)) + MESSAGE_OVERHEAD;
    } catch {
      return 0;   // refused later, with the reason
    }
  }

  /** Does `text` (the whole reply, prefix included) satisfy the compiled constraint. */
  function complies(compiled, text) {
    if (compiled.regex) return compiled.regex.test(text);
    try { return constraints.validate(JSON.parse(text), compiled.schema); } catch { return false; }
  }

  // ---------------------------------------------------------------- default replies

  function lastUserText(messages) {
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role === 'user') return messages[i].content;
    }
    return '';
  }

  /** The user's own words inside a templated prompt: the last "User: ..." style line, or the last line. */
  function userMessage(text) {
    const lines = String(text).split('\n').map((l) => l.trim()).filter(Boolean);
    for (let i = lines.length - 1; i >= 0; i--) {
      const m = /^(?:user|user message|question|message)\s*:\s*(.+)$/i.exec(lines[i]);
      if (m) return m[1];
    }
    return lines.length ? lines[lines.length - 1] : '';
  }

  function clip(text, n) {
    const t = String(text).replace(/\s+/g, ' ').trim();
    return t.length > n ? `${t.slice(0, n - 1)}…` : t;
  }

  /**
   * Default replies: a step JSON (toolName 'none', finalAnswer echoing the user) for a
   * schema with a toolName enum, a value satisfying any other JSON schema, the shortest
   * text matching a RegExp (after a prefix, its continuation), a short "Summary: ..." for
   * summary/compaction prompts, else "You said: ...".
   */
  function defaultResponder(input, { responseConstraint, messages, prefix = '', received = '' }) {
    const message = userMessage(lastUserText(messages) || input).replace(/\s*\[(image|audio) \(.*$/, '');
    const got = received ? ` I received: ${received}.` : '';
    if (responseConstraint && typeof responseConstraint === 'object' && responseConstraint.properties?.descriptions) {
      const count = responseConstraint.properties.descriptions.minItems || 1;
      return JSON.stringify({ descriptions: Array.from({ length: count }, () => received || 'an attachment') });
    }
    if (responseConstraint instanceof RegExp) {
      return constraints.compileRegex(responseConstraint).complete(prefix) ?? '';
    }
    if (responseConstraint && typeof responseConstraint === 'object') {
      const props = responseConstraint.properties || {};
      let value;
      if (props.toolName && Array.isArray(props.toolName.enum)) {
        value = {
          thought: `The user said "${clip(message, 80)}"; I can answer directly.`,
          toolName: props.toolName.enum.includes('none') ? 'none' : props.toolName.enum[0],
          toolInput: '',
          finalAnswer: `You said: ${clip(message, 200)}${got}`,
        };
      } else {
        value = constraints.example(responseConstraint, {
          text: (key) => (key === 'finalAnswer' || key === 'answer' ? `You said: ${clip(message, 200)}`
            : key === 'summary' ? `Summary: ${clip(message, 160)}` : ''),
        });
      }
      const text = JSON.stringify(value);
      return prefix ? constraints.completeJson(prefix, responseConstraint, text) ?? '' : text;
    }
    const whole = String(input);
    if (/summar|compact|condense|compress/i.test(whole)) {
      const words = whole.replace(/\s+/g, ' ').trim().split(' ').slice(-40).join(' ');
      return `Summary: ${clip(words, 200)}`;
    }
    return `You said: ${clip(message, 200)}${got}`;
  }

  async function produceReply(session, method, inputText, messages, compiled) {
    const last = messages[messages.length - 1];
    const prefix = last?.prefix ? last.content : '';
    if (prefix && compiled) {
      const viable = compiled.regex ? compiled.engine.complete(prefix) !== null
        : constraints.completeJson(prefix, compiled.schema, JSON.stringify(constraints.example(compiled.schema))) !== null;
      if (!viable) throw domError('NotSupportedError', 'The request is invalid - the prefix cannot lead to a reply the response constraint allows.');
    }
    const ctx = {
      history: session._history.map(({ role, content }) => ({ role, content })),
      messages: messages.map(({ role, content }) => ({ role, content })),
      responseConstraint: compiled ? (compiled.regex ?? compiled.schema) : null,
      prefix,
      sessionId: session._fakeId,
      method,
      // what the model received: the input's media, else those of the session's context
      received: (factsOf(messages).length ? factsOf(messages) : factsOf(session._history))
        .map(describeMedia).join('; '),
      media: factsOf(messages),
    };
    let reply;
    if (state.replies.length) {
      const scripted = state.replies.shift();
      if (scripted && typeof scripted === 'object') {
        if (scripted.error) throw domError(scripted.error.name, scripted.error.message || scripted.error.name, scripted.error);
        reply = String(scripted.text ?? '');
      } else {
        reply = String(scripted);
      }
    } else {
      reply = String(await (state.responder || defaultResponder)(inputText, ctx));
    }
    if (compiled && state.config.replyCheck !== 'off' && !complies(compiled, prefix + reply)) {
      throw domError('SyntaxError', 'The model could not produce a reply that satisfies the response constraint.');
    }
    return reply;
  }

  // ---------------------------------------------------------------- the fake class

  const CONSTRUCT = Symbol('construct');

  function hasName(kind) {
    const names = state.config.names;
    return names === 'both' || names === kind;
  }

  class FakeCreateMonitor extends EventTarget {
    #handler = null;
    get ondownloadprogress() { return this.#handler; }
    set ondownloadprogress(fn) {
      if (this.#handler) this.removeEventListener('downloadprogress', this.#handler);
      this.#handler = typeof fn === 'function' ? fn : null;
      if (this.#handler) this.addEventListener('downloadprogress', this.#handler);
    }
  }

  function checkExpected(list, what) {
    if (list === undefined) return 'available';
    if (!Array.isArray(list)) throw new TypeError(`${what} must be a sequence.`);
    let result = 'available';
    for (const e of list) {
      if (!e || !TYPES.includes(e.type)) throw new TypeError(`Invalid ${what} type.`);
      if (what === 'expectedOutputs' && e.type !== 'text') result = 'unavailable';
      if (what === 'expectedInputs' && (e.type === 'image' || e.type === 'audio') &&
          !(state.config.mediaInputs || []).includes(e.type)) result = 'unavailable';
      for (const lang of e.languages || []) {
        let tag;
        try { [tag] = Intl.getCanonicalLocales(lang); } catch { throw new RangeError(`Invalid language tag: ${lang}`); }
        const base = tag.split('-')[0];
        if (!state.config.languages.includes(tag) && !state.config.languages.includes(base)) result = 'unavailable';
      }
    }
    return result;
  }

  /** The samplingMode option: TypeError for a value outside the enum, false if this browser lacks it. */
  function samplingModeSupported(options) {
    const modes = state.config.samplingModes;
    if (!modes || options.samplingMode === undefined) return true;
    if (!SAMPLING_MODES.includes(options.samplingMode)) {
      throw new TypeError(`The provided value '${options.samplingMode}' is not a valid enum value of type LanguageModelSamplingMode.`);
    }
    return modes.includes(options.samplingMode);
  }

  // Chrome warns (on the console) when availability() or create() names no output language.
  const NO_OUTPUT_LANGUAGE = 'No output language was specified in a LanguageModel API request. ' +
    'An output language should be specified to ensure optimal output quality and properly ' +
    'attest to output safety. Please specify a supported output language code: ';

  function optionsAvailability(options) {
    const outputs = Array.isArray(options.expectedOutputs) ? options.expectedOutputs : [];
    if (!outputs.some((e) => e && Array.isArray(e.languages) && e.languages.length)) {
      console.warn(NO_OUTPUT_LANGUAGE + `[${state.config.languages.join(', ')}]`);
    }
    const a = checkExpected(options.expectedInputs, 'expectedInputs');
    const b = checkExpected(options.expectedOutputs, 'expectedOutputs');
    const modeOk = samplingModeSupported(options);
    if (a === 'unavailable' || b === 'unavailable' || !modeOk) return 'unavailable';
    return state.availability;
  }

  /** Download progress is reported in 1/65536 steps (the spec rounds `loaded`). */
  const roundProgress = (x) => Math.round(x * 0x10000) / 0x10000;

  class LanguageModel extends EventTarget {
    #handlers = { contextoverflow: null, quotaoverflow: null };

    constructor(token, init) {
      super();
      if (token !== CONSTRUCT) throw new TypeError('Illegal constructor');
      this._fakeId = `fake-${state.nextId++}`;
      this._window = init.contextWindow;
      this._initial = init.initial;            // messages never evicted
      this._initialUsage = messagesUsage(init.initial);
      this._history = init.history;            // all messages, initial first
      this._usage = init.usage;
      this._expected = init.expected;
      this._samplingMode = init.samplingMode;
      this._hasContext = init.hasContext;      // input was given: no system message may follow
      this._destroyed = false;
      this._destroyController = new AbortController();
      this._queue = Promise.resolve();
      state.sessions.set(this._fakeId, this);
    }

    // ----- static API

    static async availability(options = {}) {
      if (detached()) throw domError('InvalidStateError', 'The execution context is not valid.');
      recordOptions(record('availability', null, '', {}), options);
      const result = optionsAvailability(options);
      const failure = takeFailure('availability');
      if (failure) throw failure;
      return policyAllows() ? result : 'unavailable';
    }

    static create(options = {}) {
      if (detached()) return Promise.reject(domError('InvalidStateError', 'The execution context is not valid.'));
      const signal = options.signal;
      let initial;
      let availability;
      const types = expectedTypes(options.expectedInputs);
      try {
        availability = optionsAvailability(options);
        if (!policyAllows()) throw domError('NotAllowedError', 'Access to the feature "language-model" is disallowed by permissions policy.');
        if (signal?.aborted) throw signal.reason ?? abortError();
        initial = options.initialPrompts === undefined ? [] : canonicalize(options.initialPrompts, false, types);
      } catch (e) {
        return Promise.reject(e);
      }
      recordOptions(record('create', null, options.initialPrompts ?? [], {}), options);
      const failure = takeFailure('create');
      if (failure) return Promise.reject(failure);
      if (availability === 'unavailable') {
        return Promise.reject(domError('NotSupportedError', 'Unable to create a text session because the service is not running.'));
      }
      const needsDownload = availability === 'downloadable' || availability === 'downloading';
      if (availability === 'downloadable') {
        if (state.config.requireUserActivation && !takeActivation()) {
          return Promise.reject(domError('NotAllowedError', 'Requires a user gesture when availability is "downloadable".'));
        }
        state.availability = 'downloading';   // until it completes; later create() calls need no gesture
      }
      const monitor = new FakeCreateMonitor();
      if (typeof options.monitor === 'function') {
        try { options.monitor(monitor); } catch (e) { return Promise.reject(e); }
      }
      const samplingMode = state.config.samplingModes ? options.samplingMode ?? 'balanced' : undefined;
      return (async () => {
        // downloadprogress: always 0 and 1 (per the explainer), with steps in between
        // when something had to be downloaded.
        const steps = needsDownload ? state.config.downloadSteps : 0;
        for (let i = 0; i <= steps + 1; i++) {
          await sleep(needsDownload ? state.config.downloadStepMs : 0, signal);
          const loaded = i === 0 ? 0 : i === steps + 1 ? 1 : roundProgress(i / (steps + 1));
          monitor.dispatchEvent(new ProgressEvent('downloadprogress', { loaded, total: 1, lengthComputable: true }));
        }
        if (needsDownload) state.availability = 'available';
        await decodeMessages(initial, signal);
        const usage = messagesUsage(initial);
        const window = state.config.contextWindow;
        if (usage > window) {
          throw domError('QuotaExceededError', 'The initial prompts are too large.', { requested: usage, quota: window });
        }
        return new LanguageModel(CONSTRUCT, {
          contextWindow: window, initial, history: initial.slice(), usage, samplingMode,
          expected: { inputs: options.expectedInputs, outputs: options.expectedOutputs },
          hasContext: initial.length > 0,
        });
      })();
    }

    // ----- attributes

    get contextUsage() { return this._usage; }
    get contextWindow() { return this._window; }
    get oncontextoverflow() { return this.#handlers.contextoverflow; }
    set oncontextoverflow(fn) { this.#setHandler('contextoverflow', fn); }

    #setHandler(type, fn) {
      if (this.#handlers[type]) this.removeEventListener(type, this.#handlers[type]);
      this.#handlers[type] = typeof fn === 'function' ? fn : null;
      if (this.#handlers[type]) this.addEventListener(type, this.#handlers[type]);
    }

    // ----- helpers

    /**
     * What Chrome checks before a call is sent, in its order: an aborted signal (its
     * reason), a destroyed session (InvalidStateError), then a system message after
     * other input (TypeError); marks the session as holding input.
     */
    #validateInput(input, options, { checkSystem = true } = {}) {
      if (detached()) throw domError('InvalidStateError', 'The execution context is not valid.');
      if (options.signal?.aborted) throw options.signal.reason ?? abortError();
      if (this._destroyed) throw domError('InvalidStateError', DESTROYED);
      const messages = canonicalize(input, checkSystem && this._hasContext, expectedTypes(this._expected?.inputs));
      if (checkSystem) this._hasContext = true;
      return messages;
    }

    #signalFor(options) {
      const signals = [this._destroyController.signal];
      if (options.signal) signals.push(options.signal);
      return AbortSignal.any(signals);
    }

    /** Runs `op` after earlier prompts/appends of this session, rejecting at once on abort. */
    #enqueue(signal, op) {
      const run = this._queue.then(() => {
        if (signal.aborted) throw signal.reason ?? abortError();
        return op();
      });
      this._queue = run.catch(() => {});
      return new Promise((resolve, reject) => {
        const onAbort = () => reject(signal.reason ?? abortError());
        signal.addEventListener('abort', onAbort, { once: true });
        run.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
      });
    }

    /** Make room for `requested` tokens or throw QuotaExceededError; returns whether it overflowed. */
    #reserve(requested) {
      const window = this._window;
      if (state.config.overflowMode === 'reject') {
        if (this._usage + requested > window) {
          throw domError('QuotaExceededError', 'The input is too large.', { requested: this._usage + requested, quota: window });
        }
        return false;
      }
      if (this._initialUsage + requested > window) {
        throw domError('QuotaExceededError', 'The input is too large.', { requested, quota: window - this._initialUsage });
      }
      return this._usage + requested > window;
    }

    #evictUntil(extra) {
      let overflowed = false;
      while (this._usage + extra > this._window && this._history.length > this._initial.length) {
        const [dropped] = this._history.splice(this._initial.length, 1);
        this._usage -= messageUsage(dropped);
        overflowed = true;
      }
      if (overflowed) {
        if (hasName('legacy')) this.dispatchEvent(new Event('quotaoverflow'));
        if (hasName('current')) this.dispatchEvent(new Event('contextoverflow'));
      }
    }

    #commit(messages, requested, reply) {
      this.#evictUntil(requested);
      const last = messages[messages.length - 1];
      const prefix = last?.prefix ? messages.pop() : null;
      this._history.push(...messages);
      this._usage += requested;
      if (reply !== null) {
        const content = (prefix ? prefix.content : '') + reply;
        const replyUsage = countTokens(reply) + (prefix ? 0 : MESSAGE_OVERHEAD);
        this.#evictUntil(replyUsage);
        this._history.push({ role: 'assistant', content, prefix: false });
        this._usage += replyUsage;
      }
    }

    // Everything prompt() and promptStreaming() share up to the queue.
    #preparePrompt(method, input, options) {
      const messages = this.#validateInput(input, options);
      const constraint = parseConstraint(options);
      const textUsage = messagesUsage(messages);
      const requested = textUsage + constraintUsage(constraint, options);
      const inputText = typeof input === 'string' ? input : messages.map((m) => m.content).join('\n');
      return { method, messages, constraint, requested, textUsage, inputText, input: typeof input };
    }

    // What prompt and promptStreaming share in the queue: log, scripted failure, reserve, wait, reply.
    async #generate(prepared, signal, options) {
      const { method, messages, constraint } = prepared;
      await decodeMessages(messages, signal);
      prepared.requested += messagesUsage(messages) - prepared.textUsage;
      const { requested } = prepared;
      const inputText = prepared.input === 'string' ? prepared.inputText : messages.map((m) => m.content).join('\n');
      // `context`: everything the model has read when it answers (the session's history,
      // initial and appended messages included, then this input).
      const entry = record(method, this._fakeId, inputText, options);
      entry.context = [...this._history.map((m) => m.content), inputText].join('\n\n');
      entry.media = factsOf(messages);
      const failure = takeFailure(method);
      if (failure) throw failure;
      const compiled = compileConstraint(constraint);
      this.#reserve(requested);
      await sleep(state.config.latencyMs, signal);
      return produceReply(this, method, inputText, messages, compiled);
    }

    // ----- prompting

    prompt(input, options = {}) {
      let prepared;
      try { prepared = this.#preparePrompt('prompt', input, options); } catch (e) { return Promise.reject(e); }
      const signal = this.#signalFor(options);
      return this.#enqueue(signal, async () => {
        const reply = await this.#generate(prepared, signal, options);
        if (signal.aborted) throw signal.reason ?? abortError();
        this.#commit(prepared.messages, prepared.requested, reply);
        return reply;
      });
    }

    promptStreaming(input, options = {}) {
      const prepared = this.#preparePrompt('promptStreaming', input, options);   // throws, as Chrome's does
      const signal = this.#signalFor(options);
      const session = this;
      let cancelled = false;
      return new ReadableStream({
        start(controller) {
          session.#enqueue(signal, async () => {
            const reply = await session.#generate(prepared, signal, options);
            const size = state.config.chunkSize;
            const chunks = size > 0
              ? reply.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) || []
              : reply.match(/\s*\S+\s*/g) || (reply ? [reply] : []);
            for (let i = 0; i < chunks.length; i++) {
              if (i > 0) await sleep(state.config.chunkDelayMs, signal);
              if (cancelled) throw abortError('The stream was cancelled.');
              controller.enqueue(chunks[i]);
            }
            if (signal.aborted) throw signal.reason ?? abortError();
            session.#commit(prepared.messages, prepared.requested, reply);
          }).then(() => { if (!cancelled) controller.close(); },
            (e) => { if (!cancelled) controller.error(e); });
        },
        cancel() { cancelled = true; },
      });
    }

    append(input, options = {}) {
      let messages;
      try { messages = this.#validateInput(input, options); } catch (e) { return Promise.reject(e); }
      const signal = this.#signalFor(options);
      return this.#enqueue(signal, async () => {
        await decodeMessages(messages, signal);
        const requested = messagesUsage(messages);
        const inputText = typeof input === 'string' ? input : messages.map((m) => m.content).join('\n');
        record('append', this._fakeId, inputText, {}).media = factsOf(messages);
        const failure = takeFailure('append');
        if (failure) throw failure;
        this.#reserve(requested);
        await sleep(0, signal);
        this.#commit(messages, requested, null);
      });
    }

    measureContextUsage(input, options = {}) {
      let messages;
      let constraintCost;
      try {
        // Chrome measures without the session's system-message rule (it does not run its
        // input validation here); the spec's within-input rules still apply.
        messages = this.#validateInput(input, options, { checkSystem: false });
        constraintCost = constraintUsage(parseConstraint(options), options);
      } catch (e) {
        return Promise.reject(e);
      }
      const signal = this.#signalFor(options);
      return (async () => {
        await decodeMessages(messages, signal);
        const requested = messagesUsage(messages) + constraintCost;
        const inputText = typeof input === 'string' ? input : messages.map((m) => m.content).join('\n');
        record('measureContextUsage', this._fakeId, inputText, options).media = factsOf(messages);
        const failure = takeFailure('measureContextUsage');
        if (failure) throw failure;
        await sleep(0, signal);
        return requested;
      })();
    }

    clone(options = {}) {
      if (detached()) return Promise.reject(domError('InvalidStateError', 'The execution context is not valid.'));
      if (this._destroyed) return Promise.reject(domError('InvalidStateError', DESTROYED));
      if (options.signal?.aborted) return Promise.reject(options.signal.reason ?? abortError());
      const signal = this.#signalFor(options);
      return (async () => {
        record('clone', this._fakeId, '', {});
        const failure = takeFailure('clone');
        if (failure) throw failure;
        await sleep(0, signal);
        return new LanguageModel(CONSTRUCT, {
          contextWindow: this._window,
          initial: this._initial.map((m) => ({ ...m })),
          history: this._history.map((m) => ({ ...m })),
          usage: this._usage,
          expected: this._expected,
          samplingMode: this._samplingMode,
          hasContext: this._hasContext,
        });
      })();
    }

    destroy() {
      if (detached()) throw domError('InvalidStateError', 'The execution context is not valid.');
      if (this._destroyed) return;
      record('destroy', this._fakeId, '', {});
      this._destroyed = true;
      this._destroyController.abort(domError('InvalidStateError', DESTROYED));
      state.sessions.delete(this._fakeId);
    }
  }

  // Current and legacy member names; applyNames() shows the set config.names asks for,
  // so that `'inputQuota' in session` feature-detects as it would in that browser.
  const proto = LanguageModel.prototype;
  const current = {
    contextUsage: Object.getOwnPropertyDescriptor(proto, 'contextUsage'),
    contextWindow: Object.getOwnPropertyDescriptor(proto, 'contextWindow'),
    oncontextoverflow: Object.getOwnPropertyDescriptor(proto, 'oncontextoverflow'),
    measureContextUsage: Object.getOwnPropertyDescriptor(proto, 'measureContextUsage'),
  };
  const legacyHandlers = new WeakMap();
  const legacy = {
    inputUsage: { get() { return this._usage; }, configurable: true },
    inputQuota: { get() { return this._window; }, configurable: true },
    onquotaoverflow: {
      get() { return legacyHandlers.get(this) ?? null; },
      set(fn) {
        const old = legacyHandlers.get(this);
        if (old) this.removeEventListener('quotaoverflow', old);
        legacyHandlers.delete(this);
        if (typeof fn === 'function') { legacyHandlers.set(this, fn); this.addEventListener('quotaoverflow', fn); }
      },
      configurable: true,
    },
    measureInputUsage: {
      value: function measureInputUsage(input, options) { return current.measureContextUsage.value.call(this, input, options); },
      writable: true, configurable: true,
    },
  };
  const samplingMode = { get() { return this._samplingMode; }, configurable: true };

  /** Apply config.names and config.samplingModes: define exactly the members that browser has. */
  function applyNames() {
    for (const [key, desc] of Object.entries(current)) {
      if (hasName('current')) Object.defineProperty(proto, key, desc);
      else delete proto[key];
    }
    for (const [key, desc] of Object.entries(legacy)) {
      if (hasName('legacy')) Object.defineProperty(proto, key, desc);
      else delete proto[key];
    }
    if (state.config.samplingModes) Object.defineProperty(proto, 'samplingMode', samplingMode);
    else delete proto.samplingMode;
  }

  // ---------------------------------------------------------------- control object

  const control = {
    /** Merge config (see DEFAULTS); `availability`, `responder`, `responderSource`, `replies` allowed. */
    configure(config) { configure(config); applyNames(); return control.config; },
    get config() { return { ...state.config, availability: state.availability }; },
    setAvailability(value) { state.availability = value; },
    get availability() { return state.availability; },
    /** fn(input, {history, messages, responseConstraint, prefix, sessionId, method}) -> string | Promise<string>; null restores the default. */
    setResponder(fn) { state.responder = typeof fn === 'function' ? fn : null; },
    setResponderSource(source) { state.responder = source ? (0, eval)(`(${source})`) : null; },
    /** Queue replies: strings, {text}, or {error: {name, message, requested, quota}}; used FIFO before the responder. */
    queueReplies(...replies) { state.replies.push(...replies.flat()); return state.replies.length; },
    clearReplies() { state.replies.length = 0; },
    /** The next call (of `method`, if given) rejects with a DOMException named `name`. */
    failNext(name, { method = null, message = '', requested = null, quota = null } = {}) {
      state.failures.push({ name, method, message, requested, quota });
    },
    setLatency(ms) { state.config.latencyMs = ms; },
    setChunkDelay(ms) { state.config.chunkDelayMs = ms; },
    /** Calls so far: {method, sessionId, input, hasConstraint, constraint, time} (+ expectedInputs/Outputs, samplingMode for availability/create). */
    get calls() { return state.log.slice(); },
    callsOf(method) { return state.log.filter((c) => c.method === method); },
    clearCalls() { state.log.length = 0; },
    countTokens,
    measure(text) { return countTokens(text) + MESSAGE_OVERHEAD; },
    /** Live (not destroyed) sessions: {sessionId, contextUsage, contextWindow, samplingMode, history}. */
    sessions() {
      return [...state.sessions.values()].map((s) => ({
        sessionId: s._fakeId, contextUsage: s._usage, contextWindow: s._window, samplingMode: s._samplingMode ?? null,
        history: s._history.map(({ role, content }) => ({ role, content })),
      }));
    },
    idOf(session) { return session?._fakeId ?? null; },
    defaultResponder,
    /** Back to DEFAULTS (plus `config`), forgetting replies, failures and the log. */
    reset(config = {}) {
      state.config = { ...DEFAULTS };
      state.availability = DEFAULTS.availability;
      state.responder = null;
      state.replies = [];
      state.failures = [];
      state.log = [];
      configure(config);
      applyNames();
    },
    /** Put the fake (back) on window. */
    install() {
      Object.defineProperty(window, 'LanguageModel', { value: LanguageModel, writable: true, configurable: true, enumerable: false });
    },
    /** Remove LanguageModel from window, as in a browser without the Prompt API. */
    uninstall() { delete window.LanguageModel; },
    LanguageModel,
  };

  control.reset(window.__fakeLMConfig || {});
  control.install();
  Object.defineProperty(window, '__fakeLM', { value: control, configurable: true });
})();
