"""Deterministic judgements about facts, made without the model.

Five questions the memory passes must answer even when the model is small, wrong
or absent:

- Do two facts speak of the same subject with different values, so the newer
  one replaces the older ("The user's locker code is 4471" / "... is 8032")?
  Only obvious cases count: the same wording around different values, or the
  same wording with and without a negation. Anything subtler is left to the
  extractor's explicit ``update`` and ``retract`` operations.
- Which facts matter least when the facts are over their token budget (a
  priority by category and recency)?
- Did a summary really carry a fact it was asked to keep (its names and numbers
  are there, or most of its words)? If not, the fact stays a key fact.
- May a new user message change a key fact (it takes something back or changes
  it, or it speaks of a known fact's subject)? Then it is read for facts at once,
  not at the next periodic refresh, so the old value is not shown as current.
- Which of the turns an extraction read said a fact (for the user profile's sources)?
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from ..state import Fact, Turn

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# Words that mark a change of value rather than a different subject.
_CHANGE_WORDS = frozenset("now new currently still actually again instead today these days "
                          "meanwhile".split())
_NEGATIONS = frozenset("not no never longer anymore isn't aren't doesn't don't wasn't "
                       "won't can't nor".split())
_ARTICLES = frozenset("a an the".split())
_USER = frozenset("user user's users the".split())
# A frame must hold one of these to be single-valued ("code is", "lives in"): "likes
# Thai food" and "likes Italian food" can both be true, "lives in Leeds/Bristol" cannot,
# and neither can "owns a cat named Tom/Felix".
_SINGLE_VALUED = frozenset("is are was were lives".split())
# How people say that something they told before has changed or no longer holds.
_REVISION = re.compile(
    r"\b(?:no longer|any ?more|chang(?:e|ed|ing)|moved?|switch(?:ed)?|instead|"
    r"cancel(?:l?ed)?|used to|gave up|given up|pulled out|postponed|rescheduled|pushed|"
    r"not true|sold|quit|stopped|raised|lowered|replaced|reset|now|new)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# Asking to drop or correct what was said needs no first person ("forget the Galway trip").
_ASKED_TO_FORGET = re.compile(r"\b(?:forget|scratch (?:that|the)|ignore|updat(?:e|ed)|"
                              r"correction)\b", re.IGNORECASE)
_FIRST_PERSON = frozenset("i i'm i've i'd i'll me my mine we we're we've our ours us".split())
_STOPWORDS = frozenset("the a an and or of to in on at for with by from is are was were be "
                       "been has have had it its that this their they them he she his her "
                       "user user's users who which what when where as not but so very".split())


def words(text: str) -> list[str]:
    return _WORD.findall(text.replace("’", "'"))


def _is_value(word: str, first: bool) -> bool:
    """Numbers, and capitalised words other than the first: names, places, brands."""
    if any(ch.isdigit() for ch in word):
        return True
    return not first and word[:1].isupper() and word not in ("I", "I'm")


def normal_value(word: str) -> str:
    """A value as it is compared: lower case, digits without separators."""
    if any(ch.isdigit() for ch in word):
        return "".join(ch for ch in word if ch.isalnum()).lower()
    return word.lower().removesuffix("'s")


def shape(text: str) -> tuple[tuple[str, ...], frozenset[str], bool]:
    """A fact's frame (its words but values, articles and change words), its values,
    and whether it is negated."""
    frame: list[str] = []
    values: set[str] = set()
    negated = False
    for i, word in enumerate(words(text)):
        lower = word.lower()
        if lower in _NEGATIONS:
            negated = True
        elif _is_value(word, i == 0):
            values.add(normal_value(word))
        elif lower not in _ARTICLES and lower not in _CHANGE_WORDS:
            frame.append(lower)
    return tuple(frame), frozenset(values), negated


def same_subject(old: Fact, new: Fact) -> bool:
    """True when ``new`` obviously replaces ``old``: the same category and wording
    around different values of a single-valued subject, or a negation toggled."""
    if old.category != new.category or old.key() == new.key():
        return False
    old_frame, old_values, old_negated = shape(old.text)
    new_frame, new_values, new_negated = shape(new.text)
    if old_frame != new_frame or len([w for w in new_frame if w not in _USER]) < 1:
        return False
    if old_negated != new_negated:
        return old_values == new_values
    substantial = len([w for w in new_frame if w not in _USER]) >= 2
    return (substantial and bool(old_values) and bool(new_values) and old_values != new_values
            and any(w in _SINGLE_VALUED for w in new_frame))


def priority(fact: Fact, order: tuple[str, ...], oldest: int, newest: int) -> float:
    """Higher is kept longer: the category's rank (first in ``order`` ranks highest,
    one point per step) plus up to 1.5 points for being recent, so a fresh fact can
    outrank an old one of the next category up but not of two categories up."""
    rank = len(order) - order.index(fact.category) if fact.category in order else 0
    turn = fact.turn_id if fact.turn_id is not None else oldest
    recency = 1.0 if newest <= oldest else (turn - oldest) / (newest - oldest)
    return rank + 1.5 * recency


def lowest_first(facts: Iterable[Fact], order: tuple[str, ...]) -> list[Fact]:
    """Facts from the least to the most worth keeping (ties: the older first)."""
    facts = list(facts)
    turns = [f.turn_id for f in facts if f.turn_id is not None] or [0]
    oldest, newest = min(turns), max(turns)
    return sorted(facts, key=lambda f: (priority(f, order, oldest, newest), f.turn_id or 0))


def _stem(word: str) -> str:
    return word.lower().removesuffix("'s")[:6]


def carried_by(fact: Fact, text: str) -> bool:
    """Whether ``text`` (a summary) still says ``fact``: every name and number of the
    fact is in it, or, for a fact without any, most of its content words."""
    _, values, _ = shape(fact.text)
    haystack = words(text)
    if values:
        present = {normal_value(w) for w in haystack}
        joined = "".join(ch for ch in text.lower() if ch.isalnum())
        return all(v in present or (v.isalnum() and any(c.isdigit() for c in v) and v in joined)
                   for v in values)
    content = {_stem(w) for w in words(fact.text) if w.lower() not in _STOPWORDS}
    if not content:
        return True
    stems = {_stem(w) for w in haystack}
    return len(content & stems) >= 0.6 * len(content)


def may_revise(message: str, facts: Iterable[Fact]) -> bool:
    """Whether a user message may change what the key facts say: it asks to forget or
    correct something; or one of its statements (not a question) speaks of the user
    ("I", "our") with words of change ("moved", "no longer", "now"); or it shares a name, or two longer content
    words, with a known fact. Cheap and generous: a false alarm costs one short
    extraction call, a miss shows an old value as current until the next refresh."""
    facts = list(facts)
    if not facts:
        return False
    if _ASKED_TO_FORGET.search(message) or any(
            _REVISION.search(s) and any(w.lower() in _FIRST_PERSON for w in words(s))
            for s in _SENTENCE.findall(message) if not s.rstrip().endswith("?")):
        return True
    names = _names(message)
    stems = _long_stems(words(message))
    return any(names & _names(fact.text) or len(stems & _long_stems(words(fact.text))) >= 2
               for fact in facts)


def _names(text: str) -> set[str]:
    """Capitalised words past the first (people, places, brands), not numbers: a
    number alone ("10", "000") ties too many unrelated messages to a fact."""
    _, values, _ = shape(text)
    return {v for v in values if v.isalpha() and len(v) > 2 and v not in _STOPWORDS}


def _long_stems(said: list[str]) -> set[str]:
    return {_stem(w) for w in said if len(w) >= 5 and w.lower() not in _STOPWORDS}


def stated_in(fact: Fact, turns: Sequence[Turn]) -> int | None:
    """The turn of ``turns`` that most likely said ``fact``: the one whose user message
    shares most of the fact's names, numbers and longer words (names and numbers count
    double; the later turn wins a tie). The newest turn when none shares any; None
    without turns. An extraction reads several turns at once and does not say which
    one a fact came from; this is where the user profile says it came from."""
    if not turns:
        return None
    _, values, _ = shape(fact.text)
    stems = _long_stems(words(fact.text))
    best, best_score = turns[-1].id, 0
    for turn in turns:
        said = words(turn.user)
        score = 2 * len(values & {normal_value(w) for w in said}) + len(stems & _long_stems(said))
        if score and score >= best_score:
            best, best_score = turn.id, score
    return best
