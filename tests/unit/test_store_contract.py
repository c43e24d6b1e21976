"""One contract for every Store: in memory and SQLite (a file and ``:memory:``).

The browser's IndexedDB store keeps the same contract in tests/e2e/test_idb_store.py;
these are the same behaviours, asserted on the Python stores.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from py_agent import Agent, InMemoryStore, StorageError, Store
from py_agent.store import StateConflictError
from py_agent.profile import ProfileFact, RemovedFact, UserProfile
from py_agent.sqlite_store import SCHEMA_VERSION, SqliteStore
from py_agent.memory import MemoryPolicy
from py_agent.state import CompressionRecord, Fact, FactChange, SessionState, StepRecord, Turn
from tests.unit.support import LONG, SMALL, echo_agent_reply, make_responder, run
from py_agent.testing import FunctionModel


@pytest.fixture(params=["memory", "sqlite-file", "sqlite-memory"])
def store(request, tmp_path) -> Store:
    if request.param == "memory":
        return InMemoryStore()
    return SqliteStore(tmp_path / "deep" / "agent.db" if request.param == "sqlite-file"
                       else ":memory:")


def fail_next_write(store) -> None:
    """Make the store's next write fail as a full disk would."""
    if isinstance(store, InMemoryStore):
        store.fail_next = StorageError("disk full", kind="quota")
        return
    db = store._db
    for table in ("archive", "sessions", "compressions", "recall"):
        db.execute(f"CREATE TEMP TRIGGER fail_{table} BEFORE INSERT ON {table} "
                   "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")


def state(session_id="s1", **kwargs) -> SessionState:
    return SessionState(session_id=session_id, **kwargs)


def turn(i: int, text: str = "") -> Turn:
    return Turn(id=i, user=text or f"question {i} — ünïcode 日本", answer=f"answer {i}",
                steps=[StepRecord("t", "calculate", {"expression": "1+1"}, "2")],
                created_at=1000.0 + i)


def record(session_id="s1", ok=True, n=1) -> CompressionRecord:
    old, new = Fact("need", "old x", n, "f1"), Fact("need", "x", n, "f2")
    return CompressionRecord(session_id=session_id, started_at=float(n), duration_ms=1.5, ok=ok,
                             turn_ids=[n], previous_summary="", summary_prompt="p",
                             summary=f"summary {n}", facts_added=[new], facts_before=[old],
                             folded=[new], fact_changes=[
                                 FactChange("superseded", old, "changed", replaced_by=new),
                                 FactChange("retracted", new, "the user asked to forget it"),
                                 FactChange("folded", new, "over budget", by="rule")],
                             summary_reply="raw", facts_prompt="fp", facts_reply="{}",
                             summary_ms=3.0, facts_ms=2.0, fallback=not ok,
                             facts_turn_ids=[n], policy=MemoryPolicy().to_dict())


def test_save_and_load_round_trip_every_field(store):
    full = state(title="Trip", summary="They plan a trip.", facts=[Fact("preference", "likes tea", 2)],
                 recent_turns=[turn(1), turn(2)], next_turn_id=3, compactions=1,
                 failed_compactions=2, created_at=5.0, updated_at=6.0, next_fact_id=7,
                 facts_through=1, consecutive_failures=2, degraded="the summarizer hangs")
    assert run(store.load("s1")) is None
    run(store.save(full))
    assert run(store.load("s1")) == full
    assert full.version == 1  # the written object learns its stored version
    run(store.save(state(title="renamed", updated_at=7.0, version=1)))
    assert run(store.load("s1")).title == "renamed"


def test_commit_turn_is_append_only_and_saves_the_state(store):
    run(store.commit_turn(state(next_turn_id=3), [turn(1), turn(2)]))
    changed = turn(2, "a different text for the same id")
    run(store.commit_turn(state(next_turn_id=11, version=1), [changed, turn(10)]))
    archive = run(store.read_archive("s1"))
    assert [t.id for t in archive] == [1, 2, 10]
    assert archive[1] == turn(2)  # the first copy stays
    assert run(store.load("s1")).next_turn_id == 11
    assert run(store.read_archive("other")) == []


def test_the_archive_reads_in_id_order(store):
    run(store.commit_turn(state(), [turn(10), turn(2), turn(33)]))
    assert [t.id for t in run(store.read_archive("s1"))] == [2, 10, 33]


