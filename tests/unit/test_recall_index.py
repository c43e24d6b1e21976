"""The recall index: incremental updates, filters, ranking properties, bad input."""

from datetime import datetime, timezone

import pytest

from py_agent.recall import RecallIndex, RecallSettings
from py_agent.recall.analysis import FIELD_CHARS
from py_agent.recall.dates import DAY_MS
from py_agent.state import StepRecord, Turn

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=timezone.utc)  # a Wednesday
NOW_MS = NOW.timestamp() * 1000

FILLER = [
    ("How long should I boil an egg?", "About nine minutes for a hard-boiled egg."),
    ("Any tips for sleeping better?", "Keep a regular schedule and a dark, cool room."),
    ("What is a good stretch for the back?", "Try the cat-cow stretch, slowly, ten times."),
    ("Can you help me write a birthday card for a colleague?",
     "Happy birthday! Wishing you a year as bright as your ideas."),
    ("How do I clean a cast iron pan?", "Rinse with hot water, dry it, and oil it lightly."),
    ("What's the capital of Australia?", "Canberra."),
]


def turn(turn_id: int, user: str, answer: str, days_ago: float, steps=()) -> Turn:
    return Turn(turn_id, user, answer, list(steps), created_at=NOW_MS - days_ago * DAY_MS)


def keys(hits) -> list[tuple[str, int]]:
    return [(h.session_id, h.turn_id) for h in hits]


def filled(index: RecallIndex, session_id: str, start_id: int, days_ago: float) -> int:
    for i, (user, answer) in enumerate(FILLER):
        index.add(session_id, turn(start_id + i, user, answer, days_ago + i * 0.01))
    return start_id + len(FILLER)


@pytest.fixture
def index() -> RecallIndex:
    index = RecallIndex()
    filled(index, "cooking", 1, 40)
    filled(index, "misc", 1, 20)
    return index


# --------------------------------------------------------------- updates


def test_turns_are_added_replaced_and_removed_incrementally(index):
    before = len(index)
    index.add("trip", turn(1, "We settled on Lisbon for the anniversary trip.", "Lovely choice.", 10))
    assert len(index) == before + 1 and ("trip", 1) in index
    assert keys(index.search("anniversary trip", now=NOW)) == [("trip", 1)]
    # The same id again replaces the turn (an "interrupted" placeholder becomes final).
    index.add("trip", turn(1, "We settled on Porto for the anniversary trip.", "Good.", 10))
    assert len(index) == before + 1
    assert index.search("Lisbon", now=NOW) == []
    assert keys(index.search("Porto anniversary", now=NOW)) == [("trip", 1)]
    assert index.remove_turn("trip", 1) is True
    assert index.remove_turn("trip", 1) is False
    assert ("trip", 1) not in index and "trip" not in index.sessions()
    assert index.search("anniversary", now=NOW) == []
    assert len(index) == before


def test_removing_a_session_forgets_all_its_turns_and_nothing_else(index):
    assert index.remove_session("misc") == len(FILLER)
    assert index.remove_session("misc") == 0
    assert index.remove_session("never-existed") == 0
    assert index.sessions() == {"cooking"}
    hits = index.search("cast iron pan", now=NOW)
    assert hits and {h.session_id for h in hits} == {"cooking"}


def test_many_replacements_keep_results_and_counts_right():
    index = RecallIndex()
    for round_ in range(20):  # tombstones pile up and are compacted away
        for i in range(10):
            index.add("s", turn(i, f"note {i} revision {round_} about kayaks", "ok", 1))
    assert len(index) == 10
    hits = index.search("revision 19 kayaks", now=NOW, k=10)
    assert sorted(h.turn_id for h in hits) == list(range(10))
    assert all("revision 19" in h.text for h in hits)
    assert index.search("revision 3", now=NOW, k=10) == [] or all(
        "revision 19" in h.text for h in index.search("revision 3", now=NOW, k=10))


# --------------------------------------------------------------- filters


def test_session_filter_limits_hits_and_unknown_sessions_give_none(index):
    everywhere = index.search("birthday card colleague", now=NOW)
    assert {h.session_id for h in everywhere} == {"cooking", "misc"}
    only = index.search("birthday card colleague", sessions={"misc"}, now=NOW)
    assert {h.session_id for h in only} == {"misc"}
    assert index.search("birthday card", sessions={"nope"}, now=NOW) == []
    assert index.search("birthday card", sessions=set(), now=NOW) == []
    with pytest.raises(TypeError):
        index.search("birthday card", sessions="misc", now=NOW)


