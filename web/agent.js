/**
 * py-agent in a page of your own: one call starts the agent worker (Pyodide, py_agent and
 * the tool modules `python serve.py --tools PATH` serves) and the LLM host that gives it
 * Chrome's Prompt API from this page, and resolves to an agent.
 *
 *   import {createAgent} from './agent.js';   // or wherever the site is: '/my-agent/agent.js'
 *   const agent = await createAgent({tools: ['tea_tools'], onEvent: console.log});
 *   const {answer} = await agent.send('How long should green tea steep?');
 *   for await (const event of agent.stream('And black tea?')) {
 *     if (event.type === 'text') show(event.text);        // the answer as it streams in
 *   }
 *
 * createAgent(options), every option optional:
 *   tools          names of the tool modules to load (a module's file or folder name; the
 *                  demo's is 'demo_tools'); default: every module serve.py serves
 *   session        the session id send/stream/memory use by default ('main'); sessions
 *                  and memory persist in this origin's IndexedDB
 *   onEvent        (event) => {} for every agent event: {type, session_id, data}, with
 *                  type turn_started, tools_retrieved, thought, action, observation,
 *                  answer, memory_updated, ... (py_agent.events), and {type: 'error',
 *                  data: {where, message}} for a worker error after start
 *   bootTimeoutMs  (120 s), turnTimeoutMs (300 s; the turn is stopped then),
 *                  requestTimeoutMs (30 s) for the other calls
 *   workerURL      where the agent worker is served (default: worker/agent_worker.js beside
 *                  this file, so a page anywhere can use a site at any path)
 *   llm            options for the LLMHost (llm_host.js), e.g. {api: myLanguageModel}
 *   pageTools      tools of this page for the agent: a PageTools host (page_tools.js) or a
 *                  list of WebMCP-style tool dictionaries ({name, description, inputSchema,
 *                  execute, annotations}); the host is agent.pageTools either way
 *   webmcp         true: also offer the tools this page registers on document.modelContext
 *                  (WebMCP, where the browser has it)
 *   exposeTools    true: register the agent's own tools on document.modelContext, for the
 *                  browser's agents to call (a consequential one asks first: answer its
 *                  approval_requested event with agent.approve(decision, {question}))
 *
 * The agent: tools ([{name, description, signature, pinned}]), toolErrors ([{module,
 * message}] for tool modules that failed to load: the agent works without them),
 * session (get/set), send(text, {session, attachments}) -> the turn's result ({answer,
 * status, steps, ...}; attachments: Files or Blobs, images or sounds, at most 4, sent with
 * this turn only: docs/attachments.md), stream(text, {session, attachments}) -> async
 * iterator of the turn's events, then
 * {type: 'text', text} while the answer streams, then {type: 'result', result};
 * stop({session}), sessions(), memory({session}) ({summary, facts, recent_turns, ...}),
 * compact({session, focus}), transcript({session}), attachment(id, {session}) (a kept
 * attachment: {name, type, size, width, height, blob}, or null), modelInputs() (what the
 * model takes besides text: {image: {supported, reason}, audio: ...}), deleteSession(id), pageTools (the
 * PageTools host: register() and unregister() page tools at any time), availability()
 * (Chrome's model: 'available', 'downloadable', ... or 'unavailable'), close().
 * Failed calls reject with an Error whose name is the worker's (UnknownSessionError...).
 */
import {LLMHost} from './llm_host.js';
import {PageTools} from './page_tools.js';
import {Replies, withDeadline} from './replies.js';

// The site's worker, found from this module's own URL rather than the page's.
const DEFAULT_WORKER_URL = new URL('./worker/agent_worker.js', import.meta.url).href;

export async function createAgent(options = {}) {
  const agent = new Agent(options);
  try {
    await agent._boot(options.bootTimeoutMs ?? 120_000);
  } catch (error) {
    agent.close();
    throw error;
  }
  return agent;
}

function agentError(error) {
  const out = new Error(error?.message || 'the agent failed');
  out.name = error?.name || 'Error';
  return out;
}

/** The value of string field `key` of a JSON object still streaming in, or null. */
export function partialField(json, key) {
  const match = new RegExp(`"${key}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)`).exec(json);
  if (!match) return null;
  // Drop an escape cut in half at the end (an odd run of backslashes, maybe with part of
  // a \uXXXX), then let JSON unescape the rest.
  const tail = /(\\+)(u[0-9a-fA-F]{0,3})?$/.exec(match[1]);
  const body = tail && tail[1].length % 2
    ? match[1].slice(0, tail.index + tail[1].length - 1) : match[1];
  try { return JSON.parse(`"${body}"`); } catch { return body; }
}

class Agent {
  constructor({tools, session = 'main', onEvent, turnTimeoutMs = 300_000,
               requestTimeoutMs = 30_000, workerURL = DEFAULT_WORKER_URL, llm,
               pageTools, webmcp = false, exposeTools = false} = {}) {
    const url = new URL(workerURL, location.href);
    if (tools) url.searchParams.set('tools', [].concat(tools).join(','));
    this.session = session;
    this.tools = [];
    this.toolErrors = [];
    this._onEvent = onEvent;
    this._turnTimeoutMs = turnTimeoutMs;
    // Requests waiting for the worker's reply (docs/protocols.md), each with its timeout.
    this._replies = new Replies({prefix: 'agent', timeoutMs: requestTimeoutMs, toError: agentError});
    this._listeners = new Set();  // stream() consumers: (message) => void
    this.worker = new Worker(url, {type: 'module', name: 'py-agent'});
    this.llm = new LLMHost(llm);
    this.llm.attach(this.worker);
    this._chunks = (event) => { for (const listen of this._listeners) listen({chunk: event.detail}); };
    this.llm.addEventListener('chunk', this._chunks);
    this.pageTools = pageTools instanceof PageTools ? pageTools : new PageTools();
    for (const pageTool of Array.isArray(pageTools) ? pageTools : []) this.pageTools.register(pageTool);
    this._detachPageTools = this.pageTools.attach(this.worker);
    if (webmcp) this.pageTools.followModelContext();
    this._exposeTools = exposeTools;
    this.worker.addEventListener('message', (event) => this._receive(event.data));
  }

