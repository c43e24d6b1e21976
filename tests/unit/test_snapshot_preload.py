"""What the boot snapshot's preload leaves in the interpreter (py_agent.browser.snapshot):
the retriever's caches filled, so that the agent a restored worker builds is quick, and
the modules it holds noted, so that a boot from it can say what it imported besides
(py_agent.browser.bootstrap)."""

from __future__ import annotations

import json
import sys

import pytest

from py_agent import tool
from py_agent.browser import bootstrap
from py_agent.browser.snapshot import preload, warm_retrieval
from py_agent.retrieval.embeddings import default_vectors
from py_agent.retrieval.text import stem


@tool
def water_the_plants(room: str) -> str:
    """Water the houseplants in a room of the flat."""
    return room


def test_warm_retrieval_fills_the_vector_table_and_the_stems_of_the_tools_words():
    default_vectors.cache_clear()
    stem.cache_clear()
    assert warm_retrieval([water_the_plants]) == 1
    assert default_vectors.cache_info().currsize == 1
    before = stem.cache_info()
    stem("houseplants")   # a word of the tool's description: already stemmed
    assert stem.cache_info().hits == before.hits + 1


def test_warm_retrieval_stems_the_built_in_tools_words_too():
    # The agent adds compact and recall to every toolbox: their words are indexed at its
    # first retrieval, so the snapshot holds them stemmed.
    stem.cache_clear()
    warm_retrieval([])
    before = stem.cache_info()
    stem("conversations")   # recall's description: "Search earlier conversations..."
    assert stem.cache_info().hits == before.hits + 1


def test_warm_retrieval_without_tools_still_reads_the_vectors_and_a_bad_tool_stops_nothing():
    default_vectors.cache_clear()
    assert warm_retrieval([]) == 0 and default_vectors.cache_info().currsize == 1
    default_vectors.cache_clear()
    assert warm_retrieval([water_the_plants, water_the_plants]) == 0   # duplicate names
    assert default_vectors.cache_info().currsize == 1   # read before the bad tool


def test_preload_imports_the_entry_function_and_reports_what_it_did():
    report = json.loads(preload("py_agent.retrieval:ToolRetriever", json.dumps({})))
    assert report == {"imported": [], "skipped": {}, "warmed": 0}


@pytest.fixture
def held_modules(monkeypatch):
    """bootstrap's note of the snapshot's modules as a fresh interpreter has it (none),
    put back after the test."""
    monkeypatch.setattr(bootstrap, "held", None)


def test_preload_notes_the_modules_it_leaves_and_a_later_import_is_named(held_modules):
    assert bootstrap.imported_after_restore() is None   # no snapshot: nothing to say
    preload("py_agent.retrieval:ToolRetriever", json.dumps({}))
    assert bootstrap.imported_after_restore() == []
    sys.modules.pop("colorsys", None)
    import colorsys  # noqa: F401  (imported after the "snapshot")
    assert bootstrap.imported_after_restore() == ["colorsys"]
