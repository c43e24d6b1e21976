"""An image's size and a WAV file's length, read from their headers without decoding.

Enough to say "an image of 1200×900" in a prompt, to tell a scaled picture from the
original, and to refuse a recording that is too long, in CPython and in the page's
worker alike. Formats whose size sits deep in the file (HEIC, AVIF) or is not in pixels
(SVG) give None: the page decodes those itself.
"""

from __future__ import annotations

import struct


def _jpeg(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        if marker == 0xFF:
            at += 1
            continue
        (length,) = struct.unpack(">H", data[at + 2:at + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return (int.from_bytes(data[24:27], "little") + 1,
                int.from_bytes(data[27:30], "little") + 1)
    return None


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """``(width, height)`` of an image from its header, or None when it cannot be read
    there (or the header is cut short)."""
    try:
        if mime == "image/png" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if mime == "image/gif" and len(data) >= 10:
            return struct.unpack("<HH", data[6:10])
        if mime == "image/jpeg":
            return _jpeg(data)
        if mime == "image/webp":
            return _webp(data)
        if mime == "image/bmp" and len(data) >= 26:
            width, height = struct.unpack("<ii", data[18:26])
            return width, abs(height)
    except struct.error:
        return None
    return None


def wav_seconds(data: bytes) -> float | None:
    """A WAV file's length in seconds from its ``fmt`` and ``data`` chunks, or None."""
    at, rate_bytes, length = 12, None, None
    while at + 8 <= len(data):
        kind, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "little")
        if kind == b"fmt " and at + 16 <= len(data):
            rate_bytes = int.from_bytes(data[at + 16:at + 20], "little")
        elif kind == b"data":
            length = min(size, len(data) - at - 8)
            break
        at += 8 + size + (size & 1)
    if not rate_bytes or length is None:
        return None
    return length / rate_bytes
