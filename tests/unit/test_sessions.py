"""The session table on its own (py_agent.sessions), built from a store and nothing else."""

from __future__ import annotations

from dataclasses import replace

import pytest

from py_agent import InMemoryStore, StorageError, UnknownSessionError
from py_agent.sessions import SessionTable, title_from
from py_agent.state import CompressionRecord, SessionState, Turn
from tests.unit.support import run


def answered(user: str, answer: str = "ok") -> Turn:
    return Turn(id=0, user=user, answer=answer)


def record_for(state: SessionState, kind: str = "compaction") -> CompressionRecord:
    return CompressionRecord(session_id=state.session_id, started_at=0, duration_ms=0, ok=True,
                             turn_ids=[], previous_summary=state.summary, summary_prompt="",
                             summary="", kind=kind)


def test_a_saved_turn_gets_the_next_id_and_lands_in_state_and_archive():
    store = InMemoryStore()
    table = SessionTable(store)
    run(table.open("s", create=True))
    first, second = answered("Hello there"), answered("And again")
    assert run(table.save_turn("s", first, allocate=True)) is None
    assert run(table.save_turn("s", second, allocate=True)) is None
    assert (first.id, second.id) == (1, 2)
    stored = run(store.load("s"))
    assert [t.id for t in stored.recent_turns] == [1, 2] and stored.next_turn_id == 3
    assert stored.title == title_from("Hello there") == "Hello there"
    assert [t.user for t in run(store.read_archive("s"))] == ["Hello there", "And again"]


def test_an_unknown_session_is_refused_unless_created():
    table = SessionTable(InMemoryStore())
    with pytest.raises(UnknownSessionError):
        run(table.open("nobody", create=False))
    with pytest.raises(UnknownSessionError):
        run(table.transcript("nobody"))
    assert run(table.open("nobody", create=True)).session_id == "nobody"


def test_a_failed_write_keeps_the_turn_and_the_next_write_brings_it_along():
    store = InMemoryStore()
    table = SessionTable(store)
    run(table.open("s", create=True))
    store.fail_next = StorageError("disk full")
    turn = answered("Remember 27")
    problem = run(table.save_turn("s", turn, allocate=True))
    assert isinstance(problem, StorageError) and table.unsaved("s") == 1
    assert [t.user for t in run(table.transcript("s"))] == ["Remember 27"]  # shown meanwhile
    assert run(store.read_archive("s")) == []
    assert run(table.save_turn("s", answered("Next"), allocate=True)) is None
    assert table.unsaved("s") == 0
    assert [t.user for t in run(store.read_archive("s"))] == ["Remember 27", "Next"]


def test_flush_retries_after_another_writer_and_renumbers_an_unwritten_turn():
    """The flush before a compaction takes another tab's write and tries again."""
    store = InMemoryStore()
    here, there = SessionTable(store), SessionTable(store)
    run(here.open("s", create=True))
    run(here.save_turn("s", answered("first"), allocate=True))
    store.fail_next = StorageError("disk full")
    late = answered("second, here")
    run(here.save_turn("s", late, allocate=True))
    assert late.id == 2 and here.unsaved("s") == 1
    run(there.open("s", create=False))
    run(there.save_turn("s", answered("second, there"), allocate=True))  # takes id 2
    assert run(here.flush("s")) is None
    assert here.unsaved("s") == 0 and late.id == 3
    archive = run(store.read_archive("s"))
    assert [(t.id, t.user) for t in archive] == [(1, "first"), (2, "second, there"),
                                                 (3, "second, here")]
    assert [t.id for t in here.state("s").recent_turns] == [1, 2, 3]


def test_a_detached_session_runs_in_memory_and_is_never_written():
    store = InMemoryStore()
    table = SessionTable(store)
    table.detach("s")
    assert run(table.save_turn("s", answered("kept here only"), allocate=True)) is None
    assert table.is_detached("s") and store.writes == 0
    assert [t.user for t in table.state("s").recent_turns] == ["kept here only"]
    assert run(table.compressions("s")) == []


