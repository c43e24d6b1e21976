"""Token estimates without a tokenizer, calibrated by the model's exact counts.

Budgets need counts for text that is not in a session yet (a summary being
planned, the turns that might be kept). A character-class heuristic gives that;
CJK characters cost far more per character than Latin ones, so they are counted
apart. When the model can measure text exactly, the ratio between its count and
the heuristic is tracked and applied, so budgets converge on real numbers.
"""

from __future__ import annotations

import math
import re

# Ranges whose characters tokenize to roughly one or more tokens each.
_CJK_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3000, 0x303F),  # CJK punctuation
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # full-width forms
)

CJK_TOKENS_PER_CHAR = 1.5
OTHER_TOKENS_PER_CHAR = 0.25
CJK_CHARS = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")


def is_cjk(ch: str) -> bool:
    return CJK_CHARS.match(ch) is not None


def estimate_tokens(text: str) -> int:
    """Heuristic token count: CJK about 1.5 per character, other text about 4 characters a token."""
    if not text:
        return 0
    cjk = 0 if text.isascii() else len(CJK_CHARS.findall(text))
    return math.ceil(cjk * CJK_TOKENS_PER_CHAR + (len(text) - cjk) * OTHER_TOKENS_PER_CHAR)


class TokenCounter:
    """Estimates tokens, scaled by what the model's exact measurements taught it.

    ``calibrate(text, exact)`` folds one measurement into a running ratio
    (an exponential moving average, clamped so one odd sample cannot wreck
    every budget). Short texts are ignored: their ratio is mostly noise.
    """

    MIN_SAMPLE_CHARS = 200

    def __init__(self, ratio: float = 1.0, smoothing: float = 0.3,
                 bounds: tuple[float, float] = (0.4, 3.0)) -> None:
        self.ratio = ratio
        self.smoothing = smoothing
        self.bounds = bounds
        self.samples = 0

    def count(self, text: str) -> int:
        return math.ceil(estimate_tokens(text) * self.ratio)

    def calibrate(self, text: str, exact: int | None) -> None:
        if exact is None or exact <= 0 or len(text) < self.MIN_SAMPLE_CHARS:
            return
        estimate = estimate_tokens(text)
        if estimate <= 0:
            return
        observed = min(max(exact / estimate, self.bounds[0]), self.bounds[1])
        if self.samples == 0:
            self.ratio = observed
        else:
            self.ratio += self.smoothing * (observed - self.ratio)
        self.samples += 1
