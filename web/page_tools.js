/**
 * Page tools: tools that live on the page's main thread (they read or change the page),
 * held here and offered to the agent worker, which lists and calls them through this host
 * as it reaches Chrome's Prompt API through the LLM host (llm_host.js).
 *
 * A page tool is described as WebMCP describes one (the ModelContextTool dictionary):
 *
 *   {name, title?, description, inputSchema?, execute(input, {signal}) -> Promise<result>,
 *    annotations?: {readOnlyHint?, untrustedContentHint?, ...}}
 *
 * `name`: 1-128 ASCII letters, digits, '_', '-' or '.'; `inputSchema`: a JSON Schema of
 * type object (none: the tool takes no input); `execute` gets the checked input and an
 * AbortSignal that fires when the user stops the turn or the call times out. Its result is
 * an MCP-style tool result ({content: [{type: 'text', text}, ...], structuredContent?,
 * isError?}), a string, or any JSON value. A tool without readOnlyHint: true is
 * consequential: the agent asks the user before each call.
 *
 *   import {PageTools} from './page_tools.js';
 *   const tools = new PageTools();
 *   tools.attach(worker);                        // the agent worker
 *   const unregister = tools.register({name: 'page_title', description: 'The page title',
 *     annotations: {readOnlyHint: true}, execute: async () => document.title});
 *   tools.followModelContext();                  // and the page's WebMCP tools, if any
 *   tools.addEventListener('toolchange', () => console.log(tools.list()));
 *
 * WebMCP (document.modelContext, feature-detected): followModelContext() offers the agent
 * the tools this page registers there (read with getTools(), called with executeTool(),
 * followed on 'toolchange'); exposeToModelContext(tools, call) registers the agent's own
 * tools there, for the browser's agents to call.
 *
 * Protocol (worker <-> host, over worker.postMessage):
 *   request  {type: 'page-tools', id, method: 'list'}
 *            {type: 'page-tools', id, method: 'call', name, input}
 *            {type: 'page-tools', method: 'cancel', callId}        (no reply: aborts call `callId`)
 *   reply    {type: 'page-tools-result', id, ok: true, value}      (list: tool descriptions; call: the result)
 *            {type: 'page-tools-result', id, ok: false, error: {name, message}}
 *   event    {type: 'page-tools-event', event: 'toolchange'}        (a tool came or went: list again;
 *            also sent on attach() when the host has tools already)
 * A tool's description in `list` is {name, title, description, inputSchema, annotations, source}
 * (source 'page' for register(), 'webmcp' for the page's document.modelContext tools).
 */

import {Replies} from './replies.js';

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
// What crosses to the worker at most; the agent caps observations further.
export const MAX_RESULT_CHARS = 1_000_000;

function toolError(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

const isBinary = (v) => v instanceof Uint8Array || (typeof Blob === 'function' && v instanceof Blob);

/** A value the worker can receive: JSON-clean, at most MAX_RESULT_CHARS of it; an object's
 *  binary fields (a Uint8Array or a Blob: the tab reader's pictures) cross as they are. */
export function transferable(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'object' && !Array.isArray(value) && Object.values(value).some(isBinary)) {
    const entries = Object.entries(value);
    return {...transferable(Object.fromEntries(entries.filter(([, v]) => !isBinary(v)))),
            ...Object.fromEntries(entries.filter(([, v]) => isBinary(v)))};
  }
  if (typeof value === 'string') {
    return value.length > MAX_RESULT_CHARS ? value.slice(0, MAX_RESULT_CHARS) : value;
  }
  let text;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return `(the tool returned a value that cannot be sent: ${error.message})`;
  }
  if (text === undefined) return String(value);
  if (text.length > MAX_RESULT_CHARS) return text.slice(0, MAX_RESULT_CHARS);
  return JSON.parse(text);
}

function described(entry) {
  const {tool, source} = entry;
  return {name: tool.name, title: tool.title ?? '', description: tool.description,
          inputSchema: tool.inputSchema ?? {type: 'object', properties: {}}, annotations: {...(tool.annotations ?? {})}, source};
}

/** Check a tool dictionary as WebMCP's registerTool() does; a clean copy of it. */
function checkedTool(tool) {
  if (!tool || typeof tool !== 'object') throw new TypeError('a page tool is an object');
  const {name, title, description, inputSchema, execute, annotations} = tool;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new TypeError(`page tool name ${JSON.stringify(name)}: 1-128 letters, digits, '_', '-' or '.'`);
  }
  if (typeof description !== 'string' || !description.trim()) {
    throw new TypeError(`page tool ${name}: the description must be a non-empty string`);
  }
  if (typeof execute !== 'function') throw new TypeError(`page tool ${name}: execute must be a function`);
  let schema = null;
  if (inputSchema !== undefined && inputSchema !== null) {
    const text = JSON.stringify(inputSchema);   // throws for a circular schema, as WebMCP does
    if (text === undefined) throw new TypeError(`page tool ${name}: inputSchema is not JSON`);
    schema = JSON.parse(text);
  }
  return {name, title: typeof title === 'string' ? title : '', description, inputSchema: schema,
          execute, annotations: annotations && typeof annotations === 'object' ? {...annotations} : {}};
}

