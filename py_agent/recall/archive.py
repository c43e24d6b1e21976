"""The recall index kept in step with a store's archive: loaded at start, fed as turns are
archived, saved beside the archive, searched with the hits' texts read back from it.

:class:`ArchiveRecall` owns one :class:`~.index.RecallIndex` for an agent's store:

- **Start** (in the background, on first use): every session's saved blob is loaded
  (:mod:`.storage`: no analysis); a session whose blob is missing, damaged or of another
  analyzer, or whose archive holds turns the blob does not (it is saved now and then,
  not per turn), gets them analyzed from the archive. Searches meanwhile wait for it, a
  bounded time, then answer from what is loaded.
- **Feeding**: the session table tells it of every accepted write
  (:meth:`~py_agent.sessions.SessionTable.when_written`): a turn is indexed once its
  final copy is archived (a running turn's "interrupted" start is not: the final copy
  follows), a
  rename sets the title, an import indexes the imported session under its new id, a
  deletion removes the session. Another tab's turns are learnt when the session table
  takes that tab's state (:meth:`caught_up`) and whenever the sessions are listed
  (:meth:`sync`), from the archive.
- **Saving**: not per turn (a blob is the whole session): once a session has
  ``save_every`` turns the saved blob lacks, after an import or a rebuild, and on
  :meth:`flush` (the agent's ``close``). A blob that lags only costs analyzing the
  missing turns at the next start. A blob is written only while its session exists, and
  goes with it when it is deleted.
- **Searching**: hits of sessions loaded from blobs carry no text until the archive gives
  it (:meth:`RecallIndex.hydrate`); a turn no longer archived is left out.

- **Sentence vectors** (with an embedder, :mod:`.vectors`): every indexed turn is
  embedded in the background; a search then also asks for the turns nearest to the
  query's vector and fuses their cosines with the lexical scores
  (:meth:`RecallIndex.search`'s ``dense``). Until the embedder is ready, or while it is
  failed, recall is lexical only, and :meth:`dense_state` says so for the trace.

The index is derived data: nothing here fails a turn. A store without
:class:`~py_agent.store.RecallStore` works too; its index is rebuilt at every start.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import datetime
from typing import Awaitable, Callable, Collection, Container, Iterable

from ..embedding import EmbedderSlot
from ..sessions import SessionTable, SessionWrite
from ..state import SessionInfo, Turn
from ..store import RecallStore, Store
from .analysis import display_text
from .hit import Hit
from .index import DenseLookup, RecallIndex
from .storage import IndexBlobError, dump_session, load_session
from .vectors import TurnVectors

log = logging.getLogger("py_agent")

# A session's blob is saved again once this many of its turns are missing from it.
SAVE_EVERY = 8
# A search waits at most this long for the start's loading (or an import) to finish.
SETTLE_TIMEOUT_S = 5.0
# Background indexing yields to other tasks after this many turns (the page's worker has
# one thread: a turn must not wait for a whole archive to be analyzed).
CHUNK = 16
# Turns nearest by sentence vectors handed to each search, beside the lexical candidates.
DENSE_CANDIDATES = 50

Clock = Callable[[], datetime]


def local_now() -> datetime:
    """Now, in the local time zone (where "yesterday" begins)."""
    return datetime.now().astimezone()


class ArchiveRecall:
    """The archive recall index of one store; see the module docstring.

    Args:
        store: the agent's store (its blobs, if it is a :class:`RecallStore`, and archive).
        sessions: the session table, whose writes feed the index.
        index: the index to keep (a new :class:`RecallIndex` by default, made on first use).
        save_every: save a session's blob once it lacks this many turns.
        clock: the user's local time, for "last week" (an aware datetime).
        embedder: the agent's embedder, for turn vectors (None: lexical recall only).
    """

    def __init__(self, store: Store, sessions: SessionTable, *,
                 index: RecallIndex | None = None, save_every: int = SAVE_EVERY,
                 clock: Clock = local_now, embedder: EmbedderSlot | None = None) -> None:
        self.store = store
        self.save_every = save_every
        self.clock = clock
        self._index = index
        self._titles: dict[str, str] = {}
        self._private: set[str] = set()
        self._unsaved: dict[str, int] = {}
        # Bumped when a session is deleted: background work begun before drops its result.
        self._epochs: dict[str, int] = {}
        self._loading: asyncio.Task | None = None
        # Sessions the start has still to load (None: it has not listed them yet), and
        # turns fed meanwhile, indexed again once their session's blob is loaded.
        self._to_load: set[str] | None = None
        self._early: dict[str, list[Turn]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._last: dict[str, list[Hit]] = {}
        self._state_of = sessions.state
        self.embedder = embedder
        self.vectors = (TurnVectors(store, embedder, self._known, self._read_turns,
                                    settled=self._start_done)
                        if embedder is not None else None)
        sessions.when_written(self.written)
        sessions.when_changed(self.caught_up)

    def _known(self) -> dict[str, list[int]]:
        """The indexed turns by session: what the turn vectors should cover."""
        index = self.index
        return {s: index.turn_ids(s) for s in index.sessions()}

    async def _start_done(self) -> None:
        """Wait for the start's loading (turn vectors are matched to what it loads)."""
        self.start()
        if self._loading is not None and not self._loading.done():
            await asyncio.wait([self._loading])

    def dense_state(self) -> str:
        """Whether sentence vectors take part in searches now, for the trace: "used",
        or why not ("off", "loading", "failed", "no vectors yet")."""
        if self.vectors is None or self.embedder is None:
            return "off"
        status = self.embedder.status
        if not status.ready:
            return status.state
        return "used" if self.vectors.ready() else "no vectors yet"

    # ------------------------------------------------------------ reading

    @property
    def index(self) -> RecallIndex:
        """The index (made on first use: it loads the related-words table)."""
        if self._index is None:
            self._index = RecallIndex()
        return self._index

    @property
    def loading(self) -> bool:
        """True while the start's loading runs."""
        return self._loading is not None and not self._loading.done()

    def _unloaded(self, session_id: str) -> bool:
        """True if the start has not loaded this session yet (it may still put the
        session's blob over what is indexed)."""
        return self._to_load is None or session_id in self._to_load

    def title(self, session_id: str) -> str:
        return self._titles.get(session_id, "")

    def is_private(self, session_id: str) -> bool:
        state = self._state_of(session_id)
        return state.private if state is not None else session_id in self._private

    def shared_sessions(self) -> set[str]:
        """The indexed sessions the user has not made private: what a search across
        sessions may read."""
        return {s for s in self.index.sessions() if not self.is_private(s)}

    def last_recalled(self, session_id: str) -> list[Hit]:
        """The turns the session's last prompt was given (see :meth:`remember`)."""
        return list(self._last.get(session_id, []))

    def remember(self, session_id: str, hits: list[Hit]) -> None:
        """Keep what a turn's prompt was given, for the memory inspector (not stored)."""
        self._last[session_id] = list(hits)

    # ------------------------------------------------------------ the start

    def start(self) -> None:
        """Begin loading the index in the background (once; needs a running loop)."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
            if self.embedder is not None:
                self.embedder.start()

    async def settled(self, timeout: float = SETTLE_TIMEOUT_S) -> bool:
        """Wait, at most ``timeout`` seconds, for the start's loading and background
        indexing to finish; True if they have."""
        self.start()
        pending = [t for t in [self._loading, *self._tasks] if t is not None and not t.done()]
        if not pending:
            return True
        done, _ = await asyncio.wait(pending, timeout=timeout)
        return len(done) == len(pending)

    async def _load(self) -> None:
        try:
            blobs = await self.store.load_recall() if isinstance(self.store, RecallStore) else {}
            infos = await self.store.list_sessions()
        except Exception:
            log.exception("the recall index could not be loaded; it starts empty")
            infos, blobs = [], {}
        index = self.index
        self._to_load = {i.session_id for i in infos}
        epochs = dict(self._epochs)
        for info in infos:
            if self._epochs.get(info.session_id, 0) != epochs.get(info.session_id, 0):
                continue  # deleted since it was listed
            self._learn(info.session_id, info.title, info.private)
            rebuilt = False
            blob = blobs.get(info.session_id)
            if blob is not None:
                try:
                    load_session(index, blob, info.session_id)
                except IndexBlobError as exc:  # stale or damaged: analyze the archive again
                    log.info("recall index of %s re-made: %s", info.session_id, exc)
                    rebuilt = True
            else:
                rebuilt = info.turns > 0
            await asyncio.sleep(0)
            if len(index.turn_ids(info.session_id)) < info.turns:
                added = await self._catch_up(info.session_id)
                rebuilt = rebuilt or added > 0
            for turn in self._early.pop(info.session_id, []):
                index.add(info.session_id, turn)  # fed while the blob was not loaded yet
            self._to_load.discard(info.session_id)
            if self._epochs.get(info.session_id, 0) != epochs.get(info.session_id, 0):
                index.remove_session(info.session_id)  # deleted while it was loaded
                continue
            if info.session_id in index.sessions():
                index.set_title(info.session_id, info.title)  # over the blob's
            if rebuilt and isinstance(self.store, RecallStore):
                self._spawn(self.save(info.session_id))
        self._to_load.clear()
        self._early.clear()
        if self.vectors is not None:
            self.vectors.wake()  # the old archive's turns, in the background

    async def _catch_up(self, session_id: str) -> int:
        """Index the archived turns of the session the index lacks; how many."""
        epoch = self._epochs.get(session_id, 0)
        try:
            archived = await self.store.read_archive(session_id)
        except Exception:
            log.warning("could not read the archive of %s for the recall index", session_id)
            return 0
        return await self._add(session_id, archived, epoch, only_missing=True)

    async def _add(self, session_id: str, turns: Iterable[Turn], epoch: int, *,
                   only_missing: bool = False) -> int:
        """Index turns a few at a time, yielding between; stops if the session is
        deleted meanwhile. Returns how many were indexed."""
        index = self.index
        have = set(index.turn_ids(session_id)) if only_missing else set()
        added = 0
        for turn in turns:
            if self._epochs.get(session_id, 0) != epoch:
                return added
            if turn.id in have:
                continue
            index.add(session_id, turn)
            added += 1
            if added % CHUNK == 0:
                await asyncio.sleep(0)
        if added and session_id in index.sessions():
            index.set_title(session_id, self._titles.get(session_id, ""))
        if added and self.vectors is not None:
            self.vectors.wake()
        return added

    def _learn(self, session_id: str, title: str, private: bool) -> None:
        """What the session is called and whether it is private, as a state or the list
        says; a new title goes into the index (its words count a little for the
        session's turns)."""
        if self._titles.get(session_id) != title:
            self._titles[session_id] = title
            if session_id in self.index.sessions():
                self.index.set_title(session_id, title)
        if private:
            self._private.add(session_id)
        else:
            self._private.discard(session_id)

    # ------------------------------------------------------------ feeding

    def written(self, change: SessionWrite) -> None:
        """The session table wrote ``change``: follow it (see the module docstring)."""
        self.start()
        session_id, index = change.session_id, self.index
        if change.state is None:
            self._epochs[session_id] = self._epochs.get(session_id, 0) + 1
            index.remove_session(session_id)
            self._titles.pop(session_id, None)
            self._unsaved.pop(session_id, None)
            self._last.pop(session_id, None)
            self._early.pop(session_id, None)
            self._private.discard(session_id)
            if self.vectors is not None:
                self.vectors.dropped(session_id)
            return
        state = change.state
        self._learn(session_id, state.title, state.private)
        # A running turn is archived "interrupted" when it starts; its final copy follows.
        # An older one never finished (or came with an import): it is kept as it is.
        running = state.next_turn_id - 1
        final = [t for t in change.turns if t.status != "interrupted" or t.id != running]
        if len(final) > CHUNK:  # an import: in the background, then saved
            epoch = self._epochs.get(session_id, 0)
            copies = [Turn.from_dict(t.to_dict()) for t in final]
            self._spawn(self._imported(session_id, copies, epoch))
            return
        if self._unloaded(session_id):
            self._early.setdefault(session_id, []).extend(final)
        for turn in final:
            index.add(session_id, turn)
        if final and self.vectors is not None:
            self.vectors.added(session_id, final)
        if final and len(index.turn_ids(session_id)) == len(final):
            index.set_title(session_id, state.title)  # the session's first indexed turns
        if final:
            self._unsaved[session_id] = self._unsaved.get(session_id, 0) + len(final)
            if self._unsaved[session_id] >= self.save_every:
                self._spawn(self.save(session_id))

    async def _imported(self, session_id: str, turns: list[Turn], epoch: int) -> None:
        if await self._add(session_id, turns, epoch):
            await self.save(session_id)

    def caught_up(self, session_id: str) -> None:
        """The session table took a newer state of the session (another tab's turns, or
        a compaction): index archived turns the index lacks, in the background."""
        state = self._state_of(session_id)
        if state is None or self._unloaded(session_id):
            return
        self._learn(session_id, state.title, state.private)
        known = self.index.turn_ids(session_id)
        newest = known[-1] if known else 0
        missing = [i for i in range(newest + 1, state.next_turn_id)]
        if missing:
            self._spawn(self._read_missing(session_id, missing))

    async def _read_missing(self, session_id: str, turn_ids: list[int]) -> None:
        epoch = self._epochs.get(session_id, 0)
        try:
            turns = await self._read_turns(session_id, turn_ids)
        except Exception:
            log.warning("could not read new turns of %s for the recall index", session_id)
            return
        await self._add(session_id, turns, epoch, only_missing=True)

    async def _read_turns(self, session_id: str, turn_ids: list[int]) -> list[Turn]:
        """The archived turns of these ids: by id where the store can, else from the
        whole archive."""
        if isinstance(self.store, RecallStore):
            return await self.store.read_turns(session_id, turn_ids)
        wanted = set(turn_ids)
        return [t for t in await self.store.read_archive(session_id) if t.id in wanted]

    def sync(self, infos: Collection[SessionInfo]) -> None:
        """The store's sessions as just listed: learn titles and private marks, drop
        sessions another tab deleted, and index turns another tab archived."""
        self.start()
        if self.loading:
            return  # the start reads them all anyway
        listed = {i.session_id for i in infos}
        for session_id in self.index.sessions() - listed:
            # (A session written after the list was read is not in it: ask the store.)
            self._spawn(self._drop_if_gone(session_id))
        for info in infos:
            self._learn(info.session_id, info.title, info.private)
            if len(self.index.turn_ids(info.session_id)) < info.turns:
                self._spawn(self._catch_up(info.session_id))

    async def _drop_if_gone(self, session_id: str) -> None:
        try:
            gone = await self.store.load(session_id) is None
        except Exception:
            return
        if gone and self._state_of(session_id) is None:
            self.written(SessionWrite(session_id, None))

    # ------------------------------------------------------------ saving

    async def save(self, session_id: str) -> bool:
        """Write the session's blob now; True if written (a failed write is logged: the
        next start analyzes what the stored blob lacks)."""
        if not isinstance(self.store, RecallStore) or self._unloaded(session_id):
            return False  # (a blob without the turns the start was to load: never)
        self._unsaved.pop(session_id, None)
        try:
            blob = dump_session(self.index, session_id)
            return await self.store.save_recall(session_id, blob)
        except Exception:
            log.warning("could not save the recall index of %s", session_id, exc_info=True)
            return False

    async def flush(self) -> int:
        """Save every blob that lacks turns; how many were saved."""
        saved = 0
        for session_id in list(self._unsaved):
            saved += await self.save(session_id)
        if self.vectors is not None:
            await self.vectors.flush()
        return saved

    def _spawn(self, coro: Awaitable[object]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop background work at once, then save what lacks (each write is bounded by
        the store)."""
        tasks = [t for t in [self._loading, *self._tasks] if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.vectors is not None:
            await self.vectors.close()
        await self.flush()

    # ------------------------------------------------------------ searching

    async def search(self, query: str, *, sessions: Iterable[str] | None = None, k: int = 5,
                     exclude: Container[tuple[str, int]] = (),
                     now: datetime | None = None) -> list[Hit]:
        """The ``k`` archived turns that best answer ``query`` (see
        :meth:`RecallIndex.search`), each with its text. ``sessions``: the sessions to
        read (None: every session not made private)."""
        await self.settled()
        chosen = self.shared_sessions() if sessions is None else set(sessions)
        near, lookup = await self._near(query, chosen, exclude)
        hits = self.index.search(query, sessions=chosen, k=k, exclude=exclude,
                                 now=now or self.clock(), dense=near, dense_lookup=lookup)
        return await self._with_texts(hits)

    async def _near(self, query: str, sessions: set[str], exclude: Container[tuple[str, int]]
                    ) -> tuple[dict[tuple[str, int], float], DenseLookup | None]:
        """The turns of ``sessions`` nearest to the query by sentence vectors, and how to
        ask for other turns' cosines (none when the vectors cannot take part now: never
        waits for the embedder's load)."""
        vectors = self.vectors
        if vectors is None or self.embedder is None or not vectors.ready():
            return {}, None
        vector = await self.embedder.vector(query)
        if vector is None or not vectors.ready():
            return {}, None
        return (vectors.search(vector, sessions, DENSE_CANDIDATES, exclude),
                lambda keys: vectors.cosines(vector, keys))

    async def _with_texts(self, hits: list[Hit]) -> list[Hit]:
        """Hits with their display texts; a turn the archive no longer has is dropped."""
        wanted: dict[str, list[int]] = {}
        for hit in hits:
            if not hit.text:
                wanted.setdefault(hit.session_id, []).append(hit.turn_id)
        texts: dict[tuple[str, int], str] = {}
        for session_id, ids in wanted.items():
            try:
                turns = await self._read_turns(session_id, ids)
            except Exception:
                log.warning("could not read turns of %s for recalled hits", session_id)
                turns = []
            self.index.hydrate(session_id, turns)
            chars = self.index.settings.text_chars
            texts.update(((session_id, t.id), display_text(t, chars)) for t in turns)
        shown = []
        for hit in hits:
            text = hit.text or texts.get((hit.session_id, hit.turn_id), "")
            if text:
                shown.append(replace(hit, text=text) if text != hit.text else hit)
        return shown
