// Tool servers (MCP over Streamable HTTP) from the agent worker, with the official MCP
// client SDK (@modelcontextprotocol/client, bundled by serve.py into
// vendor/mcp-client-<version>/mcp_client.mjs). The worker's Python
// (py_agent/browser/tool_servers.py) connects through here and gets plain objects back:
//
//   const server = await connect(clientURL, url, {token, timeoutMs, onToolsChanged, onClosed});
//   server.info                     -> {name, version, protocolVersion, era}
//   await server.listTools()        -> [{name, title, description, inputSchema, annotations}]
//                                      (every page of tools/list); server.skipped: the
//                                      tools it held that could not be taken, and why
//   await server.callTool(name, args, callId, timeoutMs) -> the CallToolResult, JSON-clean
//   server.cancel(callId)           -> aborts that call (the SDK tells the server: notifications/cancelled)
//   await server.close()
//
// The SDK probes with server/discover (the 2026-07-28 revision) and falls back to the
// initialize handshake with Mcp-Session-Id (2025 revisions), whichever the server answers.
//
// A failure rejects with an Error whose `facts` is a plain object: what was observed, never
// a judgement (py_agent/mcp/failures.py, FailureFacts, decides the kind and the words, the
// same as in CPython; py_agent/browser/tool_servers.py hands it the facts): {url, stage
// ('connect', 'list' or 'call'), http_status, content_type, network_error, csp_blocked,
// opaque_reachable, cross_origin, timed_out, timeout_s, aborted, jsonrpc_code, error_type
// ('protocol': a JSON-RPC error the server sent; 'closed'; 'invalid-reply'; 'address'),
// detail (the SDK's or server's words, only shown), in_page}. Only what needs the browser
// is done here: the CSP report, the no-cors probe, watching fetch, and the tools/list
// clean-up (worker/tool_lists.js) the SDK needs before it parses.

import {cleanToolsList, rpcRequest} from './tool_lists.js';

let sdk = null;   // the bundled SDK module, imported once

// SdkErrorCode's values (the SDK documents them as stable string codes).
const REQUEST_TIMEOUT = 'REQUEST_TIMEOUT';
const CONNECTION_CLOSED = 'CONNECTION_CLOSED';
const INVALID_RESULT = 'INVALID_RESULT';
const UNEXPECTED_CONTENT = 'CLIENT_HTTP_UNEXPECTED_CONTENT';
const PARSE_ERROR = -32700;   // JSON-RPC; what a reply tool_lists.js refused becomes

// Connections this page's Content-Security-Policy refused (connect-src), by origin.
const cspBlocked = new Set();
globalThis.addEventListener?.('securitypolicyviolation', (event) => {
  if (event.effectiveDirective === 'connect-src' || event.violatedDirective?.startsWith('connect-src')) {
    try { cspBlocked.add(new URL(event.blockedURI).origin); } catch { /* not a URL */ }
  }
});

/** The Error this module rejects with: its facts, for the worker's Python to explain. */
function failure(facts) {
  const error = new Error(facts.detail || `tool server failure (${facts.stage})`);
  error.name = 'ToolServerFailure';
  error.facts = {in_page: true, ...facts};
  return error;
}

function crossOrigin(url) {
  try { return new URL(url).origin !== globalThis.location?.origin; } catch { return true; }
}

/** The network facts of a request to `url` that got no HTTP answer: whether this page's
 * CSP refused it, and whether a no-cors request gets through (the server is there, but
 * does not allow this page's origin: CORS). */
async function networkFacts(url) {
  const origin = new URL(url).origin;
  await new Promise((resolve) => setTimeout(resolve, 20));   // a CSP report comes async
  if (cspBlocked.has(origin)) return {network_error: true, csp_blocked: true};
  try {
    // An opaque request is not subject to CORS: if it gets through, the server is there
    // and refused this page's origin. (A cross-origin isolated page, as serve.py's, gets
    // no opaque response without the server's Cross-Origin-Resource-Policy: there the
    // browser tells a refusal from silence in no way a page can read.)
    await fetch(url, {method: 'GET', mode: 'no-cors', cache: 'no-store'});
    return {network_error: true, opaque_reachable: true};
  } catch {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return {network_error: true, csp_blocked: cspBlocked.has(origin)};
  }
}

/** A fetch for the SDK's transport that notes what answered each JSON-RPC request (into
 * `seen`: the last one's status, content type, a network failure, a refused reply) and
 * cleans tools/list replies (worker/tool_lists.js; unusable tools into seen.skipped). */
function watchingFetch(seen) {
  return async (input, init) => {
    const rpc = init?.method === 'POST' ? rpcRequest(init.body) : null;
    if (!rpc) return fetch(input, init);   // notifications, the GET stream, DELETE
    const [requestId, method] = rpc;
    let response;
    try {
      response = await fetch(input, init);
    } catch (error) {
      if (!init?.signal?.aborted) seen.network = true;   // not our own abort
      throw error;
    }
    Object.assign(seen, {network: false, status: response.status, refused: '',
                         contentType: response.headers.get('content-type') || ''});
    if (!response.ok || method !== 'tools/list') return response;
    const cleaned = cleanToolsList(await response.text(), seen.contentType, requestId, seen.skipped);
    seen.refused = cleaned.refusal;
    const headers = new Headers(response.headers);
    headers.set('content-type', cleaned.contentType);
    headers.delete('content-length');
    return new Response(cleaned.text, {status: response.status, statusText: response.statusText,
                                       headers});
  };
}

