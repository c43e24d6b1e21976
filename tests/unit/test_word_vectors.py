"""The word-vector signal: the shipped table, its use by the retriever, the adaptive offer."""

import struct

import pytest

from py_agent import tool
from py_agent.retrieval import ToolRetriever
from py_agent.retrieval.embeddings import VectorIndex, WordVectors, default_vectors, table


def names(offer) -> list[str]:
    return [s.tool.name for s in offer]


def cosine(vectors: WordVectors, a: str, b: str) -> float:
    return sum(x * y for x, y in zip(vectors.embed([a]), vectors.embed([b])))


def test_the_table_ships_with_the_package_small_and_loadable():
    assert table().is_file() and len(table().read_bytes()) <= 5 * 1024 * 1024
    vectors = default_vectors()
    assert vectors is not None and vectors.size >= 10_000 and vectors.dims == 50


@pytest.mark.parametrize("word, near, far", [
    ("kg", "pounds", "recipe"), ("weekend", "saturday", "calculator"),
    ("salary", "month", "dice"), ("rain", "weather", "dollars"),
])
def test_related_words_are_nearer_than_unrelated_ones(word, near, far):
    vectors = default_vectors()
    assert cosine(vectors, word, near) > cosine(vectors, word, far) + 0.2


def test_frequent_words_weigh_less_and_unknown_words_nothing():
    vectors = default_vectors()
    assert vectors.weight("the") < vectors.weight("kilogram") <= 1
    assert vectors.weight("qwzxv") == 0 and vectors.embed(["qwzxv"]) is None


def test_a_table_that_is_not_one_or_is_cut_short_is_refused():
    with pytest.raises(ValueError):
        WordVectors(b"JUNK" + bytes(20))
    good = table().read_bytes()
    with pytest.raises(ValueError):
        WordVectors(good[:-7])
    with pytest.raises(ValueError):
        WordVectors(b"WVEC" + struct.pack("<II", 3, 2) + b"a\nb\0" + bytes(6))


def test_index_scores_each_document_by_cosine():
    vectors = default_vectors()
    index = VectorIndex(vectors, [{"rain": 1.0, "weather": 1.0}, {"invoice": 1.0, "payment": 1.0}])
    scores = index.scores(["umbrella", "storm"])
    assert scores[0] > scores[1]
    assert index.scores(["qwzxv"]) == {}


@tool
def weather(city: str) -> str:
    """Look up the forecast for a city."""


@tool
def invoice(customer: str, amount: float) -> str:
    """Bill a customer."""


@tool
def playlist(mood: str) -> str:
    """Queue songs to listen to."""


@tool
def translate(text: str, language: str) -> str:
    """Render text in another language."""


@tool
def contacts(person: str) -> str:
    """Look up someone's phone number."""


REGISTRY = [weather, invoice, playlist, translate, contacts]


@pytest.mark.parametrize("message, expected", [
    ("is it going to rain in london", "weather"),
    ("put on some jazz", "playlist"),
])
def test_word_vectors_find_a_tool_that_shares_no_word_or_spelling(message, expected):
    with_vectors = ToolRetriever(REGISTRY, top_k=1, close_extra=0)
    without = ToolRetriever(REGISTRY, top_k=1, close_extra=0, vectors=False)
    offer = with_vectors.retrieve(message)
    assert names(offer) == [expected]
    assert "word vectors" in offer[0].why.signals
    assert names(without.retrieve(message)) != [expected]


def test_without_a_table_the_retriever_still_works_on_words_and_spelling():
    retriever = ToolRetriever(REGISTRY, top_k=1, vectors=None)
    assert retriever.meaning_weight == 0
    assert names(retriever.retrieve("forecast for paris")) == ["weather"]


def test_close_scores_widen_the_offer_and_clear_winners_do_not():
    colours = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]
    tools = [tool(lambda x="": "", name=f"{c}_widgets", description=f"Handle {c} widgets.")
             for c in colours]
    retriever = ToolRetriever(tools, top_k=3, close_extra=2, close_ratio=0.6, vectors=False)
    assert len(retriever.retrieve("handle widgets")) == 5  # all equally good: 3 + 2 more
    narrow = ToolRetriever(tools, top_k=3, close_extra=0, vectors=False)
    assert len(narrow.retrieve("handle widgets")) == 3
    clear = retriever.retrieve("purple ones")
    assert names(clear) == ["purple_widgets"]
