"""Small everyday helpers: text statistics, splitting a bill, dice and random picks."""

from __future__ import annotations

import random
import re
from collections import Counter

from py_agent import tool
from py_agent.retrieval import STOP_WORDS
from py_agent.tokens import is_cjk

# Module-level so tests can swap in a seeded one. Drawn from the operating system's
# randomness: a Random() made at import would sit seeded in the boot snapshot, and every
# page started from it would roll the same numbers.
RANDOM = random.SystemRandom()

READING_WPM = 230
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?。！？]+(?=\s|$)|[。！？]")


def text_stats(text: str) -> dict:
    """Counts for ``text``: words (each CJK character counts as one), characters, ..."""
    words: list[str] = []
    for token in _WORD.findall(text):
        if any(is_cjk(ch) for ch in token):
            words.extend(ch for ch in token if is_cjk(ch))
            words.extend(_WORD.findall("".join(" " if is_cjk(ch) else ch for ch in token)))
        else:
            words.append(token)
    stripped = text.strip()
    sentences = len([s for s in _SENTENCE_END.split(stripped) if s.strip()]) if stripped else 0
    paragraphs = len([p for p in re.split(r"\n\s*\n", stripped) if p.strip()]) if stripped else 0
    common = Counter(w.lower() for w in words
                     if w.lower() not in STOP_WORDS and len(w) > 2 or is_cjk(w[0]))
    return {"words": len(words), "characters": len(text),
            "characters_without_spaces": len(re.sub(r"\s", "", text)),
            "sentences": sentences, "paragraphs": paragraphs,
            "reading_seconds": round(len(words) / READING_WPM * 60),
            "top_words": [w for w, n in common.most_common(3) if n > 1]}


@tool(keywords=["word count", "characters", "letters", "length", "reading time", "sentences",
                "chars", "palabras", "mots", "Wörter"])
def count_words(text: str) -> str:
    """Count how many words, characters, sentences and paragraphs a text has, with its reading time.

    Args:
        text: the text to count.

    Examples:
        how many characters is this tweet?
        word count please: It was a bright cold day in April
        is my cover letter under 300 words
        how long will this article take to read
        count the words in this: ...
    """
    if not text.strip():
        return "The text is empty: 0 words."
    s = text_stats(text)
    seconds = s["reading_seconds"]
    reading = f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"
    line = (f"{s['words']} word{'s' if s['words'] != 1 else ''}, {s['characters']} characters "
            f"({s['characters_without_spaces']} without spaces), {s['sentences']} "
            f"sentence{'s' if s['sentences'] != 1 else ''}, {s['paragraphs']} "
            f"paragraph{'s' if s['paragraphs'] != 1 else ''}; about {reading} to read.")
    if s["top_words"]:
        line += f" Most used: {', '.join(s['top_words'])}."
    return line


def _money(cents: int) -> str:
    return f"{cents // 100:,}.{cents % 100:02d}"


@tool(keywords=["tip", "gratuity", "restaurant", "share", "owe", "each", "check",
                "propina", "cuenta", "pourboire", "addition", "Trinkgeld", "Rechnung"])
def split_bill(total: float, people: int = 1, tip_percent: float = 0) -> str:
    """Split a bill or restaurant check between people, adding a tip percentage, and say what each
    person pays.

    Args:
        total: the bill before the tip.
        people: how many people share it.
        tip_percent: the tip in percent, e.g. 15; 0 for none.

    Examples:
        dinner was 137 for 4 of us, what does everyone owe?
        what's an 18% tip on 52 dollars
        we're splitting 96 euros three ways plus tip
        how much should I leave as a tip on 45
        4 of us share a 120 bill, how much each
    """
    if total < 0:
        raise ValueError("the total cannot be negative")
    if people < 1:
        raise ValueError("at least one person must pay")
    if people > 1000:
        raise ValueError("that is too many people to split between")
    if not 0 <= tip_percent <= 100:
        raise ValueError("the tip must be between 0 and 100 percent")
    bill = round(total * 100)
    tip = round(bill * tip_percent / 100)
    whole = bill + tip
    share, extra = divmod(whole, people)
    text = f"Bill {_money(bill)}"
    if tip:
        text += f" + {tip_percent:g}% tip {_money(tip)}"
    text += f" = {_money(whole)}"
    if people == 1:
        return text + "."
    text += f"; split {people} ways: {_money(share)} each"
    if extra:
        text += (f" ({extra} of them pay{'s' if extra == 1 else ''} {_money(share + 1)} "
                 "so it adds up)")
    return text + "."