/** The facts of `error`, thrown by the SDK while talking to `url` at `stage`. */
async function factsOf(error, url, stage, seen, {timeoutMs = null, aborted = false} = {}) {
  const facts = {url, stage, cross_origin: crossOrigin(url), token_sent: Boolean(seen.tokenSent),
                 detail: String(error?.message ?? error ?? '').slice(0, 1000)};
  if (aborted) return {...facts, aborted: true};
  // the typed errors, the outermost first, then their causes
  for (let e = error, depth = 0; e && depth < 5; e = e.cause, depth += 1) {
    if (sdk.ProtocolError.isInstance(e)) {
      if (e.code === PARSE_ERROR && seen.refused) {   // a reply tool_lists.js did not read
        Object.assign(facts, {error_type: 'invalid-reply', detail: seen.refused});
      } else {
        Object.assign(facts, {error_type: 'protocol', jsonrpc_code: e.code, detail: e.message});
      }
      break;
    }
    if (sdk.SdkHttpError.isInstance(e) && typeof e.status === 'number') {
      facts.http_status = e.status;
      break;
    }
    if (sdk.SdkError.isInstance(e)) {
      if (e.code === REQUEST_TIMEOUT) {
        Object.assign(facts, {timed_out: true, timeout_s: timeoutMs / 1000});
        break;
      }
      if (e.code === CONNECTION_CLOSED) { facts.error_type = 'closed'; break; }
      if (e.code === INVALID_RESULT) { facts.error_type = 'invalid-reply'; break; }
      if (e.code === UNEXPECTED_CONTENT) {
        facts.content_type = String(e.data?.contentType ?? '');
        break;
      }
    }
    if (e instanceof SyntaxError) { facts.error_type = 'invalid-reply'; break; }
  }
  if (seen.network) Object.assign(facts, await networkFacts(url));
  if (facts.http_status === undefined && seen.status != null) facts.http_status = seen.status;
  if (facts.http_status === seen.status && !facts.content_type) facts.content_type = seen.contentType;
  return facts;
}

/** A value the worker's Python can take: JSON-clean. */
function plain(value) {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

export async function connect(clientURL, url, {token = '', timeoutMs = 30_000,
                                               onToolsChanged = null, onClosed = null} = {}) {
  sdk ??= await import(clientURL);
  let parsed = null;
  try { parsed = new URL(url); } catch { /* below */ }
  if (!parsed || !/^https?:$/.test(parsed.protocol)) {
    throw failure({url, stage: 'connect', error_type: 'address', detail: 'not an http(s) address'});
  }
  const seen = {skipped: [], status: null, contentType: '', network: false, refused: '',
                tokenSent: Boolean(token)};
  const fresh = () => Object.assign(seen, {status: null, contentType: '', network: false, refused: ''});
  const headers = token ? {Authorization: `Bearer ${token}`} : {};
  const transport = new sdk.StreamableHTTPClientTransport(parsed, {
    fetch: watchingFetch(seen), requestInit: {headers}});
  const client = new sdk.Client({name: 'py-agent', version: '0.1.0'}, {
    versionNegotiation: {mode: 'auto'},
    listChanged: onToolsChanged ? {tools: {onChanged: () => onToolsChanged()}} : undefined,
  });
  let closing = false;
  client.onclose = () => { if (!closing) onClosed?.(); };
  try {
    await client.connect(transport, {timeout: timeoutMs});
  } catch (error) {
    client.close().catch(() => {});
    throw failure(await factsOf(error, url, 'connect', seen, {timeoutMs}));
  }
  const calls = new Map();   // call id -> AbortController
  const server = client.getServerVersion() ?? {};
  return {
    info: {name: server.name || parsed.host, title: server.title || '',
           version: server.version || '',
           protocolVersion: client.getNegotiatedProtocolVersion?.() ?? '',
           era: client.getProtocolEra?.() ?? ''},
    skipped: seen.skipped,   // the tools the last list held that could not be taken, and why
    async listTools() {
      seen.skipped.length = 0;
      fresh();
      const listMs = timeoutMs;   // every page within it
      try {
        const {tools} = await client.listTools(undefined, {
          timeout: listMs, signal: AbortSignal.timeout(listMs)});
        return plain((tools ?? []).map((t) => ({
          name: t.name, title: t.title ?? t.annotations?.title ?? '',
          description: t.description ?? '', inputSchema: t.inputSchema ?? null,
          annotations: t.annotations ?? {}})));
      } catch (error) {
        throw failure(await factsOf(error, url, 'list', seen, {timeoutMs: listMs}));
      }
    },
    async callTool(name, args, callId, callTimeoutMs = timeoutMs) {
      const controller = new AbortController();
      calls.set(callId, controller);
      fresh();
      try {
        return plain(await client.callTool({name, arguments: args ?? {}},
                                           {signal: controller.signal, timeout: callTimeoutMs}));
      } catch (error) {
        throw failure(await factsOf(error, url, 'call', seen, {
          timeoutMs: callTimeoutMs, aborted: controller.signal.aborted}));
      } finally {
        calls.delete(callId);
      }
    },
    cancel(callId) {
      calls.get(callId)?.abort();
    },
    async close() {
      closing = true;
      for (const controller of calls.values()) controller.abort();
      try { await transport.terminateSession?.(); } catch { /* the server may be gone */ }
      await client.close().catch(() => {});
    },
  };
}