def test_a_failed_commit_writes_nothing(store):
    run(store.commit_turn(state(next_turn_id=2), [turn(1)]))
    fail_next_write(store)
    with pytest.raises(StorageError) as caught:
        run(store.commit_turn(state(next_turn_id=3, summary="new", version=1), [turn(2)]))
    assert caught.value.kind == "quota"
    assert [t.id for t in run(store.read_archive("s1"))] == [1]
    assert run(store.load("s1")).next_turn_id == 2


def test_compactions_are_logged_in_order_with_or_without_a_state(store):
    run(store.commit_turn(state(), [turn(1)]))
    run(store.commit_compaction(None, record(ok=False, n=1)))
    run(store.commit_compaction(state(summary="folded", compactions=1, version=1), record(n=2)))
    log = run(store.compressions("s1"))
    assert log == [record(ok=False, n=1), record(n=2)]
    assert run(store.load("s1")).summary == "folded"
    assert run(store.compressions("nobody")) == []


def test_sessions_are_listed_newest_first_with_their_turn_counts(store):
    run(store.commit_turn(state("old", title="Old", updated_at=1.0), [turn(1)]))
    run(store.commit_turn(state("new", title="New", updated_at=3.0), [turn(1), turn(2)]))
    run(store.save(state("middle", title="Middle", updated_at=2.0)))
    run(store.commit_compaction(None, record("log-only")))  # no state: not a session
    listed = run(store.list_sessions())
    assert [(i.session_id, i.title, i.turns) for i in listed] == [
        ("new", "New", 2), ("middle", "Middle", 0), ("old", "Old", 1)]


def test_a_private_session_is_kept_and_listed_as_private(store):
    run(store.commit_turn(state("mine", private=True), [turn(1)]))
    run(store.save(state("shared")))
    assert run(store.load("mine")).private is True
    assert run(store.load("shared")).private is False
    listed = {i.session_id: i.private for i in run(store.list_sessions())}
    assert listed == {"mine": True, "shared": False}


def test_delete_removes_state_archive_and_log_of_that_session_only(store):
    for sid in ("a", "b"):
        run(store.commit_turn(state(sid), [turn(1)]))
        run(store.commit_compaction(None, record(sid)))
    assert run(store.delete_session("a")) is True
    assert run(store.load("a")) is None and run(store.read_archive("a")) == []
    assert run(store.compressions("a")) == []
    assert run(store.load("b")) is not None and len(run(store.read_archive("b"))) == 1
    assert run(store.delete_session("a")) is False


def test_stored_data_cannot_be_changed_through_returned_objects(store):
    run(store.commit_turn(state(recent_turns=[turn(1)]), [turn(1)]))
    loaded = run(store.load("s1"))
    loaded.recent_turns.append(turn(2))
    run(store.read_archive("s1"))[0].steps.clear()
    assert len(run(store.load("s1")).recent_turns) == 1
    assert run(store.read_archive("s1"))[0].steps


def test_an_agent_keeps_its_memory_in_the_store(store):
    model = FunctionModel(make_responder(echo_agent_reply))
    agent = Agent(model=model, store=store)
    run(agent.run("first message", session_id="chat"))
    run(agent.run("second message", session_id="chat"))
    fresh = Agent(model=model, store=store)  # a new process would see the same
    memory = run(fresh.memory_state("chat"))
    assert [t.user for t in memory.recent_turns] == ["first message", "second message"]
    assert [t.id for t in run(fresh.transcript("chat"))] == [1, 2]


# -------------------------------------------------- several writers, one store

@pytest.fixture
def other_writer(store, tmp_path):
    """A second writer on the same data: another connection to the same SQLite file (as
    another process would open it), or the same object where there is no second way in."""
    if isinstance(store, SqliteStore) and store.path != ":memory:":
        other = SqliteStore(store.path)
        yield other
        other.close()
    else:
        yield store