_DICE = re.compile(r"^(\d*)\s*d\s*(\d+)\s*(?:([+-])\s*(\d+))?$")
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


@tool(keywords=["dice", "die", "coin", "toss", "random number", "d20",
                "dado", "moneda", "dé", "pièce", "Würfel", "Münze"])
def roll_dice(dice: str = "1d6") -> str:
    """Roll dice (like 2d6, d20 or 3d6+2) or flip a coin (dice="coin") for a random result.

    Args:
        dice: dice notation such as "1d6", "2d6", "d20", "3d6+2", or "coin".

    Examples:
        roll 3d8 for damage
        toss a coin for me
        heads or tails, who starts?
        throw two dice
        give me a random number between 1 and 20
    """
    text = " ".join(dice.lower().split()) or "1d6"
    if text in ("coin", "a coin", "flip", "coin flip", "flip a coin", "heads or tails"):
        return f"Coin flip: {RANDOM.choice(['heads', 'tails'])}."
    words = re.fullmatch(r"(\w+)\s+(?:dice|die)", text)
    if words and (words.group(1).isdigit() or words.group(1) in _WORD_NUMBERS):
        text = f"{_WORD_NUMBERS.get(words.group(1), words.group(1))}d6"
    elif text in ("dice", "die", "a die", "a dice"):
        text = "1d6"
    match = _DICE.match(text)
    if not match:
        raise ValueError(f"cannot read {dice!r} as dice; use notation like 2d6, d20, 3d6+2 or coin")
    count, sides = int(match.group(1) or 1), int(match.group(2))
    if not 1 <= count <= 100 or not 2 <= sides <= 1000:
        raise ValueError("use 1 to 100 dice with 2 to 1000 sides each")
    modifier = int(match.group(4) or 0) * (-1 if match.group(3) == "-" else 1)
    rolls = [RANDOM.randint(1, sides) for _ in range(count)]
    total = sum(rolls) + modifier
    label = f"{count}d{sides}" + (f"{modifier:+d}" if modifier else "")
    if count == 1 and not modifier:
        return f"{label}: {total}"
    parts = " + ".join(map(str, rolls)) + (f" {'+' if modifier > 0 else '-'} {abs(modifier)}"
                                            if modifier else "")
    return f"{label}: {parts} = {total}"


@tool(keywords=["decide", "choose", "random choice", "pick one", "can't decide",
                "elegir", "decidir", "choisir", "aussuchen", "entscheiden"])
def pick_random(options: str) -> str:
    """Pick one option at random to decide for the user, e.g. where to eat, which film, who goes
    first.

    Args:
        options: the choices, separated by commas or "or", e.g. "pizza, sushi or tacos".

    Examples:
        should we get Thai or Indian tonight?
        choose between the red, green and blue paint for me
        who does the dishes: Ana, Ben or Cleo
        I can't make up my mind, beach or mountains
        pick a random movie: Alien, Heat or Up
    """
    choices = [c.strip(" .?!\"'") for c in re.split(r",|;|\n|\bor\b", options)]
    choices = [c for c in choices if c]
    unique = list(dict.fromkeys(choices))
    if len(unique) < 2:
        return ("Give at least two different options to choose between, "
                "e.g. \"pizza, sushi or tacos\".")
    return f"Picked: {RANDOM.choice(unique)} (from {len(unique)} options)."
