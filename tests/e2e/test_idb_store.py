"""worker/idb_store.js: py-agent's IndexedDB store, driven in headless Chromium.

Each test gets a new page whose origins' storage was cleared and found empty first
(``quick_page``), so IndexedDB starts empty. The module is imported on a blank page of the static server; one test runs it in a
real module Worker. Data goes in and out as JSON strings built and parsed by the Python
dataclasses (py_agent.state), so the tests also pin the shapes both sides agree on.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from py_agent.profile import ProfileFact, RemovedFact, UserProfile
from py_agent.rpc import storage_error
from py_agent.state import CompressionRecord, Fact, SessionState, StepRecord, Turn

pytestmark = pytest.mark.e2e


@pytest.fixture
def page(quick_page):
    """Each test here takes a new page in a browser profile the file's tests share, its
    storage cleared and checked empty first (conftest.py, tests/e2e/shared_profile.py)."""
    return quick_page

HELPERS = """async () => {
  const M = await import('/worker/idb_store.js');
  window.M = M;
  window.IdbStore = M.IdbStore;
  // the error a promise rejects with, as {name, message}, or null if it resolves;
  // {name: 'Timeout'} if it does neither within 5 s (so a hang fails instead of stalling)
  window.caught = async (promise) => {
    const timeout = new Promise((_, reject) => setTimeout(
      () => reject({ name: 'Timeout', message: 'neither resolved nor rejected in 5 s' }), 5000));
    try { await Promise.race([promise, timeout]); return null; }
    catch (e) { return { name: e.name, message: e.message }; }
  };
  window.dbNames = async () => (await indexedDB.databases()).map((d) => d.name).sort();
  // every [key, value] of a store, read with plain IndexedDB (not through the module)
  window.rawRead = (dbName, storeName) => new Promise((resolve, reject) => {
    const req = indexedDB.open(dbName);
    req.onerror = () => reject(req.error);
    req.onsuccess = () => {
      const db = req.result;
      try {
        const tx = db.transaction(storeName, 'readonly');
        const keys = tx.objectStore(storeName).getAllKeys();
        const values = tx.objectStore(storeName).getAll();
        tx.oncomplete = () => { db.close(); resolve({ version: db.version,
          rows: keys.result.map((k, i) => [k, values.result[i]]) }); };
        tx.onerror = () => reject(tx.error);
      } catch (e) { db.close(); reject(e); }
    };
  });
  // the reference design's database, written the way its AgentMemory class wrote it
  window.makeLegacy = (records, name = 'AgentMemoryDB') => new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore('conversations', { keyPath: 'sessionId' });
    req.onerror = () => reject(req.error);
    req.onsuccess = () => {
      const db = req.result;
      const tx = db.transaction('conversations', 'readwrite');
      for (const r of records) tx.objectStore('conversations').put(r);
      tx.oncomplete = () => { db.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
  });
}"""


@pytest.fixture
def store_page(page, blank_url):
    """A blank page of the static server with the module imported and helpers defined."""
    page.goto(blank_url)
    page.evaluate(HELPERS)
    return page


def state(session_id: str, **changes) -> SessionState:
    # Through the constructor, so facts get their ids as a loaded state's do.
    fields = {"title": f"Title {session_id}", "created_at": 1000.0, "updated_at": 2000.0}
    return SessionState(session_id=session_id, **{**fields, **changes})


def turn(turn_id: int, user: str = "question", answer: str = "answer") -> Turn:
    return Turn(id=turn_id, user=f"{user} {turn_id}", answer=f"{answer} {turn_id}",
                steps=[StepRecord(thought="think", tool="calculator", tool_input={"x": turn_id},
                                  observation=str(turn_id * 2))],
                created_at=1000.0 + turn_id)


def record(session_id: str, n: int, ok: bool = True) -> CompressionRecord:
    return CompressionRecord(session_id=session_id, started_at=5000.0 + n, duration_ms=12.5,
                             ok=ok, turn_ids=[n, n + 1], previous_summary=f"prev {n}",
                             summary_prompt=f"prompt {n}", summary=f"summary {n}",
                             facts_added=[Fact("preference", f"likes {n}", n)],
                             tokens_before=900, tokens_after=300, model_calls=1,
                             error=None if ok else "model failed", trigger="manual")


def dumps_state(s: SessionState) -> str:
    return json.dumps(s.to_dict())


def dumps_turns(turns: list[Turn]) -> str:
    return json.dumps([t.to_dict() for t in turns])


def archive_of(page, session_id: str) -> list[Turn]:
    text = page.evaluate("async (sid) => (await IdbStore.open()).readArchive(sid)", session_id)
    return [Turn.from_dict(t) for t in json.loads(text)]


def loaded(page, session_id: str) -> SessionState | None:
    text = page.evaluate("async (sid) => (await IdbStore.open()).load(sid)", session_id)
    return None if text is None else SessionState.from_dict(json.loads(text))


# --- schema, round trips -------------------------------------------------------------------

def test_open_creates_versioned_schema_and_save_load_round_trip(store_page):
    s = state("s1", summary="The user is planning a trip.",
              facts=[Fact("preference", "likes trains", 2), Fact("need", "a visa", None)],
              recent_turns=[turn(1), turn(2)], next_turn_id=3, compactions=1)
    r = store_page.evaluate("""async (json) => {
        const store = await IdbStore.open();
        const missing = await store.load('s1');
        const saved = await store.save(json);
        const text = await store.load('s1');
        const db = store._db;
        const schema = {};
        const tx = db.transaction([...db.objectStoreNames], 'readonly');
        for (const name of db.objectStoreNames) {
          const os = tx.objectStore(name);
          schema[name] = { keyPath: os.keyPath, autoIncrement: os.autoIncrement,
                           indexes: [...os.indexNames].map((i) => [i, os.index(i).keyPath]) };
        }
        const info = { name: db.name, version: db.version, constant: M.DB_VERSION };
        const badJson = await caught(store.save('{not json'));
        const noId = await caught(store.save(JSON.stringify({ title: 'x' })));
        const notString = await caught(store.load(42));
        store.close();
        return { missing, saved: saved ?? null, text, typeofText: typeof text, schema, info,
                 badJson, noId, notString };
    }""", dumps_state(s))
    assert r["missing"] is None and r["saved"] is None
    assert r["typeofText"] == "string"
    assert SessionState.from_dict(json.loads(r["text"])) == replace(s, version=1)
    assert r["info"] == {"name": "py-agent", "version": 6, "constant": 6}
    assert r["schema"] == {
        "sessions": {"keyPath": "session_id", "autoIncrement": False, "indexes": []},
        "archive": {"keyPath": ["session_id", "id"], "autoIncrement": False,
                    "indexes": [["by_session", "session_id"]]},
        "compressions": {"keyPath": None, "autoIncrement": True,
                         "indexes": [["by_session", "session_id"]]},
        "meta": {"keyPath": "key", "autoIncrement": False, "indexes": []},
        "kv": {"keyPath": None, "autoIncrement": False, "indexes": []},
        "recall": {"keyPath": "session_id", "autoIncrement": False, "indexes": []},
        "profile": {"keyPath": "key", "autoIncrement": False, "indexes": []},
        "blobs": {"keyPath": ["session_id", "id"], "autoIncrement": False, "indexes": []},
        "vectors": {"keyPath": "session_id", "autoIncrement": False, "indexes": []},
    }
    assert r["badJson"]["name"] == "StorageError" and "SyntaxError" in r["badJson"]["message"]
    assert r["noId"]["name"] == "StorageError" and "session_id" in r["noId"]["message"]
    assert r["notString"]["name"] == "StorageError"
    # save replaces the whole state
    s2 = state("s1", title="Renamed", updated_at=3000.0, version=1)
    store_page.evaluate("async (json) => (await IdbStore.open()).save(json)", dumps_state(s2))
    assert loaded(store_page, "s1") == replace(s2, version=2)


def test_commit_turn_writes_state_and_archive_together_append_only(store_page):
    s = state("s1", recent_turns=[turn(1), turn(2)], next_turn_id=3)
    store_page.evaluate("async ([s, t]) => (await IdbStore.open()).commitTurn(s, t)",
                        [dumps_state(s), dumps_turns([turn(1), turn(2)])])
    assert loaded(store_page, "s1") == replace(s, version=1)
    assert archive_of(store_page, "s1") == [turn(1), turn(2)]

    # A repeated id keeps the first copy; new ids append, in id order whatever the order given.
    changed = Turn(id=2, user="rewritten", answer="rewritten")
    s2 = state("s1", recent_turns=[turn(10), turn(11)], next_turn_id=12, updated_at=2500.0,
               version=1)
    store_page.evaluate("async ([s, t]) => (await IdbStore.open()).commitTurn(s, t)",
                        [dumps_state(s2), dumps_turns([turn(11), changed, turn(10)])])
    assert loaded(store_page, "s1") == replace(s2, version=2)
    assert [t.id for t in archive_of(store_page, "s1")] == [1, 2, 10, 11]
    assert archive_of(store_page, "s1")[1] == turn(2)

    # 's1' and 's10' share a prefix; archives stay apart. Stored rows carry session_id.
    store_page.evaluate("async ([s, t]) => (await IdbStore.open()).commitTurn(s, t)",
                        [dumps_state(state("s10")), dumps_turns([turn(1, user="other")])])
    assert [t.user for t in archive_of(store_page, "s10")] == ["other 1"]
    plain = json.loads(store_page.evaluate("async () => (await IdbStore.open()).readArchive('s10')"))
    assert plain == [turn(1, user="other").to_dict()]  # exactly Turn.to_dict(): no session_id
    assert len(archive_of(store_page, "s1")) == 4
    raw = store_page.evaluate("rawRead('py-agent', 'archive')")
    assert [row[0] for row in raw["rows"]] == [["s1", 1], ["s1", 2], ["s1", 10], ["s1", 11],
                                               ["s10", 1]]
    assert all(row[1]["session_id"] == row[0][0] for row in raw["rows"])
    bad = store_page.evaluate("""async (s) => caught((await IdbStore.open()).commitTurn(s,
        JSON.stringify([{ user: 'no id' }])))""", dumps_state(s))
    assert bad["name"] == "StorageError"


def test_commit_compaction_with_and_without_state(store_page):
    s = state("s1", summary="old")
    store_page.evaluate("async (s) => (await IdbStore.open()).save(s)", dumps_state(s))
    failed = record("s1", 1, ok=False)
    store_page.evaluate("async (r) => (await IdbStore.open()).commitCompaction(null, r)",
                        json.dumps(failed.to_dict()))
    assert loaded(store_page, "s1") == replace(s, version=1)  # no state given: untouched

    compacted = state("s1", summary="new", compactions=1, updated_at=2100.0, version=1)
    ok = record("s1", 2)
    other = record("s2", 3)
    store_page.evaluate("""async ([s, r, o]) => {
        const store = await IdbStore.open();
        await store.commitCompaction(s, r);
        await store.commitCompaction(null, o);
    }""", [dumps_state(compacted), json.dumps(ok.to_dict()), json.dumps(other.to_dict())])
    assert loaded(store_page, "s1") == replace(compacted, version=2)
    logs = store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        return [await store.compressions('s1'), await store.compressions('s2'),
                await store.compressions('nobody')];
    }""")
    assert [CompressionRecord.from_dict(d) for d in json.loads(logs[0])] == [failed, ok]
    assert [CompressionRecord.from_dict(d) for d in json.loads(logs[1])] == [other]
    assert json.loads(logs[2]) == []
    bad = store_page.evaluate("""async () => caught((await IdbStore.open()).commitCompaction(null,
        JSON.stringify({ summary: 'no session' })))""")
    assert bad["name"] == "StorageError"


