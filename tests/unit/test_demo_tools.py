
"""The stateless demo tools, and retrieval over the page's full demo set."""

import random

import pytest

from demo_tools import (BASIC_TOOLS, add_days, calculate, convert_units, count_words,
                        day_of_week, days_between, everyday, pick_random, roll_dice, split_bill)
from demo_tools.calculator import CalculationError, evaluate
from demo_tools.everyday import text_stats
from py_agent.retrieval import ToolRetriever
from tests.unit.demo import demo_tools


@pytest.mark.parametrize("expression, value", [
    ("(1200 / 8) + 45", 195), ("2 ^ 10", 1024), ("sqrt(16) * 3", 12), ("-3 + 5 % 3", -1),
    ("1,250 * 2", 2500), ("10 // 3", 3), ("round(pi, 2)", 3.14), ("15%", 0.15),
])
def test_calculator_evaluates_arithmetic(expression, value):
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize("expression, fragment", [
    ("__import__('os').system('ls')", "only numbers"), ("open('x')", "only numbers"),
    ("1 / 0", "division by zero"), ("9 ** 99999", "exponent is too large"), ("", "empty"),
    ("2 +", "cannot parse"), ("[1, 2]", "cannot parse"), ("True + 1", "only numbers"),
])
def test_calculator_refuses_anything_but_arithmetic(expression, fragment):
    with pytest.raises(CalculationError, match=fragment):
        evaluate(expression)


def test_calculate_tool_formats_the_result():
    assert calculate("(1200 / 8) + 45") == "(1200 / 8) + 45 = 195"


@pytest.mark.parametrize("args, expected", [
    ((3, "oz", "g"), "3 oz = 85.0486 g"), ((100, "F", "C"), "100 F = 37.7778 C"),
    ((5, "miles", "km"), "5 miles = 8.0467 km"), ((2, "cups", "ml"), "2 cups = 473.1765 ml"),
])
def test_unit_conversion(args, expected):
    assert convert_units(*args) == expected


def test_unit_conversion_errors_are_clear():
    with pytest.raises(ValueError, match="cannot convert mass"):
        convert_units(1, "kg", "km")
    with pytest.raises(ValueError, match="unknown unit 'parsecs'"):
        convert_units(1, "parsecs", "m")


def test_dates():
    assert day_of_week("2026-12-25") == "Friday"
    assert add_days("2026-02-27", 2) == "Sunday 2026-03-01"
    assert days_between("2026-01-01", "2026-12-25") == "358 days"
    assert days_between("today", "tomorrow") == "1 day"
    with pytest.raises(ValueError, match="cannot read the date"):
        day_of_week("the thirty-second of May")


# --- everyday helpers ----------------------------------------------------------------------


def test_count_words():
    text = "The quick brown fox jumps. The fox sleeps!\n\nA new paragraph, isn't it?"
    stats = text_stats(text)
    assert stats["words"] == 13 and stats["sentences"] == 3 and stats["paragraphs"] == 2
    assert stats["characters"] == len(text)
    assert stats["top_words"] == ["fox"]
    assert count_words(text) == ("13 words, 70 characters (57 without spaces), 3 sentences, "
                                 "2 paragraphs; about 3 s to read. Most used: fox.")
    assert count_words("   ") == "The text is empty: 0 words."
    assert count_words("one").startswith("1 word, 3 characters")
    assert text_stats("我喜欢猫 and dogs")["words"] == 6   # each CJK character is a word
    long = " ".join(["word"] * 460)
    assert "about 2 min 00 s to read" in count_words(long)


def test_split_bill():
    assert split_bill(84.5, 3, 15) == ("Bill 84.50 + 15% tip 12.68 = 97.18; split 3 ways: "
                                       "32.39 each (1 of them pays 32.40 so it adds up).")
    assert split_bill(60, 1, 20) == "Bill 60.00 + 20% tip 12.00 = 72.00."
    assert split_bill(100, 4) == "Bill 100.00 = 100.00; split 4 ways: 25.00 each."
    assert split_bill(1234.5, 2, 0) == "Bill 1,234.50 = 1,234.50; split 2 ways: 617.25 each."
    with pytest.raises(ValueError, match="at least one person"):
        split_bill(10, 0)
    with pytest.raises(ValueError, match="cannot be negative"):
        split_bill(-5, 2)
    with pytest.raises(ValueError, match="between 0 and 100"):
        split_bill(10, 2, 150)


