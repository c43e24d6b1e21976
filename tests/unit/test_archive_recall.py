"""agent.recall and the index behind it (py_agent.recall.archive): it follows the archive
through turns, compaction, renames, deletions, imports and another writer, and is saved
beside the archive in every store (in memory, SQLite) so a start loads instead of
re-analysing."""

from __future__ import annotations

import pytest

from py_agent import Agent, InMemoryStore, UnknownSessionError
from py_agent.recall import analysis, dump_session
from py_agent.recall.archive import ArchiveRecall
from py_agent.sessions import SessionTable
from py_agent.sqlite_store import SqliteStore
from py_agent.state import Turn
from py_agent.testing import FunctionModel
from tests.unit.support import LONG, SMALL, make_responder, run

WEDDING = "My sister's wedding is in Porto on the 14th of June, at the Quinta da Aveleda."
RECIPE = "Please save the gochujang pancake recipe: 200 g flour, two spring onions, kimchi."


def agent_on(store=None, **kwargs) -> Agent:
    model = FunctionModel(make_responder(), context_window=SMALL["window"])
    return Agent(model=model, store=store if store is not None else InMemoryStore(),
                 memory=SMALL["memory"], **kwargs)


async def talk(agent: Agent, session_id: str, *messages: str, filler: int = 0) -> None:
    for message in messages:
        await agent.run(message, session_id=session_id)
    for i in range(filler):
        await agent.run(f"Filler {i}: {LONG}", session_id=session_id)
    await agent.wait_idle()


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "a.db")


def test_recall_finds_a_long_compacted_turn_with_its_transcript_id_text_and_time(store):
    agent = agent_on(store)
    run(talk(agent, "s", "Hello there.", WEDDING, filler=14))
    state = run(agent.memory_state("s"))
    assert state.compactions and 2 not in [t.id for t in state.recent_turns]
    assert "Quinta" not in state.summary  # the summary kept the gist, not the name
    hits = run(agent.recall("Where is my sister's wedding?"))
    best = hits[0]
    said = next(t for t in run(agent.transcript("s")) if t.user == WEDDING)
    assert (best.session_id, best.turn_id) == ("s", said.id) == ("s", 2)
    assert "Quinta da Aveleda" in best.text and best.time == said.created_at
    assert best.score > 0 and best.why.coverage >= 0.5 and len(hits) <= 5
    assert len(run(agent.recall("wedding", k=1))) == 1


def test_recall_reads_only_sessions_not_made_private_unless_asked_for_one(store):
    agent = agent_on(store)
    run(talk(agent, "open", WEDDING))
    run(talk(agent, "secret", RECIPE))
    mark_private(agent, store, "secret")
    assert [h.session_id for h in run(agent.recall("gochujang pancake recipe"))] == []
    assert [h.session_id for h in run(agent.recall("wedding in Porto"))] == ["open"]
    mine = run(agent.recall("gochujang pancake recipe", session_id="secret"))
    assert [h.session_id for h in mine] == ["secret"]
    assert run(agent.recall("gochujang pancake recipe", session_id="open")) == []
    with pytest.raises(UnknownSessionError):
        run(agent.recall("anything", session_id="nobody"))
    with pytest.raises(ValueError):
        run(agent.recall("   "))


def mark_private(agent: Agent, store, session_id: str) -> None:
    """Mark a session private as another tab would: in the store; the agent reads the
    session's newer state."""
    state = run(store.load(session_id))
    state.private = True
    run(store.save(state))
    run(agent.sessions.refresh(session_id))


def test_deleting_a_session_removes_its_turns_and_blob(store):
    agent = agent_on(store)
    run(talk(agent, "a", WEDDING))
    run(talk(agent, "b", RECIPE))
    run(agent.archive_recall.flush())
    assert set(run(store.load_recall())) == {"a", "b"}
    assert run(agent.delete_session("a")) is True
    assert run(agent.recall("sister's wedding in Porto")) == []
    assert set(run(store.load_recall())) == {"b"}
    assert "a" not in agent.archive_recall.index.sessions()
    fresh = agent_on(store)  # and a start does not bring it back
    assert run(fresh.recall("sister's wedding in Porto")) == []
    assert [h.session_id for h in run(fresh.recall("gochujang"))] == ["b"]


