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
// Failures reject with an Error whose `kind` and message say what the user can do:
// 'unreachable', 'cors' (naming the header the server must send), 'csp' (this page may
// not connect there), 'unauthorized' (401: a token is needed), 'forbidden' (403),
// 'not-mcp', 'malformed', 'timeout', 'closed'.

let sdk = null;   // the bundled SDK module, imported once

// Connections this page's Content-Security-Policy refused (connect-src), by origin.
const cspBlocked = new Set();
globalThis.addEventListener?.('securitypolicyviolation', (event) => {
  if (event.effectiveDirective === 'connect-src' || event.violatedDirective?.startsWith('connect-src')) {
    try { cspBlocked.add(new URL(event.blockedURI).origin); } catch { /* not a URL */ }
  }
});

function failure(kind, message) {
  const error = new Error(message);
  error.name = 'ToolServerError';
  error.kind = kind;
  return error;
}

const CORS_HEADERS = 'Access-Control-Allow-Origin (this page\'s origin or *), ' +
  'Access-Control-Allow-Headers (content-type, authorization, mcp-session-id, ' +
  'mcp-protocol-version, last-event-id) and Access-Control-Expose-Headers (mcp-session-id)';

/** Why a request to `url` failed at the network level: CSP, CORS or unreachable. */
async function networkFailure(url) {
  const origin = new URL(url).origin;
  await new Promise((resolve) => setTimeout(resolve, 20));   // a CSP report comes async
  if (cspBlocked.has(origin)) {
    return failure('csp', `This page may not connect to ${origin}: its Content-Security-` +
      `Policy allows only the tool servers serve.py was started with. Restart it with ` +
      `--mcp ${url}`);
  }
  try {
    // An opaque request is not subject to CORS: if it gets through, the server is there
    // and refused this page's origin. (A cross-origin isolated page, as serve.py's, gets
    // no opaque response without the server's Cross-Origin-Resource-Policy: there the
    // browser tells a refusal from silence in no way a page can read.)
    await fetch(url, {method: 'GET', mode: 'no-cors', cache: 'no-store'});
    return failure('cors', `The tool server at ${url} is running but does not allow this ` +
      `page to call it (CORS). The server must send ${CORS_HEADERS}.`);
  } catch {
    if (cspBlocked.has(origin)) return networkFailure(url);
    return failure('unreachable', `The tool server at ${url} cannot be reached from this ` +
      'page. Either it is not running (check the address), or it does not allow this page ' +
      `to call it (CORS): then the server must send ${CORS_HEADERS}.`);
  }
}

// The SDK refuses a whole tools/list reply for one tool it cannot take (a schema not of
// type object, no name): such tools are taken out of the reply here, and named to the
// user, so that the server's other tools still work (py_agent/mcp/tool_lists.py does
// the same in CPython).
function unusable(tool) {
  if (!tool || typeof tool !== 'object') return 'it is not an object';
  if (typeof tool.name !== 'string' || !tool.name) return 'it has no name';
  const schema = tool.inputSchema;
  if (!schema || typeof schema !== 'object' || schema.type !== 'object') {
    return `its input schema must be of type 'object', not ${JSON.stringify(schema?.type ?? typeof schema)}`;
  }
  if ('description' in tool && typeof tool.description !== 'string') return 'its description is not text';
  return null;
}

function sanitizeMessage(message, skipped) {
  const tools = message?.result?.tools;
  if (!Array.isArray(tools)) return message;
  const kept = [];
  for (const tool of tools) {
    const why = unusable(tool);
    if (why) skipped.push(`tool ${JSON.stringify(tool?.name ?? null)} skipped: ${why}`);
    else kept.push(tool);
  }
  return {...message, result: {...message.result, tools: kept}};
}

function sanitizeBody(text, contentType, skipped) {
  try {
    if (contentType.includes('event-stream')) {
      return text.split('\n\n').map((event) => {
        const lines = event.split('\n');
        const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
        if (!data) return event;
        return [...lines.filter((l) => !l.startsWith('data:')),
                `data: ${JSON.stringify(sanitizeMessage(JSON.parse(data), skipped))}`].join('\n');
      }).join('\n\n');
    }
    const message = JSON.parse(text);
    return JSON.stringify(Array.isArray(message) ? message.map((m) => sanitizeMessage(m, skipped))
                                                 : sanitizeMessage(message, skipped));
  } catch {
    return text;   // unreadable here: the SDK says what is wrong with it
  }
}