def test_list_sessions_newest_first_with_archive_counts(store_page):
    store_page.evaluate("""async ([a, b, c, t3, t1]) => {
        const store = await IdbStore.open();
        await store.commitTurn(a, t3);
        await store.commitTurn(b, t1);
        await store.save(c);
    }""", [dumps_state(state("a", updated_at=100.0)),
           dumps_state(state("b", updated_at=300.0, private=True)),
           dumps_state(state("c", title="", updated_at=200.0)),
           dumps_turns([turn(1), turn(2), turn(3)]), dumps_turns([turn(1)])])
    rows = json.loads(store_page.evaluate("async () => (await IdbStore.open()).listSessions()"))
    assert rows == [
        {"session_id": "b", "title": "Title b", "updated_at": 300.0, "turns": 1, "private": True},
        {"session_id": "c", "title": "", "updated_at": 200.0, "turns": 0, "private": False},
        {"session_id": "a", "title": "Title a", "updated_at": 100.0, "turns": 3, "private": False},
    ]


def test_delete_session_removes_state_archive_log_and_recall_blob(store_page):
    for sid in ("keep", "drop"):
        store_page.evaluate("""async ([s, t, r]) => {
            const store = await IdbStore.open();
            await store.commitTurn(s, t);
            await store.commitCompaction(null, r);
            await store.commitCompaction(null, r);
            await store.saveRecall(JSON.parse(s).session_id, new Uint8Array([1, 2, 3]));
        }""", [dumps_state(state(sid)), dumps_turns([turn(1), turn(2)]),
               json.dumps(record(sid, 1).to_dict())])
    r = store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        const first = await store.deleteSession('drop');
        const again = await store.deleteSession('drop');
        const never = await store.deleteSession('never-was');
        return { first, again, never, load: await store.load('drop'),
                 archive: await store.readArchive('drop'), log: await store.compressions('drop'),
                 list: await store.listSessions() };
    }""")
    assert (r["first"], r["again"], r["never"]) == (True, False, False)
    assert r["load"] is None and r["archive"] == "[]" and r["log"] == "[]"
    assert [row["session_id"] for row in json.loads(r["list"])] == ["keep"]
    for store_name, expected in (("sessions", 1), ("archive", 2), ("compressions", 2),
                                 ("recall", 1)):
        rows = store_page.evaluate("([db, s]) => rawRead(db, s)", ["py-agent", store_name])["rows"]
        assert len(rows) == expected, store_name
        assert all((row[1].get("session_id")) == "keep" for row in rows)


# --- legacy migration ----------------------------------------------------------------------

LEGACY_RECORDS = [
    {"sessionId": "legacy-a", "summary": "The user is learning arithmetic.", "history": [
        'User: What is 2+2?\nThought: I should calculate.\nAction: calculator("2+2")\n'
        'Observation: 4\nThought: I know the answer.\nAssistant: 2+2 is 4.',
        'User: And the weather in Paris, please, for the whole of next week if you can?\n'
        'Thought: Use the tool.\nAction: weather("Paris")\nObservation: Tool failed with '
        'error: timeout\nObservation: sunny\nsecond line\nAssistant: Sunny.\nEnjoy!',
    ]},
    {"sessionId": 7, "summary": None, "history": [
        "free text with no labels at all",
        'User: multi\nline question\nAction: search("a "quoted" thing")\nObservation: found',
    ]},
]


def test_legacy_database_is_migrated_once_and_left_intact(store_page):
    store_page.evaluate("(records) => makeLegacy(records)", LEGACY_RECORDS)
    before = store_page.evaluate("rawRead('AgentMemoryDB', 'conversations')")
    first = store_page.evaluate("async () => (await IdbStore.open()).legacyMigration")
    assert json.loads(first) == {"sessions": 2, "skipped": 0, "source": "AgentMemoryDB"}

    a = loaded(store_page, "legacy-a")
    assert a.title == "What is 2+2?"
    assert a.summary == "The user is learning arithmetic."
    assert (a.facts, a.next_turn_id, a.compactions, a.failed_compactions) == ([], 3, 0, 0)
    assert a.created_at > 0 and a.updated_at == a.created_at
    t1, t2 = a.recent_turns
    assert (t1.id, t1.user, t1.answer, t1.status) == (1, "What is 2+2?", "2+2 is 4.", "answered")
    assert t1.steps == [StepRecord("I should calculate.", "calculator", "2+2", "4"),
                        StepRecord("I know the answer.", "", "", "")]
    assert t2.user.startswith("And the weather") and t2.answer == "Sunny.\nEnjoy!"
    assert t2.steps == [StepRecord("Use the tool.", "weather", "Paris",
                                   "Tool failed with error: timeout"),
                        StepRecord("", "", "", "sunny\nsecond line")]
    assert archive_of(store_page, "legacy-a") == a.recent_turns

    b = loaded(store_page, "7")  # numeric legacy ids become strings, as Python expects
    assert b.summary == "" and b.title == "free text with no labels at all"
    u1, u2 = b.recent_turns
    assert (u1.user, u1.answer, u1.steps, u1.status) == (
        "free text with no labels at all", "", [], "incomplete")
    assert u2.user == "multi\nline question" and u2.status == "incomplete"
    assert u2.steps == [StepRecord("", "search", 'a "quoted" thing', "found")]

    rows = json.loads(store_page.evaluate("async () => (await IdbStore.open()).listSessions()"))
    assert sorted((r["session_id"], r["turns"]) for r in rows) == [("7", 2), ("legacy-a", 2)]
    meta = store_page.evaluate("rawRead('py-agent', 'meta')")["rows"]
    assert [m[0] for m in meta] == ["legacy-migrated"] and meta[0][1]["sessions"] == 2

    # The legacy database is untouched, and a second open does not migrate again.
    assert store_page.evaluate("rawRead('AgentMemoryDB', 'conversations')") == before
    store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        await store.deleteSession('7');  // would come back if migration ran twice
        store.close(); }""")
    second = store_page.evaluate("async () => (await IdbStore.open()).legacyMigration")
    assert second is None
    assert loaded(store_page, "7") is None
    assert store_page.evaluate("dbNames()") == ["AgentMemoryDB", "py-agent"]


