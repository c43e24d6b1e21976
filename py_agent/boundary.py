"""Cleaning text at the boundary, before any parser or store sees it.

Model replies, tool results, error messages and user input can hold anything:
lone UTF-16 surrogates (``"\\ud800"`` in a model's JSON), undecodable bytes,
megabytes of text, JSON nested twenty thousand levels deep. Python's ``json``
recurses once per level, so a deep enough value raises ``RecursionError`` in
CPython and overflows the much smaller WebAssembly stack in Pyodide before any
limit fires. Everything therefore passes through here first:

- :func:`clean_text` turns any text into valid Unicode (surrogate pairs joined,
  lone surrogates and undecodable bytes replaced by U+FFFD), so every stored
  string can be written to a UTF-8 file;
- :func:`depth_within` measures nesting without recursing, so parsers only ever
  get values at most :data:`MAX_JSON_DEPTH` deep;
- :func:`loads_bounded` is ``json.loads`` behind that check.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A step is 2-3 levels deep; tool arguments a few more. Far below any stack limit.
MAX_JSON_DEPTH = 64

# A JSON string (possibly unterminated at the end of the text), or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_OPEN = frozenset("[{")
_CLOSE = frozenset("]}")


class TooDeepError(ValueError):
    """A JSON text nests deeper than the limit; refused before parsing."""


def clean_text(value: Any) -> str:
    """``value`` as valid Unicode text: str as is when already valid, bytes decoded
    as UTF-8, lone surrogates and undecodable bytes replaced by U+FFFD."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Pairs written as two code units (from "\ud83d\ude00") join into one
        # character; a surrogate without its partner becomes U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return str(text)  # a str subclass becomes a plain str


def clean_value(value: Any, depth: int = 0) -> Any:
    """A JSON-like value with every string (keys too) passed through :func:`clean_text`.

    Values come from :func:`loads_bounded`, so the recursion is bounded; anything
    deeper than :data:`MAX_JSON_DEPTH` (a value built some other way) is cut to text.
    """
    if isinstance(value, str):
        return clean_text(value)
    if depth >= MAX_JSON_DEPTH:
        return "…"
    if isinstance(value, dict):
        return {clean_text(k): clean_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_value(v, depth + 1) for v in value]
    return value


def describe(exc: BaseException, limit: int = 500) -> str:
    """``str(exc)``, cleaned and capped, even when the exception's ``__str__`` fails."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    return cap_text(clean_text(text).strip(), limit)


def cap_text(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    marker = f" … [truncated {len(text) - limit} characters]"
    return text[: max(0, limit - len(marker))] + marker


def depth_within(text: str, start: int = 0, limit: int = MAX_JSON_DEPTH, *,
                 one_value: bool = True) -> bool:
    """Does the JSON at ``text[start:]`` nest at most ``limit`` levels deep?

    Brackets inside strings do not count. With ``one_value`` the scan stops where
    the first value closes (what ``raw_decode`` would read); else it covers the
    rest of the text. A linear scan with no recursion, safe on any input.
    """
    depth = 0
    for match in _TOKENS.finditer(text, start):
        token = match.group()
        if token in _OPEN:
            depth += 1
            if depth > limit:
                return False
        elif token in _CLOSE:
            depth -= 1
            if depth <= 0 and one_value:
                return True
    return True


def loads_bounded(text: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted text: :class:`TooDeepError` (a ``ValueError``)
    for nesting past ``limit``, ``ValueError`` for anything else unparsable."""
    if not depth_within(text, 0, limit, one_value=False):
        raise TooDeepError(f"the JSON nests deeper than {limit} levels")
    try:
        return json.loads(text)
    except RecursionError:  # cannot happen below the limit; kept as a last guard
        raise TooDeepError(f"the JSON nests deeper than {limit} levels") from None


# Characters that show nothing, or reorder what is shown, in untrusted text: zero-width
# spaces and joiners, the word joiner, the byte-order mark, bidirectional embeddings,
# overrides and isolates, Unicode tag characters (invisible ASCII), and the C0/C1
# controls but tab and newline (ANSI escapes for a terminal start with one).
_INVISIBLE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
                        "\U000e0000-\U000e007f\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The marks that open and close untrusted data in a prompt (py_agent.prompting): no
# untrusted text may hold them, so none can close its block early.
DATA_MARKS = ("\u27e6", "\u27e7")   # ⟦ ⟧


def untrusted_text(value: Any) -> str:
    """Text from outside (a tool server's result, a page's tool description) as it may
    enter a prompt: valid Unicode, without invisible or reordering characters and
    controls, and without the data marks (⟦ ⟧ become [ ])."""
    text = _INVISIBLE.sub("", clean_text(value))
    return text.replace(DATA_MARKS[0], "[").replace(DATA_MARKS[1], "]")


# How long a name or title from outside may be where it is shown: a tool server's name
# (the Tools panel, the approval question, the data mark's header), a tool's title.
NAME_CHARS = 64
TITLE_CHARS = 100


def one_line(value: Any, limit: int = NAME_CHARS) -> str:
    """Text from outside that labels something (a server's self-declared name, a tool's
    title) as it may be shown anywhere: :func:`untrusted_text`, on one line (each run of
    whitespace, newlines included, one space), at most ``limit`` characters (cut with …).
    So it can neither start a line of its own in a prompt or a dialog, nor reorder or
    hide what is shown around it."""
    text = " ".join(untrusted_text(value).split())
    return text if len(text) <= limit else text[:max(0, limit - 1)].rstrip() + "…"


def printable(value: Any, *, lines: bool = True) -> str:
    """Any text as it may be shown exactly (a terminal, a dialog's arguments): every
    control, invisible and reordering character as a visible escape (``\\u001b``), so an
    escape sequence cannot move the cursor or ring the bell, and a bidi override cannot
    turn what is shown around. Newlines and tabs stay (``lines=False``: newlines too become
    ``\\n``)."""
    text = clean_text(value)
    if not lines:
        text = text.replace("\n", "\\n")
    return _INVISIBLE.sub(lambda match: _escape(match.group()), text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
