"""The store protocol and an in-memory implementation.

A store persists three things per session: the state the next prompt needs
(:class:`SessionState`), an append-only archive of every raw turn, and a log of
compressions. Each method that writes more than one of them is atomic, so a
crash or a storage error never leaves a turn half-saved.

Several writers may share a store (two browser tabs on one IndexedDB, two
terminals on one SQLite file), so state writes are conditional: a write names
the ``version`` of the state it was made from, and the store refuses it with
:class:`StateConflictError` if the stored state has moved on (a missing state
is version 0). The writer then reloads, re-applies its change and writes again.
On success the store bumps the version, in storage and on the written object.

The archive is append-only by turn id, with one exception: a turn archived with
status ``"interrupted"`` (how a turn is written when it starts, so a reload
never loses the user's message) is replaced by the same id's final copy.

A store may also keep each session's part of the archive recall index
(:class:`RecallStore`: a blob beside the archive, deleted with its session, never
exported); a store without it works too, its index rebuilt from the archive at start.
A store may keep the bytes of a turn's attachments (:class:`BlobStore`: one blob per
attachment, keyed by session and attachment id, capped per session, deleted with its
session); the turn's record holds only their names and what the model said of them.
Likewise a store may keep each session's turn vectors (:class:`VectorStore`: a blob of
the embedder's vectors of its archived turns, with the embedding space's id, deleted with
its session, never exported: an import embeds the turns again).
A store also keeps one :class:`~py_agent.profile.UserProfile` for all its sessions,
versioned and written conditionally in the same way; a write of the profile may carry a
session's state (or a compaction) in the same transaction, and deleting a session takes
the facts it contributed out of the profile in the deletion's transaction.
"""

from __future__ import annotations

import copy
from typing import Protocol, runtime_checkable

from .profile import UserProfile, withdraw
from .state import CompressionRecord, SessionInfo, SessionState, Turn

# The bytes of one session's attachments the archive keeps at most; an attachment that
# would pass it is named in its turn as not kept.
MAX_SESSION_BLOB_BYTES = 100 * 1024 * 1024

# How often a conditional write (a session's state, the user profile) is tried again
# after another tab or process wrote the same record first.
CONFLICT_RETRIES = 5


class StorageError(Exception):
    """A write or read the store could not do; ``kind`` says why, for the UI."""

    def __init__(self, message: str, *, kind: str = "unknown") -> None:
        super().__init__(message)
        self.kind = kind  # "quota", "blocked", "version", "unknown"


class StateConflictError(StorageError):
    """The stored state is newer than the one written: another tab or process wrote
    this session meanwhile. Nothing was written; reload, re-apply, write again."""

    def __init__(self, message: str = "", *, kind: str = "conflict") -> None:
        super().__init__(message or "another tab or process changed this session at the "
                         "same moment", kind=kind)


def check_version(stored: int | None, state: SessionState) -> None:
    """Raise :class:`StateConflictError` unless ``state`` was made from the stored
    version (``stored`` is None for a session without a state)."""
    _check_written_from(stored, state.version, "this session")


def check_profile_version(stored: int | None, profile: UserProfile) -> None:
    """Raise :class:`StateConflictError` unless ``profile`` was made from the stored
    version (``stored`` is None when no profile was written yet)."""
    _check_written_from(stored, profile.version, "the user profile")


def _check_written_from(stored: int | None, version: int, what: str) -> None:
    if (stored or 0) != version:
        raise StateConflictError(f"another tab or process changed {what} at the same moment "
                                 f"(stored version {stored or 0}, written from {version})")


def written(*records: SessionState | UserProfile | None) -> None:
    """After a conditional write succeeded: each record written (None: not written)
    learns the version the store now holds, one up from the one it was made from."""
    for record in records:
        if record is not None:
            record.version += 1


def check_blob(blob: object) -> None:
    """Refuse a recall blob that is not bytes (None, to drop one, is fine)."""
    if blob is not None and not isinstance(blob, (bytes, bytearray, memoryview)):
        raise StorageError(f"a recall blob must be bytes, not {type(blob).__name__}")


def replaces(archived: dict | Turn | None) -> bool:
    """May a turn with this archived copy's id be written over it? Only a placeholder."""
    status = archived.get("status") if isinstance(archived, dict) else \
        getattr(archived, "status", None)
    return archived is None or status == "interrupted"