def test_legacy_migration_never_overwrites_existing_sessions(store_page):
    mine = state("legacy-a", title="Mine", recent_turns=[turn(1)], next_turn_id=2)
    store_page.evaluate("""async (s) => {
        const store = await IdbStore.open({ legacyName: null });  // no migration yet
        await store.commitTurn(s, JSON.stringify(JSON.parse(s).recent_turns));
        store.close(); }""", dumps_state(mine))
    store_page.evaluate("(records) => makeLegacy(records)", LEGACY_RECORDS)
    result = store_page.evaluate("async () => (await IdbStore.open()).legacyMigration")
    assert json.loads(result) == {"sessions": 1, "skipped": 1, "source": "AgentMemoryDB"}
    assert loaded(store_page, "legacy-a") == replace(mine, version=1)
    assert archive_of(store_page, "legacy-a") == [turn(1)]
    assert loaded(store_page, "7") is not None


def test_no_legacy_database_is_never_created(store_page):
    r = store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        const names = await dbNames();
        const migration = store.legacyMigration;
        store.close();
        // Without indexedDB.databases() the module probes by opening the name.
        const original = Object.getOwnPropertyDescriptor(IDBFactory.prototype, 'databases');
        Object.defineProperty(IDBFactory.prototype, 'databases', { value: undefined, configurable: true });
        const probed = await IdbStore.open({ name: 'other-app' });
        const probedMigration = probed.legacyMigration;
        probed.close();
        Object.defineProperty(IDBFactory.prototype, 'databases', original);
        return { names, migration, probedMigration, after: await dbNames() };
    }""")
    assert r["names"] == ["py-agent"]
    assert json.loads(r["migration"]) == {"sessions": 0, "skipped": 0, "source": None}
    assert json.loads(r["probedMigration"]) == {"sessions": 0, "skipped": 0, "source": None}
    assert r["after"] == ["other-app", "py-agent"]


def test_legacy_migration_without_databases_api(store_page):
    store_page.evaluate("(records) => makeLegacy(records)", LEGACY_RECORDS)
    r = store_page.evaluate("""async () => {
        Object.defineProperty(IDBFactory.prototype, 'databases', { value: undefined, configurable: true });
        const store = await IdbStore.open();
        return { migration: store.legacyMigration, titles: await store.listSessions() };
    }""")
    assert json.loads(r["migration"])["sessions"] == 2
    assert len(json.loads(r["titles"])) == 2


# --- key-value data (v2) -------------------------------------------------------------------

def test_kv_get_put_delete_and_list_by_prefix(store_page):
    r = store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        const out = { missing: await store.kvGet('note:000001') };
        await store.kvPut('note:000002', JSON.stringify({ title: 'b', tags: ['x'], n: 1.5 }));
        await store.kvPut('note:000001', JSON.stringify({ title: 'a' }));
        await store.kvPut('notes', JSON.stringify('a key that only looks like the prefix'));
        await store.kvPut('todo:000001', JSON.stringify({ task: 'milk', done: false }));
        await store.kvPut('note:\\uffff', JSON.stringify('last possible note key'));
        await store.kvPut('z', JSON.stringify(null));
        out.typeofGet = typeof await store.kvGet('note:000002');
        out.got = await store.kvGet('note:000002');
        out.nullValue = await store.kvGet('z');
        out.notes = await store.kvList('note:');
        out.all = await store.kvList('');
        out.defaultPrefix = await store.kvList();
        out.none = await store.kvList('q');
        await store.kvPut('note:000001', JSON.stringify({ title: 'a2' }));
        out.replaced = await store.kvGet('note:000001');
        out.deleted = await store.kvDelete('note:000001');
        out.deletedAgain = await store.kvDelete('note:000001');
        out.afterDelete = await store.kvList('note:');
        out.emptyKey = await caught(store.kvPut('', '1'));
        out.numberKey = await caught(store.kvGet(7));
        out.badJson = await caught(store.kvPut('k', '{nope'));
        out.notText = await caught(store.kvPut('k', { raw: 'object' }));
        // a session's data and the kv data do not meet
        out.sessions = await store.listSessions();
        store.close();
        return out;
    }""")
    assert r["missing"] is None and r["typeofGet"] == "string"
    assert json.loads(r["got"]) == {"title": "b", "tags": ["x"], "n": 1.5}
    assert r["nullValue"] == "null"
    assert json.loads(r["notes"]) == [["note:000001", {"title": "a"}],
                                      ["note:000002", {"title": "b", "tags": ["x"], "n": 1.5}],
                                      ["note:\uffff", "last possible note key"]]
    assert [k for k, _ in json.loads(r["all"])] == [
        "note:000001", "note:000002", "note:\uffff", "notes", "todo:000001", "z"]
    assert r["defaultPrefix"] == r["all"]
    assert json.loads(r["none"]) == []
    assert json.loads(r["replaced"]) == {"title": "a2"}
    assert (r["deleted"], r["deletedAgain"]) == (True, False)
    assert [k for k, _ in json.loads(r["afterDelete"])] == ["note:000002", "note:\uffff"]
    for key in ("emptyKey", "numberKey"):
        assert r[key]["name"] == "StorageError" and "non-empty string" in r[key]["message"]
    assert r["badJson"]["name"] == "StorageError" and "SyntaxError" in r["badJson"]["message"]
    assert r["notText"]["name"] == "StorageError" and "JSON string" in r["notText"]["message"]
    assert json.loads(r["sessions"]) == []