def test_roll_dice_and_coin(monkeypatch):
    monkeypatch.setattr(everyday, "RANDOM", random.Random(7))
    result = roll_dice("2d6")
    rolls = [int(x) for x in result.split(": ")[1].split(" = ")[0].split(" + ")]
    assert len(rolls) == 2 and all(1 <= r <= 6 for r in rolls)
    assert result.endswith(f"= {sum(rolls)}")
    single = roll_dice("d20")
    assert single.startswith("1d20: ") and 1 <= int(single.split(": ")[1]) <= 20
    assert roll_dice("").startswith("1d6: ") and roll_dice("two dice").startswith("2d6: ")
    modified = roll_dice("3d6+2")
    assert modified.startswith("3d6+2: ") and " + 2 = " in modified
    assert roll_dice("coin") in ("Coin flip: heads.", "Coin flip: tails.")
    assert {roll_dice("coin") for _ in range(40)} == {"Coin flip: heads.", "Coin flip: tails."}
    assert {int(roll_dice("1d6").split(": ")[1]) for _ in range(200)} == {1, 2, 3, 4, 5, 6}
    with pytest.raises(ValueError, match="cannot read 'lots' as dice"):
        roll_dice("lots")
    with pytest.raises(ValueError, match="1 to 100 dice"):
        roll_dice("1000d6")


def test_pick_random(monkeypatch):
    monkeypatch.setattr(everyday, "RANDOM", random.Random(3))
    picks = {pick_random("pizza, sushi or tacos") for _ in range(60)}
    assert picks == {f"Picked: {x} (from 3 options)." for x in ("pizza", "sushi", "tacos")}
    assert pick_random("Alien or Heat?").endswith("(from 2 options).")
    assert pick_random("pizza").startswith("Give at least two different options")
    assert pick_random("tea, tea").startswith("Give at least two different options")


# --- the full demo set and retrieval -------------------------------------------------------

def test_demo_tools_are_many_distinct_and_documented():
    tools = demo_tools()
    names = [t.name for t in tools]
    assert len(names) >= 12 and len(set(names)) == len(names)
    assert names[:len(BASIC_TOOLS)] == [t.name for t in BASIC_TOOLS]
    for t in tools:
        assert t.description and len(t.description) < 220, t.name
        assert not any(t2.description == t.description for t2 in tools if t2 is not t)


RETRIEVAL_CASES = [
    ("I'm vegetarian, what can I cook with chickpeas?", "find_recipes"),
    ("give me a quick vegan dinner recipe", "find_recipes"),
    ("something gluten-free under 30 minutes for dinner", "find_recipes"),
    ("show me the full recipe for the lentil dal", "get_recipe"),
    ("how do I make the mushroom risotto", "get_recipe"),
    ("remind me to buy milk tomorrow", "add_todo"),
    ("add call the dentist to my todo list", "add_todo"),
    ("I need to remember to pay rent on friday", "add_todo"),
    ("what's on my to-do list?", "list_todos"),
    ("what do I still have to do?", "list_todos"),
    ("I bought the milk, tick it off", "complete_todo"),
    ("mark task 2 as done", "complete_todo"),
    ("Tick oat milk off my to-do list", "complete_todo"),
    ("the oat milk is done, cross it off", "complete_todo"),
    ("what did I write down about the trip?", "search_notes"),
    ("find my notes about the trip", "search_notes"),
    ("note that the wifi password is hunter2", "add_note"),
    ("write this down: the plumber comes on Tuesday", "add_note"),
    ("delete the note about the wifi", "delete_note"),
    ("how many words in this text", "count_words"),
    ("how long would it take to read this essay", "count_words"),
    ("How many grams is 3 ounces?", "convert_units"),
    ("convert 5 miles to km", "convert_units"),
    ("what is 100 fahrenheit in celsius", "convert_units"),
    ("how many cups in a liter", "convert_units"),
    ("What's (1200/8)+45?", "calculate"),
    ("what day of the week is Christmas 2026", "day_of_week"),
    ("how many days until my birthday on 2026-08-01", "days_between"),
    ("what date is 90 days from today", "add_days"),
    ("what's today's date", "current_datetime"),
    ("split a bill of 84.50 between 3 people with a 15% tip", "split_bill"),
    ("how much is a 20% tip on 60 dollars", "split_bill"),
    ("roll 2d6", "roll_dice"),
    ("flip a coin", "roll_dice"),
    ("help me decide which film to watch: Alien or Heat", "pick_random"),
]


@pytest.mark.parametrize("message, expected", RETRIEVAL_CASES)
def test_typical_requests_offer_the_right_tool(message, expected):
    retriever = ToolRetriever(demo_tools())   # K=3, as the agent uses it
    offered = [s.tool.name for s in retriever.retrieve(message)]
    assert expected in offered, (message, offered)
