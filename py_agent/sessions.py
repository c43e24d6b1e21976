"""The session table: every session's state in memory, and the only writer of it.

One object owns what an agent knows of its sessions: the state the next prompt
reads, the turns not saved yet, the turn ids whose start was written, the
sessions that run detached from storage, and the per-session locks. Turns,
compactions, renames, exports and imports all go through it, so every write is
checked against the stored version in one place.

Another tab or process may write the same session: stores refuse a write made
from an outdated state (:class:`~py_agent.store.StateConflictError`); the table
then takes the stored state, re-applies its unsaved turns (:func:`rebase`) and
writes again. Turn ids come from the stored ``next_turn_id`` when a turn starts,
and the start is written at once, so two writers never hand out the same id; a
turn whose start could not be written is renumbered if the id was taken meanwhile.

It knows nothing of models or memory passes; whoever keeps something derived
from a state (the live memory sessions) registers with :meth:`SessionTable.when_changed`,
and whoever keeps something derived from the archive (the recall index) with
:meth:`SessionTable.when_written`.

It also holds the store's user profile (:attr:`SessionTable.profiles`, a
:class:`~py_agent.profile_table.ProfileTable`): a session opened here has its own copies
of profile facts brought in line with the profile (:func:`~py_agent.profile.reconcile`:
a fact forgotten or superseded elsewhere is dropped, an edited one takes its new text),
and a compaction or a user's change of the profile is written with the session's state
in one transaction (:meth:`SessionTable.commit_compaction`, :meth:`SessionTable.save_with_profile`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable

from .attachments import Attachment
from .events import log
from .profile import UserProfile, reconcile
from .profile_table import ProfileTable
from .state import CompressionRecord, SessionState, Turn, now_ms
from .store import BlobStore, CONFLICT_RETRIES, StateConflictError, Store, UnknownSessionError
from .transfer import (EXPORT_MAX_ATTACHMENT_BYTES, ExportedAttachment, SessionBundle,
                       id_candidates)

# A pass's new state and the compression record logged with it, made from the session's
# state as it is now. It may refuse by raising, and changes none of its inputs: another
# writer's write meanwhile makes the commit call it again with the newer state.
CompactionUpdate = Callable[[SessionState], "tuple[SessionState, CompressionRecord]"]
# A pass's change of the user profile, made with the session's new state and the profile
# as they are now: the state to write (maybe changed) and the profile to write (None: none).
ProfileChange = Callable[[SessionState, UserProfile], "tuple[SessionState, UserProfile | None]"]
# A user's change of the profile and, maybe, of one session's state (None: no such session).
ProfileEdit = Callable[["SessionState | None", UserProfile],
                       "tuple[SessionState | None, UserProfile]"]


@dataclass(frozen=True)
class CompactionCommit:
    """What a compaction's commit wrote: the session's new ``state``, the ``record``
    logged with it, and the user ``profile`` if the pass changed it (else None)."""

    state: SessionState
    record: CompressionRecord
    profile: UserProfile | None = None


@dataclass(frozen=True)
class SessionWrite:
    """What the table has just written for a session: its new ``state`` (None: the
    session was deleted) and the ``turns`` archived with it (a turn's final copy
    replaces its "interrupted" start of the same id)."""

    session_id: str
    state: SessionState | None
    turns: tuple[Turn, ...] = ()


def title_from(message: str) -> str:
    """A session's title from its first message (the page keeps a copy of this rule)."""
    text = " ".join(message.split())
    return text if len(text) <= 60 else text[:57].rstrip() + "…"


def with_turn(state: SessionState, turn: Turn) -> SessionState:
    """A copy of ``state`` that knows ``turn``: in memory if it was answered (in id order),
    its id used, the title set by the first message."""
    updated = state.copy()
    if turn.in_memory and all(t.id != turn.id for t in updated.recent_turns):
        updated.recent_turns.append(turn)
        updated.recent_turns.sort(key=lambda t: t.id)
    updated.next_turn_id = max(updated.next_turn_id, turn.id + 1)
    updated.title = updated.title or title_from(turn.user)
    updated.updated_at = now_ms()
    return updated


