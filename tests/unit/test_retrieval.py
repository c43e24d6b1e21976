import pytest

from tests.unit import retrieval_corpus as corpus
from tests.unit import retrieval_sets as sets
from py_agent import tool
from tests.unit.demo import demo_tools
from py_agent.retrieval import PreviousTurn, ToolRetriever, stem, tokenize
from py_agent.retrieval.text import split_payload


def names(offer) -> list[str]:
    return [s.tool.name for s in offer]


def test_tokenize_splits_identifiers_drops_function_words_and_stems():
    assert tokenize("convertUnits") == ["convert", "unit"]
    assert tokenize("set_reminder") == ["set", "remind"]
    assert tokenize("Could you please list the HTTPServer logs?") == ["list", "http", "server", "log"]
    assert tokenize("天气预报") == ["天", "气", "预", "报", "天气", "气预", "预报"]


def test_content_words_of_an_assistant_are_not_stop_words():
    assert tokenize("I'm done, show me and make it") == ["done", "show", "make"]
    assert tokenize("days between now and after the trip") == ["day", "between", "now", "after",
                                                                "trip"]


@pytest.mark.parametrize("a, b", [
    ("converting", "convert"), ("converted", "converts"), ("reminders", "reminder"),
    ("running", "run"), ("categories", "category"), ("summarise", "summarize"),
    ("litres", "liters"), ("colour", "color"), ("calculating", "calculate"),
    ("save", "saved"), ("calculate", "calculator"), ("name", "named"), ("hours", "hour"),
    ("raise", "raised"),
])
def test_stemming_joins_inflections_and_spellings(a, b):
    assert stem(a) == stem(b)


@pytest.mark.parametrize("text", ["17 times 23", "19 x 47 = ?", "2^10", "15% of 80",
                                  "(1200 / 8) + 45", "square root of 144", "100 - 37",
                                  "what's 17.5 * 42 minus 380?", "12 squared"])
def test_arithmetic_is_a_term_and_times_is_not_time(text):
    terms = tokenize(text)
    assert "arithmet" in terms and "time" not in terms


@pytest.mark.parametrize("text", ["2026-03-14", "call 555-0134", "meet at 3:30pm", "I'm 17",
                                  "a 20% tip", "what time is it"])
def test_dates_phone_numbers_and_plain_numbers_are_not_arithmetic(text):
    assert "arithmet" not in tokenize(text)


def test_numbers_drop_but_units_percent_and_shapes_stay():
    assert tokenize("what's 70kg in pounds") == ["kg", "pound"]
    assert tokenize("a 20% tip") == ["percent", "tip"]
    assert tokenize("roll 2d6") == ["roll", "2d6", "0d0"]
    assert "date" in tokenize("days until 2026-08-01")


def test_quoted_text_and_text_after_a_lead_in_are_the_payload():
    assert split_payload('is this under 280 chars? "Big news: I am leaving my job"') == \
        ("is this under 280 chars?  ", "Big news: I am leaving my job")
    assert split_payload("word count please: It was a bright cold day in April") == \
        ("word count please", "It was a bright cold day in April")
    assert split_payload("what is 2+2") == ("what is 2+2", "")


# --- the demo's tools, as the page uses them --------------------------------------------

@pytest.mark.parametrize("message, expected", sets.ISSUE_QUOTES)
def test_the_issues_requests_are_offered_the_right_tool(message, expected):
    offered = names(ToolRetriever(demo_tools()).retrieve(message))
    assert expected in offered, (message, offered)


def test_the_calculator_comes_first_for_a_calculation_it_is_named_in():
    offer = ToolRetriever(demo_tools()).retrieve("What is 17 times 23? Use the calculator.")
    assert offer[0].tool.name == "calculate"
    assert "current_datetime" not in names(offer)


@pytest.mark.parametrize("message", ["hi", "thanks!", "how are you?", "ok", "yes please"])
def test_chitchat_without_content_words_gets_no_tool(message):
    assert ToolRetriever(demo_tools()).retrieve(message) == []


@pytest.mark.parametrize("data", [sets.corpus_set(), sets.demo_set(), sets.everyday_set(),
                                  sets.heldout_set()], ids=lambda d: d.name)
def test_no_request_of_the_projects_sets_gets_an_empty_offer(data):
    retriever = ToolRetriever(data.tools)
    empty = [q.text for q in data.queries
             if q.expected and not retriever.retrieve(q.text, previous=q.previous)]
    assert empty == []


@pytest.mark.parametrize("half, floor", [("tune", 0.97), ("report", 0.94)])
def test_everyday_requests_find_their_tool_in_the_offer(half, floor):
    """The demo's examples and the retriever were tuned on the tune half only; the report
    half measures how that carries over (bench/retrieval.py has the numbers)."""
    data = sets.everyday_set()
    retriever = ToolRetriever(data.tools)
    requests = [q for q in data.half(half) if q.expected]
    missed = [q.text for q in requests
              if not q.hit(names(retriever.retrieve(q.text, previous=q.previous)))]
    recall = 1 - len(missed) / len(requests)
    print(f"everyday {half} offer recall {recall:.3f} ({len(missed)} missed)")
    assert recall >= floor