function isToolsList(init) {
  if (init?.method !== 'POST' || typeof init.body !== 'string') return false;
  try { return JSON.parse(init.body)?.method === 'tools/list'; } catch { return false; }
}

/** A fetch for the SDK's transport that remembers the last HTTP answer (for messages) and
 * takes unusable tools out of tools/list replies (into seen.skipped). */
function watchingFetch(seen) {
  return async (input, init) => {
    let response;
    try {
      response = await fetch(input, init);
    } catch (error) {
      if (error?.name !== 'AbortError') seen.network = true;
      throw error;
    }
    seen.status = response.status;
    seen.contentType = response.headers.get('content-type') || '';
    if (!response.ok || !isToolsList(init)) return response;
    const text = sanitizeBody(await response.text(), seen.contentType, seen.skipped);
    return new Response(text, {status: response.status, statusText: response.statusText,
                               headers: response.headers});
  };
}

/** The error to show for `error`, thrown while talking to `url`. */
async function explain(error, url, seen) {
  if (error?.kind) return error;
  const text = String(error?.message ?? error);
  if (seen.network) return networkFailure(url);
  if (seen.status === 401) {
    return failure('unauthorized', `The tool server at ${url} needs a token (HTTP 401): ` +
      'give one (a bearer token) with the server\'s address.');
  }
  if (seen.status === 403) {
    return failure('forbidden', `The tool server at ${url} refused the token (HTTP 403): ` +
      'check that it is right and allows these tools.');
  }
  if (seen.status === 404 || seen.status === 405 || seen.status === 415 ||
      (seen.status && seen.contentType && !/json|event-stream/.test(seen.contentType))) {
    return failure('not-mcp', `${url} does not answer as an MCP server (HTTP ${seen.status}` +
      `${seen.contentType ? `, ${seen.contentType.split(';')[0]}` : ''}): check the address ` +
      '(it usually ends in /mcp).');
  }
  if (error?.name === 'TimeoutError' || /timed? ?out/i.test(text)) {
    return failure('timeout', `The tool server at ${url} did not answer in time.`);
  }
  if (/JSON|parse|Unexpected token|invalid.*message|ZodError|expected/i.test(text)) {
    return failure('malformed', `The tool server at ${url} sent a reply that is not valid ` +
      `MCP (JSON-RPC): ${text.slice(0, 300)}`);
  }
  if (seen.status >= 500) {
    return failure('server-error', `The tool server at ${url} failed (HTTP ${seen.status}): ` +
      text.slice(0, 300));
  }
  return failure('failed', `The tool server at ${url}: ${text.slice(0, 300)}`);
}

/** A value the worker's Python can take: JSON-clean. */
function plain(value) {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

export async function connect(clientURL, url, {token = '', timeoutMs = 30_000,
                                               onToolsChanged = null, onClosed = null} = {}) {
  sdk ??= await import(clientURL);
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw failure('address', `${url} is not an address (it looks like http://host:port/mcp).`);
  }
  if (!/^https?:$/.test(parsed.protocol)) {
    throw failure('address', `${url}: a tool server is reached over http or https.`);
  }
  const seen = {skipped: []};
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
    throw await explain(error, url, seen);
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
      try {
        const {tools} = await client.listTools(undefined, {timeout: timeoutMs});
        return plain((tools ?? []).map((t) => ({
          name: t.name, title: t.title ?? t.annotations?.title ?? '',
          description: t.description ?? '', inputSchema: t.inputSchema ?? null,
          annotations: t.annotations ?? {}})));
      } catch (error) {
        throw await explain(error, url, seen);
      }
    },
    async callTool(name, args, callId, callTimeoutMs = timeoutMs) {
      const controller = new AbortController();
      calls.set(callId, controller);
      try {
        return plain(await client.callTool({name, arguments: args ?? {}},
                                           {signal: controller.signal, timeout: callTimeoutMs}));
      } catch (error) {
        if (controller.signal.aborted) throw failure('cancelled', 'the call was stopped');
        throw await explain(error, url, seen);
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