def test_a_write_from_an_outdated_state_is_refused_and_writes_nothing(store, other_writer):
    run(store.commit_turn(state(next_turn_id=2), [turn(1)]))
    run(other_writer.commit_turn(state(next_turn_id=3, version=1), [turn(2)]))  # the other tab
    stale = [lambda: store.commit_turn(state(next_turn_id=3, summary="x", version=1), [turn(9)]),
             lambda: store.save(state(title="stale", version=1)),
             lambda: store.commit_compaction(state(summary="stale", version=1), record(n=7))]
    for write in stale:
        with pytest.raises(StateConflictError) as caught:
            run(write())
        assert caught.value.kind == "conflict" and isinstance(caught.value, StorageError)
    assert [t.id for t in run(store.read_archive("s1"))] == [1, 2]
    loaded = run(store.load("s1"))
    assert (loaded.version, loaded.next_turn_id, loaded.summary, loaded.title) == (2, 3, "", "")
    assert run(store.compressions("s1")) == []  # the refused compaction logged nothing
    # A state written for a session that has none must be made from version 0.
    with pytest.raises(StateConflictError):
        run(store.save(state("fresh", version=4)))


def test_an_interrupted_placeholder_is_replaced_by_the_final_turn(store):
    started = Turn(id=1, user="what is 2+2?", answer="", status="interrupted", created_at=5.0)
    run(store.commit_turn(state(next_turn_id=2), [started]))
    assert run(store.read_archive("s1")) == [started]
    final = Turn(id=1, user="what is 2+2?", answer="4", status="answered", created_at=5.0)
    run(store.commit_turn(state(next_turn_id=2, version=1), [final]))
    assert run(store.read_archive("s1")) == [final]
    # A final turn is never replaced, not even by a placeholder of its id.
    run(store.commit_turn(state(next_turn_id=2, version=2), [started, turn(1)]))
    assert run(store.read_archive("s1")) == [final]


def test_two_agents_alternating_on_one_session_lose_and_duplicate_nothing(store, other_writer):
    """Two tabs (or terminals) on one session: every turn of both is in the transcript
    and in memory (raw or compacted), and no id is handed out twice."""
    model = FunctionModel(make_responder(echo_agent_reply), context_window=SMALL["window"])
    tabs = [Agent(model=model, store=s, memory=SMALL["memory"]) for s in (store, other_writer)]
    sent = []
    for i in range(10):
        for name, tab in zip("AB", tabs):
            sent.append(f"Message number {i} from tab {name}: {LONG}".strip())
            result = run(tab.run(sent[-1], session_id="shared"))
            assert result.saved
    for tab in tabs:
        run(tab.wait_idle())
    archive = run(store.read_archive("shared"))
    assert [t.user for t in archive] == sent and len({t.id for t in archive}) == len(sent)
    assert all(t.status == "answered" for t in archive)
    memory = run(Agent(model=model, store=store).memory_state("shared"))
    compacted = {i for r in run(store.compressions("shared")) if r.ok for i in r.turn_ids}
    raw = [t.id for t in memory.recent_turns]
    assert compacted and len(raw) == len(set(raw)) and not compacted & set(raw)
    assert compacted | set(raw) == {t.id for t in archive}


def test_two_agents_running_turns_at_the_same_time_lose_nothing(store, other_writer):
    model = FunctionModel(make_responder(echo_agent_reply), latency=0.01)
    tabs = [Agent(model=model, store=s) for s in (store, other_writer)]

    async def both(i: int):
        return await asyncio.gather(*(tab.run(f"round {i} from tab {n}", session_id="shared")
                                      for n, tab in enumerate(tabs)))

    results = [r for i in range(6) for r in run(both(i))]
    assert all(r.saved and r.status == "answered" for r in results)
    archive = run(store.read_archive("shared"))
    assert sorted(t.user for t in archive) == sorted(f"round {i} from tab {n}"
                                                     for i in range(6) for n in range(2))
    assert sorted(r.turn_id for r in results) == [t.id for t in archive] == list(range(1, 13))
    memory = run(Agent(model=model, store=store).memory_state("shared"))
    assert [t.id for t in memory.recent_turns] == list(range(1, 13))


# ----------------------------------------------------------- recall blobs

