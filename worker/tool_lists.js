// A tools/list reply with one unusable tool must cost that tool, not the list.
//
// Both official SDKs check a tools/list result as a whole: one tool whose input schema is
// not an object schema (or that has no name) and the whole list is refused. So the page's
// MCP client (worker/mcp_client.js) reads that reply first and takes such tools out,
// naming them to the user. py_agent/mcp/tool_lists.py does the same in CPython, by the
// same rules (docs/tools.md, "A tools/list reply, read before the SDK";
// tests/unit/test_tool_lists.py runs the same cases through both):
//
// 1. A reply nested deeper than MAX_REPLY_DEPTH levels is not read: it becomes a JSON-RPC
//    parse error (-32700) for its request, and the refusal says why.
// 2. A tool is taken out when it is not an object, has no name (a non-empty string), has
//    no input schema that is an object of type 'object', or has a description that is
//    not text.
// 3. A reply that is not JSON (or an event whose data is not) is left as it is: the SDK
//    says what is wrong with it.
// 4. A tool's labels (annotations) that are not an object, or hold a hint (readOnlyHint,
//    destructiveHint, idempotentHint, openWorldHint) that is not true or false, lose every
//    hint, and the tool is named with why: no label of it is believed, so it asks before
//    each call (this SDK would refuse the whole list; Python's would read "true" and 1 as
//    true). Null annotations are taken off without a word.

export const MAX_REPLY_DEPTH = 100;
const PARSE_ERROR = -32700;
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** What a JSON value is, in words: null, a boolean, a number, a string, ... */
function jsonKind(value) {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'an array';
  return {boolean: 'a boolean', number: 'a number', string: 'a string'}[typeof value] ?? 'an object';
}

/** Why the SDKs would refuse `tool` (a tools/list entry), or null. */
export function unusable(tool) {
  if (!isObject(tool)) return 'it is not an object';
  if (typeof tool.name !== 'string' || !tool.name) return 'it has no name';
  if (!('inputSchema' in tool)) return 'it has no input schema';
  const schema = tool.inputSchema;
  if (!isObject(schema)) return `its input schema is ${jsonKind(schema)}, not an object`;
  if (!('type' in schema)) return 'its input schema has no type (it must be of type \'object\')';
  if (schema.type !== 'object') {
    const said = typeof schema.type === 'string' ? JSON.stringify(schema.type) : jsonKind(schema.type);
    return `its input schema must be of type 'object', not ${said}`;
  }
  if ('description' in tool && typeof tool.description !== 'string') return 'its description is not text';
  return null;
}

function skippedLine(tool, why) {
  const name = isObject(tool) ? tool.name : null;
  return typeof name === 'string' && name ? `tool ${JSON.stringify(name)} skipped: ${why}`
                                          : `a tool skipped: ${why}`;
}

const saidValue = (value) => (typeof value === 'string' ? JSON.stringify(value) : jsonKind(value));

/** `tool` with the labels it may keep (rule 4); why any were taken off goes to `notes`. */
export function believableLabels(tool, notes) {
  if (!('annotations' in tool)) return tool;
  const {annotations, ...rest} = tool;
  if (annotations === null || annotations === undefined) return rest;
  let why, kept;
  if (!isObject(annotations)) {
    why = `its annotations are ${jsonKind(annotations)}, not an object`;
    kept = rest;
  } else {
    const bad = HINTS.filter((hint) => hint in annotations && typeof annotations[hint] !== 'boolean');
    if (!bad.length) return tool;
    why = bad.map((hint) => `its ${hint} is ${saidValue(annotations[hint])}`).join(', ') +
      ', not true or false';
    kept = {...tool, annotations: Object.fromEntries(
      Object.entries(annotations).filter(([key]) => !HINTS.includes(key)))};
  }
  notes.push(`tool ${JSON.stringify(tool.name)}: ${why}: none of its labels is believed, so it ` +
             'asks before each call');
  return kept;
}

/** Whether JSON `text` nests arrays and objects deeper than `limit` (a scan, not a parse). */
export function nestsDeeper(text, limit = MAX_REPLY_DEPTH) {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (const char of text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
    } else if (char === '[' || char === '{') {
      depth += 1;
      if (depth > limit) return true;
    } else if (char === ']' || char === '}') {
      depth -= 1;
    }
  }
  return false;
}

const tooDeep = () => `its tools/list reply nests deeper than ${MAX_REPLY_DEPTH} levels`;

function sanitizeMessage(message, skipped) {
  const tools = isObject(message) && isObject(message.result) ? message.result.tools : undefined;
  if (!Array.isArray(tools)) return message;
  const kept = [];
  for (const tool of tools) {
    const why = unusable(tool);
    if (why) skipped.push(skippedLine(tool, why));
    else kept.push(believableLabels(tool, skipped));
  }
  return {...message, result: {...message.result, tools: kept}};
}

function cleanJSON(text, skipped) {
  const message = JSON.parse(text);
  return JSON.stringify(Array.isArray(message) ? message.map((m) => sanitizeMessage(m, skipped))
                                               : sanitizeMessage(message, skipped));
}

function refusal(requestId, why) {
  return {text: JSON.stringify({jsonrpc: '2.0', id: requestId ?? null,
                                error: {code: PARSE_ERROR, message: why}}),
          contentType: 'application/json', refusal: why};
}

/** A tools/list reply (JSON or server-sent events) without its unusable tools (named in
 * `skipped`): {text, contentType, refusal}. `refusal` is why the reply was not read at all
 * (then `text` is a JSON-RPC parse error for `requestId`), or ''. */
export function cleanToolsList(text, contentType, requestId, skipped) {
  if (contentType.includes('event-stream')) {
    const out = [];
    for (const event of text.replaceAll('\r\n', '\n').split('\n\n')) {
      let lines = event.split('\n');
      const data = lines.filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5)).join('\n');
      if (data) {
        if (nestsDeeper(data)) return refusal(requestId, tooDeep());
        try {
          const cleaned = cleanJSON(data, skipped);
          lines = [...lines.filter((l) => !l.startsWith('data:')), `data: ${cleaned}`];
        } catch {
          // not JSON: the SDK says what is wrong with it
        }
      }
      out.push(lines.join('\n'));
    }
    return {text: out.join('\n\n'), contentType, refusal: ''};
  }
  if (nestsDeeper(text)) return refusal(requestId, tooDeep());
  try {
    return {text: cleanJSON(text, skipped), contentType, refusal: ''};
  } catch {
    return {text, contentType, refusal: ''};   // not JSON: the SDK says what is wrong with it
  }
}

/** [id, method] of a JSON-RPC request body; null for anything else (a notification, a
 * response, a batch, not JSON). */
export function rpcRequest(body) {
  if (typeof body !== 'string') return null;
  try {
    const message = JSON.parse(body);
    if (isObject(message) && typeof message.method === 'string' && message.id !== undefined &&
        message.id !== null) return [message.id, message.method];
  } catch { /* not JSON */ }
  return null;
}
