
import pytest

from py_agent.demo import add_days, calculate, convert_units, day_of_week, days_between
from py_agent.demo.calculator import CalculationError, evaluate


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
