import json

import pytest

from py_agent import Fact, MemoryPolicy, Turn
from py_agent.memory.summary import (InvalidSummaryError, length_hint, summary_prompt,
                                          validate_summary)
from py_agent.memory.facts import FactOp, facts_prompt, parse_fact_ops
from py_agent.tokens import TokenCounter

POLICY = MemoryPolicy()
COUNTER = TokenCounter()


def test_hint_depends_on_previous_summary_size():
    assert "first one" in length_hint(0, 400)
    assert "word for word" in length_hint(100, 400)
    assert "lightly condense" in length_hint(300, 400)
    assert "condense its oldest" in length_hint(390, 400)
    assert "condense its oldest" in length_hint(900, 400)


def test_summary_prompt_is_recursive_and_carries_focus():
    turns = [Turn(1, "I am vegetarian", "Noted."), Turn(2, "Plan a dinner", "Here is a plan.")]
    prompt = summary_prompt("Earlier: the user lives in Oslo.", turns, POLICY, COUNTER,
                            focus="dietary constraints")
    assert "<previous-summary>\nEarlier: the user lives in Oslo.\n</previous-summary>" in prompt
    assert "[turn 1]\nUser: I am vegetarian\nAssistant: Noted." in prompt
    assert "dietary constraints" in prompt and "word for word" in prompt
    assert "(none)" in summary_prompt("", turns, POLICY, COUNTER)


@pytest.mark.parametrize("text, reason", [
    ("ok", "too short"),
    ("<previous-summary>The user likes tea and lives in Oslo.</previous-summary>", "wrapper tags"),
    ("The user likes tea. </turns> and lives in Oslo, working as a nurse.", "wrapper tags"),
    ('{"summary": "The user likes tea and lives in Oslo."}', "JSON"),
    ("word " * 2000, "too long"),
])
def test_invalid_summaries_are_rejected(text, reason):
    with pytest.raises(InvalidSummaryError, match=reason):
        validate_summary(text, POLICY, COUNTER)


def test_valid_summary_is_cleaned():
    text = "```\nSummary: The user is vegetarian and plans a dinner for six.\n```"
    assert validate_summary(text, POLICY, COUNTER) == \
        "The user is vegetarian and plans a dinner for six."


def test_parse_fact_ops_keeps_valid_entries_only():
    reply = json.dumps({"facts": [
        {"category": "preference", "text": "The user is vegetarian"},
        {"category": "Follow up", "text": "Send the recipe list"},
        {"category": "opinion", "text": "Unknown category"},
        {"category": "need", "text": 42},
        {"category": "need", "text": "x" * 500},
        "not an object",
    ]})
    assert parse_fact_ops(reply, POLICY) == [FactOp("add", "preference", "The user is vegetarian"),
                                            FactOp("add", "follow-up", "Send the recipe list")]
    assert parse_fact_ops("garbage", POLICY) == []
    assert parse_fact_ops('[{"category": "need", "text": "A new bike"}]', POLICY) == \
        [FactOp("add", "need", "A new bike")]


def test_facts_prompt_lists_known_facts():
    prompt = facts_prompt([Fact("preference", "Likes tea", id="f4")], [Turn(1, "hi", "hello")],
                          POLICY)
    assert "- f4 [preference] Likes tea" in prompt and "[turn 1]" in prompt
