"""A session's recall index saved as bytes and loaded back; the shipped neighbour table."""

import gc
import json
import struct
import zlib
from datetime import datetime, timezone

import pytest

from py_agent.recall import (ANALYZER_VERSION, IndexBlobError, RecallIndex, StaleIndexError,
                             dump_session, load_session)
from py_agent.recall.neighbors import WordNeighbors, default_neighbors, table
from py_agent.retrieval.embeddings import default_vectors
from py_agent.state import StepRecord, Turn

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=timezone.utc)
NOW_MS = NOW.timestamp() * 1000
DAY = 86_400_000


TURNS = {
    "trip": [Turn(1, "We settled on Lisbon for the anniversary.", "Lovely, try Alfama.",
                  created_at=NOW_MS - 30 * DAY),
             Turn(2, "Book a table for two on Friday", "Booked at Taberna 12, 8pm.",
                  [StepRecord(tool="book_table", tool_input={"people": 2},
                              observation="confirmation TB-5521")],
                  created_at=NOW_MS - 29 * DAY),
             Turn(3, "Café recommendations? ☕ 日本語も", "Try Fábrica Coffee.",
                  created_at=NOW_MS - 28 * DAY)],
    "home": [Turn(1, "The plumber quoted 340 euros.", "That's fair.",
                  created_at=NOW_MS - 3 * DAY)],
}


def build() -> RecallIndex:
    index = RecallIndex()
    for session_id, turns in TURNS.items():
        index.set_title(session_id, f"{session_id} plans")
        index.add_many(session_id, turns)
    return index


def reload(index: RecallIndex) -> RecallIndex:
    loaded = RecallIndex()
    for session_id in index.sessions():
        load_session(loaded, dump_session(index, session_id), session_id)
    return loaded


def results(index: RecallIndex, query: str, **kwargs):
    return [h.to_dict() for h in index.search(query, now=NOW, **kwargs)]


QUERIES = ["anniversary trip", "confirmation TB-5521", "table on Friday", "plumber 340",
           "coffee café", "日本語", "what did we decide last month?"]


def without_text(hits: list[dict]) -> list[dict]:
    return [{**h, "text": ""} for h in hits]


def test_a_session_round_trips_through_bytes_with_identical_results():
    index = build()
    blob = dump_session(index, "trip")
    assert isinstance(blob, bytes) and blob[:4] == b"RCL1"
    assert b"Alfama" not in zlib.decompress(blob[6:])  # the text stays in the archive
    loaded = RecallIndex()
    assert load_session(loaded, blob, "trip") == 3
    load_session(loaded, dump_session(index, "home"), "home")
    for query in QUERIES:
        assert without_text(results(loaded, query)) == without_text(results(index, query))
    assert [t.fields for t in loaded.analyzed("trip")] == [t.fields for t in index.analyzed("trip")]
    # The archived turns give the loaded hits their texts back, without re-analysis.
    assert all(h["text"] == "" for h in results(loaded, "anniversary"))
    for session_id, turns in TURNS.items():
        assert loaded.hydrate(session_id, turns) == len(turns)
    for query in QUERIES:
        assert results(loaded, query) == results(index, query), query
    assert loaded.hydrate("nope", TURNS["trip"]) == 0


def test_a_loaded_session_takes_updates_like_a_built_one():
    index = build()
    loaded = reload(index)
    late = Turn(4, "We changed our minds: Porto instead.", "Porto it is.", created_at=NOW_MS - DAY)
    for target in (index, loaded):
        target.add("trip", late)
        target.remove_turn("trip", 2)
    assert without_text(results(loaded, "Porto")) == without_text(results(index, "Porto"))
    assert results(loaded, "Porto")[0]["text"].startswith("User: We changed our minds")
    assert results(loaded, "TB-5521") == [] and len(loaded) == len(index) == 4