def test_excluded_turns_and_turns_after_until_are_left_out(index):
    best = index.search("cast iron pan", now=NOW, k=1)[0]
    hits = index.search("cast iron pan", now=NOW, exclude={(best.session_id, best.turn_id)})
    assert (best.session_id, best.turn_id) not in keys(hits) and hits
    old = index.search("cast iron pan", now=NOW, until=NOW_MS - 30 * DAY_MS)
    assert {h.session_id for h in old} == {"cooking"}  # "misc" is 20 days old


# --------------------------------------------------------------- ranking


def test_a_time_phrase_prefers_turns_in_its_window_softly():
    index = RecallIndex()
    index.add("a", turn(1, "Let's plan meals: pasta on Monday.", "Pasta it is.", 30))
    index.add("b", turn(1, "Let's plan meals: pasta on Monday.", "Pasta it is.", 8))
    index.add("c", turn(1, "I repainted the kitchen.", "Nice colour!", 8))
    # Last week is 9-15 March; 8 days ago is the 10th.
    hits = index.search("what meals did we plan last week?", now=NOW)
    assert keys(hits)[0] == ("b", 1)
    assert hits[0].why.time == "last week" and hits[0].why.closeness == 1.0
    # A matching turn outside the window still beats an unrelated one inside it.
    assert keys(hits) == [("b", 1), ("a", 1)]
    # Without the phrase, the two meal turns are near-ties: the newest first.
    assert keys(index.search("what meals did we plan?", now=NOW))[0] == ("b", 1)


def test_a_time_alone_lists_that_window_newest_first():
    index = RecallIndex()
    index.add("a", turn(1, "Tell me about volcanoes.", "They erupt.", 1.2))
    index.add("a", turn(2, "And glaciers?", "They flow.", 1.1))
    index.add("a", turn(3, "And deserts?", "They are dry.", 5))
    hits = index.search("what did we talk about yesterday?", now=NOW)
    assert keys(hits) == [("a", 2), ("a", 1)]


def changed_budget(settings: RecallSettings | None = None, update: str = "") -> RecallIndex:
    index = RecallIndex(settings)
    filled(index, "flat", 1, 50)
    index.add("flat", turn(20, "My flat budget is 1,200 euros a month, bills included, in "
                               "Leith or Portobello.", "Noted: 1,200.", 40))
    filled(index, "flat", 21, 30)  # the fact changes weeks later, not in the next turn
    index.add("flat", turn(30, update or "My flat budget is 1,400 euros a month now, bills "
                               "included, in Leith or Portobello.",
                           "Noted: 1,400.", 5))
    return index


def test_a_fact_that_changed_ranks_its_newest_statement_first():
    query = "what is my flat budget?"
    # Without the recency bonus the older, shorter statement scores a little higher...
    assert keys(changed_budget(RecallSettings(recency=0.0)).search(query, now=NOW))[0] == \
        ("flat", 20)
    # ...with it, the newest of the near-ties comes first.
    hits = changed_budget().search(query, now=NOW)
    assert keys(hits)[:2] == [("flat", 30), ("flat", 20)]
    assert hits[0].why.recency > hits[1].why.recency


def test_asking_for_the_current_or_the_original_value_decides_a_wider_gap():
    wordy = ("Update on the flat hunt, after a long talk with my partner about commuting and "
             "schools and the cost of trams across town: my flat budget is 1,400 euros a month "
             "from now on.")
    assert keys(changed_budget(update=wordy).search("what is my flat budget?", now=NOW))[0] \
        == ("flat", 20)  # the wordier update alone scores lower
    latest = changed_budget(update=wordy).search("what's my flat budget these days?", now=NOW)
    assert keys(latest)[0] == ("flat", 30)
    first = changed_budget().search("what did I originally say my flat budget was?", now=NOW)
    assert keys(first)[:2] == [("flat", 20), ("flat", 30)]


def test_numbers_and_names_find_the_turn_that_has_them():
    index = RecallIndex()
    index.add("t", turn(1, "I booked flight LX 1614 to Zurich.", "Check in 24 hours before.", 9))
    index.add("t", turn(2, "Which flight is fastest to Zurich?", "The direct flight LX 318.", 8))
    index.add("t", turn(3, "Flights to Zurich are expensive lately.", "Try midweek flights.", 7))
    index.add("w", turn(1, "My manager Tobias Brenner prefers short emails.", "Understood.", 7))
    index.add("w", turn(2, "My manager wants a weekly report.", "Here is a template.", 6))
    assert keys(index.search("flight 1614", now=NOW))[0] == ("t", 1)
    assert keys(index.search("the 318 flight", now=NOW))[0] == ("t", 2)
    hits = index.search("what does Tobias like?", now=NOW)
    assert keys(hits)[0] == ("w", 1) and "names" in hits[0].why.terms