/** Chrome's executeTool() resolves to a string: the tool's string result as it is, any
 * other result as its JSON. Read back into the value the tool returned. */
export function readExecuteResult(value) {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (!text.startsWith('{') && !text.startsWith('[')) return value;
  try { return JSON.parse(text); } catch { return value; }
}

export class PageTools extends EventTarget {
  constructor() {
    super();
    this._tools = new Map();     // name -> {tool, source}
    this._ports = new Set();
    this._calls = new Map();     // call id -> AbortController
    this._followed = null;       // the stop function of followModelContext()
  }

  /**
   * Offer `tool` (the dictionary above) to the agent. Throws a TypeError for a tool WebMCP
   * would refuse, an InvalidStateError for a name already taken. Returns a function that
   * unregisters it.
   */
  register(tool, {source = 'page'} = {}) {
    const checked = checkedTool(tool);
    if (this._tools.has(checked.name)) {
      throw toolError('InvalidStateError', `a page tool named ${checked.name} is already registered`);
    }
    const entry = {tool: checked, source};
    this._tools.set(checked.name, entry);
    this._changed();
    return () => { if (this._tools.get(checked.name) === entry) this.unregister(checked.name); };
  }

  /** Withdraw a tool; true if it was there. */
  unregister(name) {
    const had = this._tools.delete(name);
    if (had) this._changed();
    return had;
  }

  /** The tools as the worker sees them: [{name, title, description, inputSchema, annotations, source}]. */
  list() {
    return [...this._tools.values()].map(described);
  }

  /** Run tool `name` with `input`; the result as the worker receives it. */
  async call(name, input = {}, {signal} = {}) {
    const entry = this._tools.get(name);
    if (!entry) throw toolError('NotFoundError', `no page tool named ${name} (it was withdrawn)`);
    signal?.throwIfAborted();
    const work = Promise.resolve().then(() => entry.tool.execute(input ?? {}, {signal}));
    if (!signal) return transferable(await work);
    const stopped = new Promise((_, reject) => {
      signal.addEventListener('abort', () => reject(toolError('AbortError', 'the call was stopped')),
                              {once: true});
    });
    return transferable(await Promise.race([work, stopped]));
  }

  // ------------------------------------------------------------ the worker

  /** Serve the worker's page-tools requests; returns a function that detaches. */
  attach(target) {
    const listener = (event) => {
      const message = event.data;
      if (!message || message.type !== 'page-tools') return;
      if (message.method === 'cancel') {
        this._calls.get(message.callId)?.abort();
        return;
      }
      this._serve(message).then((reply) => target.postMessage(reply));
    };
    target.addEventListener('message', listener);
    if (typeof target.start === 'function') target.start();
    this._ports.add(target);
    // The worker lists the page's tools when told they changed: tell it of those here now.
    if (this._tools.size) target.postMessage({type: 'page-tools-event', event: 'toolchange'});
    return () => { target.removeEventListener('message', listener); this._ports.delete(target); };
  }

  async _serve({id, method, name, input}) {
    try {
      let value;
      if (method === 'list') {
        value = this.list();
      } else if (method === 'call') {
        const controller = new AbortController();
        this._calls.set(id, controller);
        try {
          value = await this.call(name, input, {signal: controller.signal});
        } finally {
          this._calls.delete(id);
        }
      } else {
        throw new TypeError(`unknown page-tools method: ${method}`);
      }
      return {type: 'page-tools-result', id, ok: true, value: value === undefined ? null : value};
    } catch (error) {
      return {type: 'page-tools-result', id, ok: false,
              error: {name: error?.name || 'Error', message: String(error?.message ?? error)}};
    }
  }

  _changed() {
    this.dispatchEvent(new CustomEvent('toolchange', {detail: {tools: this.list()}}));
    for (const port of this._ports) port.postMessage({type: 'page-tools-event', event: 'toolchange'});
  }

  // ------------------------------------------------------------ WebMCP