def test_held_out_requests_find_their_tool_in_the_offer():
    """Another app's tools and requests, never tuned on (0.886 before word vectors)."""
    data = sets.heldout_set()
    retriever = ToolRetriever(data.tools)
    requests = [q for q in data.queries if q.expected]
    hits = sum(q.hit(names(retriever.retrieve(q.text, previous=q.previous))) for q in requests)
    assert hits / len(requests) >= 0.90


@pytest.mark.parametrize("previous, tools, message, expected", [
    ("convert 30 celsius to fahrenheit", ("convert_units",), "and in Fahrenheit?",
     "convert_units"),
    ("what's 17 times 23", ("calculate",), "now divide that by 4", "calculate"),
    ("how far is 10 km in miles", ("convert_units",), "what about 25?", "convert_units"),
    ("show my tasks", ("list_todos",), "the first one's finished", "complete_todo"),
])
def test_follow_ups_use_the_previous_turn(previous, tools, message, expected):
    retriever = ToolRetriever(demo_tools())
    offer = retriever.retrieve(message, previous=PreviousTurn(previous, tools))
    assert expected in names(offer)
    if expected in tools:
        chosen = next(s for s in offer if s.tool.name == expected)
        assert "previous turn" in chosen.why.signals


def test_a_strong_new_request_is_not_crowded_out_by_the_previous_turn():
    retriever = ToolRetriever(demo_tools())
    offer = retriever.retrieve("roll 3d6", previous=PreviousTurn("convert 5 miles to km",
                                                                 ("convert_units",)))
    assert offer[0].tool.name == "roll_dice"


# --- examples, keywords and the trace's why -----------------------------------------------

@tool(examples=["heads or tails?", "who goes first, me or you"])
def coin(side: str = "") -> str:
    """Toss a virtual coin."""


@tool(keywords=["pounds", "kilos"])
def weigh(value: float) -> str:
    """Convert a quantity between units of mass."""


@tool
def forecast(city: str) -> str:
    """Look up the forecast for a city."""


@tool
def packing(trip: str) -> str:
    """Suggest what to pack given the weather and trip length."""


def test_a_tool_is_found_through_its_examples_and_keywords():
    retriever = ToolRetriever([coin, weigh, forecast, packing], top_k=1)
    assert names(retriever.retrieve("heads or tails")) == ["coin"]
    assert names(retriever.retrieve("90 kilos in pounds")) == ["weigh"]


def test_the_trace_says_which_words_and_example_matched_and_which_signal():
    retriever = ToolRetriever(demo_tools())
    offer = retriever.retrieve("What is 17 times 23? Use the calculator.")
    why = offer[0].why
    assert "bm25" in why.signals
    assert "calculator" in why.terms["keywords"]
    assert why.example in offer[0].tool.examples and "calculator" in why.example
    data = why.to_dict()
    assert set(data) == {"signals", "terms", "example", "similar"}


def test_the_second_signal_finds_a_tool_when_no_word_matches():
    retriever = ToolRetriever([coin, weigh, forecast, packing], top_k=2)
    offer = retriever.retrieve("forcast for paris")  # a typo: no term matches "forecast"
    assert offer and offer[0].tool.name == "forecast"
    assert offer[0].why.signals[0] == "ngrams" and "bm25" not in offer[0].why.signals
    assert ("forcast", "forecast") in offer[0].why.similar


def test_name_is_boosted_over_description():
    ranked = ToolRetriever([packing, forecast, coin, weigh], top_k=1).retrieve("forecast today")
    assert names(ranked) == ["forecast"]


def corpus_tools():
    return sets.corpus_set().tools


def test_pinned_tools_are_always_offered_and_nonsense_offers_nothing_else():
    @tool(pinned=True)
    def help_center(topic: str) -> str:
        """Explain how to use this assistant."""

    retriever = ToolRetriever(corpus_tools() + [help_center], top_k=3)
    assert names(retriever.retrieve("thanks!")) == ["help_center"]
    offered = names(retriever.retrieve("convert 3 miles to kilometers"))
    assert offered[-1] == "help_center" and len(offered) == 4


def test_small_registry_offers_everything():
    retriever = ToolRetriever(corpus_tools()[:2], top_k=3)
    assert len(retriever.retrieve("nothing in common")) == 2


def test_duplicate_names_are_refused():
    tools = corpus_tools()
    with pytest.raises(ValueError, match="duplicate tool names"):
        ToolRetriever(tools + tools[:1])


def test_beats_substring_overlap_on_the_labelled_corpus():
    assert len(corpus.TOOLS) >= 50 and len(corpus.QUERIES) >= 100
    retriever = ToolRetriever(corpus_tools(), top_k=3)
    ours = corpus.recall_at_k(lambda q, k: names(retriever.retrieve(q, k)), 3)
    baseline = corpus.recall_at_k(lambda q, k: corpus.substring_overlap_rank(q, corpus.TOOLS, k), 3)
    print(f"recall@3: ours={ours:.3f} substring={baseline:.3f}")
    assert ours > baseline + 0.1
    assert ours >= 0.85


def test_every_demo_tool_has_three_to_six_examples():
    for t in demo_tools():
        assert 3 <= len(t.examples) <= 6, (t.name, len(t.examples))
        assert len(set(t.examples)) == len(t.examples)
