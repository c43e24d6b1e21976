"""A session's recall index as bytes, for stores: saved beside the archive, loaded at start.

The index is derived data: the transcript archive stays the truth, and a blob that is
missing, unreadable or written by another analyzer (:data:`ANALYZER_VERSION`) only
means the session's turns are analyzed again (:class:`StaleIndexError`). A blob is the
session's :class:`~.segment.Segment` as JSON, compressed with zlib (in the standard
library of CPython and Pyodide), behind a short header naming the format and analyzer::

    b"RCL1" + u16 analyzer version + zlib(JSON)

Loading is a decompression and a JSON parse: the parsed data is the segment. The blob
holds no display texts (they would double its size; the archive has them): after a load,
hits of the session have an empty ``text`` until :meth:`RecallIndex.hydrate` is given
the session's archived turns.
"""

from __future__ import annotations

import gc
import json
import struct
import zlib

from .index import RecallIndex

MAGIC = b"RCL1"
# Bump when analysis changes what a turn's terms are: saved blobs then get re-indexed.
ANALYZER_VERSION = 1
_HEADER = struct.Struct("<4sH")


class IndexBlobError(ValueError):
    """A blob that is not a recall index; nothing was loaded from it."""


class StaleIndexError(IndexBlobError):
    """A blob of another analyzer version: re-index the session's archived turns."""


def dump_session(index: RecallIndex, session_id: str) -> bytes | None:
    """A session's part of ``index`` as bytes, or None if it has no indexed turn."""
    data = index.segment_data(session_id)
    if data is None:
        return None
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return _HEADER.pack(MAGIC, ANALYZER_VERSION) + zlib.compress(text.encode(), 6)


def load_session(index: RecallIndex, blob: bytes, session_id: str) -> int:
    """Replace ``session_id``'s turns in ``index`` by those of a :func:`dump_session`
    blob (of this session, or of the session it was imported from); returns how many.

    Raises :class:`StaleIndexError` for another analyzer's blob and
    :class:`IndexBlobError` for anything else unreadable, before the index changed.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) < _HEADER.size:
        raise IndexBlobError("not a recall index blob")
    magic, version = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise IndexBlobError("not a recall index blob")
    if version != ANALYZER_VERSION:
        raise StaleIndexError(f"recall index of analyzer {version}, this is {ANALYZER_VERSION}: "
                              "re-index the session's turns")
    # The parse makes many small lists and no reference cycle: the cyclic garbage
    # collector would only scan them again and again (it doubled the time of loading
    # 10,000 turns), so it pauses meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        data = json.loads(zlib.decompress(bytes(blob[_HEADER.size:])).decode())
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return index.put_segment(session_id, data)
    except (zlib.error, UnicodeDecodeError, ValueError) as error:
        raise IndexBlobError(f"unreadable recall index: {error}") from None
    finally:
        if collecting:
            gc.enable()