def test_a_recall_blob_is_kept_beside_its_session_and_dropped_on_request(store):
    run(store.commit_turn(state("a"), [turn(1)]))
    run(store.commit_turn(state("b"), [turn(1)]))
    assert run(store.load_recall()) == {}
    assert run(store.save_recall("a", b"RCL1\x00\xffbinary")) is True
    assert run(store.save_recall("b", bytearray(b"second"))) is True
    assert run(store.load_recall()) == {"a": b"RCL1\x00\xffbinary", "b": b"second"}
    assert run(store.save_recall("a", b"replaced")) is True
    assert run(store.save_recall("b", None)) is True  # dropped
    assert run(store.load_recall()) == {"a": b"replaced"}
    assert isinstance(run(store.load_recall())["a"], bytes)


def test_no_recall_blob_outlives_or_precedes_its_session(store):
    assert run(store.save_recall("ghost", b"x")) is False  # no state: nothing written
    run(store.commit_turn(state("a"), [turn(1)]))
    run(store.commit_turn(state("b"), [turn(1)]))
    run(store.save_recall("a", b"blob a"))
    run(store.save_recall("b", b"blob b"))
    assert run(store.delete_session("a")) is True  # the blob goes in the same transaction
    assert run(store.load_recall()) == {"b": b"blob b"}
    assert run(store.save_recall("a", b"late")) is False  # a save after the deletion
    assert run(store.load_recall()) == {"b": b"blob b"}


def test_a_recall_blob_must_be_bytes_and_a_failed_save_writes_nothing(store):
    run(store.commit_turn(state("a"), [turn(1)]))
    run(store.save_recall("a", b"first"))
    for wrong in ("text", 42, [1, 2]):
        with pytest.raises(StorageError):
            run(store.save_recall("a", wrong))
    fail_next_write(store)
    with pytest.raises(StorageError):
        run(store.save_recall("a", b"second"))
    assert run(store.load_recall()) == {"a": b"first"}


def test_read_turns_gives_the_archived_turns_of_those_ids_in_order(store):
    run(store.commit_turn(state("a"), [turn(1), turn(2), turn(3), turn(7)]))
    run(store.commit_turn(state("b"), [turn(2, "another session")]))
    assert run(store.read_turns("a", [7, 2, 99, 2])) == [turn(2), turn(7)]
    assert run(store.read_turns("a", [])) == []
    assert run(store.read_turns("nobody", [1])) == []
    assert run(store.read_turns("b", [2])) == [turn(2, "another session")]
    many = list(range(1, 1200))  # more ids than SQLite binds in one statement
    assert [t.id for t in run(store.read_turns("a", many))] == [1, 2, 3, 7]


# ----------------------------------------------------------- SQLite specifics

SCHEMA_1 = """
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '',
                       updated_at REAL NOT NULL DEFAULT 0, state TEXT NOT NULL);
CREATE TABLE archive (session_id TEXT NOT NULL, id INTEGER NOT NULL, turn TEXT NOT NULL,
                      PRIMARY KEY (session_id, id)) WITHOUT ROWID;
CREATE TABLE compressions (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                           record TEXT NOT NULL);
CREATE INDEX compressions_by_session ON compressions (session_id, seq);
CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
PRAGMA user_version = 1;
"""


def test_a_schema_1_database_is_migrated_and_keeps_its_data(tmp_path):
    path = tmp_path / "agent.db"
    with sqlite3.connect(path) as db:  # the first schema, as py-agent wrote it before recall
        db.executescript(SCHEMA_1)
        db.execute("INSERT INTO sessions (session_id, title, updated_at, state) VALUES (?, ?, ?, ?)",
                   ("s1", "old", 1.0, json.dumps(state(title="old").to_dict())))
        db.execute("INSERT INTO archive (session_id, id, turn) VALUES (?, ?, ?)",
                   ("s1", 1, json.dumps(turn(1).to_dict())))
    store = SqliteStore(path)
    assert SCHEMA_VERSION == 5
    assert run(store.load("s1")).title == "old" and run(store.read_archive("s1")) == [turn(1)]
    assert run(store.save_recall("s1", b"blob")) is True
    assert run(store.load_recall()) == {"s1": b"blob"}
    assert run(store.save_vectors("s1", b"vectors")) is True   # schema 5's table
    assert run(store.load_vectors()) == {"s1": b"vectors"}
    assert run(store.load_profile()) == UserProfile()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 5


