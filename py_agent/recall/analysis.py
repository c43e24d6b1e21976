"""From an archived turn to what the recall index compares: terms per field, and a display text.

A turn has three voices, searched as separate BM25F fields with their own weights:
``user`` (what the user wrote), ``answer`` (what the assistant replied) and ``tools``
(tool names, their inputs and what they returned). A fourth field, ``names``, repeats
the turn's names and numbers (a capitalised word inside a sentence, a figure, a
model number like "A320"), so a query naming "Rosa" or "450" finds the turn that
said it above one that shares only common words. (The index adds a fifth, the previous
user message, at query time: see :mod:`.index`.)

Words are lowercased and stemmed as the tool retriever does (:func:`py_agent.retrieval.stem`,
Snowball with British spellings folded) and function words dropped, but unlike there
numbers are kept: "flight 372", "$1,200" and "7:30" are what people come back for.
CJK runs become character unigrams and bigrams.

Analysis is the costly part of indexing (stemming, mostly), so its result is what the
index saves (:mod:`.storage`), never redone for a turn already analyzed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..retrieval import STOP_WORDS, stem
from ..state import Turn
from ..tokens import is_cjk

FIELDS = ("user", "answer", "tools", "names")

# Text is split on white space after punctuation becomes space ("str.translate" and
# "str.split" run in C, several times faster than a regular expression); what is left
# of a token is read by ``_TOKEN``, once per distinct token (cached).
_PUNCTUATION = "!\"#$%&()*+/;<=>?@[\\]^_`{|}~\u2018\u201c\u201d\u2013\u2014\u2026\u00ab\u00bb\u00b7\u2022"
_SPACES = str.maketrans({ch: " " for ch in _PUNCTUATION})
# Within a token: numbers keeping their inner separators ("1,200", "7:30", "3.5"),
# words keeping an inner apostrophe ("rosa's").
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[^\W_]+(?:['\u2019][^\W_]+)*")
# A capitalised word inside a sentence (after a lowercase letter, a digit or a comma and
# one space), or a word in capitals: a name, most of the time.
_NAME = re.compile(r"[A-Z](?<=[a-z0-9,;] [A-Z])[a-z]+|[A-Z](?<=\b[A-Z])[A-Z0-9]+\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SPLIT_MIXED = re.compile(r"\d+|[^\W\d_]+")

TEXT_CHARS = 600  # the display text's length
FIELD_CHARS = 20_000  # what is analyzed of one field of one turn (a huge tool result)


@dataclass(frozen=True)
class AnalyzedTurn:
    """One archived turn as the index holds it: term counts per field, its time, its text.

    ``fields`` maps a field name of :data:`FIELDS` to its term counts; ``time`` is the
    turn's ``created_at`` (milliseconds since the epoch, 0 when unknown); ``figures``
    how many numbers it holds (a question such as "how much" wants one).
    """

    session_id: str
    turn_id: int
    time: float
    fields: dict[str, dict[str, int]]
    text: str
    figures: int = 0

    def length(self, field: str) -> int:
        return sum(self.fields.get(field, {}).values())


# lowercase token -> (its terms, whether it is a figure); see :func:`terms`.
_cache: dict[str, tuple[tuple[str, ...], bool]] = {}
_CACHE_LIMIT = 300_000


def _word_terms(word: str) -> tuple[str, ...]:
    """The terms of one lowercase word or number."""
    if word in STOP_WORDS:
        return ()
    if word.isalpha():
        if not word.isascii() and any(is_cjk(ch) for ch in word):
            return tuple(_cjk_terms(word))
        return (stem(word),) if len(word) > 1 else ()
    if "'" in word or "\u2019" in word:
        return _word_terms(re.split("['\u2019]", word)[0])
    if not any(ch.isalpha() for ch in word):
        return (_THOUSANDS.sub("", word),)
    # letters and digits: "a320", "4pm", "70kg" give the whole and the parts
    parts = [p for p in _SPLIT_MIXED.findall(word)
             if p not in STOP_WORDS and (len(p) > 1 or p.isdigit())]
    return (word, *(stem(p) if p.isalpha() else p for p in parts))


def _token(token: str) -> tuple[tuple[str, ...], bool]:
    found: list[str] = []
    figure = False
    for word in _TOKEN.findall(token):
        found += _word_terms(word)
        figure = figure or any(ch.isdigit() for ch in word)
    return tuple(found), figure


def read(text: str) -> tuple[list[str], list[str]]:
    """The search terms of ``text`` in order, and those of its figures (numbers and
    tokens with a digit: "450", "1,200", "lx1614", "7:30").

    Words are stemmed, numbers kept as written (thousands separators dropped), function
    words and single letters dropped. Cached per token: stemming is the cost of indexing.
    """
    out: list[str] = []
    figures: list[str] = []
    cache = _cache
    for token in text.lower().translate(_SPACES).split():
        found = cache.get(token)
        if found is None:
            found = _token(token)
            if len(cache) < _CACHE_LIMIT:
                cache[token] = found
        if found[0]:
            out += found[0]
            if found[1]:
                figures += found[0]
    return out, figures


def terms(text: str) -> list[str]:
    """The search terms of ``text`` in order (see :func:`read`)."""
    return read(text)[0]


def names(text: str) -> list[str]:
    """Terms of the capitalised words inside sentences and the words in capitals."""
    found = _NAME.findall(text)
    return terms(" ".join(found)) if found else []


def _cjk_terms(word: str) -> list[str]:
    chars = [ch for ch in word if is_cjk(ch)]
    rest = "".join(" " if is_cjk(ch) else ch for ch in word).split()
    return chars + [a + b for a, b in zip(chars, chars[1:])] + [stem(w) for w in rest
                                                                   if w not in STOP_WORDS]


def tool_text(turn: Turn) -> str:
    """What the turn's tools were called with and returned, as one text."""
    parts = []
    for step in turn.steps:
        if not step.tool or step.tool == "none" or step.corrective:
            continue
        parts.append(step.tool.replace("_", " "))
        parts.append(_input_text(step.tool_input))
        parts.append(step.observation)
    return "\n".join(p for p in parts if p)