def test_loading_replaces_the_session_and_may_rename_it():
    index = build()
    blob = dump_session(index, "trip")
    other = RecallIndex()
    other.add("imported", Turn(9, "something older", "x", created_at=NOW_MS))
    assert load_session(other, blob, "imported") == 3
    assert other.turn_ids("imported") == [1, 2, 3]
    assert {h.session_id for h in other.search("anniversary", now=NOW)} == {"imported"}


def test_the_title_is_saved_with_the_session():
    index = build()
    loaded = reload(index)
    assert without_text(results(loaded, "home plumber")) == without_text(results(index, "home plumber"))
    hit = loaded.search("home plumber", now=NOW)[0]
    assert hit.session_id == "home"


def test_loading_leaves_the_garbage_collector_as_it_found_it():
    blob = dump_session(build(), "trip")
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            load_session(RecallIndex(), blob, "trip")
            assert gc.isenabled() is enabled
            with pytest.raises(IndexBlobError):
                load_session(RecallIndex(), blob[:-3], "trip")
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def test_an_empty_or_unknown_session_dumps_to_nothing():
    assert dump_session(RecallIndex(), "nope") is None
    index = build()
    index.remove_session("home")
    assert dump_session(index, "home") is None


def test_a_blob_of_another_analyzer_is_stale_and_changes_nothing():
    index = build()
    blob = bytearray(dump_session(index, "trip"))
    struct.pack_into("<H", blob, 4, ANALYZER_VERSION + 1)
    target = build()
    before = results(target, "anniversary")
    with pytest.raises(StaleIndexError):
        load_session(target, bytes(blob), "trip")
    assert results(target, "anniversary") == before


@pytest.mark.parametrize("blob", [
    b"", b"RCL", b"nonsense at all", b"RCL1\x01\x00" + b"not zlib",
    b"RCL1\x01\x00" + zlib.compress(b"[1, 2, 3]"),
    b"RCL1\x01\x00" + zlib.compress(b'{"turns": [[1, 0, 1, 0, 0, 0]], "texts": [], "postings": {}}'),
    b"RCL1\x01\x00" + zlib.compress(b'{"turns": [[1, 0, 1, 0, 0, 0]], "texts": ["x"], '
                                    b'"postings": {"a": [[5], [1]]}}'),
    b"RCL1\x01\x00" + zlib.compress(b'{"turns": [[1, 0, 1, 0, 0, 0], [1, 0, 1, 0, 0, 0]], '
                                    b'"texts": ["x", "y"], "postings": {}}'),
    b"RCL1\x01\x00" + zlib.compress("{\"turns\": \xff}".encode("latin-1")),
])
def test_an_unreadable_blob_is_a_clear_error_and_changes_nothing(blob):
    target = build()
    before = results(target, "anniversary")
    with pytest.raises(IndexBlobError):
        load_session(target, blob, "trip")
    assert results(target, "anniversary") == before


def test_the_blob_is_small_against_the_turns_it_indexes():
    index = RecallIndex()
    turns = [Turn(i, f"Question {i} about my garden: the {i}th tomato plant has yellow leaves.",
                  "Yellow leaves on tomatoes often mean overwatering or a lack of nitrogen; "
                  f"check the soil and feed plant {i} with a balanced fertiliser.",
                  created_at=NOW_MS - i * DAY) for i in range(1, 200)]
    index.add_many("garden", turns)
    archive = sum(len(json.dumps(t.to_dict()).encode()) for t in turns)
    assert len(dump_session(index, "garden")) < 0.3 * archive


def test_the_neighbour_table_ships_small_and_relates_words():
    assert table().is_file() and len(table().read_bytes()) < 400_000
    neighbours = default_neighbors()
    assert neighbours is not None
    near = dict(neighbours("book"))
    assert "novel" in near and 0.72 <= near["novel"] <= 1.0
    assert "books" not in near  # inflections are left to stemming
    assert neighbours("zzzqqq") == []


def test_a_damaged_neighbour_table_is_refused():
    vectors = default_vectors()
    data = table().read_bytes()
    for bad in (b"XXXX" + data[4:], data[:-1], data + b"\0"):
        with pytest.raises(ValueError):
            WordNeighbors(bad, vectors)
