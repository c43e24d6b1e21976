/**
 * Requests over a message channel, matched to their replies by id: the one table of
 * waiting requests for every JavaScript (and MicroPython) end that asks another thread
 * something (docs/protocols.md lists the channels). A plain ES module with no imports,
 * so a page, a module worker and the page's MicroPython (ui.json's js_modules) all load it.
 *
 *   const replies = new Replies({prefix: 'agent', timeoutMs: 30_000});
 *   const value = await replies.request((id) => worker.postMessage({type: 'memory', id}),
 *                                       {what: "the agent's memory request"});
 *   worker.onmessage = ({data}) => { if (data.type === 'reply') replies.settle(data); };
 *   replies.close(new Error('the agent was closed'));   // rejects every waiting request
 *
 * Each request gets a fresh id (`${prefix}${n}`) and waits at most its timeout
 * (`timeoutMs`; null: no timer, for a call that something else bounds, such as its
 * `signal`). On the timeout it is dropped, `onTimeout()` runs, and it rejects with a
 * TimeoutError that names `what`. An abort of `signal` drops it, runs `onAbort()` (to
 * tell the other side) and rejects with the signal's reason. A reply that comes after
 * any of these finds no request and is ignored. `onEvent(message)` receives what the
 * other side sends about a request before its reply (see event()). close() never waits:
 * it rejects every waiting request and, from then on, every new one at once.
 */

/** An Error named `name` (a DOMException's names, such as TimeoutError or AbortError). */
function named(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** What an aborted request rejects with: the signal's reason, as fetch() does. */
function abortReason(signal) {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

/** `promise`, rejected with a TimeoutError naming `what` after `ms` milliseconds (null:
 *  never); `onTimeout()` runs first. For a wait that is not a request (a boot). */
export function withDeadline(promise, ms, what, onTimeout = null) {
  if (ms == null) return promise;
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => {
      try { onTimeout?.(); } catch (error) { console.error(error); }
      reject(named('TimeoutError', `${what} took longer than ${Math.round(ms / 1000)} s`));
    }, ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export class Replies {
  /**
   * @param {object} [options]
   * @param {string} [options.prefix] ids are `${prefix}1`, `${prefix}2`, ...
   * @param {number|null} [options.timeoutMs] each request's timeout unless it names its own
   * @param {function} [options.toError] (the reply's `error` field) -> what the request
   *   rejects with; default: an Error with the reply's name and message
   */
  constructor({prefix = 'r', timeoutMs = null, toError = null} = {}) {
    this.prefix = prefix;
    this.timeoutMs = timeoutMs;
    this.toError = toError ?? ((error) => named(error?.name || 'Error',
                                                error?.message || 'the request failed'));
    this._waiting = new Map();   // id -> {resolve, reject, onEvent, cleanup}
    this._count = 0;
    this._closed = null;         // the error close() was given
  }

  /** How many requests wait for their reply. */
  get size() { return this._waiting.size; }

  /** Whether a request with this id waits for its reply. */
  has(id) { return this._waiting.has(id); }

  /**
   * Send one request: `send(id)` posts it (a throw rejects the request); the promise
   * resolves with the reply's value (see settle()).
   * @param {function} send (id) => void
   * @param {object} [options] {timeoutMs, what, onTimeout, signal, onAbort, onEvent}
   */
  request(send, {timeoutMs = this.timeoutMs, what = 'the request', onTimeout = null,
                 signal = null, onAbort = null, onEvent = null} = {}) {
    if (this._closed) return Promise.reject(this._closed);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const id = `${this.prefix}${++this._count}`;
    return new Promise((resolve, reject) => {
      let timer = null;
      const aborted = () => {
        if (!this._drop(id)) return;
        try { onAbort?.(); } catch (error) { console.error(error); }
        reject(abortReason(signal));
      };
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
      };
      this._waiting.set(id, {resolve, reject, onEvent, cleanup});
      if (timeoutMs != null) {
        timer = setTimeout(() => {
          if (!this._drop(id)) return;
          try { onTimeout?.(); } catch (error) { console.error(error); }
          reject(named('TimeoutError', `${what} took longer than ${Math.round(timeoutMs / 1000)} s`));
        }, timeoutMs);
      }
      signal?.addEventListener('abort', aborted, {once: true});
      try {
        send(id);
      } catch (error) {
        if (this._drop(id)) reject(error);
      }
    });
  }

  /** Settle the request a reply `{id, ok, value}` or `{id, ok: false, error}` answers:
   *  resolve with `value`, or reject with toError(error). False if none waits for it. */
  settle(reply) {
    return reply?.ok ? this.resolve(reply.id, reply.value)
      : this.reject(reply?.id, this.toError(reply?.error));
  }

  /** Resolve the request `id` with `value`; false if none waits for it. */
  resolve(id, value) {
    const waiting = this._take(id);
    waiting?.resolve(value);
    return Boolean(waiting);
  }

  /** Reject the request `id` with `error`; false if none waits for it. */
  reject(id, error) {
    const waiting = this._take(id);
    waiting?.reject(error);
    return Boolean(waiting);
  }

  /** Hand `message` (news of request `id` before its reply: progress, a streamed piece)
   *  to that request's onEvent; false if none waits for it. */
  event(id, message) {
    const waiting = this._waiting.get(id);
    if (!waiting) return false;
    try { waiting.onEvent?.(message); } catch (error) { console.error(error); }
    return true;
  }

  /** Reject every waiting request with `error`, and every later one at once. */
  close(error = named('InvalidStateError', 'the channel was closed')) {
    this._closed = error;
    const waiting = [...this._waiting.keys()];
    for (const id of waiting) this.reject(id, error);
  }

  _take(id) {
    const waiting = this._waiting.get(id);
    if (!waiting) return null;
    this._waiting.delete(id);
    waiting.cleanup();
    return waiting;
  }

  /** Drop request `id` without settling it; true if it was waiting. */
  _drop(id) { return Boolean(this._take(id)); }
}
