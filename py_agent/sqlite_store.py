"""A :class:`~py_agent.store.Store` in a SQLite file, for the terminal and scripts.

The same semantics as the browser's IndexedDB store (``worker/idb_store.js``):
``commit_turn`` writes archive and state in one transaction; the archive is
append-only (a turn id already archived keeps its first copy, unless that copy is an
``"interrupted"`` placeholder); ``commit_compaction`` logs a compression and, when it
succeeded, saves the new state, atomically; state writes are conditional on the
state's ``version`` (:class:`~py_agent.store.StateConflictError` when another
process wrote first); listing puts the most recently updated first. The user profile
(:mod:`py_agent.profile`) is one JSON row of the ``profile`` table, written
conditionally on its version too, alone or in the transaction of a session's state or
compaction; deleting a session takes its facts out of it in the deletion's
transaction. Anything SQLite refuses becomes a :class:`~py_agent.store.StorageError`
whose ``kind`` says why ("quota" for a full
disk, "blocked" for a database another process holds locked, "version" for a file
written by a newer py-agent), and a failed write leaves nothing behind.

Calls are synchronous inside the async methods: each is a few milliseconds on a
local file, and keeping them on the event loop's thread makes every method atomic
with respect to the agent's other tasks (and works where threads do not, as in Pyodide).

:class:`SqliteKeyValueStore` keeps tools' JSON values (notes, to-dos) in the same file.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from .profile import UserProfile, withdraw
from .state import CompressionRecord, SessionInfo, SessionState, Turn
from .store import (StateConflictError, StorageError, check_blob, check_blob_bytes,
                    check_profile_version, check_version, written)

SCHEMA_VERSION = 5
PROFILE_KEY = "user"

# Ordered migrations: index i brings the schema from version i to i + 1. Append only.
_MIGRATIONS = [
    """
    CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        title      TEXT NOT NULL DEFAULT '',
        updated_at REAL NOT NULL DEFAULT 0,
        state      TEXT NOT NULL             -- SessionState.to_dict() as JSON
    );
    CREATE TABLE archive (
        session_id TEXT NOT NULL,
        id         INTEGER NOT NULL,
        turn       TEXT NOT NULL,            -- Turn.to_dict() as JSON
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID;
    CREATE TABLE compressions (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        record     TEXT NOT NULL             -- CompressionRecord.to_dict() as JSON
    );
    CREATE INDEX compressions_by_session ON compressions (session_id, seq);
    CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    """,
    # 2: each session's part of the archive recall index (py_agent.recall.archive)
    """
    CREATE TABLE recall (
        session_id TEXT PRIMARY KEY,
        blob       BLOB NOT NULL             -- py_agent.recall.dump_session()
    ) WITHOUT ROWID;
    """,
    # 3: the user profile (py_agent.profile), one row
    """
    CREATE TABLE IF NOT EXISTS profile (
        key        TEXT PRIMARY KEY,
        data       TEXT NOT NULL             -- UserProfile.to_dict() as JSON
    ) WITHOUT ROWID;
    """,
    # 4: provenance (whose words a step read, a fact's or the summary's untrusted sources,
    # a profile fact's unconfirmed state) lives inside the JSON above; and the bytes of
    # turns' attachments (py_agent.attachments), deleted with their session. The version
    # moves so that an older py-agent, which would write states back without provenance
    # (turning marked facts into trusted ones), refuses the file instead.
    """
    CREATE TABLE IF NOT EXISTS blobs (
        session_id TEXT NOT NULL,
        id         TEXT NOT NULL,
        meta       TEXT NOT NULL,            -- name, type, size, width, height as JSON
        data       BLOB NOT NULL,
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID;
    """,
    # 5: each session's turn vectors for recall (py_agent.recall.vectors), with the
    # embedding space's id inside the blob
    """
    CREATE TABLE IF NOT EXISTS vectors (
        session_id TEXT PRIMARY KEY,
        blob       BLOB NOT NULL             -- py_agent.embedding.dump_vectors()
    ) WITHOUT ROWID;
    """,
]


def _kind(error: sqlite3.Error) -> str:
    text = str(error).lower()
    if "full" in text:
        return "quota"
    if "locked" in text or "busy" in text:
        return "blocked"
    return "unknown"


@contextmanager
def _storage_errors(action: str) -> Iterator[None]:
    try:
        yield
    except StateConflictError:
        raise
    except (sqlite3.Error, OSError, ValueError) as exc:  # ValueError: text SQLite cannot take
        kind = _kind(exc) if isinstance(exc, sqlite3.Error) else "unknown"
        raise StorageError(f"SQLite could not {action}: {exc}", kind=kind) from exc


def _check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str):
        raise StorageError("a session id must be a string", kind="unknown")
    return session_id


def _check_state(state: SessionState) -> SessionState:
    if not isinstance(state, SessionState) or not state.session_id:
        raise StorageError("a session state needs a non-empty session_id", kind="unknown")
    return state


class SqliteStore:
    """The store protocol over one SQLite database (a file, or ``":memory:"``).

    Args:
        path: the database file; its folder is created. Opened in WAL mode so a
            second process (another terminal) can read while one writes.
        busy_timeout: seconds to wait for another process's lock before giving up
            with a ``"blocked"`` :class:`StorageError`.
    """

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout: float = 5.0) -> None:
        self.path = str(path)
        with _storage_errors(f"open {self.path}"):
            if self.path != ":memory:":
                Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(Path(self.path).expanduser())
                                       if self.path != ":memory:" else self.path,
                                       timeout=busy_timeout, isolation_level=None)
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._migrate()

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            self._db.close()
            raise StorageError(f"{self.path} was written by a newer py-agent (schema "
                               f"{version}, this one knows {SCHEMA_VERSION}); upgrade py-agent "
                               "or use another --db file", kind="version")
        if version == SCHEMA_VERSION:
            return
        with self._transaction():
            for step in _MIGRATIONS[version:]:
                for statement in step.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it is committed, or none of it. BEGIN IMMEDIATE
        takes the write lock first, so the version check and the write are one step
        for every process sharing the file."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------ the protocol

    def _put_state(self, db: sqlite3.Connection, state: SessionState) -> None:
        """Write ``state`` one version up, if the stored one is the version it was made
        from; ``state.version`` follows once the transaction commits."""
        row = db.execute("SELECT json_extract(state, '$.version') FROM sessions"
                         " WHERE session_id = ?", (state.session_id,)).fetchone()
        check_version(None if row is None else int(row[0] or 0), state)
        data = {**state.to_dict(), "version": state.version + 1}
        db.execute("INSERT INTO sessions (session_id, title, updated_at, state) VALUES (?, ?, ?, ?)"
                   " ON CONFLICT (session_id) DO UPDATE SET title = excluded.title,"
                   " updated_at = excluded.updated_at, state = excluded.state",
                   (state.session_id, state.title, state.updated_at,
                    json.dumps(data, ensure_ascii=False)))

    async def load(self, session_id: str) -> SessionState | None:
        _check_session_id(session_id)
        with _storage_errors("read a session"):
            row = self._db.execute("SELECT state FROM sessions WHERE session_id = ?",
                                   (session_id,)).fetchone()
        return None if row is None else SessionState.from_dict(json.loads(row[0]))

    async def save(self, state: SessionState) -> None:
        _check_state(state)
        with _storage_errors("save a session"), self._transaction() as db:
            self._put_state(db, state)
        written(state)

    async def commit_turn(self, state: SessionState, turns: list[Turn]) -> None:
        _check_state(state)
        rows = [(state.session_id, t.id, json.dumps(t.to_dict(), ensure_ascii=False))
                for t in turns]
        with _storage_errors("save the turn"), self._transaction() as db:
            self._put_state(db, state)
            # A new id is added; an "interrupted" placeholder is replaced; else the
            # first copy stays.
            db.executemany("INSERT INTO archive (session_id, id, turn) VALUES (?, ?, ?)"
                           " ON CONFLICT (session_id, id) DO UPDATE SET turn = excluded.turn"
                           " WHERE json_extract(archive.turn, '$.status') = 'interrupted'",
                           rows)
        written(state)

    async def commit_compaction(self, state: SessionState | None, record: CompressionRecord,
                                profile: UserProfile | None = None) -> None:
        if state is not None:
            _check_state(state)
        with _storage_errors("log the compaction"), self._transaction() as db:
            if state is not None:
                self._put_state(db, state)
            if profile is not None:
                self._put_profile(db, profile)
            db.execute("INSERT INTO compressions (session_id, record) VALUES (?, ?)",
                       (record.session_id, json.dumps(record.to_dict(), ensure_ascii=False)))
        written(state, profile)

    async def read_archive(self, session_id: str) -> list[Turn]:
        _check_session_id(session_id)
        with _storage_errors("read the archive"):
            rows = self._db.execute("SELECT turn FROM archive WHERE session_id = ? ORDER BY id",
                                    (session_id,)).fetchall()
        return [Turn.from_dict(json.loads(r[0])) for r in rows]

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        _check_session_id(session_id)
        with _storage_errors("read the compression log"):
            rows = self._db.execute("SELECT record FROM compressions WHERE session_id = ? "
                                    "ORDER BY seq", (session_id,)).fetchall()
        return [CompressionRecord.from_dict(json.loads(r[0])) for r in rows]

    async def list_sessions(self) -> list[SessionInfo]:
        with _storage_errors("list the sessions"):
            rows = self._db.execute(
                "SELECT s.session_id, s.title, s.updated_at,"
                " (SELECT COUNT(*) FROM archive a WHERE a.session_id = s.session_id),"
                " json_extract(s.state, '$.private')"
                " FROM sessions s ORDER BY s.updated_at DESC, s.session_id").fetchall()
        return [SessionInfo(sid, title, float(updated), int(turns), private == 1)
                for sid, title, updated, turns, private in rows]

    async def delete_session(self, session_id: str) -> bool:
        _check_session_id(session_id)
        with _storage_errors("delete the session"), self._transaction() as db:
            existed = db.execute("DELETE FROM sessions WHERE session_id = ?",
                                 (session_id,)).rowcount > 0
            db.execute("DELETE FROM archive WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM compressions WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM recall WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM blobs WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM vectors WHERE session_id = ?", (session_id,))
            profile = self._read_profile(db)
            withdrawn = withdraw(profile, session_id, deleted=True)
            if withdrawn.to_dict() != profile.to_dict():
                self._put_profile(db, withdrawn)
        return existed

    # ------------------------------------------------------------ recall blobs, turn vectors

    async def save_recall(self, session_id: str, blob: bytes | None) -> bool:
        return self._save_session_blob("recall", session_id, blob, "save the recall index")

    async def load_recall(self) -> dict[str, bytes]:
        return self._session_blobs("recall", "read the recall index")

    async def save_vectors(self, session_id: str, blob: bytes | None) -> bool:
        return self._save_session_blob("vectors", session_id, blob, "save the turn vectors")

    async def load_vectors(self) -> dict[str, bytes]:
        return self._session_blobs("vectors", "read the turn vectors")

    def _save_session_blob(self, table: str, session_id: str, blob: bytes | None,
                           action: str) -> bool:
        """One derived blob a session (recall's index, its turn vectors): written only
        while the session exists, so a deletion is never undone by a late save."""
        _check_session_id(session_id)
        check_blob(blob)
        with _storage_errors(action), self._transaction() as db:
            if db.execute("SELECT 1 FROM sessions WHERE session_id = ?",
                          (session_id,)).fetchone() is None:
                return False  # deleted meanwhile: no blob without its session
            if blob is None:
                db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            else:
                db.execute(f"INSERT OR REPLACE INTO {table} (session_id, blob) VALUES (?, ?)",
                           (session_id, bytes(blob)))
        return True

    def _session_blobs(self, table: str, action: str) -> dict[str, bytes]:
        with _storage_errors(action):
            rows = self._db.execute(f"SELECT session_id, blob FROM {table}").fetchall()
        return {session_id: bytes(blob) for session_id, blob in rows}

    async def read_turns(self, session_id: str, turn_ids: list[int]) -> list[Turn]:
        _check_session_id(session_id)
        ids = sorted({int(i) for i in turn_ids})
        turns: list[Turn] = []
        with _storage_errors("read the archive"):
            for start in range(0, len(ids), 500):  # SQLite's limit on bound parameters
                chunk = ids[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT turn FROM archive WHERE session_id = ? AND id"
                                        f" IN ({marks}) ORDER BY id",
                                        (session_id, *chunk)).fetchall()
                turns += [Turn.from_dict(json.loads(r[0])) for r in rows]
        return turns

    # ------------------------------------------------------------ attachments' blobs

    async def put_blob(self, session_id: str, blob_id: str, data: bytes, meta: dict) -> None:
        _check_session_id(session_id)
        data = check_blob_bytes(data)
        with _storage_errors("keep an attachment"), self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO blobs (session_id, id, meta, data) VALUES"
                       " (?, ?, ?, ?)", (session_id, str(blob_id),
                                         json.dumps(dict(meta), ensure_ascii=False), data))

    async def get_blob(self, session_id: str, blob_id: str) -> tuple[bytes, dict] | None:
        _check_session_id(session_id)
        with _storage_errors("read an attachment"):
            row = self._db.execute("SELECT data, meta FROM blobs WHERE session_id = ? AND id = ?",
                                   (session_id, str(blob_id))).fetchone()
        return None if row is None else (bytes(row[0]), json.loads(row[1]))

    async def blob_sizes(self, session_id: str) -> dict[str, int]:
        _check_session_id(session_id)
        with _storage_errors("read the attachments"):
            rows = self._db.execute("SELECT id, length(data) FROM blobs WHERE session_id = ?",
                                    (session_id,)).fetchall()
        return {blob_id: int(size) for blob_id, size in rows}

    # ------------------------------------------------------------ the user profile

    @staticmethod
    def _read_profile(db: sqlite3.Connection) -> UserProfile:
        row = db.execute("SELECT data FROM profile WHERE key = ?", (PROFILE_KEY,)).fetchone()
        return UserProfile.from_dict(None if row is None else json.loads(row[0]))

    def _put_profile(self, db: sqlite3.Connection, profile: UserProfile) -> None:
        """Write ``profile`` one version up, if the stored one is the version it was made
        from (as :meth:`_put_state`)."""
        row = db.execute("SELECT json_extract(data, '$.version') FROM profile WHERE key = ?",
                         (PROFILE_KEY,)).fetchone()
        check_profile_version(None if row is None else int(row[0] or 0), profile)
        data = {**profile.to_dict(), "version": profile.version + 1}
        db.execute("INSERT INTO profile (key, data) VALUES (?, ?) ON CONFLICT (key)"
                   " DO UPDATE SET data = excluded.data",
                   (PROFILE_KEY, json.dumps(data, ensure_ascii=False)))

    async def load_profile(self) -> UserProfile:
        with _storage_errors("read the user profile"):
            return self._read_profile(self._db)

    async def save_profile(self, profile: UserProfile,
                           state: SessionState | None = None) -> None:
        if state is not None:
            _check_state(state)
        with _storage_errors("save the user profile"), self._transaction() as db:
            if state is not None:
                self._put_state(db, state)
            self._put_profile(db, profile)
        written(state, profile)

    def key_value_store(self) -> "SqliteKeyValueStore":
        """Tools' JSON values, kept in this database's ``kv`` table."""
        return SqliteKeyValueStore(self._db, self._transaction)


class SqliteKeyValueStore:
    """Async get/put/delete/list-by-prefix of JSON values under string keys, the same
    protocol as the page's IndexedDB ``kv`` store. Made by
    :meth:`SqliteStore.key_value_store`, over its connection and write transactions."""

    def __init__(self, db: sqlite3.Connection,
                 transaction: Callable[[], ContextManager[sqlite3.Connection]]) -> None:
        self._db, self._transaction = db, transaction

    @staticmethod
    def _key(key: Any) -> str:
        if not isinstance(key, str) or not key:
            raise ValueError(f"a key must be a non-empty string, not {key!r}")
        return key

    async def get(self, key: str) -> Any | None:
        with _storage_errors("read a value"):
            row = self._db.execute("SELECT value FROM kv WHERE key = ?",
                                          (self._key(key),)).fetchone()
        return None if row is None else json.loads(row[0])

    async def put(self, key: str, value: Any) -> None:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the value cannot be stored as JSON: {exc}") from None
        key = self._key(key)
        with _storage_errors("store a value"), self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, text))

    async def delete(self, key: str) -> bool:
        key = self._key(key)
        with _storage_errors("delete a value"), self._transaction() as db:
            return db.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0

    async def list(self, prefix: str = "") -> list[tuple[str, Any]]:
        if not isinstance(prefix, str):
            raise ValueError(f"a prefix must be a string, not {prefix!r}")
        with _storage_errors("list values"):
            # substr, not LIKE: a prefix may hold % or _; BINARY order like IndexedDB's keys
            rows = self._db.execute(
                "SELECT key, value FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key",
                (len(prefix), prefix)).fetchall()
        return [(key, json.loads(value)) for key, value in rows]