  _boot(timeoutMs) {
    const ready = new Promise((resolve, reject) => {
      this._booting = {resolve, reject};
      this.worker.addEventListener('error', (event) => {
        event.preventDefault();
        reject(new Error(`the agent worker failed to load: ${event.message || 'see the console'}`));
      });
    });
    return withDeadline(ready, timeoutMs, 'starting the agent').then(async (details) => {
      this.toolErrors = (details?.tool_errors ?? []).map(({module, message}) => ({module, message}));
      this.tools = await this._request('tools');
      if (this._exposeTools) this._unexpose = await this.pageTools.exposeAgentTools(this.worker);
      return this;
    });
  }

  _receive(message) {
    if (!message || typeof message !== 'object') return;
    if (message.type === 'boot' && message.phase === 'ready') {
      this._ready = true;
      this._booting?.resolve(message.details);
    } else if (message.type === 'error') {
      if (!this._ready) {
        this._booting?.reject(new Error(`the agent could not start (${message.where}): ${message.message}`));
      }
      this._emit({type: 'error', session_id: null, data: {where: message.where, message: message.message}});
    } else if (message.type === 'reply') {
      this._replies.settle(message);
    } else if (message.type === 'event') {
      this._emit(message.event);
    }
  }

  _emit(event) {
    try { this._onEvent?.(event); } catch (error) { console.error(error); }
    for (const listen of this._listeners) listen({event});
  }

  _request(type, fields = {}, timeoutMs = undefined, onTimeout = null) {
    return this._replies.request((id) => this.worker.postMessage({type, id, ...fields}),
                                 {timeoutMs, what: `the agent's ${type} request`, onTimeout});
  }

  /** Run one turn; resolves to its result ({answer, status, steps, ...}). `attachments`:
   *  Files or Blobs (images, sounds) sent with this turn only; the worker reads them. */
  send(text, {session = this.session, attachments = []} = {}) {
    const fields = {session_id: session, text};
    if (attachments.length) {
      fields.attachments = [...attachments].map((blob) => ({
        name: blob.name || 'attachment', type: blob.type || '', data: blob}));
    }
    return this._request('run', fields, this._turnTimeoutMs, () => this.stop({session}));
  }

  /** Run one turn, yielding its events as they come, the answer text as it streams
   *  ({type: 'text', text}), and last {type: 'result', result}. Leaving the loop early
   *  stops the turn. */
  async *stream(text, {session = this.session, attachments = []} = {}) {
    const queue = [];
    let wake = null;
    const push = (item) => { queue.push(item); wake?.(); };
    const listen = ({event, chunk}) => {
      if (event) {
        if (event.session_id === session) push(event);
        return;
      }
      if (chunk?.purpose !== 'step' || chunk.conversationId !== session) return;
      const answer = partialField(chunk.text, 'finalAnswer');
      if (answer && partialField(chunk.text, 'toolName') === 'none') push({type: 'text', text: answer});
    };
    this._listeners.add(listen);
    let finished = false;
    const done = this.send(text, {session, attachments}).then(
      (result) => push({type: 'result', result}), (error) => push({type: 'failed', error}))
      .finally(() => { finished = true; });
    try {
      for (;;) {
        if (!queue.length) await new Promise((resolve) => { wake = resolve; });
        wake = null;
        const item = queue.shift();
        if (item.type === 'failed') throw item.error;
        yield item;
        if (item.type === 'result') break;
      }
    } finally {
      this._listeners.delete(listen);
      if (!finished) this.stop({session}).catch(() => {});
      await done;
    }
  }

  /** Answer the agent's question before a consequential call: `question` is the `id` of
   *  its `approval_requested` event's data (or that data itself); `decision` 'once',
   *  'chat' or 'deny'. Several questions may wait at once, of any chats: each is answered
   *  on its own. Resolves true if that question was waiting. */
  approve(decision, {question} = {}) {
    const id = typeof question === 'object' && question !== null ? question.id : question;
    return this._request('approve', {question_id: id, decision});
  }

  stop({session = this.session} = {}) { return this._request('stop', {session_id: session}); }
  sessions() { return this._request('sessions'); }
  memory({session = this.session} = {}) { return this._request('memory', {session_id: session}); }
  transcript({session = this.session} = {}) { return this._request('transcript', {session_id: session}); }
  deleteSession(id) { return this._request('delete_session', {session_id: id}); }
  /** A kept attachment of a turn ({name, type, size, width, height, blob}), or null. */
  async attachment(id, {session = this.session} = {}) {
    const found = await this._request('attachment', {session_id: session, attachment_id: id});
    if (!found) return null;
    const {data, ...meta} = found;
    return {...meta, blob: new Blob([data], {type: meta.type || ''})};
  }
  modelInputs() { return this._request('model_inputs'); }
  compact({session = this.session, focus = ''} = {}) {
    return this._request('compact', {session_id: session, focus}, this._turnTimeoutMs);
  }
  async availability() { return (await this.llm.availability()).availability; }

  /** Stop the worker and free the model's sessions. */
  close() {
    this._unexpose?.();
    this._replies.close(new Error('the agent was closed'));
    this.llm.removeEventListener('chunk', this._chunks);
    this.llm.destroyAll();
    this._detachPageTools();
    this.worker.terminate();
  }
}
