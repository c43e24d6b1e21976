"""Unit conversion for length, mass, volume, temperature, speed, area and time."""

from __future__ import annotations

from py_agent import tool
from .calculator import format_number

# Factors to a base unit per dimension (metre, gram, litre, m/s, m², second).
_UNITS: dict[str, tuple[str, float]] = {}


def _add(dimension: str, factor: float, *names: str) -> None:
    for name in names:
        _UNITS[name] = (dimension, factor)


_add("length", 1.0, "m", "meter", "meters", "metre", "metres")
_add("length", 1000.0, "km", "kilometer", "kilometers", "kilometre", "kilometres")
_add("length", 0.01, "cm", "centimeter", "centimeters", "centimetre", "centimetres")
_add("length", 0.001, "mm", "millimeter", "millimeters", "millimetre", "millimetres")
_add("length", 1609.344, "mi", "mile", "miles")
_add("length", 0.9144, "yd", "yard", "yards")
_add("length", 0.3048, "ft", "foot", "feet")
_add("length", 0.0254, "in", "inch", "inches")
_add("mass", 1.0, "g", "gram", "grams")
_add("mass", 1000.0, "kg", "kilogram", "kilograms", "kilo", "kilos")
_add("mass", 0.001, "mg", "milligram", "milligrams")
_add("mass", 28.349523125, "oz", "ounce", "ounces")
_add("mass", 453.59237, "lb", "lbs", "pound", "pounds")
_add("mass", 6350.29318, "st", "stone", "stones")
_add("volume", 1.0, "l", "liter", "liters", "litre", "litres")
_add("volume", 0.001, "ml", "milliliter", "milliliters", "millilitre", "millilitres")
_add("volume", 3.785411784, "gal", "gallon", "gallons")
_add("volume", 0.946352946, "qt", "quart", "quarts")
_add("volume", 0.473176473, "pt", "pint", "pints")
_add("volume", 0.2365882365, "cup", "cups")
_add("volume", 0.0295735296, "floz", "fl oz", "fluid ounce", "fluid ounces")
_add("volume", 0.0147867648, "tbsp", "tablespoon", "tablespoons")
_add("volume", 0.00492892159, "tsp", "teaspoon", "teaspoons")
_add("speed", 1.0, "m/s", "meters per second")
_add("speed", 1 / 3.6, "km/h", "kph", "kmh", "kilometers per hour")
_add("speed", 0.44704, "mph", "miles per hour")
_add("speed", 0.514444, "kn", "knot", "knots")
_add("area", 1.0, "m2", "m²", "square meter", "square meters")
_add("area", 0.09290304, "ft2", "ft²", "square foot", "square feet")
_add("area", 4046.8564224, "acre", "acres")
_add("area", 10_000.0, "ha", "hectare", "hectares")
_add("time", 1.0, "s", "sec", "second", "seconds")
_add("time", 60.0, "min", "minute", "minutes")
_add("time", 3600.0, "h", "hr", "hour", "hours")
_add("time", 86400.0, "d", "day", "days")
_add("time", 604800.0, "wk", "week", "weeks")

_TEMPERATURES = {"c": "C", "celsius": "C", "°c": "C", "f": "F", "fahrenheit": "F", "°f": "F",
                 "k": "K", "kelvin": "K"}


def _to_celsius(value: float, unit: str) -> float:
    return {"C": value, "F": (value - 32) * 5 / 9, "K": value - 273.15}[unit]


def _from_celsius(value: float, unit: str) -> float:
    return {"C": value, "F": value * 9 / 5 + 32, "K": value + 273.15}[unit]


def convert(value: float, from_unit: str, to_unit: str) -> float:
    source, target = from_unit.strip().lower(), to_unit.strip().lower()
    if source in _TEMPERATURES or target in _TEMPERATURES:
        if source not in _TEMPERATURES or target not in _TEMPERATURES:
            raise ValueError(f"cannot convert between {from_unit!r} and {to_unit!r}")
        return _from_celsius(_to_celsius(value, _TEMPERATURES[source]), _TEMPERATURES[target])
    for unit in (source, target):
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {unit!r}; known units include m, km, mi, ft, in, "
                             "g, kg, oz, lb, l, ml, gal, cup, tbsp, tsp, km/h, mph, C, F, K")
    (dim_a, factor_a), (dim_b, factor_b) = _UNITS[source], _UNITS[target]
    if dim_a != dim_b:
        raise ValueError(f"cannot convert {dim_a} ({from_unit}) to {dim_b} ({to_unit})")
    return value * factor_a / factor_b


@tool(keywords=["unit conversion", "metric", "imperial", "kg", "kilograms", "kilos", "lb", "lbs",
                 "pounds", "grams", "oz", "ounces", "stone", "meters", "metres", "cm", "mm", "km",
                 "kilometers", "miles", "ft", "foot", "feet", "inches", "yards", "liters",
                 "litres", "ml", "gallons", "quarts", "pints", "cups", "tablespoons", "teaspoons",
                 "Celsius", "Fahrenheit", "Kelvin", "degrees", "mph", "km/h", "knots", "acres",
                 "hectares", "square meters",
                "seconds", "minutes", "hours", "convertir", "umrechnen", "libras", "livres", "pulgadas", "pouces", "Zoll"])
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, weight, volume, temperature, speed, area or
    time, e.g. ounces to grams, miles to km, cups to liters, Fahrenheit to Celsius.

    Args:
        value: the amount to convert.
        from_unit: the unit it is in, e.g. "oz", "miles", "F".
        to_unit: the unit wanted, e.g. "g", "km", "C".

    Examples:
        how many pounds is 82 kg?
        what is 6 feet in centimeters
        change 3 ounces to grams
        180 C in F for my oven
        how many cups are in half a liter
        is 100 km/h faster than 60 mph
    """
    result = convert(value, from_unit, to_unit)
    return f"{format_number(value)} {from_unit} = {format_number(round(result, 4))} {to_unit}"