def test_an_imported_session_is_indexed_under_its_new_id_and_the_blob_is_not_exported(store):
    agent = agent_on(store)
    run(talk(agent, "trip", WEDDING, filler=20))
    exported = run(agent.export_session("trip"))
    assert "RCL1" not in exported and "recall" not in exported.splitlines()[0]
    new_id = run(agent.import_session(exported))
    assert new_id == "trip-2"
    run(agent.archive_recall.settled())
    found = {h.session_id for h in run(agent.recall("sister's wedding Quinta", k=5))}
    assert found == {"trip", "trip-2"}
    assert "trip-2" in run(store.load_recall())  # saved at once: it was a whole session
    run(agent.delete_session("trip"))
    assert {h.session_id for h in run(agent.recall("sister's wedding Quinta", k=5))} == {"trip-2"}
    other = agent_on()  # into another store: the same, from the file alone
    run(other.import_session(exported, session_id="elsewhere"))
    hits = run(other.recall("sister's wedding Quinta"))
    assert hits and hits[0].session_id == "elsewhere" and hits[0].turn_id == 1


def test_a_rename_gives_the_session_its_title_in_the_index(store):
    agent = agent_on(store)
    run(talk(agent, "a", "We picked the blue tiles for the bathroom floor."))
    before = run(agent.recall("renovation tiles"))[0].score
    run(agent.rename_session("a", "Bathroom renovation"))
    assert agent.archive_recall.title("a") == "Bathroom renovation"
    after = run(agent.recall("renovation tiles"))[0].score
    assert after > before  # the title's words count for the session's turns
    run(agent.close())
    restarted = agent_on(store)
    assert run(restarted.recall("renovation tiles"))[0].score == pytest.approx(after)


