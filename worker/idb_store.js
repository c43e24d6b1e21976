// py-agent's IndexedDB store: the JavaScript half of py_agent.rpc.RpcStore.
//
// An ES module with no DOM dependencies, so it runs in the agent's module Worker (and on a
// page, for tests). Every public method takes and returns JSON strings (or null/boolean):
// data crosses to Python as text, never as live objects.
//
//   const store = await IdbStore.open();               // or openStore(options)
//   await store.commitTurn(stateJson, turnsJson);       // one atomic transaction
//   const json = await store.load('session-id');        // SessionState.to_dict() or null
//
// Schema (database 'py-agent', version DB_VERSION):
//   sessions     keyPath 'session_id'               SessionState.to_dict()
//   archive      keyPath ['session_id', 'id']       Turn.to_dict() + session_id; append-only
//                index by_session (session_id)
//   compressions autoIncrement (out-of-line key)    CompressionRecord.to_dict(); append-only
//                index by_session (session_id)
//   meta         keyPath 'key'                      {key: 'legacy-migrated', at, sessions, ...}
//   kv           out-of-line string keys (v2)       any JSON value: the demo tools' notes and
//                                                   to-dos (py_agent.kv.RpcKeyValueStore)
//   recall       keyPath 'session_id' (v3)          {session_id, blob: ArrayBuffer}: the
//                                                   session's part of the archive recall index
//                                                   (py_agent.recall.dump_session), derived
//                                                   from the archive, deleted with the session
//   profile      keyPath 'key' (v4)                 one record {key: 'user', ...}: the user
//                                                   profile, UserProfile.to_dict()
//                                                   (py_agent.profile), versioned like states
//   blobs        keyPath ['session_id', 'id'] (v5) {session_id, id, meta, data: Blob}: the
//                                                   bytes of a turn's attachment (its record
//                                                   in the turn names it), deleted with the
//                                                   session
//   (v5)         records keep provenance (untrusted sources, unconfirmed profile facts)
//                inside them; older code is kept from writing them back
//   vectors      keyPath 'session_id' (v6)          {session_id, blob: ArrayBuffer}: the
//                                                   session's turn vectors for recall
//                                                   (py_agent.embedding.dump_vectors, with
//                                                   the embedding space's id), deleted with
//                                                   the session, never exported
//
// The reference design's data (database 'AgentMemoryDB', read by legacy_import.js) is
// copied in on the first open, once; the 'legacy-migrated' meta record says it was.
// legacy_import.js is imported only then: every later open finds the record and skips it.
//
// Errors are Error objects whose `name` tells the Python side what happened
// (py_agent.rpc maps it to StorageError.kind):
//   StorageQuotaError    storage is full                                    -> 'quota'
//   StorageBlockedError  an upgrade waits for other tabs to close the db     -> 'blocked'
//   VersionError         the db is newer than this code, or another tab
//                        upgraded it and this connection was closed          -> 'version'
//   StateConflictError   a state write made from an older version of the state: another
//                        tab wrote this session first (py_agent.store)        -> 'conflict'
//   StorageError         anything else; the message names the original error -> 'unknown'
//
// Concurrency (several tabs, one database): every state write is conditional. The written
// state carries the `version` it was made from; the write transaction reads the stored
// state and aborts with StateConflictError unless its version (0 when missing) is that one,
// else it stores the state one version up. The archive is append-only by turn id, except
// that a turn archived with status 'interrupted' (written when a turn starts) is replaced
// by the same id's final copy. IndexedDB runs readwrite transactions over the same stores
// one at a time, so check and write are one step for every tab.
//
// The user profile is written the same way (its own `version`), alone or in the
// transaction of a session's state (saveProfile) or compaction (commitCompaction);
// deleteSession takes the deleted session's facts out of it in its own transaction.

export const DB_NAME = 'py-agent';
// Where the reference design kept its conversations (legacy_import.js reads them).
export const LEGACY_DB_NAME = 'AgentMemoryDB';
export const LEGACY_STORE = 'conversations';
export const DB_VERSION = 6;
const PROFILE_KEY = 'user';
const LEGACY_META_KEY = 'legacy-migrated';

