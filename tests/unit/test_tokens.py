from py_agent.tokens import TokenCounter, estimate_tokens


def test_cjk_costs_more_per_character_than_latin():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("你好世界") == 6
    assert estimate_tokens("こんにちは hello") == 9  # ceil(5 kana x 1.5 + 6 others x 0.25)
    assert estimate_tokens("한국어") == 5


def test_calibration_moves_the_ratio_toward_exact_counts_and_is_bounded():
    counter = TokenCounter()
    text = "word " * 100  # 500 characters, estimate 125
    assert counter.count(text) == 125
    counter.calibrate(text, 250)
    assert counter.ratio == 2.0 and counter.count(text) == 250
    counter.calibrate(text, 125)
    assert 1.0 < counter.ratio < 2.0
    counter.calibrate(text, 10_000)
    assert counter.ratio <= 3.0


def test_calibration_ignores_short_or_missing_samples():
    counter = TokenCounter()
    counter.calibrate("short", 50)
    counter.calibrate("x" * 500, None)
    counter.calibrate("x" * 500, 0)
    assert counter.ratio == 1.0 and counter.samples == 0
