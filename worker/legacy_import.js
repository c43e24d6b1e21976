// The reference design's conversations, read for py-agent's store to take in.
//
// That design kept every conversation in IndexedDB database 'AgentMemoryDB', object store
// 'conversations', as records {sessionId, history, summary}: history a list of texts in
// "User: / Thought: / Action: / Observation: / Assistant:" lines. This module finds that
// database without ever creating it, reads it, and turns each record into a py-agent
// session state and its archived turns. idb_store.js writes them into its own database,
// once (on the first open, importing this module only then), and never overwrites a
// session it has. The database's name and store are idb_store.js's LEGACY_DB_NAME and
// LEGACY_STORE.

const LEGACY_LABELS = /^(User|Thought|Action|Observation|Assistant):[ \t]?/;

// `tool("input")`, `tool(input)` or just `tool` -> [tool, input].
function parseAction(text) {
  const match = /^\s*([^\s(]+)\s*\(([\s\S]*)\)\s*$/.exec(text);
  if (!match) return [text.trim(), ''];
  let input = match[2];
  if (input.length >= 2 && input.startsWith('"') && input.endsWith('"')) input = input.slice(1, -1);
  return [match[1], input];
}

// One legacy history item ("User: ...\nThought: ...\nAction: t(\"x\")\nObservation: ...\n
// Assistant: ...") -> a Turn dict. A line starting with a label opens a section; other lines
// continue the section before them (observations and answers may span lines). Each Thought
// opens a step; Action and Observation join the open step unless it already has one. The
// reference design only saved answered turns; one without an "Assistant:" part (or without
// a "User:" part, which keeps its whole text as the user's message) is marked 'incomplete'.
export function parseLegacyTurn(item, id, createdAt) {
  const text = typeof item === 'string' ? item : (item == null ? '' : JSON.stringify(item));
  const sections = [];
  for (const line of text.split(/\r?\n/)) {
    const label = LEGACY_LABELS.exec(line);
    if (label) sections.push({ label: label[1], lines: [line.slice(label[0].length)] });
    else if (sections.length) sections[sections.length - 1].lines.push(line);
    else sections.push({ label: null, lines: [line] });
  }
  const turn = { id, user: '', answer: '', steps: [], status: 'answered', created_at: createdAt };
  if (!sections.some((s) => s.label === 'User')) {  // not in the expected shape: keep it all
    turn.user = text.trim();
    turn.status = 'incomplete';
    return turn;
  }
  let hasAnswer = false;
  let step = null;
  const newStep = () => {
    step = { thought: '', tool: '', tool_input: '', observation: '', corrective: false };
    turn.steps.push(step);
    return step;
  };
  for (const section of sections) {
    const body = section.lines.join('\n').trim();
    switch (section.label) {
      case 'User':
        turn.user = turn.user ? `${turn.user}\n${body}` : body;
        break;
      case 'Thought':
        newStep().thought = body;
        break;
      case 'Action': {
        if (!step || step.tool || step.observation) newStep();
        [step.tool, step.tool_input] = parseAction(body);
        break;
      }
      case 'Observation':
        if (!step || step.observation) newStep();
        step.observation = body;
        break;
      case 'Assistant':
        turn.answer = turn.answer ? `${turn.answer}\n${body}` : body;
        hasAnswer = true;
        break;
      default:  // text before the first label: keep it with the user's message
        turn.user = turn.user ? `${body}\n${turn.user}` : body;
    }
  }
  if (!hasAnswer) turn.status = 'incomplete';
  return turn;
}

// Same rule as py_agent.sessions.title_from.
function titleFrom(message) {
  const text = message.split(/\s+/).filter(Boolean).join(' ');
  return text.length <= 60 ? text : `${text.slice(0, 57).trimEnd()}…`;
}

// A legacy record {sessionId, history, summary} -> {state, turns}, or null if unusable.
export function legacySession(record, at) {
  if (!record || typeof record !== 'object') return null;
  const rawId = record.sessionId;
  if (rawId === undefined || rawId === null || rawId === '') return null;
  const sessionId = String(rawId);
  let history = record.history;
  if (typeof history === 'string') history = [history];
  if (!Array.isArray(history)) history = [];
  const turns = history.map((item, i) => parseLegacyTurn(item, i + 1, at));
  const firstUser = turns.find((t) => t.user)?.user ?? '';
  const state = {
    session_id: sessionId,
    title: titleFrom(firstUser),
    summary: typeof record.summary === 'string' ? record.summary : '',
    facts: [],
    recent_turns: turns,
    next_turn_id: turns.length + 1,
    compactions: 0,
    failed_compactions: 0,
    created_at: at,
    updated_at: at,
  };
  return { state, turns };
}

// Does a database of that name exist? Never creates one: with indexedDB.databases() it only
// looks; without it, it opens the name without a version and, if that had to create it,
// aborts the creation (and deletes whatever is left, which can only be our empty db).
async function legacyDatabase(name) {
  if (typeof indexedDB.databases === 'function') {
    let list = null;
    try { list = await indexedDB.databases(); } catch { /* unsupported here: probe below */ }
    if (list && !list.some((info) => info.name === name)) return null;
  }
  return new Promise((resolve, reject) => {
    let created = false;
    const request = indexedDB.open(name);
    request.onupgradeneeded = (event) => {
      if (event.oldVersion === 0) {
        created = true;
        request.transaction.abort();
      }
    };
    request.onsuccess = () => {
      const db = request.result;
      db.onversionchange = () => db.close();
      if (created) {  // only if the abort did not take; remove the empty db we made
        db.close();
        indexedDB.deleteDatabase(name);
        resolve(null);
      } else {
        resolve(db);
      }
    };
    request.onerror = (event) => {
      event.preventDefault();
      if (created) {
        indexedDB.deleteDatabase(name);  // in case the aborted creation left a trace
        resolve(null);
      } else {
        reject(request.error);
      }
    };
    request.onblocked = () => {};  // no upgrade is asked for, so nothing can block
  });
}

function whenDone(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function readLegacyRecords(name, storeName) {
  const db = await legacyDatabase(name);
  if (!db) return null;
  try {
    if (!db.objectStoreNames.contains(storeName)) return [];
    return await whenDone(db.transaction(storeName, 'readonly').objectStore(storeName).getAll());
  } finally {
    db.close();
  }
}

// The sessions of the legacy database `name` (object store `storeName`) as
// [{state, turns}] (SessionState.to_dict() and Turn.to_dict() shapes, stamped `at`), or
// null when there is no such database. Unusable records are left out, and of records
// whose ids become one string (1 and '1') only the first is kept. Reads only: the legacy
// database is left as it was.
export async function readLegacySessions(name, storeName, at = Date.now()) {
  const records = await readLegacyRecords(name, storeName);
  if (!records) return null;
  const seen = new Set();
  return records.map((record) => legacySession(record, at))
    .filter((s) => s && !seen.has(s.state.session_id) && seen.add(s.state.session_id));
}