// The methods the worker may expose over RPC (all return promises).
export const STORE_METHODS = Object.freeze([
  'load', 'save', 'commitTurn', 'commitCompaction', 'readArchive', 'compressions',
  'listSessions', 'deleteSession', 'saveRecall', 'loadRecall', 'saveVectors', 'loadVectors',
  'readTurns', 'loadProfile', 'saveProfile', 'putBlob', 'getBlob', 'blobSizes',
]);

// The key-value methods (py_agent.kv.RpcKeyValueStore), over the same transport.
export const KV_METHODS = Object.freeze(['kvGet', 'kvPut', 'kvDelete', 'kvList']);

// Ordered schema migrations: [version, step(db, upgradeTransaction)]. onupgradeneeded runs
// every step whose version is above the database's old version, oldest first; versions
// may have gaps (a step numbered by another branch), and a step that creates a store
// checks it is not there yet. A future schema change appends a step and bumps
// DB_VERSION; never edit a released step.
const MIGRATIONS = [
  [1, (db) => {
    db.createObjectStore('sessions', { keyPath: 'session_id' });
    const archive = db.createObjectStore('archive', { keyPath: ['session_id', 'id'] });
    archive.createIndex('by_session', 'session_id');
    const compressions = db.createObjectStore('compressions', { autoIncrement: true });
    compressions.createIndex('by_session', 'session_id');
    db.createObjectStore('meta', { keyPath: 'key' });
  }],
  [2, (db) => {
    db.createObjectStore('kv');  // key: a non-empty string; value: parsed JSON
  }],
  [3, (db) => {
    db.createObjectStore('recall', { keyPath: 'session_id' });
  }],
  [4, (db) => {
    if (!db.objectStoreNames.contains('profile')) db.createObjectStore('profile', { keyPath: 'key' });
  }],
  // 5: the attachments' bytes ('blobs'); and provenance (whose words a step read, the
  // untrusted sources of a fact and of the summary's marked part, a profile fact's
  // unconfirmed state) lives inside the records above, old records read as before
  // (py_agent.state). The version also closes ('versionchange') a tab still running older
  // code, which would write states back without provenance.
  [5, (db) => {
    if (!db.objectStoreNames.contains('blobs')) db.createObjectStore('blobs', { keyPath: ['session_id', 'id'] });
  }],
  // 6: each session's turn vectors (py_agent.recall.vectors): made again from the archive
  // when missing, so an older database simply starts without them.
  [6, (db) => {
    if (!db.objectStoreNames.contains('vectors')) db.createObjectStore('vectors', { keyPath: 'session_id' });
  }],
];

// --- errors -----------------------------------------------------------------------------

function namedError(name, message, cause) {
  const error = new Error(message, cause === undefined ? undefined : { cause });
  error.name = name;
  return error;
}

const QUOTA_MESSAGE =
  'Storage is full: the browser refused to save more py-agent data, so the last change was ' +
  'not saved. Free space by deleting old sessions (or other sites\' data in the browser ' +
  'settings), then try again.';
const BLOCKED_MESSAGE =
  'The py-agent database needs an upgrade, but another tab of this app still has it open. ' +
  'Close other tabs of this app (or reload them), then reload this page.';
const NEWER_MESSAGE =
  'The py-agent database was written by a newer version of this app. Reload this page to ' +
  'get the newer version.';
const UPGRADED_MESSAGE =
  'The py-agent database was upgraded by a newer version of this app in another tab, so ' +
  'this tab closed its connection. Reload this page.';
const CLOSED_MESSAGE =
  'The py-agent database was closed by the browser (site data may have been cleared). ' +
  'Reload this page.';

const OUR_NAMES = new Set(['StorageQuotaError', 'StorageBlockedError', 'VersionError',
                           'StateConflictError', 'StorageError']);

// Any failure -> one of the named errors above. Exported so tests can check the mapping.
export function toStorageError(error) {
  if (error && OUR_NAMES.has(error.name) && !(error instanceof DOMException)) return error;
  const name = (error && error.name) || 'Error';
  const detail = (error && error.message) || String(error);
  if (name === 'QuotaExceededError') return namedError('StorageQuotaError', QUOTA_MESSAGE, error);
  if (name === 'VersionError') return namedError('VersionError', NEWER_MESSAGE, error);
  return namedError('StorageError', `IndexedDB failed (${name}): ${detail}`, error);
}