def _input_text(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_input_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_input_text(v) for v in value)
    return "" if value is None else str(value)


def display_text(turn: Turn, limit: int = TEXT_CHARS) -> str:
    """A short text of the turn for a person or a prompt: the user's words, then the
    answer, then the tools' results, each cut so that all three fit in ``limit``."""
    tools = [f"[{s.tool}] {' '.join(s.observation.split())}" for s in turn.steps
             if s.tool and s.tool != "none" and not s.corrective and s.observation]
    parts = [("User: ", " ".join(user_words(turn).split())),
             ("Assistant: ", " ".join(turn.answer.split()))]
    parts += [("", t) for t in tools[:3]]
    parts = [(label, body) for label, body in parts if body]
    share = max(40, limit // max(1, len(parts)))
    spare = limit - sum(min(len(b), share) + len(lbl) for lbl, b in parts)
    lines = []
    for label, body in parts:
        room = share + max(0, spare)
        if len(body) > room:
            body = body[:max(1, room - 1)].rstrip() + "…"
        spare -= max(0, len(body) - share)
        lines.append(label + body)
    return "\n".join(lines)


def user_words(turn: Turn) -> str:
    """The user's side of a turn: the message, and its attachments as memory names them
    (their names and what the model said they show: "the receipt photo")."""
    return f"{turn.user} {turn.attachments_text()}" if turn.attachments else turn.user


def analyze_turn(session_id: str, turn: Turn, *, text_chars: int = TEXT_CHARS) -> AnalyzedTurn:
    """Terms per field, the time and a display text of an archived ``turn``."""
    user, answer = user_words(turn)[:FIELD_CHARS], turn.answer[:FIELD_CHARS]
    tools = tool_text(turn)[:FIELD_CHARS]
    user_terms, user_figures = read(user)
    answer_terms, answer_figures = read(answer)
    tool_terms, tool_figures = read(tools)
    fields = {"user": Counter(user_terms), "answer": Counter(answer_terms),
              "tools": Counter(tool_terms),
              "names": Counter(names(user) + names(answer) + names(tools)
                               + user_figures + answer_figures + tool_figures)}
    figures = len(user_figures) + len(answer_figures) + len(tool_figures)
    return AnalyzedTurn(session_id, int(turn.id), float(turn.created_at or 0.0),
                        {f: dict(c) for f, c in fields.items() if c},
                        display_text(turn, text_chars), figures)