class UnknownSessionError(KeyError):
    """Raised when asking about a session that was never created."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id

    def __str__(self) -> str:
        return f"unknown session: {self.session_id!r}"


@runtime_checkable
class Store(Protocol):
    """Async persistence for sessions. Implementations: InMemoryStore, IndexedDB."""

    async def load(self, session_id: str) -> SessionState | None:
        """The saved state of a session, or None if it does not exist."""
        ...

    async def save(self, state: SessionState) -> None:
        """Replace a session's state (rename, import) in one conditional write."""
        ...

    async def commit_turn(self, state: SessionState, turns: list[Turn]) -> None:
        """Append ``turns`` to the archive (a placeholder of the same id is replaced)
        and save ``state`` (conditionally), atomically."""
        ...

    async def commit_compaction(self, state: SessionState | None, record: CompressionRecord,
                                profile: UserProfile | None = None) -> None:
        """Log a compression and, if it succeeded, save the new state (conditionally),
        and, if given, the user profile (conditionally), atomically."""
        ...

    async def read_archive(self, session_id: str) -> list[Turn]:
        """Every raw turn of a session, oldest first."""
        ...

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        """The compression log of a session, oldest first."""
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently updated first."""
        ...

    async def delete_session(self, session_id: str) -> bool:
        """Remove a session's state, archive and log, and the facts it contributed to the
        user profile; False if it did not exist."""
        ...

    # The user profile (py_agent.profile): one for the whole store.

    async def load_profile(self) -> UserProfile:
        """The stored profile (an empty one at version 0 if none was written)."""
        ...

    async def save_profile(self, profile: UserProfile,
                           state: SessionState | None = None) -> None:
        """Write the profile (conditionally) and, if given, a session's state
        (conditionally), atomically."""
        ...


@runtime_checkable
class RecallStore(Protocol):
    """What a store offers the archive recall index (:mod:`py_agent.recall.archive`):
    one blob per session, derived from its archive, so a start loads it instead of
    analyzing every turn again. Every store here has it; a blob is never exported.
    """

    async def save_recall(self, session_id: str, blob: bytes | None) -> bool:
        """Keep (or, with None, drop) a session's recall blob; False, with nothing
        written, if the session has no state (it was deleted meanwhile)."""
        ...

    async def load_recall(self) -> dict[str, bytes]:
        """Every session's recall blob, by session id."""
        ...

    async def read_turns(self, session_id: str, turn_ids: list[int]) -> list[Turn]:
        """The archived turns of these ids (those that exist), oldest first."""
        ...


@runtime_checkable
class BlobStore(Protocol):
    """What a store offers a turn's attachments: their bytes, each under its session
    and attachment id, with a little metadata (name, type, size, pixels); every blob of
    a session goes with :meth:`Store.delete_session`."""

    async def put_blob(self, session_id: str, blob_id: str, data: bytes,
                       meta: dict) -> None:
        """Keep ``data`` (replacing a blob of that id)."""
        ...

    async def get_blob(self, session_id: str, blob_id: str) -> tuple[bytes, dict] | None:
        """The blob's bytes and metadata, or None if there is none."""
        ...

    async def blob_sizes(self, session_id: str) -> dict[str, int]:
        """The size of each blob the session keeps, by id."""
        ...


def check_blob_bytes(data: object) -> bytes:
    """An attachment's bytes as ``bytes``; a :class:`StorageError` for anything else."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise StorageError(f"an attachment's blob must be bytes, not {type(data).__name__}")
    return bytes(data)


@runtime_checkable
class VectorStore(Protocol):
    """What a store offers recall's turn vectors (:mod:`py_agent.recall.vectors`): one
    blob per session (:func:`py_agent.embedding.dump_vectors`), so a start does not
    embed every archived turn again. Deleted with its session; never exported."""

    async def save_vectors(self, session_id: str, blob: bytes | None) -> bool:
        """Keep (or, with None, drop) a session's vectors; False, with nothing written,
        if the session has no state (it was deleted meanwhile)."""
        ...

    async def load_vectors(self) -> dict[str, bytes]:
        """Every session's vector blob, by session id."""
        ...


class FailNextWrite:
    """A test hook for in-memory stores: ``fail_next`` makes the next write raise that
    :class:`StorageError` (then it is cleared); ``writes`` counts the writes that went
    through. A write calls :meth:`_check_failure` before it changes anything."""

    fail_next: StorageError | None = None
    writes: int = 0

    def _check_failure(self) -> None:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        self.writes += 1