// --- the test hook --------------------------------------------------------------------------

// TEST HOOK: the name of a DOMException the next write transaction (save, commitTurn,
// commitCompaction, deleteSession, saveRecall, kvPut, kvDelete) fails with, or null. See
// IdbStore.failNextWrite.
let failNext = null;

// --- small IndexedDB helpers -------------------------------------------------------------

function parseJson(text, what) {
  if (typeof text !== 'string') {
    throw namedError('StorageError', `IndexedDB failed (TypeError): ${what} must be a JSON string`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw namedError('StorageError', `IndexedDB failed (SyntaxError): ${what} is not valid JSON: ${error.message}`);
  }
}

function invalid(message) {
  return namedError('StorageError', `IndexedDB failed (DataError): ${message}`);
}

function checkState(state) {
  if (!state || typeof state !== 'object' || Array.isArray(state)) throw invalid('a session state must be an object');
  if (typeof state.session_id !== 'string' || !state.session_id) throw invalid('a session state needs a session_id string');
  return state;
}

function checkKey(key) {
  if (typeof key !== 'string' || !key) throw invalid('a key must be a non-empty string');
  return key;
}

function checkSessionId(sessionId) {
  if (typeof sessionId !== 'string') throw invalid('sessionId must be a string');
  return sessionId;
}

// Every key of `archive` for one session: arrays compare element by element, a prefix
// sorts first, and an array sorts after any number.
function sessionRange(sessionId) {
  return IDBKeyRange.bound([sessionId], [sessionId, []]);
}

// Inside a readwrite transaction: put `state` one version up if the stored state is the
// version it was made from, else fail(StateConflictError) (which aborts the transaction).
function putVersioned(tx, state, fail) {
  const sessions = tx.objectStore('sessions');
  const request = sessions.get(state.session_id);
  request.onsuccess = () => {
    const stored = request.result;
    const storedVersion = stored && Number.isInteger(stored.version) ? stored.version : 0;
    const madeFrom = Number.isInteger(state.version) ? state.version : 0;
    if (storedVersion !== madeFrom) {
      fail(namedError('StateConflictError', 'another tab or process changed this session at ' +
                      `the same moment (stored version ${storedVersion}, written from ${madeFrom})`));
      return;
    }
    sessions.put({ ...state, version: madeFrom + 1 });
  };
}

// The user profile without what `sessionId` contributed (py_agent.profile.withdraw with
// deleted=True): its facts, and the facts removed from it that came from that session.
function withdrawSession(profile, sessionId) {
  const facts = (profile.facts || []).filter((f) => f.session_id !== sessionId);
  const removed = (profile.removed || []).filter((r) => r.session_id !== sessionId);
  const changed = facts.length !== (profile.facts || []).length ||
                  removed.length !== (profile.removed || []).length;
  return changed ? { ...profile, facts, removed } : null;
}

function storedProfileVersion(stored) {
  return stored && Number.isInteger(stored.version) ? stored.version : 0;
}

// Inside a readwrite transaction: put the user profile one version up if the stored one is
// the version it was made from, else fail(StateConflictError), as putVersioned does.
function putProfile(tx, profile, fail) {
  const store = tx.objectStore('profile');
  const request = store.get(PROFILE_KEY);
  request.onsuccess = () => {
    const storedVersion = storedProfileVersion(request.result);
    const madeFrom = Number.isInteger(profile.version) ? profile.version : 0;
    if (storedVersion !== madeFrom) {
      fail(namedError('StateConflictError', 'another tab or process changed the user profile ' +
                      `at the same moment (stored version ${storedVersion}, written from ${madeFrom})`));
      return;
    }
    store.put({ ...profile, key: PROFILE_KEY, version: madeFrom + 1 });
  };
}

function checkProfile(profile) {
  if (!profile || typeof profile !== 'object' || Array.isArray(profile) || !Array.isArray(profile.facts)) {
    throw invalid('a user profile must be an object with a facts array');
  }
  return profile;
}

// Inside a readwrite transaction: archive `turn` unless its id is there already; an
// 'interrupted' placeholder of that id is replaced.
function archiveTurn(archive, sessionId, turn) {
  const record = { ...turn, session_id: sessionId };
  const request = archive.get([sessionId, turn.id]);
  request.onsuccess = () => {
    const archived = request.result;
    if (archived === undefined) archive.add(record);
    else if (archived.status === 'interrupted') archive.put(record);
  };
}

// Open (and upgrade) a database. Rejects with StorageBlockedError when another connection
// does not close for the upgrade; a connection that opens after that is closed at once.
function openDatabase(name, version) {
  return new Promise((resolve, reject) => {
    let settled = false;
    const request = indexedDB.open(name, version);
    request.onupgradeneeded = (event) => {
      const db = request.result;
      const oldVersion = event.oldVersion;
      for (const [stepVersion, step] of MIGRATIONS) {
        if (stepVersion > oldVersion && stepVersion <= version) step(db, request.transaction);
      }
    };
    request.onblocked = () => {
      if (settled) return;
      settled = true;
      reject(namedError('StorageBlockedError', BLOCKED_MESSAGE));
    };
    request.onsuccess = () => {
      if (settled) { request.result.close(); return; }  // the caller already gave up
      settled = true;
      resolve(request.result);
    };
    request.onerror = (event) => {
      event.preventDefault();
      if (settled) return;
      settled = true;
      reject(toStorageError(request.error));
    };
  });
}

// --- the store ---------------------------------------------------------------------------

export class IdbStore {
  constructor(db, name) {
    this.name = name;
    this._db = db;
    this._closed = null;  // why the connection is gone: null, 'closed', 'upgraded', 'lost'
    // What open() did about legacy data, as a JSON string: {"sessions": n, "skipped": k,
    // "source": legacy db name or null if there was none} when the one-time migration ran
    // now, {"error", "name"} when it failed (legacy data untouched; the next open retries),
    // or null when it had already run (or legacyName was null).
    this.legacyMigration = null;
    db.onversionchange = () => {  // another tab wants to upgrade: let it
      db.close();
      this._closed = 'upgraded';
    };
    db.onclose = () => { this._closed = 'lost'; };  // the browser closed it (data cleared)
  }

  // Open (creating or upgrading) the database and migrate legacy data once.
  // options: name, legacyName (null to skip legacy migration), legacyStore, and
  // version (tests only: ask for a schema version other than DB_VERSION).
  static async open({ name = DB_NAME, legacyName = LEGACY_DB_NAME, legacyStore = LEGACY_STORE,
                      version = DB_VERSION } = {}) {
    const db = await openDatabase(name, version);
    const store = new IdbStore(db, name);
    if (legacyName) {
      try {
        const result = await store._migrateLegacy(legacyName, legacyStore);
        store.legacyMigration = result && JSON.stringify(result);
      } catch (error) {
        // Legacy data stays where it is; the app still works and the next open retries.
        const mapped = toStorageError(error);
        store.legacyMigration = JSON.stringify({ error: mapped.message, name: mapped.name });
        console.warn('py-agent: legacy migration failed:', mapped.message);
      }
    }
    return store;
  }

  // TEST HOOK (used by the e2e tests): make the next write transaction of any store in this
  // JavaScript realm fail as if IndexedDB had raised a DOMException named `name` (e.g.
  // 'QuotaExceededError'); the transaction is aborted, so nothing of it is written. Pass
  // null to cancel. Not for production use.
  static failNextWrite(name = 'QuotaExceededError') {
    failNext = name || null;
  }

  close() {
    if (!this._closed) this._closed = 'closed';
    this._db.close();
  }

  // Run `body(tx)` in one transaction. body issues its requests synchronously and returns
  // a function giving the result once the transaction completed. Resolves on complete;
  // rejects with a mapped error on a request error or an abort.
  _transaction(storeNames, mode, body, { testHook = true } = {}) {
    return new Promise((resolve, reject) => {
      if (this._closed) {
        const [name, message] = {
          upgraded: ['VersionError', UPGRADED_MESSAGE],
          lost: ['StorageError', CLOSED_MESSAGE],
        }[this._closed] || ['StorageError', 'IndexedDB failed (InvalidStateError): the store is closed'];
        reject(namedError(name, message));
        return;
      }
      let tx;
      let failure = null;
      try {
        tx = this._db.transaction(storeNames, mode);
      } catch (error) {
        reject(toStorageError(error));
        return;
      }
      let result = () => undefined;
      tx.oncomplete = () => {
        try { resolve(result()); } catch (error) { reject(toStorageError(error)); }
      };
      tx.onerror = (event) => { failure = failure || event.target.error; };
      tx.onabort = () => {
        reject(toStorageError(failure || tx.error || new DOMException('transaction aborted', 'AbortError')));
      };
      // body may call fail(error) from a request callback to abort with that error.
      const fail = (error) => {
        failure = failure || error;
        try { tx.abort(); } catch { /* already finished */ }
      };
      try {
        result = body(tx, fail) || result;
        if (mode === 'readwrite' && testHook && failNext) {
          failure = new DOMException(`simulated by IdbStore.failNextWrite`, failNext);
          failNext = null;
          tx.abort();
        }
      } catch (error) {
        failure = failure || error;
        try { tx.abort(); } catch { /* already finished */ }
      }
    });
  }

  // The saved state of a session as JSON, or null.
  async load(sessionId) {
    checkSessionId(sessionId);
    return this._transaction('sessions', 'readonly', (tx) => {
      const request = tx.objectStore('sessions').get(sessionId);
      return () => (request.result === undefined ? null : JSON.stringify(request.result));
    });
  }

  // Replace a session's state (conditionally: see "Concurrency" above).
  async save(stateJson) {
    const state = checkState(parseJson(stateJson, 'stateJson'));
    return this._transaction('sessions', 'readwrite', (tx, fail) => {
      putVersioned(tx, state, fail);
    });
  }

  // Append turns to the archive (ids already there are kept as they are, but for
  // 'interrupted' placeholders) and save the state (conditionally), in one transaction.
  async commitTurn(stateJson, turnsJson) {
    const state = checkState(parseJson(stateJson, 'stateJson'));
    const turns = parseJson(turnsJson, 'turnsJson');
    if (!Array.isArray(turns)) throw invalid('turnsJson must be a JSON array');
    for (const turn of turns) {
      if (!turn || typeof turn !== 'object' || typeof turn.id !== 'number') throw invalid('every turn needs a numeric id');
    }
    return this._transaction(['sessions', 'archive'], 'readwrite', (tx, fail) => {
      putVersioned(tx, state, fail);
      const archive = tx.objectStore('archive');
      for (const turn of turns) archiveTurn(archive, state.session_id, turn);
    });
  }

  // Log a compression and, when stateJson is not null, save the state (conditionally), and
  // when profileJson is given and not null, the user profile (conditionally), in one
  // transaction.
  async commitCompaction(stateJsonOrNull, recordJson, profileJsonOrNull = null) {
    const state = stateJsonOrNull == null ? null : checkState(parseJson(stateJsonOrNull, 'stateJson'));
    const record = parseJson(recordJson, 'recordJson');
    if (!record || typeof record !== 'object' || typeof record.session_id !== 'string') {
      throw invalid('a compression record needs a session_id string');
    }
    const profile = profileJsonOrNull == null ? null : checkProfile(parseJson(profileJsonOrNull, 'profileJson'));
    const stores = ['compressions', ...(state ? ['sessions'] : []), ...(profile ? ['profile'] : [])];
    return this._transaction(stores, 'readwrite', (tx, fail) => {
      tx.objectStore('compressions').add(record);
      if (state) putVersioned(tx, state, fail);
      if (profile) putProfile(tx, profile, fail);
    });
  }

  // Every archived turn of a session as a JSON array, oldest (lowest id) first.
  async readArchive(sessionId) {
    checkSessionId(sessionId);
    return this._transaction('archive', 'readonly', (tx) => {
      const request = tx.objectStore('archive').getAll(sessionRange(sessionId));
      return () => JSON.stringify(request.result.map(({ session_id, ...turn }) => turn));
    });
  }

  // The compression log of a session as a JSON array, in the order it was written.
  async compressions(sessionId) {
    checkSessionId(sessionId);
    return this._transaction('compressions', 'readonly', (tx) => {
      // Index order is (session_id, primary key); the key increments, so: insertion order.
      const request = tx.objectStore('compressions').index('by_session').getAll(sessionId);
      return () => JSON.stringify(request.result);
    });
  }

  // [{session_id, title, updated_at, turns}] as JSON, most recently updated first;
  // turns is the number of archived turns.
  async listSessions() {
    return this._transaction(['sessions', 'archive'], 'readonly', (tx) => {
      const rows = [];
      const byArchive = tx.objectStore('archive').index('by_session');
      const request = tx.objectStore('sessions').getAll();
      request.onsuccess = () => {
        for (const state of request.result) {
          const row = { session_id: state.session_id, title: state.title ?? '',
                        updated_at: state.updated_at ?? 0, turns: 0,
                        private: state.private === true };
          rows.push(row);
          byArchive.count(state.session_id).onsuccess = (event) => { row.turns = event.target.result; };
        }
      };
      return () => JSON.stringify(rows.sort((a, b) => (b.updated_at - a.updated_at)
        || (a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : 0)));
    });
  }

  // Remove a session's state, archive, compression log, recall blob and vectors, and the facts it
  // contributed to the user profile, in one transaction. Resolves to whether the session
  // (its state) existed.
  async deleteSession(sessionId) {
    checkSessionId(sessionId);
    const stores = ['sessions', 'archive', 'compressions', 'recall', 'vectors', 'profile', 'blobs'];
    return this._transaction(stores, 'readwrite', (tx) => {
      const sessions = tx.objectStore('sessions');
      const existed = sessions.count(sessionId);
      sessions.delete(sessionId);
      tx.objectStore('archive').delete(sessionRange(sessionId));
      tx.objectStore('blobs').delete(sessionRange(sessionId));
      tx.objectStore('recall').delete(sessionId);
      tx.objectStore('vectors').delete(sessionId);
      const compressions = tx.objectStore('compressions');
      compressions.index('by_session').getAllKeys(sessionId).onsuccess = (event) => {
        for (const key of event.target.result) compressions.delete(key);
      };
      const profiles = tx.objectStore('profile');
      profiles.get(PROFILE_KEY).onsuccess = (event) => {
        const stored = event.target.result;
        const withdrawn = stored && withdrawSession(stored, sessionId);
        if (withdrawn) profiles.put({ ...withdrawn, version: storedProfileVersion(stored) + 1 });
      };
      return () => existed.result > 0;
    });
  }

  // --- the archive recall index: one blob per session -----------------------------------

  // Keep a session's recall blob (a Uint8Array or ArrayBuffer; null drops it). Resolves to
  // false, writing nothing, when the session has no state (it was deleted meanwhile), so a
  // blob never outlives its session.
  async saveRecall(sessionId, blob) {
    return this._saveBlob('recall', sessionId, blob);
  }

  // Every recall blob as [[sessionId, Uint8Array], ...].
  async loadRecall() {
    return this._loadBlobs('recall');
  }

  // A session's turn vectors, kept and loaded as the recall blobs are.
  async saveVectors(sessionId, blob) {
    return this._saveBlob('vectors', sessionId, blob);
  }

  async loadVectors() {
    return this._loadBlobs('vectors');
  }

  async _saveBlob(storeName, sessionId, blob) {
    checkSessionId(sessionId);
    let copy = null;
    if (blob != null) {
      if (!(blob instanceof Uint8Array || blob instanceof ArrayBuffer)) {
        throw invalid(`a ${storeName} blob must be a Uint8Array or an ArrayBuffer`);
      }
      copy = new Uint8Array(blob).slice().buffer;  // our own copy, never a view of wasm memory
    }
    return this._transaction(['sessions', storeName], 'readwrite', (tx) => {
      const exists = tx.objectStore('sessions').count(sessionId);
      exists.onsuccess = () => {
        if (!exists.result) return;
        const blobs = tx.objectStore(storeName);
        if (copy === null) blobs.delete(sessionId);
        else blobs.put({ session_id: sessionId, blob: copy });
      };
      return () => exists.result > 0;
    });
  }

  // Every blob of a store as [[sessionId, Uint8Array], ...].
  async _loadBlobs(storeName) {
    return this._transaction(storeName, 'readonly', (tx) => {
      const request = tx.objectStore(storeName).getAll();
      return () => request.result.map((r) => [r.session_id, new Uint8Array(r.blob)]);
    });
  }

  // The archived turns of a session with these ids (a JSON array of ids), as a JSON array,
  // oldest first; ids not archived are left out.
  async readTurns(sessionId, idsJson) {
    checkSessionId(sessionId);
    const ids = parseJson(idsJson, 'idsJson');
    if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id))) {
      throw invalid('idsJson must be a JSON array of integers');
    }
    return this._transaction('archive', 'readonly', (tx) => {
      const archive = tx.objectStore('archive');
      const requests = [...new Set(ids)].sort((a, b) => a - b)
        .map((id) => archive.get([sessionId, id]));
      return () => JSON.stringify(requests.map((r) => r.result).filter((t) => t !== undefined)
        .map(({ session_id, ...turn }) => turn));
    });
  }

  // --- attachments: the bytes of a turn's images and sounds --------------------------------

  // Keep an attachment's bytes (a Uint8Array, ArrayBuffer or Blob) under the session and
  // its id, with its metadata (JSON text: name, type, size, width, height). Kept as a
  // Blob of its type, so the page can show it without copying it into JavaScript memory.
  async putBlob(sessionId, blobId, data, metaJson) {
    checkSessionId(sessionId);
    checkKey(blobId);
    const meta = parseJson(metaJson, 'metaJson');
    let blob;
    if (data instanceof Blob) blob = data;
    else if (data instanceof Uint8Array || data instanceof ArrayBuffer) {
      blob = new Blob([new Uint8Array(data).slice()], { type: (meta && meta.type) || '' });
    } else throw invalid('an attachment must be a Uint8Array, an ArrayBuffer or a Blob');
    return this._transaction('blobs', 'readwrite', (tx) => {
      tx.objectStore('blobs').put({ session_id: sessionId, id: blobId, meta, data: blob });
    });
  }

  // [metaJson, Uint8Array] of a kept attachment, or null.
  async getBlob(sessionId, blobId) {
    checkSessionId(sessionId);
    checkKey(blobId);
    const record = await this._transaction('blobs', 'readonly', (tx) => {
      const request = tx.objectStore('blobs').get([sessionId, blobId]);
      return () => request.result ?? null;
    });
    if (!record) return null;
    return [JSON.stringify(record.meta ?? {}), new Uint8Array(await record.data.arrayBuffer())];
  }

  // {id: size} of a session's kept attachments, as JSON.
  async blobSizes(sessionId) {
    checkSessionId(sessionId);
    return this._transaction('blobs', 'readonly', (tx) => {
      const sizes = {};
      const request = tx.objectStore('blobs').openCursor(sessionRange(sessionId));
      request.onsuccess = () => {
        const cursor = request.result;
        if (!cursor) return;
        sizes[cursor.value.id] = cursor.value.data.size;
        cursor.continue();
      };
      return () => JSON.stringify(sizes);
    });
  }

  // --- the user profile: one versioned JSON document ------------------------------------

  // The stored user profile as JSON (without its key), or null if none was written.
  async loadProfile() {
    return this._transaction('profile', 'readonly', (tx) => {
      const request = tx.objectStore('profile').get(PROFILE_KEY);
      return () => {
        if (request.result === undefined) return null;
        const { key, ...profile } = request.result;
        return JSON.stringify(profile);
      };
    });
  }

  // Write the user profile (conditionally) and, when stateJson is given and not null, a
  // session's state (conditionally), in one transaction.
  async saveProfile(profileJson, stateJsonOrNull = null) {
    const profile = checkProfile(parseJson(profileJson, 'profileJson'));
    const state = stateJsonOrNull == null ? null : checkState(parseJson(stateJsonOrNull, 'stateJson'));
    const stores = state ? ['profile', 'sessions'] : ['profile'];
    return this._transaction(stores, 'readwrite', (tx, fail) => {
      putProfile(tx, profile, fail);
      if (state) putVersioned(tx, state, fail);
    });
  }

  // --- key-value data: JSON values under string keys ----------------------------------

  // The value under `key` as JSON, or null.
  async kvGet(key) {
    checkKey(key);
    return this._transaction('kv', 'readonly', (tx) => {
      const request = tx.objectStore('kv').get(key);
      return () => (request.result === undefined ? null : JSON.stringify(request.result));
    });
  }

  // Store the value `valueJson` (JSON text) under `key`.
  async kvPut(key, valueJson) {
    checkKey(key);
    const value = parseJson(valueJson, 'valueJson');
    return this._transaction('kv', 'readwrite', (tx) => {
      tx.objectStore('kv').put(value, key);
    });
  }

  // Remove `key`; resolves to whether it was there.
  async kvDelete(key) {
    checkKey(key);
    return this._transaction('kv', 'readwrite', (tx) => {
      const store = tx.objectStore('kv');
      const existed = store.count(key);
      store.delete(key);
      return () => existed.result > 0;
    });
  }

  // Every [key, value] whose key starts with `prefix`, in key order, as JSON.
  async kvList(prefix = '') {
    if (typeof prefix !== 'string') throw invalid('prefix must be a string');
    return this._transaction('kv', 'readonly', (tx) => {
      const rows = [];
      const range = prefix ? IDBKeyRange.lowerBound(prefix) : null;
      const request = tx.objectStore('kv').openCursor(range);
      request.onsuccess = () => {
        const cursor = request.result;
        // Keys sort as strings, so the keys with this prefix form one run from `prefix` on.
        if (!cursor || typeof cursor.key !== 'string' || !cursor.key.startsWith(prefix)) return;
        rows.push([cursor.key, cursor.value]);
        cursor.continue();
      };
      return () => JSON.stringify(rows);
    });
  }

  // Copy the reference design's data into this database, once. Reads the legacy sessions
  // first (legacy_import.js; another database cannot join our transaction), then writes
  // every session in one transaction that re-checks the meta marker and skips sessions
  // this database already has.
  async _migrateLegacy(legacyName, legacyStore) {
    const done = await this._transaction('meta', 'readonly', (tx) => {
      const request = tx.objectStore('meta').get(LEGACY_META_KEY);
      return () => request.result !== undefined;
    });
    if (done) return null;
    const at = Date.now();
    // Only on this first open: the boot of every later one fetches none of it.
    const { readLegacySessions } = await import('./legacy_import.js');
    const legacy = await readLegacySessions(legacyName, legacyStore, at);
    const sessions = legacy || [];
    return this._transaction(['sessions', 'archive', 'meta'], 'readwrite', (tx) => {
      const meta = tx.objectStore('meta');
      const summary = { sessions: 0, skipped: 0, source: legacy ? legacyName : null };
      const finish = () => meta.put({ key: LEGACY_META_KEY, at, ...summary });
      meta.get(LEGACY_META_KEY).onsuccess = (event) => {
        if (event.target.result !== undefined) { summary.already = true; return; }
        if (!sessions.length) { finish(); return; }
        const sessionStore = tx.objectStore('sessions');
        const archive = tx.objectStore('archive');
        let pending = sessions.length;
        for (const { state, turns } of sessions) {
          sessionStore.count(state.session_id).onsuccess = (counted) => {
            if (counted.target.result > 0) {
              summary.skipped += 1;  // never overwrite a session this database has
            } else {
              sessionStore.add(state);
              for (const turn of turns) archive.put({ ...turn, session_id: state.session_id });
              summary.sessions += 1;
            }
            if (--pending === 0) finish();
          };
        }
      };
      return () => (summary.already ? null : summary);
    }, { testHook: false });
  }
}

// Convenience for callers that prefer a function: same options as IdbStore.open.
export function openStore(options = {}) {
  return IdbStore.open(options);
}
