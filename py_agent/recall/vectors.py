"""Recall's turn vectors: every archived turn's sentence vector, kept beside the index.

:class:`TurnVectors` keeps one :class:`~py_agent.embedding.VectorIndex` per session,
made in the background and never on a turn's path:

- **Fed** by :class:`~.archive.ArchiveRecall`: a turn it indexes is embedded after it,
  a few turns at a time (its text kept from the write, so the archive is not read again);
- **Old archives** (turns indexed before the embedder was ready, or archived by an
  older version) are embedded the same way, with progress in the embedder's status;
  every ``save_every`` turns a session's vectors are saved (:class:`~py_agent.store.VectorStore`),
  so a reload resumes where it stopped rather than from the start;
- **The space** is saved in every blob: a blob of another model is dropped and its
  turns embedded again, as is everything when the agent's embedder changes;
- **Deleting** a session drops its vectors (the store deletes the blob with it);
  searches read only the sessions they are given, so a private chat's vectors are
  never read from another chat.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Collection, Container, Iterable

from ..embedding import EmbedderSlot, EmbedderStatus, VectorBlobError, VectorIndex
from ..embedding import dump_vectors, load_vectors
from ..embedding.vectors import cosines, search
from ..state import Turn
from ..store import Store, VectorStore

log = logging.getLogger("py_agent")

# Turns embedded per call: the page's one thread answers in between.
BATCH = 8
# A session's vectors are saved once this many of its turns are not in the saved blob.
SAVE_EVERY = 32
# Texts of just-indexed turns kept for embedding (beyond this, the archive is read).
KEPT_TEXTS = 2000

ReadTurns = Callable[[str, list[int]], Awaitable[list[Turn]]]
Known = Callable[[], dict[str, list[int]]]


def turn_document(turn: Turn) -> str:
    """A turn as one text for the embedder: the user's message and the answer."""
    return f"{turn.user}\n{turn.answer}".strip()


