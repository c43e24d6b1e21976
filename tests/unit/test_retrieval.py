import pytest

from tests.unit import retrieval_corpus as corpus
from py_agent import tool
from py_agent.retrieval import ToolRetriever, stem, tokenize
from py_agent.tools import Tool, ToolParam


def corpus_tools() -> list[Tool]:
    return [Tool(d["name"], d["description"],
                 [ToolParam(p, {"type": "string"}, True) for p in d["params"]], fn=lambda **k: None)
            for d in corpus.TOOLS]


def bm25_rank(retriever: ToolRetriever):
    return lambda query, k: [s.tool.name for s in retriever.retrieve(query, k)]


def test_tokenize_splits_identifiers_drops_stop_words_and_stems():
    assert tokenize("convertUnits") == ["convert", "unit"]
    assert tokenize("set_reminder") == ["set", "reminder"]
    assert tokenize("Could you please list the HTTPServer logs?") == ["list", "http", "server", "log"]
    assert tokenize("天气预报") == ["天", "气", "预", "报", "天气", "气预", "预报"]


@pytest.mark.parametrize("a, b", [
    ("converting", "convert"), ("converted", "converts"), ("reminders", "reminder"),
    ("running", "run"), ("categories", "category"), ("summarise", "summarize"),
    ("litres", "liters"), ("colour", "color"), ("calculating", "calculate"),
])
def test_stemming_joins_inflections_and_spellings(a, b):
    assert stem(a) == stem(b)


def test_bm25_ranks_the_obvious_tool_first_with_scores():
    retriever = ToolRetriever(corpus_tools(), top_k=3)
    best = retriever.retrieve("please remind me about the dentist at 3pm")
    assert best[0].tool.name == "set_reminder"
    # Only tools sharing a term with the message are offered, best first.
    assert [s.tool.name for s in best] == ["set_reminder", "convertTimezone"]
    assert best[0].score > best[1].score > 0


def test_name_is_boosted_over_description():
    @tool
    def weather(city: str) -> str:
        """Look up the forecast for a city."""

    @tool
    def packing(trip: str) -> str:
        """Suggest what to pack given the weather and trip length."""

    @tool
    def other(x: str) -> str:
        """Something unrelated."""

    @tool
    def another(x: str) -> str:
        """Also unrelated."""

    ranked = ToolRetriever([packing, weather, other, another], top_k=1).retrieve("weather today")
    assert [s.tool.name for s in ranked] == ["weather"]


def test_pinned_tools_are_always_offered_and_no_match_offers_nothing_else():
    tools = corpus_tools()

    @tool(pinned=True)
    def help_center(topic: str) -> str:
        """Explain how to use this assistant."""

    retriever = ToolRetriever(tools + [help_center], top_k=3)
    names = [s.tool.name for s in retriever.retrieve("zzzz qqqq")]
    assert names == ["help_center"]
    names = [s.tool.name for s in retriever.retrieve("convert 3 miles to kilometers")]
    assert names[-1] == "help_center" and len(names) == 4


def test_small_registry_offers_everything():
    retriever = ToolRetriever(corpus_tools()[:2], top_k=3)
    assert len(retriever.retrieve("nothing in common")) == 2


def test_duplicate_names_are_refused():
    tools = corpus_tools()
    with pytest.raises(ValueError, match="duplicate tool names"):
        ToolRetriever(tools + tools[:1])


def test_bm25_beats_substring_overlap_on_labelled_queries():
    assert len(corpus.TOOLS) >= 50 and len(corpus.QUERIES) >= 100
    retriever = ToolRetriever(corpus_tools(), top_k=3)
    bm25 = corpus.recall_at_k(bm25_rank(retriever), 3)
    baseline = corpus.recall_at_k(lambda q, k: corpus.substring_overlap_rank(q, corpus.TOOLS, k), 3)
    print(f"recall@3: bm25={bm25:.3f} substring={baseline:.3f}")
    assert bm25 > baseline + 0.05
    assert bm25 >= 0.8