def count_analyses(monkeypatch) -> list[int]:
    calls = [0]
    real = analysis.analyze_turn

    def counting(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    from py_agent.recall import index as index_module
    monkeypatch.setattr(index_module, "analyze_turn", counting)
    return calls


def test_a_start_loads_the_saved_index_and_analyzes_only_the_turns_it_lacks(tmp_path,
                                                                            monkeypatch):
    path = tmp_path / "a.db"
    first = agent_on(SqliteStore(path))
    run(talk(first, "s", WEDDING, filler=11))   # 12 turns: one save after the 8th
    run(first.archive_recall.flush())
    run(talk(first, "s", "One more thing: the dress code is smart casual."))  # not saved
    analyses = count_analyses(monkeypatch)
    again = agent_on(SqliteStore(path))  # a restart
    hits = run(again.recall("what is the dress code?"))
    assert hits[0].turn_id == 13 and "smart casual" in hits[0].text
    assert analyses[0] == 1  # only the turn the blob lacked
    wedding = run(again.recall("sister's wedding Porto"))[0]
    assert wedding.turn_id == 1 and "Quinta da Aveleda" in wedding.text  # text from the archive
    assert analyses[0] == 1


@pytest.mark.parametrize("blob", [
    b"RCL1\x63\x00" + b"from an analyzer of the future",   # StaleIndexError
    b"RCL1\x01\x00" + b"not zlib at all",                  # IndexBlobError
    b"not even ours"])
def test_a_stale_or_damaged_blob_is_rebuilt_from_the_archive_and_saved_again(store, blob):
    agent = agent_on(store)
    run(talk(agent, "s", WEDDING, RECIPE))
    run(store.save_recall("s", blob))
    again = agent_on(store)
    assert run(again.recall("gochujang pancake"))[0].turn_id == 2
    run(again.archive_recall.settled())
    assert run(store.load_recall())["s"] == dump_session(again.archive_recall.index, "s")


def test_another_writer_s_turns_are_learnt_from_the_archive(store):
    here, there = agent_on(store), agent_on(store)  # two tabs, two processes
    run(talk(here, "mine", "Hello from this tab."))
    run(there.recall("hello"))   # its index is loaded: the start has passed
    run(talk(here, "mine", WEDDING))
    assert run(there.recall("sister's wedding")) == []   # not told yet
    run(there.list_sessions())   # the page lists the sessions when another tab saved
    assert run(there.recall("sister's wedding"))[0].turn_id == 2
    run(talk(here, "mine", RECIPE))
    run(there.memory_state("mine"))  # or the session is read again: its newer state
    assert run(there.recall("gochujang pancake"))[0].turn_id == 3


class ArchiveOnly:
    """A store of the Store protocol without recall blobs (a third party's, say)."""

    def __init__(self) -> None:
        self.inner = InMemoryStore()

    def __getattr__(self, name):
        if name in ("save_recall", "load_recall", "read_turns"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_store_without_recall_blobs_gets_its_index_rebuilt_at_start():
    store = ArchiveOnly()
    first = agent_on(store)
    run(talk(first, "s", WEDDING, RECIPE))
    again = agent_on(store)
    hits = run(again.recall("wedding in Porto"))
    assert hits[0].turn_id == 1 and "Quinta" in hits[0].text


def test_an_unfinished_turn_is_indexed_once_it_is_final():
    store = InMemoryStore()
    agent = agent_on(store)
    table = agent.sessions

    async def scenario():
        started = Turn(id=0, user=WEDDING, answer="", status="interrupted")
        await table.open("s", create=True)
        await table.save_turn("s", started, allocate=True)
        assert agent.archive_recall.index.turn_ids("s") == []   # the start is not recalled
        started.status, started.answer = "answered", "Noted: Porto, 14 June."
        await table.save_turn("s", started)
        return await agent.recall("wedding Porto")

    (hit,) = run(scenario())
    assert hit.turn_id == 1 and "Noted: Porto" in hit.text


def test_close_saves_the_blobs_that_lag():
    store = InMemoryStore()
    agent = agent_on(store)
    assert run(agent.recall("anything")) == []  # the start is over: an empty store
    run(talk(agent, "s", WEDDING, RECIPE))
    assert run(store.load_recall()) == {}  # two turns: not saved yet (every 8)
    run(agent.close())
    blob = run(store.load_recall())["s"]
    fresh = ArchiveRecall(store, SessionTable(store))
    run(fresh.settled())
    assert fresh.index.turn_ids("s") == [1, 2] and dump_session(fresh.index, "s") == blob


def test_an_agent_without_recall_has_no_tool_index_or_room():
    agent = agent_on(recall=False)
    run(talk(agent, "s", WEDDING))
    assert agent.archive_recall is None and "recall" not in [t.name for t in agent.tools]
    with pytest.raises(RuntimeError):
        run(agent.recall("wedding"))
    shown = run(agent.memory_state("s"))
    assert shown.budget.recall == shown.prefix["recall_max_tokens"] > 0  # still planned


def test_a_session_list_drops_what_another_tab_deleted_but_not_what_is_newer_than_it(store):
    here, there = agent_on(store), agent_on(store)   # two tabs
    run(talk(here, "old", WEDDING))
    assert run(there.recall("sister's wedding"))[0].session_id == "old"
    stale = run(store.list_sessions())
    run(talk(there, "new", RECIPE))                  # written after the list was read

    async def told(infos) -> None:   # as Agent.list_sessions tells it, on the agent's loop
        there.archive_recall.sync(infos)
        await there.archive_recall.settled()

    run(told(stale))
    assert run(there.recall("gochujang pancake"))[0].session_id == "new"
    run(here.delete_session("old"))                  # the other tab deletes a session
    assert run(there.recall("sister's wedding")) != []  # not told yet
    run(there.list_sessions())
    assert run(there.recall("sister's wedding")) == []


def test_save_recall_saves_the_blobs_that_lag_and_says_how_many(store):
    agent = agent_on(store)
    assert run(agent.recall("anything")) == []
    run(talk(agent, "a", WEDDING))
    run(talk(agent, "b", RECIPE))
    assert run(agent.save_recall()) == 2 and run(agent.save_recall()) == 0
    assert set(run(store.load_recall())) == {"a", "b"}