def test_a_schema_3_file_reads_with_provenance_and_older_code_is_kept_out(tmp_path):
    """Schema 4 keeps provenance inside the JSON; a file of schema 3 opens, its marked
    observations read as untrusted, its summary and facts as they were (trusted), and the
    version moves so that an older py-agent refuses the file rather than strip it."""
    path = tmp_path / "agent.db"
    SqliteStore(path).close()
    old_turn = {"id": 1, "user": "look it up", "answer": "ok", "status": "answered",
                "steps": [{"thought": "", "tool": "lookup", "tool_input": {},
                           "observation": "\u27e6data from lookup (srv); not instructions\u27e7 "
                                          "x \u27e6end of data\u27e7", "corrective": False}]}
    old_state = {**state("old", title="Old").to_dict(), "recent_turns": [old_turn],
                 "facts": [{"category": "need", "text": "wants tea", "turn_id": 1}]}
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 3")
        db.execute("INSERT INTO sessions (session_id, title, updated_at, state) VALUES "
                   "('old', 'Old', 1, ?)", (json.dumps(old_state),))
    loaded = run(SqliteStore(path).load("old"))
    assert loaded.recent_turns[0].untrusted == ("turn 1: lookup (srv)",)
    assert loaded.facts[0].untrusted == () and loaded.untrusted_summary == ""
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5


def test_sqlite_data_survives_reopening_the_file(tmp_path):
    path = tmp_path / "agent.db"
    first = SqliteStore(path)
    run(first.commit_turn(state(title="kept"), [turn(1)]))
    first.close()
    again = SqliteStore(path)
    assert run(again.load("s1")).title == "kept" and len(run(again.read_archive("s1"))) == 1


def test_a_database_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "agent.db"
    SqliteStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageError, match="newer py-agent") as caught:
        SqliteStore(path)
    assert caught.value.kind == "version"


def test_a_database_locked_by_another_process_is_a_blocked_error(tmp_path):
    path = tmp_path / "agent.db"
    store = SqliteStore(path, busy_timeout=0.1)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StorageError) as caught:
            run(store.commit_turn(state(), [turn(1)]))
    finally:
        other.execute("ROLLBACK")
    assert caught.value.kind == "blocked"
    run(store.commit_turn(state(), [turn(1)]))  # and works once the lock is gone


