"""Long Markdown answers of the kind a chat model writes, for the streaming tests and
bench/markdown_stream.py.

``long_answer(size)`` is deterministic (seeded): sections with headings, paragraphs with
emphasis, code spans and links, nested bullet lists, numbered steps, fenced code, tables
and quotes, about ``size`` characters in all. ``nested_list(size)`` is the hard case for
incremental rendering: one top-level list, nested three deep, that never closes.
"""

from __future__ import annotations

import random

WORDS = ("oven flour butter sugar minutes heat stir bowl water salt pepper onion garlic "
         "simmer slice chop bake rest cool serve plate taste season mix knead dough rise "
         "fold whisk roast grill boil pan lid tray rack").split()


def _sentence(rng: random.Random, words: int) -> str:
    chosen = [rng.choice(WORDS) for _ in range(words)]
    roll = rng.random()
    if roll < 0.25:
        at = rng.randrange(words)
        chosen[at] = "**%s**" % chosen[at]
    elif roll < 0.45:
        at = rng.randrange(words)
        chosen[at] = "*%s*" % chosen[at]
    elif roll < 0.6:
        at = rng.randrange(words)
        chosen[at] = "`%s()`" % chosen[at]
    elif roll < 0.7:
        at = rng.randrange(words)
        chosen[at] = "[%s](https://example.com/%s?q=%d)" % (chosen[at], chosen[at], words)
    text = " ".join(chosen)
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, rng.randint(6, 14)) for _ in range(rng.randint(2, 4)))


def _bullets(rng: random.Random, depth: int = 0) -> list[str]:
    lines = []
    for _ in range(rng.randint(2, 4)):
        lines.append("  " * depth + "- " + _sentence(rng, rng.randint(4, 10)))
        if depth < 2 and rng.random() < 0.5:
            lines.extend(_bullets(rng, depth + 1))
    return lines


def _section(rng: random.Random, number: int) -> str:
    parts = ["## %d. %s" % (number, _sentence(rng, 3).rstrip(".")), _paragraph(rng)]
    parts.append("\n".join(_bullets(rng)))
    kind = number % 4
    if kind == 0:
        steps = ["%d. %s" % (i + 1, _sentence(rng, rng.randint(5, 9))) for i in range(4)]
        parts.append("\n".join(steps))
    elif kind == 1:
        parts.append("```python\ndef %s(x):\n    return x * %d  # %s\n```"
                     % (rng.choice(WORDS), number, rng.choice(WORDS)))
    elif kind == 2:
        rows = ["| step | time | note |", "|---|--:|:-:|"]
        rows += ["| %s | %d min | %s |" % (rng.choice(WORDS), rng.randint(1, 60),
                                           rng.choice(WORDS)) for _ in range(4)]
        parts.append("\n".join(rows))
    else:
        parts.append("> " + _sentence(rng, 12))
    parts.append(_paragraph(rng))
    return "\n\n".join(parts)


def long_answer(size: int = 40_000, seed: int = 11) -> str:
    """About ``size`` characters of sectioned Markdown."""
    rng = random.Random(seed)
    sections, total, number = [], 0, 1
    while total < size:
        section = _section(rng, number)
        sections.append(section)
        total += len(section) + 2
        number += 1
    return "\n\n".join(sections)[:size].rstrip()


def nested_list(size: int = 40_000, seed: int = 11) -> str:
    """About ``size`` characters of one bullet list, nested up to three deep."""
    rng = random.Random(seed)
    lines, total = [], 0
    while total < size:
        for line in _bullets(rng):
            lines.append(line)
            total += len(line) + 1
    return "\n".join(lines)[:size].rstrip()
