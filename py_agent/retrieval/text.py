"""From text to search terms: what the retriever (and the demo's searches) compare.

- Identifiers split on camelCase and snake_case, words lowercased, British spellings
  folded onto American ones, function words dropped, the rest stemmed with the
  Snowball English stemmer (``snowballstemmer``, the stemmer Sphinx uses).
- Arithmetic is a signal, not noise: ``17 x 23``, ``2^10``, ``15% of 80``,
  "17 times 23", "square root of 2" add the term ``arithmet`` (the stem of
  "arithmetic"), so a tool that says it handles arithmetic (in its description,
  keywords or examples) claims them; "times" between numbers is an operator and
  no longer meets "time". ``15%`` reads as "15 percent".
- Bare numbers are dropped (a 70 in a request says nothing about which tool), but
  what they are attached to stays: ``70kg`` gives ``kg``, ``3pm`` gives ``pm``, and a
  shape like ``2d6`` also gives ``0d0`` so ``3d8`` meets it.
- CJK runs have no spaces, so they become character unigrams and bigrams.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

from ..tokens import is_cjk

# Function words only: articles, pronouns, auxiliaries, the commonest prepositions and
# conjunctions, question words and politeness. Words that carry an assistant's intent
# ("done", "make", "show", "find", "between", "until", "after", "off", "now") are kept:
# with many short documents their weight comes from BM25's idf, not from this list.
STOP_WORDS = frozenset("""
a an the this that these those it its itself i me my mine myself we us our ours you your
yours he him his she her hers they them their theirs one ones
am is are was were be been being do does did doing have has had having will would shall
should can could may might must ll ve re d s t m don doesn didn isn aren wasn won wouldn
of to in on at for with from by as into onto about than then so such very too also just
and or but nor if because while though
what which who whom whose when where why how whats hows
any some there here much many
please pls thanks thank thx hey hi hello ok okay yes no sure kindly
want wanna need like tell let lets get gets got give
""".split())

# Snowball's English stemmer joins inflections (save/saved/saving, calculate/calculator)
# but not spellings; these three rules fold the common British ones first.
# Each rule needs a few letters before the suffix, so "raise", "hours" and "tour" stay.
_BRITISH = ((re.compile(r"(?<=\w{4})is(e|ed|es|ing|ation|ations)$"), r"iz\1"),
            (re.compile(r"(?<=\w{2})tre(s?)$"), r"ter\1"),
            (re.compile(r"(?<=\w{2}[^aeiou])our(s?|ed|ing|ite|ites)$"), r"or\1"))

_STEMMER = snowballstemmer.stemmer("english")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_NUMBER = r"(?:\d+(?:[.,]\d+)*|\.\d+)"
# A "-" only counts with spaces around it, so 2026-03-14 and 555-0134 stay what they are.
_OPERATOR = (r"(?:\*\*|[+*/x×÷^]|(?<=\s)-(?=\s)|times|plus|minus|multiplied\s+by|divided\s+by"
             r"|mod(?:ulo)?|to\s+the\s+power\s+of|raised\s+to|%\s*of|percent\s+of)")
_ARITHMETIC = re.compile(
    rf"(?<![\w.]){_NUMBER}\s*\)?\s*{_OPERATOR}\s*\(?\s*[-+]?{_NUMBER}(?![\w])"
    r"|\b(?:sqrt|square\s+root|cube\s+root|log|ln|sin|cos|tan|factorial)\s*(?:of\s*)?\(?\s*"
    rf"{_NUMBER}"
    rf"|{_NUMBER}\s*(?:squared|cubed|!)(?!\w)",
    re.IGNORECASE)
_OPERATOR_ONLY = re.compile(rf"(?<=[\d)])\s*\)?\s*{_OPERATOR}\s*\(?(?=\s*[-+]?[\d.])",
                            re.IGNORECASE)
# Dates, days of a month (12th) and clock times are signals of their own ("date", "time"), never arithmetic.
_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b")
_ORDINAL_DAY = re.compile(r"\b(?:[12]?\d|3[01])(?:st|nd|rd|th)\b", re.IGNORECASE)
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?!\d)")
ARITHMETIC_TERM = "arithmet"
_PERCENT = re.compile(r"(?<=\d)\s*%")
_UNIT = re.compile(r"^(\d+(?:\.\d+)?)([^\W\d_]+)$")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one lowercase word, after folding British spelling."""
    for pattern, replacement in _BRITISH:
        word = pattern.sub(replacement, word)
    return _STEMMER.stemWord(word)


