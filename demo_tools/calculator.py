"""A calculator that parses arithmetic itself: model output is never passed to eval.

Python integers grow without bound, so ``(9**999)**999`` would compute for minutes
(and freeze the page's worker). Before every power and product of integers the
size of the result is estimated from the operands' bit lengths, and anything past
:data:`MAX_RESULT_DIGITS` digits is refused before it is computed.
"""

from __future__ import annotations

import ast
import math
import operator

from py_agent import tool

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": round, "floor": math.floor,
              "ceil": math.ceil, "log": math.log, "log10": math.log10, "sin": math.sin,
              "cos": math.cos, "tan": math.tan, "min": min, "max": max}
_CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPONENT = 1000
MAX_LENGTH = 300
MAX_RESULT_DIGITS = 1000
_MAX_RESULT_BITS = MAX_RESULT_DIGITS * math.log2(10)


class CalculationError(ValueError):
    """The expression is not plain arithmetic, or cannot be computed."""


def evaluate(expression: str) -> float | int:
    """Evaluate arithmetic: numbers, + - * / // % ^ **, parentheses, a few math functions."""
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    text = text.replace(",", "") if text.count(",") and "(" not in text else text
    if not text:
        raise CalculationError("the expression is empty")
    if len(text) > MAX_LENGTH:
        raise CalculationError(f"the expression is longer than {MAX_LENGTH} characters")
    if text.endswith("%") and text[:-1].replace(".", "", 1).isdigit():
        return float(text[:-1]) / 100
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculationError(f"cannot parse {expression!r} as arithmetic") from None
    return _eval(tree.body)


def _eval(node: ast.AST) -> float | int:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculationError("the exponent is too large")
        _check_size(node.op, left, right)
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculationError("division by zero") from None
        except OverflowError:
            raise CalculationError("the result is too large") from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _FUNCTIONS and not node.keywords:
        try:
            return _FUNCTIONS[node.func.id](*(_eval(a) for a in node.args))
        except (ValueError, TypeError) as exc:
            raise CalculationError(f"{node.func.id}: {exc}") from None
        except OverflowError:
            raise CalculationError(f"{node.func.id}: the result is too large") from None
    raise CalculationError("only numbers, + - * / // % **, parentheses and "
                           f"{', '.join(sorted(_FUNCTIONS))} are allowed")


def _check_size(op: ast.operator, left: float | int, right: float | int) -> None:
    """Refuse an integer power or product whose result would pass MAX_RESULT_DIGITS,
    from its size in bits (log2 of the operands, which Python computes for integers
    of any size without converting them), before computing it."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # floats overflow quickly and cheaply (OverflowError or inf)
    if isinstance(op, ast.Pow):
        if right <= 1 or abs(left) <= 1:
            return
        bits = math.log2(abs(left)) * right
    elif isinstance(op, ast.Mult):
        if left == 0 or right == 0:
            return
        bits = math.log2(abs(left)) + math.log2(abs(right))
    else:
        return
    if bits > _MAX_RESULT_BITS:
        digits = round(bits / math.log2(10))
        raise CalculationError(f"the result would have about {digits:,} digits; this calculator "
                               f"works with numbers of up to {MAX_RESULT_DIGITS:,} digits")


def format_number(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}" if isinstance(value, float) else str(value)


@tool(keywords=["calculator", "math", "maths", "multiply", "divide", "subtract", "percentage",
                 "square root", "power", "compute", "calcular", "calculer", "rechnen", "berechnen", "double", "half", "total", "sum"])
def calculate(expression: str) -> str:
    """Calculate an arithmetic expression exactly, e.g. (1200 / 8) + 45 or sqrt(2) * 3.

    Args:
        expression: arithmetic with numbers, + - * / % ^, parentheses and math functions.

    Examples:
        how much is 12 times 35?
        what's 7.5% of 240
        work out (1200 / 8) + 45
        square root of 2 multiplied by 3
        divide 360 by 7 and round it
        can you use the calculator: 2^10 - 24
    """
    return f"{expression.strip()} = {format_number(evaluate(expression))}"
