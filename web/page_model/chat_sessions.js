/**
 * Prompt API session semantics over the engine (engine.js): what a `LanguageModel`
 * session means (initial prompts, prompt, append, clone, measure, destroy, overflow),
 * kept where the engine runs, in the engine worker.
 *
 * A session is its list of messages. Each prompt sends the whole list; llama.cpp's
 * prompt cache finds the longest prefix it has already read (the initial prompts a
 * clone shares with its base, the turns before this one) and reads only the rest, which
 * is what lets a clone start where its base left off. contextUsage is llama.cpp's own
 * count after each prompt, append and create (which read their messages at once, as
 * Chrome does).
 *
 * Overflow follows Chrome: when a prompt does not fit, the oldest turns after the initial
 * prompts are dropped until it does and 'contextoverflow' is reported; only input that
 * cannot fit next to the initial prompts fails, with QuotaExceededError {requested,
 * quota}. A reply that fills the window ends there (the next prompt then drops turns); one
 * that reaches the session's maxTokens ends there too, and is no overflow.
 */

import { namedError } from './engine.js';

const ROLES = new Set(['system', 'user', 'assistant']);

/** The messages of a Prompt API input ([{role, content: string}]); throws as Chrome does. */
export function canonicalize(input, { allowSystem }) {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (!Array.isArray(input)) return [{ role: 'user', content: String(input) }];
  return input.map((message, index) => {
    if (message === null || typeof message !== 'object') {
      throw new TypeError('Each message must be an object with a role and content.');
    }
    const { role, content } = message;
    if (!ROLES.has(role)) throw new TypeError(`'${role}' is not a valid message role.`);
    if (role === 'system' && !(allowSystem && index === 0)) {
      throw new TypeError('A system message must be the first message, and only the first.');
    }
    if (message.prefix) {
      throw namedError('NotSupportedError', 'The in-page model does not support prefix messages.');
    }
    return { role, content: textOf(content) };
  });
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return String(content ?? '');
  return content.map((part) => {
    if (part?.type !== 'text') {
      throw namedError('NotSupportedError', `The in-page model reads text only, not ${part?.type}.`);
    }
    if (typeof part.value !== 'string') throw new TypeError('Text content must be a string.');
    return part.value;
  }).join('');
}

/** Consecutive messages of one role joined: many chat templates insist on alternation. */
function forEngine(messages) {
  const out = [];
  for (const { role, content } of messages) {
    const last = out[out.length - 1];
    if (last && last.role === role) last.content += `\n\n${content}`;
    else out.push({ role, content });
  }
  return out;
}

function checkConstraint(schema, omitInput) {
  if (schema == null) {
    if (omitInput) throw new TypeError('omitResponseConstraintInput requires a responseConstraint.');
    return;
  }
  if (schema instanceof RegExp) {
    throw namedError('NotSupportedError', 'The in-page model supports JSON schema constraints, not regular expressions.');
  }
  if (typeof schema !== 'object' || Array.isArray(schema)) {
    throw new TypeError('responseConstraint must be a JSON schema object.');
  }
}

/** The text that tells the model the schema (unless omitResponseConstraintInput). */
function schemaNote(schema) {
  return `\n\nRespond with JSON that matches this schema:\n${JSON.stringify(schema)}`;
}

class Session {
  constructor(id, messages, initialCount, usage, initialUsage, sampling) {
    this.id = id;
    this.messages = messages;
    this.initialCount = initialCount;
    this.usage = usage;
    this.initialUsage = initialUsage;
    this.sampling = sampling;
    this.queue = Promise.resolve();
    this.destroyed = false;
  }

  /** Run `op` after this session's earlier calls (the Prompt API queues them). */
  enqueue(op) {
    const run = this.queue.then(op);
    this.queue = run.catch(() => {});
    return run;
  }
}

export class ChatSessions {
  /** @param {Engine} engine  @param {function} onOverflow (sessionId) when turns were dropped */
  constructor(engine, onOverflow = () => {}) {
    this.engine = engine;
    this.onOverflow = onOverflow;
    this.sessions = new Map();
    this.nextId = 1;
  }

  get window() { return this.engine.info.contextWindow; }

  _get(sessionId) {
    const session = this.sessions.get(sessionId);
    if (!session || session.destroyed) {
      throw namedError('InvalidStateError', 'The model execution session has been destroyed.');
    }
    return session;
  }

  describe(session) {
    return { sessionId: session.id, contextUsage: session.usage, contextWindow: this.window };
  }

  /**
   * Options: initialPrompts, temperature, topK, samplingMode ('most-predictable'), seed,
   * maxTokens (the longest reply; none by default, as in Chrome).
   */
  async create({ initialPrompts = [], temperature = 1, topK = 3, samplingMode = null, seed = null,
                 maxTokens = null } = {}, signal = null) {
    const messages = canonicalize(initialPrompts, { allowSystem: true });
    const sampling = samplingMode === 'most-predictable'
      ? { temperature: 0, topK: 1, seed, maxTokens } : { temperature, topK, seed, maxTokens };
    let usage = 0;
    if (messages.length) {
      try {
        const read = await this.engine.complete(forEngine(messages), { prefill: true, signal });
        usage = read.promptTokens ?? 0;
      } catch (error) {
        if (error.name === 'QuotaExceededError') {
          throw namedError('QuotaExceededError', 'The initial prompts are too large for the context window.',
                           { requested: error.requested, quota: this.window });
        }
        throw error;
      }
    }
    const session = new Session(`p${this.nextId++}`, messages, messages.length, usage, usage, sampling);
    this.sessions.set(session.id, session);
    return this.describe(session);
  }