class InMemoryStore(FailNextWrite):
    """A store that lives in a dict: for tests, scripts and ephemeral sessions.

    It deep-copies on the way in and out so callers cannot change stored data by
    mutating objects they hold, which is the isolation a real database gives.
    ``fail_next`` makes the next write raise a :class:`StorageError`, to test
    that a failed write loses nothing.
    """

    def __init__(self) -> None:
        self._states: dict[str, SessionState] = {}
        self._archives: dict[str, list[Turn]] = {}
        self._logs: dict[str, list[CompressionRecord]] = {}
        self._recall: dict[str, bytes] = {}
        self._blobs: dict[str, dict[str, tuple[bytes, dict]]] = {}
        self._vectors: dict[str, bytes] = {}
        self._profile = UserProfile()

    async def load(self, session_id: str) -> SessionState | None:
        state = self._states.get(session_id)
        return copy.deepcopy(state) if state is not None else None

    def _put_state(self, state: SessionState) -> None:
        """Check the version, then store a copy one version up (and say so on ``state``)."""
        stored = self._states.get(state.session_id)
        check_version(None if stored is None else stored.version, state)
        state.version += 1
        self._states[state.session_id] = copy.deepcopy(state)

    async def save(self, state: SessionState) -> None:
        self._check_failure()
        self._put_state(state)
        self._archives.setdefault(state.session_id, [])

    async def commit_turn(self, state: SessionState, turns: list[Turn]) -> None:
        self._check_failure()
        self._put_state(state)  # first: a conflict writes nothing
        archive = self._archives.setdefault(state.session_id, [])
        for turn in turns:
            at = next((i for i, t in enumerate(archive) if t.id == turn.id), None)
            if at is None:
                archive.append(copy.deepcopy(turn))
            elif replaces(archive[at]):
                archive[at] = copy.deepcopy(turn)

    async def commit_compaction(self, state: SessionState | None, record: CompressionRecord,
                                profile: UserProfile | None = None) -> None:
        self._check_failure()
        self._check_writes(state, profile)
        if state is not None:
            self._put_state(state)
        if profile is not None:
            self._put_profile(profile)
        self._logs.setdefault(record.session_id, []).append(copy.deepcopy(record))

    async def read_archive(self, session_id: str) -> list[Turn]:
        # In id order, as IndexedDB and SQLite read it (ids grow with time).
        return copy.deepcopy(sorted(self._archives.get(session_id, []), key=lambda t: t.id))

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        return copy.deepcopy(self._logs.get(session_id, []))

    async def list_sessions(self) -> list[SessionInfo]:
        infos = [SessionInfo(s.session_id, s.title, s.updated_at,
                             len(self._archives.get(s.session_id, [])), s.private)
                 for s in self._states.values()]
        return sorted(infos, key=lambda i: i.updated_at, reverse=True)

    async def delete_session(self, session_id: str) -> bool:
        existed = session_id in self._states
        self._states.pop(session_id, None)
        self._archives.pop(session_id, None)
        self._logs.pop(session_id, None)
        self._recall.pop(session_id, None)
        self._blobs.pop(session_id, None)
        self._vectors.pop(session_id, None)
        withdrawn = withdraw(self._profile, session_id, deleted=True)
        if withdrawn.to_dict() != self._profile.to_dict():
            withdrawn.version += 1
            self._profile = withdrawn
        return existed

    # ------------------------------------------------------------ RecallStore

    async def save_recall(self, session_id: str, blob: bytes | None) -> bool:
        check_blob(blob)
        self._check_failure()
        if session_id not in self._states:
            return False
        if blob is None:
            self._recall.pop(session_id, None)
        else:
            self._recall[session_id] = bytes(blob)
        return True

    async def load_recall(self) -> dict[str, bytes]:
        return dict(self._recall)

    async def read_turns(self, session_id: str, turn_ids: list[int]) -> list[Turn]:
        wanted = set(turn_ids)
        return copy.deepcopy(sorted((t for t in self._archives.get(session_id, [])
                                     if t.id in wanted), key=lambda t: t.id))

    # ------------------------------------------------------------ BlobStore

    async def put_blob(self, session_id: str, blob_id: str, data: bytes, meta: dict) -> None:
        data = check_blob_bytes(data)
        self._check_failure()
        self._blobs.setdefault(session_id, {})[blob_id] = (data, copy.deepcopy(dict(meta)))

    async def get_blob(self, session_id: str, blob_id: str) -> tuple[bytes, dict] | None:
        found = self._blobs.get(session_id, {}).get(blob_id)
        return None if found is None else (found[0], copy.deepcopy(found[1]))

    async def blob_sizes(self, session_id: str) -> dict[str, int]:
        return {key: len(data) for key, (data, _) in self._blobs.get(session_id, {}).items()}
    # ------------------------------------------------------------ VectorStore

    async def save_vectors(self, session_id: str, blob: bytes | None) -> bool:
        check_blob(blob)
        self._check_failure()
        if session_id not in self._states:
            return False
        if blob is None:
            self._vectors.pop(session_id, None)
        else:
            self._vectors[session_id] = bytes(blob)
        return True

    async def load_vectors(self) -> dict[str, bytes]:
        return dict(self._vectors)

    # ------------------------------------------------------------ the user profile

    def _check_writes(self, state: SessionState | None, profile: UserProfile | None) -> None:
        """Check every version a write names before any of it is written."""
        if state is not None:
            stored = self._states.get(state.session_id)
            check_version(None if stored is None else stored.version, state)
        if profile is not None:
            check_profile_version(self._profile.version, profile)

    def _put_profile(self, profile: UserProfile) -> None:
        check_profile_version(self._profile.version, profile)
        profile.version += 1
        self._profile = copy.deepcopy(profile)

    async def load_profile(self) -> UserProfile:
        return copy.deepcopy(self._profile)

    async def save_profile(self, profile: UserProfile,
                           state: SessionState | None = None) -> None:
        self._check_failure()
        self._check_writes(state, profile)
        if state is not None:
            self._put_state(state)
            self._archives.setdefault(state.session_id, [])
        self._put_profile(profile)