class TurnVectors:
    """The turn vectors of one store; see the module docstring.

    Args:
        store: where blobs are saved (a store without :class:`VectorStore` embeds again
            at every start).
        slot: the agent's embedder.
        known: the turns the lexical index holds, by session (what should have vectors).
        read_turns: archived turns by id, for turns whose text is not kept.
        settled: waited for before each pass (the index's start must have loaded what
            ``known`` reports).
    """

    def __init__(self, store: Store, slot: EmbedderSlot, known: Known, read_turns: ReadTurns,
                 *, settled: Callable[[], Awaitable[None]] | None = None,
                 save_every: int = SAVE_EVERY) -> None:
        self.store, self.slot, self.save_every = store, slot, save_every
        self._settled = settled
        self._known, self._read_turns = known, read_turns
        self._space = ""
        self._groups: dict[str, VectorIndex] = {}
        self._texts: dict[tuple[str, int], str] = {}
        self._unsaved: dict[str, int] = {}
        self._epochs: dict[str, int] = {}
        self._task: asyncio.Task | None = None
        self._again = False
        slot.on_change(self._changed)

    # ------------------------------------------------------------ state

    @property
    def space(self) -> str:
        return self._space

    def ready(self) -> bool:
        """True if searches can use vectors now (the embedder is ready and its space's
        vectors are loaded, complete or not)."""
        return bool(self._space) and self._space == self.slot.space

    def count(self) -> int:
        return sum(len(g) for g in self._groups.values())

    def has(self, session_id: str, turn_id: int) -> bool:
        group = self._groups.get(session_id)
        return group is not None and turn_id in group

    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    # ------------------------------------------------------------ feeding

    def _changed(self, status: EmbedderStatus) -> None:
        if status.ready and status.task in ("", "load"):
            self.wake()

    def added(self, session_id: str, turns: Iterable[Turn]) -> None:
        """Turns the index took: embed them soon (their texts kept until then)."""
        if self.slot.status.state == "off":
            return
        for turn in turns:
            if len(self._texts) < KEPT_TEXTS:
                self._texts[(session_id, turn.id)] = turn_document(turn)
            group = self._groups.get(session_id)
            if group is not None:
                group.remove(turn.id)  # a final copy replaces the placeholder's vector
        self.wake()

    def dropped(self, session_id: str) -> None:
        """The session was deleted: its vectors go now, and work under way drops them."""
        self._epochs[session_id] = self._epochs.get(session_id, 0) + 1
        self._groups.pop(session_id, None)
        self._unsaved.pop(session_id, None)
        for key in [k for k in self._texts if k[0] == session_id]:
            del self._texts[key]

    def wake(self) -> None:
        """Start (or restart after this pass) the background embedding."""
        if not self.slot.status.ready:
            return
        if self.busy():
            self._again = True
            return
        try:
            self._task = asyncio.ensure_future(self._run())
        except RuntimeError:  # no running loop: the next write or search wakes it
            self._task = None

    # ------------------------------------------------------------ the work

    async def _run(self) -> None:
        try:
            if self._settled is not None:
                await self._settled()
            while True:
                self._again = False
                space = self.slot.space
                if not space:
                    return
                if space != self._space:
                    await self._load(space)
                if not await self._embed_missing(space):
                    return
                await self.flush()
                if not self._again:
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the turn vectors could not be brought up to date")

    async def _load(self, space: str) -> None:
        """Take the saved vectors of ``space``; blobs of another space are dropped."""
        self._groups, self._unsaved, self._space = {}, {}, space
        blobs: dict[str, bytes] = {}
        if isinstance(self.store, VectorStore):
            try:
                blobs = await self.store.load_vectors()
            except Exception:
                log.warning("the saved turn vectors could not be read; they are made again")
        known = self._known()
        for session_id, blob in blobs.items():
            if session_id not in known:
                continue
            try:
                self._groups[session_id] = load_vectors(blob, space)
            except VectorBlobError as exc:
                log.info("turn vectors of %s made again: %s", session_id, exc)
                self._unsaved[session_id] = 1  # saved over once re-made
            await asyncio.sleep(0)

    async def _embed_missing(self, space: str) -> bool:
        """Embed every known turn without a vector; False if the embedder stopped."""
        known = self._known()
        missing = {s: [t for t in ids if not self.has(s, t)] for s, ids in known.items()}
        missing = {s: ids for s, ids in missing.items() if ids}
        total = sum(len(ids) for ids in known.values())
        todo = sum(len(ids) for ids in missing.values())
        done = total - todo
        for session_id, ids in missing.items():
            epoch = self._epochs.get(session_id, 0)
            for start in range(0, len(ids), BATCH):
                batch = ids[start:start + BATCH]
                texts = await self._documents(session_id, batch)
                if not texts:
                    continue
                vectors = await self.slot.vectors([text for _, text in texts])
                if vectors is None or self.slot.space != space:
                    return False
                if self._epochs.get(session_id, 0) != epoch:
                    break  # deleted meanwhile
                group = self._groups.get(session_id)
                if group is None:
                    group = self._groups[session_id] = VectorIndex(len(vectors[0]))
                for (turn_id, _), vector in zip(texts, vectors):
                    group.add(turn_id, vector)
                    self._texts.pop((session_id, turn_id), None)
                done += len(texts)
                self._unsaved[session_id] = self._unsaved.get(session_id, 0) + len(texts)
                if self._unsaved[session_id] >= self.save_every:
                    await self.save(session_id)
                if todo > BATCH:
                    self.slot.report(done / max(1, total), "embedding the archive")
                await asyncio.sleep(0)
        if todo > BATCH:
            self.slot.report(1.0, "embedding the archive")
        return True

    async def _documents(self, session_id: str, turn_ids: list[int]) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        unread = []
        for turn_id in turn_ids:
            text = self._texts.get((session_id, turn_id))
            if text is None:
                unread.append(turn_id)
            else:
                out.append((turn_id, text))
        if unread:
            try:
                turns = await self._read_turns(session_id, unread)
            except Exception:
                log.warning("could not read turns of %s to embed them", session_id)
                turns = []
            out += [(t.id, turn_document(t)) for t in turns]
        return [(turn_id, text) for turn_id, text in out if text]

    # ------------------------------------------------------------ saving

    async def save(self, session_id: str) -> bool:
        if not isinstance(self.store, VectorStore) or not self._space:
            return False
        self._unsaved.pop(session_id, None)
        group = self._groups.get(session_id)
        try:
            blob = dump_vectors(group, self._space) if group is not None and len(group) else None
            return await self.store.save_vectors(session_id, blob)
        except Exception:
            log.warning("could not save the turn vectors of %s", session_id, exc_info=True)
            return False

    async def flush(self) -> int:
        saved = 0
        for session_id in list(self._unsaved):
            saved += await self.save(session_id)
        return saved

    async def settled(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the background embedding (tests, benches)."""
        end = asyncio.get_running_loop().time() + timeout
        while self.busy():
            left = end - asyncio.get_running_loop().time()
            if left <= 0:
                return False
            await asyncio.wait([self._task], timeout=left)  # type: ignore[list-item]
        return True

    async def close(self) -> None:
        if self.busy():
            self._task.cancel()  # type: ignore[union-attr]
            await asyncio.gather(self._task, return_exceptions=True)  # type: ignore[arg-type]
        await self.flush()

    # ------------------------------------------------------------ searching

    def search(self, vector: list[float], sessions: Collection[str], k: int,
               exclude: Container[tuple[str, int]] = ()) -> dict[tuple[str, int], float]:
        """The ``k`` turns of ``sessions`` nearest to ``vector``: key -> cosine."""
        groups = [(s, self._groups[s]) for s in sessions if s in self._groups]
        allow = (lambda s, t: (s, t) not in exclude) if exclude else None
        return {(s, t): score for score, s, t in search(groups, vector, k, allow=allow)}  # type: ignore[misc]

    def cosines(self, vector: list[float],
                keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], float]:
        """The cosines of these turns with ``vector`` (turns without a vector left out)."""
        return cosines(self._groups, vector, keys)  # type: ignore[return-value]