  async clone(sessionId) {
    const base = this._get(sessionId);
    return base.enqueue(() => {
      const copy = new Session(`p${this.nextId++}`, base.messages.map((m) => ({ ...m })),
                               base.initialCount, base.usage, base.initialUsage, { ...base.sampling });
      this.sessions.set(copy.id, copy);
      return this.describe(copy);
    });
  }

  /**
   * Prompt: the reply text (streamed through onText) and the session's new usage.
   * Options: responseConstraint, omitResponseConstraintInput.
   */
  async prompt(sessionId, input, { responseConstraint = null, omitResponseConstraintInput = false } = {},
               { onText = null, signal = null } = {}) {
    const session = this._get(sessionId);
    checkConstraint(responseConstraint, omitResponseConstraintInput);
    const added = canonicalize(input, { allowSystem: false });
    if (responseConstraint != null && !omitResponseConstraintInput && added.length) {
      const last = added[added.length - 1];
      added[added.length - 1] = { ...last, content: last.content + schemaNote(responseConstraint) };
    }
    return session.enqueue(async () => {
      this._get(sessionId);
      const { result, overflowed } = await this._fitting(session, added, (messages) =>
        this.engine.complete(forEngine(messages), {
          schema: responseConstraint, onText, signal, ...session.sampling,
        }));
      session.messages.push(...added, { role: 'assistant', content: result.text });
      // 'length' is the window filling up, or the session's own cap on a reply
      // (maxTokens): only the first is an overflow.
      const cap = session.sampling.maxTokens;
      const capped = cap != null && result.completionTokens != null && result.completionTokens >= cap;
      const full = result.finish === 'length' && !capped;
      session.usage = full ? this.window
        : (result.promptTokens ?? session.usage) + (result.completionTokens ?? 0);
      if (full) this.onOverflow(session.id);
      return { text: result.text, ...this.describe(session), overflowed: overflowed || full };
    });
  }

  /** Append: read the messages now (as Chrome does), no reply. */
  async append(sessionId, input, { signal = null } = {}) {
    const session = this._get(sessionId);
    const added = canonicalize(input, { allowSystem: false });
    return session.enqueue(async () => {
      this._get(sessionId);
      const { result, overflowed } = await this._fitting(session, added, (messages) =>
        this.engine.complete(forEngine(messages), { prefill: true, signal }));
      session.messages.push(...added);
      session.usage = result.promptTokens ?? session.usage;
      return { ...this.describe(session), overflowed };
    });
  }

  /**
   * Run `attempt(messages)` with the session's messages plus `added`; when llama.cpp says
   * they do not fit, drop the oldest turn after the initial prompts and try again.
   */
  async _fitting(session, added, attempt) {
    let overflowed = false;
    for (;;) {
      try {
        const result = await attempt([...session.messages, ...added]);
        if (overflowed) this.onOverflow(session.id);
        return { result, overflowed };
      } catch (error) {
        if (error.name !== 'QuotaExceededError' || error.requested == null) throw error;
        if (!this._dropOldestTurn(session)) {
          throw namedError('QuotaExceededError', 'The input is too large for the context window.', {
            requested: Math.max(1, error.requested - session.initialUsage),
            quota: this.window - session.initialUsage,
          });
        }
        overflowed = true;
      }
    }
  }

  /** Drop the first turn after the initial prompts (up to the next user message). */
  _dropOldestTurn(session) {
    const start = session.initialCount;
    if (session.messages.length <= start) return false;
    let end = start + 1;
    while (end < session.messages.length && session.messages[end].role !== 'user') end++;
    session.messages.splice(start, end - start);
    return true;
  }

  /** Tokens `input` would add: its text's exact count plus the per-message overhead. */
  async measure(sessionId, input, { responseConstraint = null, omitResponseConstraintInput = false } = {}) {
    this._get(sessionId);
    checkConstraint(responseConstraint, omitResponseConstraintInput);
    const messages = canonicalize(input, { allowSystem: false });
    let text = messages.map((m) => m.content).join('\n\n');
    if (responseConstraint != null && !omitResponseConstraintInput) text += schemaNote(responseConstraint);
    const tokens = await this.engine.countTokens(text);
    if (tokens == null) return null;
    return tokens + messages.length * await this.engine.messageOverhead();
  }

  /** Destroy: later calls fail with InvalidStateError; calls in flight are aborted by the caller. */
  destroy(sessionId) {
    const session = this.sessions.get(sessionId);
    if (!session) return false;
    session.destroyed = true;
    this.sessions.delete(sessionId);
    return true;
  }

  destroyAll() {
    const ids = [...this.sessions.keys()];
    ids.forEach((id) => this.destroy(id));
    return ids.length;
  }
}