def next_turn_id(state: SessionState, pending: list[Turn], exclude: Turn | None = None) -> int:
    """The id for a new turn: above the state's and every unsaved turn's."""
    return max(state.next_turn_id, 1, *(t.id + 1 for t in pending if t is not exclude))


def rebase(stored: SessionState | None, session_id: str, pending: list[Turn],
           reserved: set[int]) -> SessionState:
    """The stored state (a new one if there is none) with the unsaved ``pending`` turns
    re-applied. A pending turn whose id was never written (not in ``reserved``) and is
    taken in ``stored`` gets the next free id; the Turn object is changed in place."""
    state = stored.copy() if stored is not None else SessionState(session_id=session_id)
    for turn in sorted(pending, key=lambda t: t.id):
        if turn.id not in reserved and turn.id < state.next_turn_id:
            turn.id = state.next_turn_id
        state = with_turn(state, turn)
    return state


class SessionTable:
    """The sessions of one agent, over one store; see the module docstring.

    Args:
        store: where sessions persist.
        conflict_retries: how often a write is tried again after another writer's.
        profiles: the store's user profile (one is made if not given).
    """

    def __init__(self, store: Store, *, conflict_retries: int = CONFLICT_RETRIES,
                 profiles: ProfileTable | None = None) -> None:
        self.store = store
        self.conflict_retries = conflict_retries
        self.profiles = profiles if profiles is not None else ProfileTable(store)
        self._states: dict[str, SessionState] = {}
        self._unsaved: dict[str, list[Turn]] = {}
        # Turn ids whose start was written: an unsaved turn with another id may be
        # renumbered if another writer took its id (see rebase).
        self._reserved: dict[str, set[int]] = {}
        # Sessions whose stored state could not be read: they run in memory and are
        # never written, so an unreadable state is not overwritten by a fresh one.
        self._detached: set[str] = set()
        self._turn_locks: dict[str, asyncio.Lock] = {}
        self._state_locks: dict[str, asyncio.Lock] = {}
        self._import_lock = asyncio.Lock()  # two imports of one file must not pick one id
        self._listeners: list[Callable[[str], None]] = []
        self._writers: list[Callable[[SessionWrite], None]] = []

    # ------------------------------------------------------------ reading

    def state(self, session_id: str) -> SessionState | None:
        """The state in memory, as it is now (no storage read)."""
        return self._states.get(session_id)

    def unsaved(self, session_id: str) -> int:
        """How many turns of the session wait to be written."""
        return len(self._unsaved.get(session_id, []))

    def is_detached(self, session_id: str) -> bool:
        """True if the session runs in memory only (its stored state could not be read)."""
        return session_id in self._detached

    def turn_lock(self, session_id: str) -> asyncio.Lock:
        """Held while a turn (or a manual compaction) of the session runs: one at a time."""
        return self._turn_locks.setdefault(session_id, asyncio.Lock())

    def when_changed(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` whenever a session's memory changed under it:
        another writer's state was taken, or a compaction was committed."""
        self._listeners.append(listener)

    def _changed(self, session_id: str) -> None:
        for listener in self._listeners:
            listener(session_id)

    def when_written(self, listener: Callable[[SessionWrite], None]) -> None:
        """Call ``listener`` after every write of this table that the store accepted:
        turns archived (with the state), a rename, an import, a deletion."""
        self._writers.append(listener)

    def _written(self, change: SessionWrite) -> None:
        for listener in self._writers:
            try:
                listener(change)
            except Exception:  # derived data must never fail a write that succeeded
                log.exception("a listener failed on a write of %s", change.session_id)

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._state_locks.setdefault(session_id, asyncio.Lock())

    async def open(self, session_id: str, *, create: bool) -> SessionState:
        """The session's state, reloaded if another tab or process wrote it since, and in
        line with the user profile as it is now; a new one with ``create``, else
        :class:`UnknownSessionError` for an unknown session."""
        state = await self.refresh(session_id)
        if state is None:
            if not create:
                raise UnknownSessionError(session_id)
            state = self._states[session_id] = SessionState(session_id=session_id)
        return self._reconciled(session_id, await self.profiles.refresh())

    def _reconciled(self, session_id: str, profile: UserProfile) -> SessionState:
        """The state in memory with its copies of profile facts in line with ``profile``
        (kept in memory; the session's next write stores it)."""
        state = self._states[session_id]
        updated = reconcile(state, profile)
        if updated is None:
            return state
        self._states[session_id] = updated
        self._changed(session_id)
        return updated

    async def refresh(self, session_id: str) -> SessionState | None:
        """Load the stored state and take it if it is newer than the one in memory (with
        the unsaved turns re-applied). A failed read keeps the one in memory; with none,
        it raises. Takes no lock: a state only ever moves to a newer version."""
        cached = self._states.get(session_id)
        if session_id in self._detached:
            return cached
        try:
            stored = await self.store.load(session_id)
        except Exception:
            if cached is None:
                raise
            log.warning("could not reload session %s; using the state in memory", session_id)
            return cached
        cached = self._states.get(session_id)
        if stored is not None and (cached is None or stored.version > cached.version):
            cached = self._states[session_id] = rebase(
                stored, session_id, self._unsaved.get(session_id, []),
                self._reserved.get(session_id, set()))
            self._changed(session_id)  # another writer's turns or compaction
        return cached

    def detach(self, session_id: str) -> SessionState:
        """Run the session in memory only, from now on (its stored state is unreadable)."""
        self._detached.add(session_id)
        return self._states.setdefault(session_id, SessionState(session_id=session_id))

    async def transcript(self, session_id: str) -> list[Turn]:
        """Every raw turn of the session, including any not yet saved (an unsaved copy
        is newer than an archived one of the same id: that is its start)."""
        await self.open(session_id, create=False)
        archived = [] if session_id in self._detached else await self.store.read_archive(session_id)
        by_id = {t.id: t for t in archived}
        by_id.update((t.id, t) for t in self._unsaved.get(session_id, []))
        return sorted(by_id.values(), key=lambda t: t.id)

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        """The session's compression log (empty for a session that runs detached from
        storage: its compactions are never written)."""
        await self.open(session_id, create=False)
        return [] if session_id in self._detached else await self.store.compressions(session_id)

    # ------------------------------------------------------------ writing

    async def save_turn(self, session_id: str, turn: Turn, *,
                        allocate: bool = False) -> Exception | None:
        """Put the turn into the state in memory, then write archive and state together;
        what went wrong, or None once written (or kept in memory, for a detached session).

        With ``allocate`` the turn first gets the session's next id. A failed write keeps
        the turn in memory and in the unsaved turns, written with the next commit, so the
        conversation goes on and nothing is lost.
        """
        async with self._lock(session_id):
            return await self._write(session_id, turn, allocate)

    async def flush(self, session_id: str) -> Exception | None:
        """Write the unsaved turns (before a compaction, which must find every turn it
        compacts in the archive); what went wrong, or None once they are written."""
        if not self._unsaved.get(session_id) or session_id in self._detached:
            return None
        async with self._lock(session_id):
            return await self._write(session_id, None, False)

    async def _write(self, session_id: str, turn: Turn | None,
                     allocate: bool) -> Exception | None:
        """Write the state with the unsaved turns (``turn`` among them first); on a conflict
        take the stored state, re-apply them, and try again. Call under the state lock."""
        pending = self._unsaved.setdefault(session_id, [])
        reserved = self._reserved.setdefault(session_id, set())
        problem: Exception | None = None
        for _ in range(self.conflict_retries):
            if turn is not None:
                if allocate:
                    turn.id = next_turn_id(self._states[session_id], pending, exclude=turn)
                self._states[session_id] = with_turn(self._states[session_id], turn)
                if not any(t is turn for t in pending):
                    pending[:] = [t for t in pending if t.id != turn.id] + [turn]
            if session_id in self._detached:
                return None
            try:
                await self.store.commit_turn(self._states[session_id], list(pending))
            except StateConflictError as exc:
                problem = exc
                try:
                    stored = await self.store.load(session_id)
                except Exception as load_error:
                    return load_error
                self._states[session_id] = rebase(stored, session_id, pending, reserved)
                continue
            except Exception as exc:
                return exc
            reserved.update(t.id for t in pending)
            written = tuple(pending)
            pending.clear()
            self._written(SessionWrite(session_id, self._states[session_id], written))
            return None
        return problem

    async def commit_compaction(self, session_id: str, update: CompactionUpdate, *,
                                profile_change: ProfileChange | None = None
                                ) -> CompactionCommit:
        """Under the session's state lock: take the state and the user profile as they are
        now (another tab may have written them), make the new state and its compression
        record with ``update`` (which may refuse by raising) and the new profile with
        ``profile_change``, write the three in one store call, and keep them. Another
        writer's write meanwhile makes it start over (at most ``conflict_retries``
        times), calling both again, so neither may change its inputs. A session that
        runs detached from storage changes no profile, nor does a commit while the
        profile cannot be read (the session's lasting facts join it at a later pass).

        Raises :class:`UnknownSessionError` if the session was deleted meanwhile, and
        whatever ``update`` or the store raises; nothing is kept then.
        """
        async with self._lock(session_id):
            problem: Exception | None = None
            for _ in range(self.conflict_retries):
                current = await self.refresh(session_id)
                if current is None:
                    raise UnknownSessionError(session_id)
                (updated, record), profile = update(current), None
                detached = session_id in self._detached
                if profile_change is not None and self.profiles.enabled and not detached:
                    try:
                        fresh = await self.profiles.refresh(strict=True)
                    except Exception:  # the session's memory must still move on
                        log.warning("could not read the user profile; committing the "
                                    "compaction of %s without its changes to it", session_id)
                    else:
                        updated = reconcile(updated, fresh) or updated
                        updated, profile = profile_change(updated, fresh)
                if not detached:
                    try:
                        await self.store.commit_compaction(updated, record, profile)
                    except StateConflictError as exc:
                        problem = exc
                        continue
                self._states[session_id] = updated
                if profile is not None:
                    self.profiles.take(profile)
                self._changed(session_id)
                return CompactionCommit(updated, record, profile)
            assert problem is not None
            raise problem

    async def save_with_profile(self, session_id: str, change: ProfileEdit, *,
                                create: bool = False) -> tuple[SessionState | None, UserProfile]:
        """A user's change of the profile and of one session's state, written together:
        under the session's state lock, ``change`` gets a copy of the session's state (None
        for an unknown session, unless ``create`` makes a new one) and of the profile as
        they are now, and returns both to write (a state of None: only the profile). A
        session that runs detached from storage changes in memory only. Another writer's
        write meanwhile makes it start over (at most ``conflict_retries`` times)."""
        async with self._lock(session_id):
            problem: Exception | None = None
            for _ in range(self.conflict_retries):
                current = await self.refresh(session_id)
                if current is None and create:
                    current = SessionState(session_id=session_id)
                profile = await self.profiles.refresh(strict=True)
                state, updated = change(None if current is None else current.copy(),
                                        profile.copy())
                detached = session_id in self._detached
                try:
                    await self.store.save_profile(updated, None if detached else state)
                except StateConflictError as exc:
                    problem = exc
                    continue
                if state is not None:
                    self._states[session_id] = state
                    self._changed(session_id)
                    self._written(SessionWrite(session_id, state))
                self.profiles.take(updated)
                return state, updated
            assert problem is not None
            raise problem

    async def rename(self, session_id: str, title: str) -> None:
        """Give the session a title (whitespace collapsed, at most 80 characters)."""
        async with self._lock(session_id):
            state = (await self.open(session_id, create=False)).copy()
            state.title = " ".join(title.split())[:80]
            await self.store.save(state)
            self._states[session_id] = state
            self._written(SessionWrite(session_id, state))

    async def set_private(self, session_id: str, private: bool) -> None:
        """Mark the session private or not (made if it does not exist yet), for a store
        without a user profile (else :meth:`save_with_profile` writes both)."""
        async with self._lock(session_id):
            state = (await self.open(session_id, create=True)).copy()
            state.private = private
            if session_id not in self._detached:
                await self.store.save(state)
            self._states[session_id] = state
            self._written(SessionWrite(session_id, state))

    async def delete(self, session_id: str) -> bool:
        """Forget the session here and delete it from the store (with the facts it gave the
        user profile); True if it was stored."""
        async with self._lock(session_id):
            self._states.pop(session_id, None)
            self._unsaved.pop(session_id, None)
            self._detached.discard(session_id)
            existed = await self.store.delete_session(session_id)
            self._written(SessionWrite(session_id, None))
        await self.profiles.refresh()
        return existed

    # ------------------------------------------------------- attachments

    async def attachment(self, session_id: str, attachment_id: str) -> Attachment | None:
        """An attachment the archive keeps, or None (not kept, or no such one)."""
        if not isinstance(self.store, BlobStore):
            return None
        found = await self.store.get_blob(session_id, attachment_id)
        if found is None:
            return None
        data, meta = found
        return Attachment(content=data, type=str(meta.get("type") or "") or None,
                          name=str(meta.get("name") or ""), width=meta.get("width") or None,
                          height=meta.get("height") or None, size=len(data))

    async def _exported_attachments(self, session_id: str, turns: list[Turn],
                                    cap: int) -> list[ExportedAttachment]:
        """Every attachment of ``turns``: with its bytes while the export's ``cap``
        allows, named as left out past it (or when the archive did not keep it)."""
        out, used = [], 0
        for turn in turns:
            for record in turn.attachments:
                item = ExportedAttachment(record.id, turn.id, record.name, record.type,
                                          record.size, record.width, record.height)
                found = await self.attachment(session_id, record.id) if record.kept else None
                if found is None:
                    item.left_out = record.note or "not kept in this browser's archive"
                elif used + len(found.content or b"") > cap:
                    item.left_out = (f"the export carries at most {cap // (1024 * 1024)} MB "
                                     "of attachments")
                else:
                    item.data = found.content
                    used += len(item.data or b"")
                out.append(item)
        return out

    # ------------------------------------------------------- export, import

    async def export(self, session_id: str, *,
                     attachment_cap: int = EXPORT_MAX_ATTACHMENT_BYTES) -> SessionBundle:
        """A consistent snapshot of a session: state, every raw turn (unsaved ones too),
        compression log, and the attachments' bytes within ``attachment_cap`` (the rest
        named as left out). Raises :class:`UnknownSessionError` for unknown sessions."""
        async with self._lock(session_id):
            state = (await self.open(session_id, create=False)).copy()
            turns = await self.transcript(session_id)
            records = await self.compressions(session_id)
        attachments = await self._exported_attachments(session_id, turns, attachment_cap)
        return SessionBundle(state, turns, records, attachments=attachments)

    async def import_bundle(self, bundle: SessionBundle, session_id: str | None = None) -> str:
        """Write ``bundle`` as a new session named ``session_id`` (default: its own id);
        returns the id, which is never an existing one.

        A taken id gets a suffix (``id-2``, ``id-3``, ...). Only the store API is
        used: the compression log first (invisible without a state), then state and
        archive in one ``commit_turn``, so ``list_sessions`` shows the session only
        once it is complete. If a write fails, what was written is deleted again.
        """
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise ValueError("session_id must be a non-empty string")
        async with self._import_lock:
            for candidate in id_candidates(session_id or bundle.session_id):
                if not await self._taken(candidate):
                    break
            bundle = bundle.with_session_id(candidate)
            try:
                for item in bundle.attachments:
                    if item.data is not None and isinstance(self.store, BlobStore):
                        await self.store.put_blob(candidate, item.id, item.data, item.meta())
                for record in bundle.compressions:
                    await self.store.commit_compaction(None, record)
                await self.store.commit_turn(bundle.state, list(bundle.turns))
            except Exception:
                try:
                    await self.store.delete_session(candidate)
                except Exception:
                    log.exception("could not remove the half-imported session %s", candidate)
                raise
        self._written(SessionWrite(candidate, bundle.state, tuple(bundle.turns)))
        return candidate

    async def _taken(self, session_id: str) -> bool:
        """True if the id has a state, here or stored, or leftover archive or log entries."""
        if session_id in self._states or await self.store.load(session_id) is not None:
            return True
        return bool(await self.store.read_archive(session_id)
                    or await self.store.compressions(session_id))