def test_commit_compaction_writes_the_update_with_its_record_and_tells_listeners():
    store = InMemoryStore()
    table = SessionTable(store)
    heard: list[str] = []
    table.when_changed(heard.append)
    run(table.open("s", create=True))
    run(table.save_turn("s", answered("Hello"), allocate=True))

    def summarized(current: SessionState) -> tuple[SessionState, CompressionRecord]:
        updated = current.copy()
        updated.summary, updated.recent_turns = "The user said hello.", []
        return updated, record_for(current)

    commit = run(table.commit_compaction("s", summarized))
    assert table.state("s") is commit.state and heard == ["s"] and commit.profile is None
    assert run(store.load("s")).summary == "The user said hello."
    assert run(store.compressions("s")) == [commit.record]


class AnotherTabWritesFirst(InMemoryStore):
    """Another tab saves a turn of "s" just before this table's first compaction write."""

    def __init__(self) -> None:
        super().__init__()
        self.other: SessionTable | None = None

    async def commit_compaction(self, state, record, profile=None) -> None:
        other, self.other = self.other, None
        if other is not None:
            await other.save_turn("s", answered("Meanwhile"), allocate=True)
        await super().commit_compaction(state, record, profile)


def test_a_commit_that_meets_another_writer_starts_over_from_the_newer_state():
    store = AnotherTabWritesFirst()
    table, other = SessionTable(store), SessionTable(store)
    run(table.open("s", create=True))
    run(table.save_turn("s", answered("Hello"), allocate=True))
    run(other.open("s", create=False))
    store.other = other
    seen: list[list[str]] = []

    def summarized(current: SessionState) -> tuple[SessionState, CompressionRecord]:
        seen.append([t.user for t in current.recent_turns])
        updated = current.copy()
        updated.summary = f"{len(current.recent_turns)} turns."
        return updated, replace(record_for(current), summary=updated.summary)

    commit = run(table.commit_compaction("s", summarized))
    assert seen == [["Hello"], ["Hello", "Meanwhile"]]   # made again from the newer state
    assert commit.state.summary == commit.record.summary == "2 turns."
    assert run(store.compressions("s")) == [commit.record]   # the first try left nothing
    assert run(store.load("s")).summary == "2 turns."


def test_a_refused_update_or_a_deleted_session_commits_nothing():
    store = InMemoryStore()
    table = SessionTable(store)
    run(table.open("s", create=True))
    run(table.save_turn("s", answered("Hello"), allocate=True))
    before = table.state("s")

    def refuse(current: SessionState) -> tuple[SessionState, CompressionRecord]:
        raise RuntimeError("stale")

    with pytest.raises(RuntimeError):
        run(table.commit_compaction("s", refuse))
    assert table.state("s") is before and run(store.compressions("s")) == []
    assert run(table.delete("s")) is True
    with pytest.raises(UnknownSessionError):
        run(table.commit_compaction("s", lambda current: (current, record_for(current))))
    assert run(store.load("s")) is None


def test_refresh_takes_another_writers_state_and_tells_listeners():
    store = InMemoryStore()
    here, there = SessionTable(store), SessionTable(store)
    heard: list[str] = []
    here.when_changed(heard.append)
    run(here.open("s", create=True))
    run(here.save_turn("s", answered("mine"), allocate=True))
    run(there.open("s", create=False))
    run(there.save_turn("s", answered("theirs"), allocate=True))
    assert heard == []
    state = run(here.refresh("s"))
    assert [t.user for t in state.recent_turns] == ["mine", "theirs"] and heard == ["s"]


def test_export_and_import_give_a_new_id_and_keep_every_turn():
    store = InMemoryStore()
    table = SessionTable(store)
    run(table.open("s", create=True))
    for text in ("one", "two"):
        run(table.save_turn("s", answered(text), allocate=True))
    run(table.rename("s", "  My   chat  "))
    bundle = run(table.export("s"))
    assert bundle.state.title == "My chat" and [t.user for t in bundle.turns] == ["one", "two"]
    copy_id = run(table.import_bundle(bundle))
    assert copy_id == "s-2"
    assert [t.user for t in run(table.transcript(copy_id))] == ["one", "two"]
    with pytest.raises(ValueError):
        run(table.import_bundle(bundle, "  "))