def test_words_related_by_meaning_find_a_paraphrase():
    plain = RecallIndex(neighbours=False)
    expanded = RecallIndex()
    for index in (plain, expanded):
        filled(index, "s", 1, 30)
        index.add("s", turn(50, "Can you suggest a novel for the beach?",
                            "Try 'The Shadow of the Wind' by Carlos Ruiz Zafon.", 20))
    assert plain.search("which book was it?", now=NOW) == []
    hits = expanded.search("which book was it?", now=NOW)
    assert keys(hits)[0] == ("s", 50)
    assert ("book", "novel") in hits[0].why.related
    assert "related words" in hits[0].why.signals()


def test_a_follow_up_is_found_through_the_message_it_answers():
    def build(settings=None):
        index = RecallIndex(settings)
        filled(index, "food", 1, 20)
        index.add("food", turn(10, "Suggest a dinner for tonight? Something with chickpeas.",
                               "Do you have spinach?", 10))
        index.add("food", turn(11, "yes", "Then make a chana saag with garlic and cumin.", 10))
        return index
    assert ("food", 11) not in keys(build(RecallSettings(context_weight=0.0)).search(
        "which chickpea dinner was it?", now=NOW))
    hits = build().search("which chickpea dinner was it?", now=NOW)
    assert ("food", 11) in keys(hits)
    why = hits[keys(hits).index(("food", 11))].why
    assert "chickpea" in why.context and "previous message" in why.signals()


def test_a_turn_explained_by_the_next_one_gets_a_share_of_its_score():
    def build(settings=None):
        index = RecallIndex(settings)
        filled(index, "food", 1, 20)
        index.add("food", turn(10, "Traybake ideas?", "Any traybake works with sausages.", 12))
        filled(index, "food", 11, 11)
        index.add("food", turn(20, "something new please", "Try a gochujang traybake.", 10))
        index.add("food", turn(21, "is gochujang hot?", "It's a Korean fermented chilli paste.", 10))
        return index
    query = "the traybake with the korean chilli paste"
    alone = keys(build(RecallSettings(lead_weight=0.0)).search(query, now=NOW))
    assert alone.index(("food", 10)) < alone.index(("food", 20))
    hits = build().search(query, now=NOW)
    assert keys(hits).index(("food", 20)) < keys(hits).index(("food", 10))
    why = hits[keys(hits).index(("food", 20))].why
    assert "korean" in why.next_turn and "next turn" in why.signals()


def test_the_speaker_of_a_query_weighs_that_side_of_the_turns():
    index = RecallIndex()
    index.add("s", turn(1, "I think a hiking trip in the Alps would be fun.", "Sounds good.", 10))
    index.add("s", turn(2, "Where should I go this summer?",
                        "I'd suggest a hiking trip in the Dolomites.", 10))
    said_by_you = index.search("what hiking trip did you suggest?", now=NOW)
    said_by_me = index.search("what hiking trip did I say would be fun?", now=NOW)
    assert keys(said_by_you)[0] == ("s", 2) and said_by_you[0].why.speaker == "answer"
    assert keys(said_by_me)[0] == ("s", 1) and said_by_me[0].why.speaker == "user"


def test_tool_results_are_searchable_and_shown():
    index = RecallIndex()
    weather = StepRecord(thought="look it up", tool="get_weather", tool_input={"city": "Porto"},
                         observation="Porto: 21°C, sunny, wind 12 km/h")
    index.add("s", turn(1, "Weather for the weekend?", "Sunny and 21°C.", 3, [weather]))
    filled(index, "s", 2, 5)
    hits = index.search("what was the wind in Porto?", now=NOW)
    assert keys(hits)[0] == ("s", 1)
    assert "tools" in hits[0].why.terms
    assert "[get_weather] Porto: 21°C" in hits[0].text


def test_hits_carry_time_text_score_and_a_serialisable_why(index):
    hit = index.search("egg boil", now=NOW)[0]
    assert hit.text.startswith("User: How long should I boil an egg?")
    assert "Assistant: About nine minutes" in hit.text
    assert hit.time > 0 and hit.score > 0
    assert hit.why.coverage == pytest.approx(1.0)
    data = hit.to_dict()
    assert data["why"]["terms"]["user"] == ["egg", "boil"] or set(data["why"]["terms"]["user"]) == {"egg", "boil"}