def test_kv_write_failure_writes_nothing(store_page):
    r = store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        await store.kvPut('todo:000001', JSON.stringify({ task: 'milk' }));
        IdbStore.failNextWrite('QuotaExceededError');
        const quota = await caught(store.kvPut('todo:000001', JSON.stringify({ task: 'bread' })));
        IdbStore.failNextWrite('QuotaExceededError');
        const del = await caught(store.kvDelete('todo:000001'));
        const after = await store.kvGet('todo:000001');
        store.close();
        return { quota, del, after };
    }""")
    assert r["quota"]["name"] == "StorageQuotaError" and r["del"]["name"] == "StorageQuotaError"
    assert storage_error(r["quota"]).kind == "quota"
    assert json.loads(r["after"]) == {"task": "milk"}


V1_DATABASE = r"""async ([state, turns, compression]) => {
  // The py-agent database exactly as version 1 of this app created and filled it.
  const db = await new Promise((resolve, reject) => {
    const q = indexedDB.open('py-agent', 1);
    q.onupgradeneeded = () => {
      const db = q.result;
      db.createObjectStore('sessions', { keyPath: 'session_id' });
      const archive = db.createObjectStore('archive', { keyPath: ['session_id', 'id'] });
      archive.createIndex('by_session', 'session_id');
      const compressions = db.createObjectStore('compressions', { autoIncrement: true });
      compressions.createIndex('by_session', 'session_id');
      db.createObjectStore('meta', { keyPath: 'key' });
    };
    q.onsuccess = () => resolve(q.result);
    q.onerror = () => reject(q.error);
  });
  await new Promise((resolve, reject) => {
    const tx = db.transaction(['sessions', 'archive', 'compressions', 'meta'], 'readwrite');
    const s = JSON.parse(state);
    tx.objectStore('sessions').put(s);
    for (const t of JSON.parse(turns)) tx.objectStore('archive').put({ ...t, session_id: s.session_id });
    tx.objectStore('compressions').add(JSON.parse(compression));
    tx.objectStore('meta').put({ key: 'legacy-migrated', at: 1, sessions: 0, skipped: 0, source: null });
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  const before = { version: db.version, stores: [...db.objectStoreNames] };
  db.close();
  return before;
}"""


def test_upgrade_from_version_1_keeps_every_record_and_adds_kv_recall_and_profile(store_page):
    s = state("old", summary="Planned a trip to Lisbon.", recent_turns=[turn(1), turn(2)],
              next_turn_id=3, facts=[Fact("preference", "vegetarian", 1)], compactions=1)
    before = store_page.evaluate(V1_DATABASE, [dumps_state(s), dumps_turns([turn(1), turn(2)]),
                                               json.dumps(record("old", 1).to_dict())])
    assert before == {"version": 1, "stores": ["archive", "compressions", "meta", "sessions"]}
    raw_before = {name: store_page.evaluate("(n) => rawRead('py-agent', n)", name)["rows"]
                  for name in before["stores"]}

    r = store_page.evaluate("""async () => {
        const store = await IdbStore.open();
        const out = { version: store._db.version, stores: [...store._db.objectStoreNames].sort(),
                      migration: store.legacyMigration, list: await store.listSessions() };
        await store.kvPut('note:000001', JSON.stringify({ title: 'Trip', text: 'Lisbon' }));
        out.kv = await store.kvList('note:');
        out.saved = await store.saveRecall('old', new Uint8Array([82, 67, 76, 49]));
        out.blobs = (await store.loadRecall()).map(([sid, blob]) => [sid, [...blob]]);
        store.close();
        return out;
    }""")
    assert r["version"] == 6
    assert r["stores"] == ["archive", "blobs", "compressions", "kv", "meta", "profile",
                           "recall", "sessions", "vectors"]
    assert r["migration"] is None            # the v1 database had already migrated legacy data
    assert json.loads(r["kv"]) == [["note:000001", {"title": "Trip", "text": "Lisbon"}]]
    assert r["saved"] is True and r["blobs"] == [["old", [82, 67, 76, 49]]]
    # Every v1 record is still there, unchanged, and reads back through the store.
    for name, rows in raw_before.items():
        after = store_page.evaluate("(n) => rawRead('py-agent', n)", name)
        assert after["version"] == 6 and after["rows"] == rows, name
    assert loaded(store_page, "old") == s
    assert archive_of(store_page, "old") == [turn(1), turn(2)]
    logged = store_page.evaluate("async () => (await IdbStore.open()).compressions('old')")
    assert [CompressionRecord.from_dict(x) for x in json.loads(logged)] == [record("old", 1)]
    assert [(x["session_id"], x["turns"]) for x in json.loads(r["list"])] == [("old", 2)]
    # and the upgrade is done once: a second open keeps the kv data
    again = store_page.evaluate("async () => (await IdbStore.open()).kvGet('note:000001')")
    assert json.loads(again) == {"title": "Trip", "text": "Lisbon"}


# --- versions, blocking, errors -----------------------------------------------------------

def test_blocked_upgrade_and_version_changes(store_page):
    r = store_page.evaluate("""async () => {
        // An older tab that ignores versionchange keeps the database open at version 1.
        const first = await IdbStore.open({ name: 'app', legacyName: null });
        first.close();
        const holder = await new Promise((ok) => { const q = indexedDB.open('app'); q.onsuccess = () => ok(q.result); });
        const t0 = performance.now();
        const blocked = await caught(IdbStore.open({ name: 'app', legacyName: null, version: M.DB_VERSION + 1 }));
        const blockedMs = performance.now() - t0;
        holder.close();  // the pending upgrade now completes; the module closes that connection
        await new Promise((r) => setTimeout(r, 100));
        const upgraded = await IdbStore.open({ name: 'app', legacyName: null, version: M.DB_VERSION + 2 });
        const upgradedVersion = upgraded._db.version;
        upgraded.close();

        // Our own connection steps aside for another tab's upgrade ...
        const mine = await IdbStore.open({ name: 'app', legacyName: null, version: M.DB_VERSION + 2 });
        const other = await new Promise((ok, no) => {
          const q = indexedDB.open('app', M.DB_VERSION + 3);
          q.onblocked = () => no(new Error('blocked by our own connection'));
          q.onsuccess = () => ok(q.result); q.onerror = () => no(q.error);
        });
        other.close();
        // ... and then tells its caller to reload.
        const afterUpgrade = await caught(mine.load('x'));
        // A database newer than this code.
        const newer = await caught(IdbStore.open({ name: 'app', legacyName: null }));
        return { blocked, blockedMs, upgradedVersion, afterUpgrade, newer, current: M.DB_VERSION };
    }""")
    assert r["blocked"]["name"] == "StorageBlockedError"
    assert "close other tabs of this app" in r["blocked"]["message"].lower()
    assert r["blockedMs"] < 2000
    assert r["upgradedVersion"] == r["current"] + 2
    assert r["afterUpgrade"]["name"] == "VersionError"
    assert "reload" in r["afterUpgrade"]["message"].lower()
    assert r["newer"]["name"] == "VersionError" and "newer version" in r["newer"]["message"]
    assert storage_error(r["blocked"]).kind == "blocked"
    assert storage_error(r["newer"]).kind == "version"


def test_fail_next_write_gives_quota_error_and_writes_nothing(store_page):
    s1 = state("s1", recent_turns=[turn(1)], next_turn_id=2)
    s2 = state("s1", recent_turns=[turn(1), turn(2)], next_turn_id=3, updated_at=9000.0,
               version=1)
    r = store_page.evaluate("""async ([s1, t1, s2, t2]) => {
        const store = await IdbStore.open();
        await store.commitTurn(s1, t1);
        IdbStore.failNextWrite('QuotaExceededError');
        const quota = await caught(store.commitTurn(s2, t2));
        const afterState = JSON.parse(await store.load('s1')).next_turn_id;
        const afterArchive = JSON.parse(await store.readArchive('s1')).length;
        const retry = await caught(store.commitTurn(s2, t2));  // the hook fires once
        IdbStore.failNextWrite('UnknownError');
        const other = await caught(store.deleteSession('s1'));
        const mapped = M.toStorageError(new DOMException('disk full', 'QuotaExceededError'));
        return { quota, afterState, afterArchive, retry, other,
                 final: JSON.parse(await store.load('s1')).next_turn_id,
                 mapped: { name: mapped.name, message: mapped.message } };
    }""", [dumps_state(s1), dumps_turns([turn(1)]), dumps_state(s2), dumps_turns([turn(2)])])
    assert r["quota"]["name"] == "StorageQuotaError"
    assert "storage is full" in r["quota"]["message"].lower()
    assert "deleting old sessions" in r["quota"]["message"]
    assert (r["afterState"], r["afterArchive"]) == (2, 1)  # the aborted turn left no trace
    assert r["retry"] is None and r["final"] == 3
    assert r["other"]["name"] == "StorageError" and "UnknownError" in r["other"]["message"]
    assert r["mapped"] == r["quota"]
    assert storage_error(r["quota"]).kind == "quota"
    assert storage_error(r["other"]).kind == "unknown"


# --- the recall index's blobs -----------------------------------------------------------------

def test_recall_blobs_are_kept_per_session_as_bytes_and_never_without_their_session(store_page):
    r = store_page.evaluate("""async ([a, b, t]) => {
        const store = await IdbStore.open();
        await store.commitTurn(a, t);
        await store.commitTurn(b, t);
        const bytes = (rows) => rows.map(([sid, blob]) => [sid, blob.constructor.name, [...blob]]);
        const out = { empty: await store.loadRecall() };
        out.ghost = await store.saveRecall('ghost', new Uint8Array([1]));   // no such session
        const view = new Uint8Array([0, 9, 8, 7, 255]).subarray(1, 4);       // a view of a buffer
        out.savedA = await store.saveRecall('a', view);
        out.savedB = await store.saveRecall('b', new Uint8Array([5, 5]).buffer);
        out.both = bytes(await store.loadRecall());
        view[0] = 0;                                  // the store kept its own copy
        out.copied = bytes(await store.loadRecall());
        out.dropped = await store.saveRecall('b', null);
        out.afterDrop = bytes(await store.loadRecall());
        out.notBytes = await caught(store.saveRecall('a', 'text'));
        IdbStore.failNextWrite('QuotaExceededError');
        out.quota = await caught(store.saveRecall('a', new Uint8Array([4])));
        out.afterQuota = bytes(await store.loadRecall());
        await store.deleteSession('a');
        out.afterDelete = bytes(await store.loadRecall());
        out.late = await store.saveRecall('a', new Uint8Array([6]));
        out.afterLate = bytes(await store.loadRecall());
        store.close();
        return out;
    }""", [dumps_state(state("a")), dumps_state(state("b")), dumps_turns([turn(1)])])
    assert r["empty"] == [] and r["ghost"] is False
    assert r["savedA"] is True and r["savedB"] is True
    assert sorted(r["both"]) == [["a", "Uint8Array", [9, 8, 7]], ["b", "Uint8Array", [5, 5]]]
    assert sorted(r["copied"]) == sorted(r["both"])
    assert r["dropped"] is True and r["afterDrop"] == [["a", "Uint8Array", [9, 8, 7]]]
    assert r["notBytes"]["name"] == "StorageError" and "Uint8Array" in r["notBytes"]["message"]
    assert r["quota"]["name"] == "StorageQuotaError"
    assert r["afterQuota"] == [["a", "Uint8Array", [9, 8, 7]]]   # the failed write left nothing
    assert r["afterDelete"] == [] and r["late"] is False and r["afterLate"] == []


def test_turn_vectors_are_kept_apart_from_recall_blobs_and_deleted_with_their_session(store_page):
    """Version 6's store: a session's vectors (py_agent.recall.vectors) beside its recall
    blob, never without its session, and gone when the chat is deleted."""
    r = store_page.evaluate("""async ([a, b, t]) => {
        const store = await IdbStore.open();
        await store.commitTurn(a, t);
        await store.commitTurn(b, t);
        const bytes = (rows) => rows.map(([sid, blob]) => [sid, [...blob]]).sort();
        const out = { ghost: await store.saveVectors('ghost', new Uint8Array([1])) };
        await store.saveVectors('a', new Uint8Array([1, 2]));
        await store.saveVectors('b', new Uint8Array([3]));
        await store.saveRecall('a', new Uint8Array([9]));
        out.vectors = bytes(await store.loadVectors());
        out.recall = bytes(await store.loadRecall());
        await store.deleteSession('a');
        out.afterDelete = bytes(await store.loadVectors());
        out.late = await store.saveVectors('a', new Uint8Array([6]));
        out.afterLate = bytes(await store.loadVectors());
        store.close();
        return out;
    }""", [dumps_state(state("a")), dumps_state(state("b")), dumps_turns([turn(1)])])
    assert r["ghost"] is False
    assert r["vectors"] == [["a", [1, 2]], ["b", [3]]] and r["recall"] == [["a", [9]]]
    assert r["afterDelete"] == [["b", [3]]]
    assert r["late"] is False and r["afterLate"] == [["b", [3]]]


def test_read_turns_reads_only_the_ids_asked_for_in_order(store_page):
    r = store_page.evaluate("""async ([s, t, other, ot]) => {
        const store = await IdbStore.open();
        await store.commitTurn(s, t);
        await store.commitTurn(other, ot);
        const out = { some: await store.readTurns('s1', '[7, 2, 99, 2]'),
                      none: await store.readTurns('s1', '[]'),
                      nobody: await store.readTurns('nobody', '[1]'),
                      bad: await caught(store.readTurns('s1', '[1.5]')) };
        store.close();
        return out;
    }""", [dumps_state(state("s1")), dumps_turns([turn(1), turn(2), turn(7)]),
           dumps_state(state("s2")), dumps_turns([turn(2, "other")])])
    assert [Turn.from_dict(t) for t in json.loads(r["some"])] == [turn(2), turn(7)]
    assert r["none"] == "[]" and r["nobody"] == "[]"
    assert r["bad"]["name"] == "StorageError" and "integers" in r["bad"]["message"]


# --- several tabs on one database ----------------------------------------------------------

def test_a_state_write_from_an_outdated_version_is_refused_and_writes_nothing(store_page):
    """What keeps two tabs from overwriting each other (py_agent.store's contract)."""
    r = store_page.evaluate("""async ([v0, v1, staleTurn, record]) => {
        const tab1 = await IdbStore.open(), tab2 = await IdbStore.open();  // two connections
        await tab1.commitTurn(v0, '[]');
        await tab2.commitTurn(v1, '[]');         // the other tab wrote version 2
        const stale = [await caught(tab1.commitTurn(v1, staleTurn)), await caught(tab1.save(v1)),
                       await caught(tab1.commitCompaction(v1, record))];
        const out = { stale, state: JSON.parse(await tab1.load('s1')),
                      archive: JSON.parse(await tab1.readArchive('s1')),
                      log: JSON.parse(await tab1.compressions('s1')),
                      fresh: await caught(tab1.save(JSON.stringify({ session_id: 'new', version: 3 }))) };
        tab1.close(); tab2.close();
        return out;
    }""", [dumps_state(state("s1", next_turn_id=1)), dumps_state(state("s1", next_turn_id=2, version=1)),
           dumps_turns([turn(9)]), json.dumps(record("s1", 1).to_dict())])
    for error in r["stale"] + [r["fresh"]]:
        assert error["name"] == "StateConflictError" and "another tab" in error["message"]
        assert storage_error(error).kind == "conflict"
    assert (r["state"]["version"], r["state"]["next_turn_id"]) == (2, 2)
    assert r["archive"] == [] and r["log"] == []


def test_an_interrupted_placeholder_is_replaced_by_the_final_turn(store_page):
    started = Turn(id=1, user="q", answer="", status="interrupted", created_at=5.0)
    final = Turn(id=1, user="q", answer="a", status="answered", created_at=5.0)
    store_page.evaluate("""async ([v0, v1, v2, started, final, both]) => {
        const store = await IdbStore.open();
        await store.commitTurn(v0, started);
        await store.commitTurn(v1, final);
        await store.commitTurn(v2, both);   // a final turn stays, even against a placeholder
        store.close();
    }""", [dumps_state(state("s1", next_turn_id=2)),
           dumps_state(state("s1", next_turn_id=2, version=1)),
           dumps_state(state("s1", next_turn_id=2, version=2)),
           dumps_turns([started]), dumps_turns([final]), dumps_turns([started, turn(1)])])
    assert archive_of(store_page, "s1") == [final]


WORKER_SOURCE = """
import { IdbStore, STORE_METHODS, KV_METHODS } from '%(origin)s/worker/idb_store.js';
self.onmessage = async ({ data: [state, turns] }) => {
  try {
    const store = await IdbStore.open();
    await store.commitTurn(state, turns);
    IdbStore.failNextWrite('QuotaExceededError');
    let error = null;
    try { await store.save(state); } catch (e) { error = e.name; }
    await store.saveRecall('w1', new Uint8Array([7, 8, 9]));
    const blobs = (await store.loadRecall()).map(([sid, blob]) => [sid, [...blob]]);
    const out = { blobs, inWorker: typeof window === 'undefined' && typeof WorkerGlobalScope !== 'undefined',
                  methods: STORE_METHODS, kvMethods: KV_METHODS, loaded: await store.load('w1'),
                  archive: await store.readArchive('w1'), list: await store.listSessions(), error };
    store.close();
    self.postMessage(out);
  } catch (e) {
    self.postMessage({ failed: `${e.name}: ${e.message}` });
  }
};
"""


def test_store_runs_in_a_module_worker(store_page, static_server):
    s = state("w1", recent_turns=[turn(1)], next_turn_id=2)
    r = store_page.evaluate("""([source, state, turns]) => new Promise((resolve, reject) => {
        const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
        const worker = new Worker(url, { type: 'module' });
        worker.onerror = (e) => reject(new Error('worker error: ' + e.message));
        worker.onmessage = async (e) => {
          worker.terminate();
          try {  // the page sees what the worker wrote: one database per origin
            resolve({ ...e.data, page: await (await IdbStore.open()).load('w1') });
          } catch (error) { reject(error); }
        };
        worker.postMessage([state, turns]);
    })""", [WORKER_SOURCE % {"origin": static_server}, dumps_state(s), dumps_turns([turn(1)])])
    assert "failed" not in r, r.get("failed")
    assert r["inWorker"] is True
    assert r["methods"] == ["load", "save", "commitTurn", "commitCompaction", "readArchive",
                            "compressions", "listSessions", "deleteSession", "saveRecall",
                            "loadRecall", "saveVectors", "loadVectors", "readTurns",
                            "loadProfile", "saveProfile", "putBlob", "getBlob", "blobSizes"]
    assert r["blobs"] == [["w1", [7, 8, 9]]]
    assert r["kvMethods"] == ["kvGet", "kvPut", "kvDelete", "kvList"]
    assert SessionState.from_dict(json.loads(r["loaded"])) == replace(s, version=1)
    assert [Turn.from_dict(t) for t in json.loads(r["archive"])] == [turn(1)]
    assert json.loads(r["list"])[0]["turns"] == 1
    assert r["error"] == "StorageQuotaError"
    assert r["page"] == r["loaded"]


# --- the user profile ------------------------------------------------------------------

def profile_json(*texts: str, session_id: str = "s1", version: int = 0) -> str:
    profile = UserProfile(version=version)
    for i, text in enumerate(texts, 1):
        profile.facts.append(ProfileFact(profile.new_id(), "preference", text, session_id,
                                         f"f{i}", i, 1000.0 + i))
    return json.dumps(profile.to_dict())


def loaded_profile(page) -> UserProfile | None:
    text = page.evaluate("async () => (await IdbStore.open()).loadProfile()")
    return None if text is None else UserProfile.from_dict(json.loads(text))


def test_the_profile_round_trips_and_is_written_conditionally(store_page):
    written = UserProfile.from_dict(json.loads(profile_json("likes tea", "ünïcode 日本")))
    written.removed.append(RemovedFact("s0", "f9", "need", "a visa", 3, "forgotten", 5.0))
    r = store_page.evaluate("""async ([first, stale, other]) => {
        const tab1 = await IdbStore.open(), tab2 = await IdbStore.open();
        const empty = await tab1.loadProfile();
        await tab1.saveProfile(first);
        const conflicts = [await caught(tab2.saveProfile(stale)),
                           await caught(tab2.commitCompaction(null, other, stale))];
        const bad = await caught(tab1.saveProfile(JSON.stringify({ facts: 'no' })));
        const log = await tab1.compressions('s1');
        tab1.close(); tab2.close();
        return { empty, conflicts, bad, log };
    }""", [json.dumps(written.to_dict()), profile_json("stale"),
           json.dumps(record("s1", 1).to_dict())])
    assert r["empty"] is None
    for error in r["conflicts"]:
        assert error["name"] == "StateConflictError" and "user profile" in error["message"]
        assert storage_error(error).kind == "conflict"
    assert r["bad"]["name"] == "StorageError" and r["log"] == "[]"
    assert loaded_profile(store_page) == replace(written, version=1)


def test_a_profile_write_carries_a_state_or_a_compaction_in_one_transaction(store_page):
    r = store_page.evaluate("""async ([p0, p1, p2, stateNew, stateStale, rec, failing]) => {
        const store = await IdbStore.open();
        await store.saveProfile(p0, stateNew);                 // profile and a new session
        const staleState = await caught(store.saveProfile(p1, stateStale));
        const afterStale = JSON.parse(await store.loadProfile()).version;
        await store.commitCompaction(null, rec, p1);           // a compaction with the profile
        IdbStore.failNextWrite('QuotaExceededError');
        const quota = await caught(store.saveProfile(p2, failing));
        const out = { staleState, afterStale, quota,
                      state: JSON.parse(await store.load('mine')),
                      failing: await store.load('never'),
                      log: JSON.parse(await store.compressions('s1')).length,
                      profile: JSON.parse(await store.loadProfile()) };
        store.close();
        return out;
    }""", [profile_json("likes tea"), profile_json("likes coffee", version=1),
           profile_json("likes juice", version=2),
           dumps_state(state("mine", private=True)), dumps_state(state("mine", version=7)),
           json.dumps(record("s1", 1).to_dict()), dumps_state(state("never"))])
    assert r["staleState"]["name"] == "StateConflictError" and r["afterStale"] == 1
    assert r["quota"]["name"] == "StorageQuotaError" and r["failing"] is None
    assert r["state"]["private"] is True and r["state"]["version"] == 1
    assert r["log"] == 1
    assert r["profile"]["version"] == 2 and [f["text"] for f in r["profile"]["facts"]] == [
        "likes coffee"]


def test_deleting_a_session_takes_its_facts_out_of_the_profile(store_page):
    profile = UserProfile.from_dict(json.loads(profile_json("likes tea", session_id="drop")))
    profile.facts.append(ProfileFact("p9", "need", "a quiet room", "keep", "f1", 1, 2.0))
    profile.removed.append(RemovedFact("drop", "f7", "need", "old", 1, "forgotten", 1.0))
    r = store_page.evaluate("""async ([profile, drop, keep, turns]) => {
        const store = await IdbStore.open();
        await store.commitTurn(drop, turns);
        await store.commitTurn(keep, turns);
        await store.saveProfile(profile);
        const deleted = await store.deleteSession('drop');
        const after = JSON.parse(await store.loadProfile());
        await store.deleteSession('nobody');   // nothing of it in the profile: not written
        const again = JSON.parse(await store.loadProfile()).version;
        store.close();
        return { deleted, after, again };
    }""", [json.dumps(profile.to_dict()), dumps_state(state("drop")), dumps_state(state("keep")),
           dumps_turns([turn(1)])])
    assert r["deleted"] is True
    assert [(f["text"], f["session_id"]) for f in r["after"]["facts"]] == [("a quiet room", "keep")]
    assert r["after"]["removed"] == [] and r["after"]["version"] == 2 and r["again"] == 2


def test_upgrade_from_version_2_adds_the_profile_and_keeps_everything(store_page):
    """A database of version 2 (kv, no recall or profile store) opens at version 6: the
    steps above 2 run (4 here; a step 3 another part adds runs too), nothing else moves."""
    s = state("old", summary="kept", recent_turns=[turn(1)], next_turn_id=2)
    r = store_page.evaluate("""async ([s, t]) => {
        const v2 = await IdbStore.open({ version: 2, legacyName: null });
        await v2.commitTurn(s, t);
        await v2.kvPut('note:1', JSON.stringify({ a: 1 }));
        const before = [...v2._db.objectStoreNames].sort();
        v2.close();
        const store = await IdbStore.open({ legacyName: null });
        const out = { before, version: store._db.version,
                      stores: [...store._db.objectStoreNames].sort(),
                      state: JSON.parse(await store.load('old')), kv: await store.kvGet('note:1'),
                      profile: await store.loadProfile() };
        await store.saveProfile(JSON.stringify({ facts: [], removed: [], next_id: 1, version: 0 }));
        out.saved = JSON.parse(await store.loadProfile()).version;
        store.close();
        return out;
    }""", [dumps_state(s), dumps_turns([turn(1)])])
    assert "profile" not in r["before"] and r["version"] == 6
    assert "profile" in r["stores"] and r["profile"] is None and r["saved"] == 1
    assert r["state"]["summary"] == "kept" and json.loads(r["kv"]) == {"a": 1}


def test_attachments_blobs_are_kept_read_back_and_deleted_with_their_session(store_page):
    r = store_page.evaluate("""async ([state, turns]) => {
        const store = await IdbStore.open({ name: 'blobs-test', legacyName: null });
        await store.commitTurn(state, turns);
        await store.putBlob('s1', 'a1', new Uint8Array([137, 80, 78, 71]),
                            JSON.stringify({ name: 'x.png', type: 'image/png', size: 4 }));
        await store.putBlob('other', 'a2', new Uint8Array([1, 2, 3]), JSON.stringify({}));
        const [meta, bytes] = await store.getBlob('s1', 'a1');
        const out = { meta: JSON.parse(meta), bytes: [...bytes],
                      sizes: JSON.parse(await store.blobSizes('s1')),
                      missing: await store.getBlob('s1', 'nope') };
        await store.deleteSession('s1');
        out.after = await store.getBlob('s1', 'a1');
        out.other = [...(await store.getBlob('other', 'a2'))[1]];
        out.failed = await store.putBlob('s1', 'b', 'not bytes', '{}').then(() => null, (e) => e.name);
        store.close();
        return out;
    }""", [dumps_state(state("s1")), dumps_turns([turn(1)])])
    assert r["meta"] == {"name": "x.png", "type": "image/png", "size": 4}
    assert r["bytes"] == [137, 80, 78, 71] and r["sizes"] == {"a1": 4} and r["missing"] is None
    assert r["after"] is None and r["other"] == [1, 2, 3] and r["failed"] == "StorageError"