def _operator_word(match: re.Match[str]) -> str:
    operator = match.group(0).lower()
    return " arithmetic percent " if "%" in operator or "percent" in operator else " arithmetic "


def _mark_arithmetic(text: str) -> str:
    """Dates and times as words; each arithmetic operator between numbers as "arithmetic"."""
    text = _CLOCK.sub(" time ", _DATE.sub(" date ", text))
    text = _ORDINAL_DAY.sub(" date ", text)  # "the 12th" is a day of a month

    def one(match: re.Match[str]) -> str:
        inner = _OPERATOR_ONLY.sub(_operator_word, match.group(0))
        return inner if inner != match.group(0) else match.group(0) + " arithmetic "
    return _ARITHMETIC.sub(one, text)


def tokenize(text: str) -> list[str]:
    """Search terms of ``text``: split identifiers, drop function words and numbers, stem."""
    return [term for term, _ in analyze(text)]


def analyze(text: str) -> list[tuple[str, str]]:
    """Each search term of ``text`` with the word it came from (for traces)."""
    text = _PERCENT.sub(" percent ", _mark_arithmetic(text))
    pairs: list[tuple[str, str]] = []
    for raw in _WORD.findall(_CAMEL.sub(" ", text)):
        if any(is_cjk(ch) for ch in raw):
            chars = [ch for ch in raw if is_cjk(ch)]
            pairs.extend((ch, ch) for ch in chars)
            pairs.extend((a + b, a + b) for a, b in zip(chars, chars[1:]))
            rest = "".join(ch if not is_cjk(ch) else " " for ch in raw).split()
            pairs.extend((_word_term(w.lower()), w) for w in rest if w.lower() not in STOP_WORDS)
            continue
        word = raw.lower()
        if word in STOP_WORDS or word.isdigit() or len(word) < 2:
            continue
        if any(ch.isdigit() for ch in word):
            pairs.extend((term, raw) for term in _mixed_terms(word))
        else:
            pairs.append((stem(word), raw))
    return [(t, w) for t, w in pairs if t]


_QUOTED = re.compile(r'"[^"]{3,}"|“[^”]{3,}”|(?<![\w])\'[^\']{3,}\'(?![\w])')
_COLON = re.compile(r"^([^:\n]{1,60}):\s+(.{20,})$", re.DOTALL)


def split_payload(text: str) -> tuple[str, str]:
    """(the request, the text it is about): quoted passages, and what follows a short lead-in
    ending in a colon ("word count please: ..."), are what to work on, not what to do."""
    payload = [m.group(0)[1:-1] for m in _QUOTED.finditer(text)]
    request = _QUOTED.sub(" ", text)
    lead = _COLON.match(request.strip())
    if lead and len(lead.group(1).split()) <= 8:
        request, rest = lead.group(1), lead.group(2)
        payload.append(rest)
    if not tokenize(request):  # the whole message is the payload: it is the request too
        return text, ""
    return request, " ".join(payload)


def function_words(text: str) -> list[str]:
    """The stop words of ``text``, in order: no weight of their own, but "how do I ..."
    and "remember that ..." are phrasings an example can share with a request."""
    text = _CAMEL.sub(" ", text)
    return [w for w in (raw.lower() for raw in _WORD.findall(text)) if w in STOP_WORDS]


def _word_term(word: str) -> str:
    return stem(word) if word.isalpha() else word


def _mixed_terms(word: str) -> list[str]:
    """``70kg`` → kg; ``2d6`` → 2d6 and its shape 0d0; ``sha256`` → sha256, sha0."""
    unit = _UNIT.match(word)
    if unit:
        rest = unit.group(2)
        return [] if rest in STOP_WORDS or len(rest) < 2 else [stem(rest)]
    shape = re.sub(r"\d+", "0", word)
    return [word, shape] if shape != word else [word]


def words(text: str) -> list[str]:
    """Lowercase content words of ``text`` (no stemming), for character n-grams."""
    text = _PERCENT.sub(" percent ", _mark_arithmetic(text))
    out = []
    for raw in _WORD.findall(_CAMEL.sub(" ", text)):
        word = raw.lower()
        if word in STOP_WORDS or word.isdigit() or len(word) < 2:
            continue
        out.append(word)
    return out