  /**
   * Offer the agent the tools this page registers with WebMCP (`modelContext`, by default
   * document.modelContext where the browser has it), kept in step on its 'toolchange'
   * event. Returns a function that stops following (and withdraws them); false when the
   * browser has no WebMCP or no way for the page to read its tools (getTools).
   */
  followModelContext(modelContext = globalThis.document?.modelContext) {
    if (!modelContext || typeof modelContext.getTools !== 'function' ||
        typeof modelContext.executeTool !== 'function') return false;
    this._followed?.();
    let generation = 0;
    const mine = new Set();
    const sync = async () => {
      const now = ++generation;
      let registered;
      try {
        registered = await modelContext.getTools();
      } catch (error) {
        console.warn('[page tools] document.modelContext.getTools() failed:', error);
        return;
      }
      if (now !== generation) return;   // a later change is being read
      const seen = new Set();
      for (const found of registered ?? []) {
        if (!found || typeof found.name !== 'string' || this._exposed?.has(found.name)) continue;
        seen.add(found.name);
        const current = this._tools.get(found.name);
        if (current && current.source !== 'webmcp') continue;   // a register()ed tool wins
        if (current && current.registered === found) continue;
        if (current) this._tools.delete(found.name);
        try {
          const tool = checkedTool({
            name: found.name, title: found.title, description: found.description,
            inputSchema: typeof found.inputSchema === 'string' && found.inputSchema
              ? JSON.parse(found.inputSchema) : found.inputSchema ?? null,
            annotations: found.annotations ?? {},
            execute: async (input) => readExecuteResult(await modelContext.executeTool(found, input)),
          });
          this._tools.set(tool.name, {tool, source: 'webmcp', registered: found});
          mine.add(tool.name);
        } catch (error) {
          console.warn(`[page tools] WebMCP tool ${found.name} skipped:`, error.message);
        }
      }
      for (const name of [...mine]) {
        if (!seen.has(name) && this._tools.get(name)?.source === 'webmcp') {
          this._tools.delete(name);
          mine.delete(name);
        }
      }
      this._changed();
    };
    modelContext.addEventListener('toolchange', sync);
    const ready = sync();
    this._followed = () => {
      modelContext.removeEventListener('toolchange', sync);
      generation++;
      for (const name of mine) if (this._tools.get(name)?.source === 'webmcp') this._tools.delete(name);
      this._followed = null;
      this._changed();
    };
    this.followed = ready;   // resolves once the first read is done (for tests and pages)
    return this._followed;
  }

  /**
   * Register the tools of the agent in `worker` on this page's WebMCP, for the browser's
   * agents to call: each call runs in the worker (`call_tool`), through the agent's
   * approval gate (a consequential tool asks the user first, as in a chat: `session`
   * names the chat the question belongs to). Returns a function that unregisters them;
   * false without WebMCP.
   */
  async exposeAgentTools(worker, {session = 'webmcp', modelContext = globalThis.document?.modelContext,
                                  timeoutMs = 300_000} = {}) {
    if (!modelContext || typeof modelContext.registerTool !== 'function') return false;
    const replies = new Replies({prefix: 'expose', timeoutMs});
    const listener = (event) => { if (event.data?.type === 'reply') replies.settle(event.data); };
    worker.addEventListener('message', listener);
    const ask = (type, fields) => replies.request((id) => worker.postMessage({type, id, ...fields}),
                                                  {what: `the agent's ${type} request`});
    // Not the page's own tools (it has them already) nor the agent's built-ins (its memory).
    const tools = (await ask('tools', {})).filter((t) => t.source !== 'page' && t.source !== 'builtin');
    const unregister = await this.exposeToModelContext(
      tools.map((t) => ({name: t.name, description: t.description, inputSchema: t.input_schema,
                         readOnly: !t.confirm})),
      (name, input) => ask('call_tool', {name, input, session_id: session}), modelContext);
    return () => {
      if (unregister) unregister();
      worker.removeEventListener('message', listener);
      replies.close(new Error('the tools were withdrawn'));
    };
  }

  /**
   * Register the agent's tools on this page's WebMCP (`modelContext`), for the browser's
   * agents to call. `tools`: [{name, description, inputSchema, readOnly}]; `call(name,
   * input)` runs one (through the agent, which asks the user first for a consequential
   * one) and resolves to its text. Returns a function that unregisters them; false without
   * WebMCP.
   */
  async exposeToModelContext(tools, call, modelContext = globalThis.document?.modelContext) {
    if (!modelContext || typeof modelContext.registerTool !== 'function') return false;
    const controller = new AbortController();
    this._exposed = this._exposed ?? new Set();
    for (const tool of tools) {
      if (this._tools.has(tool.name)) continue;   // a page tool of that name is the page's
      this._exposed.add(tool.name);
      try {
        await modelContext.registerTool({
          name: tool.name, description: tool.description,
          inputSchema: tool.inputSchema ?? {type: 'object', properties: {}},
          annotations: {readOnlyHint: Boolean(tool.readOnly)},
          execute: async (input) => ({content: [{type: 'text', text: String(await call(tool.name, input ?? {}))}]}),
        }, {signal: controller.signal});
      } catch (error) {
        this._exposed.delete(tool.name);
        console.warn(`[page tools] could not register ${tool.name} on document.modelContext:`, error.message);
      }
    }
    return () => { controller.abort(); this._exposed?.clear(); };
  }
}