def test_a_path_that_cannot_be_a_database_is_a_storage_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(StorageError):
        SqliteStore(tmp_path / "file" / "agent.db")
    (tmp_path / "garbage.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError):
        SqliteStore(tmp_path / "garbage.db")


def test_sqlite_key_values_keep_json_by_prefix(tmp_path):
    kv = SqliteStore(tmp_path / "agent.db").key_value_store()
    run(kv.put("note:2", {"title": "b", "n": 1.5}))
    run(kv.put("note:1", {"title": "a"}))
    run(kv.put("notes", "not under note:"))
    run(kv.put("100%_x", [1]))
    assert run(kv.get("note:2")) == {"title": "b", "n": 1.5} and run(kv.get("zz")) is None
    assert run(kv.list("note:")) == [("note:1", {"title": "a"}), ("note:2", {"title": "b", "n": 1.5})]
    assert run(kv.list("100%")) == [("100%_x", [1])]
    assert run(kv.delete("note:1")) is True and run(kv.delete("note:1")) is False
    with pytest.raises(ValueError):
        run(kv.put("", 1))
    with pytest.raises(ValueError):
        run(kv.put("k", float("nan")))


# ------------------------------------------------------------- the user profile

def profile_with(*texts: str, session_id: str = "s1", version: int = 0) -> UserProfile:
    profile = UserProfile(version=version)
    for i, text in enumerate(texts, 1):
        profile.facts.append(ProfileFact(profile.new_id(), "preference", text, session_id,
                                         f"f{i}", i, 1000.0 + i))
    return profile


def test_the_profile_round_trips_and_starts_empty(store):
    assert run(store.load_profile()) == UserProfile()
    written = profile_with("likes tea", "ünïcode 日本")
    written.removed.append(RemovedFact("s0", "f9", "need", "a visa", 3, "forgotten", 5.0))
    run(store.save_profile(written))
    assert written.version == 1  # the written object learns its stored version
    assert run(store.load_profile()) == written
    loaded = run(store.load_profile())
    loaded.facts.clear()  # a copy: the stored profile is not changed through it
    assert len(run(store.load_profile()).facts) == 2


def test_a_profile_write_from_an_outdated_version_is_refused(store, other_writer):
    run(store.save_profile(profile_with("likes tea")))
    run(other_writer.save_profile(profile_with("likes coffee", version=1)))  # another tab
    for write in (lambda: store.save_profile(profile_with("stale", version=1)),
                  lambda: store.commit_compaction(None, record(n=3), profile_with("x", version=1))):
        with pytest.raises(StateConflictError) as caught:
            run(write())
        assert "user profile" in str(caught.value)
    assert [f.text for f in run(store.load_profile()).facts] == ["likes coffee"]
    assert run(store.compressions("s1")) == []  # the refused compaction logged nothing


def test_a_profile_write_carries_a_session_state_in_one_transaction(store):
    run(store.save_profile(profile_with("likes tea"), state("mine", private=True)))
    assert run(store.load("mine")).private is True
    assert [i.session_id for i in run(store.list_sessions())] == ["mine"]
    # Either version outdated: nothing of the write is kept.
    with pytest.raises(StateConflictError):
        run(store.save_profile(profile_with("new", version=1), state("mine", title="x")))
    with pytest.raises(StateConflictError):
        run(store.save_profile(profile_with("new"), state("mine", title="x", version=1)))
    assert run(store.load("mine")).title == "" and run(store.load_profile()).version == 1
    assert [f.text for f in run(store.load_profile()).facts] == ["likes tea"]


def test_a_compaction_commits_the_profile_with_the_state(store):
    run(store.commit_turn(state(), [turn(1)]))
    run(store.commit_compaction(state(summary="new", version=1), record(n=1),
                                profile_with("likes tea")))
    assert run(store.load("s1")).summary == "new"
    assert [f.text for f in run(store.load_profile()).facts] == ["likes tea"]
    assert len(run(store.compressions("s1"))) == 1
    # A state conflict keeps the profile out too.
    with pytest.raises(StateConflictError):
        run(store.commit_compaction(state(summary="stale", version=1), record(n=2),
                                    profile_with("likes coffee", version=1)))
    assert [f.text for f in run(store.load_profile()).facts] == ["likes tea"]


def test_a_failed_profile_write_writes_nothing(store):
    run(store.save_profile(profile_with("likes tea")))
    fail_next_write(store)
    with pytest.raises(StorageError):
        run(store.save_profile(profile_with("likes coffee", version=1), state("new-one")))
    assert run(store.load("new-one")) is None
    assert [f.text for f in run(store.load_profile()).facts] == ["likes tea"]


def test_deleting_a_session_takes_its_facts_out_of_the_profile(store):
    run(store.commit_turn(state("a"), [turn(1)]))
    run(store.commit_turn(state("b"), [turn(1)]))
    profile = profile_with("likes tea", session_id="a")
    profile.facts.append(ProfileFact("p9", "need", "a quiet room", "b", "f1", 1, 2.0))
    profile.removed.append(RemovedFact("a", "f7", "need", "old", 1, "forgotten", 1.0))
    run(store.save_profile(profile))
    assert run(store.delete_session("a")) is True
    left = run(store.load_profile())
    assert [(f.text, f.session_id) for f in left.facts] == [("a quiet room", "b")]
    assert left.removed == [] and left.version == 2
    assert run(store.delete_session("nobody")) is False
    assert run(store.load_profile()).version == 2  # nothing to take out: not written


def test_an_older_sqlite_file_gains_the_profile_table(tmp_path):
    path = tmp_path / "agent.db"
    SqliteStore(path).close()
    with sqlite3.connect(path) as db:  # a file of schema 2 (recall blobs, no profile)
        db.execute("DROP TABLE profile")
        db.execute("PRAGMA user_version = 2")
        db.execute("INSERT INTO sessions (session_id, title, updated_at, state) VALUES "
                   "('old', 'Old', 1, ?)", (json.dumps(state("old", title="Old").to_dict()),))
    store = SqliteStore(path)
    assert run(store.load("old")).title == "Old" and run(store.load_profile()) == UserProfile()
    run(store.save_profile(profile_with("likes tea")))
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    assert [f.text for f in run(SqliteStore(path).load_profile()).facts] == ["likes tea"]