def test_coverage_tells_a_partial_match_from_a_full_one(index):
    index.add("x", turn(1, "I adopted a greyhound named Juniper.", "Lovely!", 2))
    full = index.search("greyhound Juniper", now=NOW)[0]
    partial = index.search("greyhound Juniper marathon training plan", now=NOW)[0]
    assert full.why.coverage == pytest.approx(1.0)
    assert partial.why.coverage < 0.6


def test_settings_change_the_ranking():
    index_user = RecallIndex(RecallSettings(weights=(1.0, 0.1, 0.1, 0.0)))
    index_answer = RecallIndex(RecallSettings(weights=(0.1, 1.0, 0.1, 0.0)))
    for index in (index_user, index_answer):
        index.add("s", turn(1, "quinoa salad", "ok", 3))
        index.add("s", turn(2, "lunch idea?", "quinoa salad", 3))
    assert keys(index_user.search("quinoa salad", now=NOW))[0] == ("s", 1)
    assert keys(index_answer.search("quinoa salad", now=NOW))[0] == ("s", 2)


def test_the_best_lexical_candidates_have_their_meaning_counted_not_only_the_nearest(index):
    # Two turns answer the question in words, turn 1 better. The nearest turns by
    # meaning handed to the search hold only turn 2; turn 1 is as close in meaning.
    index.add("trip", turn(1, "Which train goes to Sintra from Rossio station?",
                           "The Sintra line leaves Rossio every twenty minutes.", 5))
    index.add("trip", turn(2, "Is the Sintra train from Rossio busy?", "Mornings are.", 5))
    question = "which train goes to Sintra from Rossio"
    near = {("trip", 2): 0.62, ("misc", 3): 0.40}
    asked: list[list[tuple[str, int]]] = []

    def lookup(wanted):
        asked.append(list(wanted))
        return {key: 0.61 for key in wanted if key == ("trip", 1)}

    alone = index.search(question, now=NOW, dense=near)
    assert keys(alone)[:2] == [("trip", 2), ("trip", 1)]  # the bonus only the nearest had
    both = index.search(question, now=NOW, dense=near, dense_lookup=lookup)
    assert keys(both)[:2] == [("trip", 1), ("trip", 2)]
    assert both[0].why.meaning == pytest.approx(0.61) and "meaning" in both[0].why.signals()
    assert asked and all(key not in near for key in asked[0])
    asked.clear()
    index_few = RecallIndex(RecallSettings(dense_lexical=1))
    filled(index_few, "misc", 1, 20)
    index_few.add("trip", turn(1, "Which train goes to Sintra from Rossio station?", "ok", 5))
    index_few.add("trip", turn(2, "Is the Sintra train from Rossio busy?", "ok", 5))
    index_few.search(question, now=NOW, dense={("misc", 3): 0.4}, dense_lookup=lookup)
    assert [len(wanted) for wanted in asked] == [1]


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_an_empty_query_is_a_clear_error(index, query):
    with pytest.raises(ValueError, match="empty"):
        index.search(query, now=NOW)


def test_other_bad_arguments_are_clear_errors(index):
    with pytest.raises(TypeError):
        index.search(None, now=NOW)  # type: ignore[arg-type]
    for k in (0, -1, True, 2.5):
        with pytest.raises(ValueError):
            index.search("egg", k=k, now=NOW)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        index.add("", turn(1, "x", "y", 1))


def test_a_query_of_function_words_finds_nothing(index):
    assert index.search("what was it that you did?", now=NOW) == []


def test_an_empty_index_finds_nothing():
    assert RecallIndex().search("anything at all", now=NOW) == []


def test_a_huge_turn_is_indexed_to_a_bound_and_shown_short():
    index = RecallIndex()
    huge = "The observatory log. " + " ".join(f"entry{i} comet" for i in range(150_000))
    index.add("s", turn(1, "Paste of the observatory log", huge, 1,
                        [StepRecord(tool="fetch", observation=huge)]))
    analyzed = index.analyzed("s")[0]
    # Each field is analyzed up to FIELD_CHARS characters, whatever the turn's size.
    for name in ("answer", "tools"):
        assert 0 < analyzed.length(name) <= FIELD_CHARS // 4
    assert "entry140000" not in analyzed.fields["answer"]
    hit = index.search("observatory log", now=NOW)[0]
    assert hit.turn_id == 1 and len(hit.text) <= RecallSettings().text_chars + 10
