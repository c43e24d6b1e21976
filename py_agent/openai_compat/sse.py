"""Server-sent events from a byte stream, for ``"stream": true`` chat completions.

Parsing is done by ``assel`` (a package on PyPI), a small sans-I/O
parser that follows the WHATWG event-stream rules (CR/LF/CRLF line ends, multi-line
``data``, comments, events split across network chunks anywhere, even inside a
UTF-8 character). Sans-I/O matters here: the same code runs over the CPython
transport and over the browser's ``fetch`` reader in Pyodide.

assel 1.0 keeps one UTF-8 decoder on its ``LineParser`` *class*, shared by every
parser; two streams read at once (a turn and a background compaction) would mix
their half-received characters. :func:`new_parser` gives each parser its own
decoder (lenient: a bad byte becomes U+FFFD instead of killing the stream).
"""

from __future__ import annotations

import codecs
from typing import AsyncIterator

import assel


def new_parser() -> assel.Parser:
    parser = assel.Parser()
    parser.line_decoder.utf8dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return parser


async def sse_data(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The ``data`` of each event in ``chunks``, ``[DONE]`` included (the caller
    decides whether a stream that ended without it was complete)."""
    parser = new_parser()
    async for chunk in chunks:
        for event in parser.receive_bytes(chunk):
            yield event.data
