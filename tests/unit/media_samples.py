"""Small real files for the attachment tests: PNG, JPEG and GIF headers, WAV sound,
made here byte by byte (no image library), and what other formats start with."""

from __future__ import annotations

import io
import struct
import wave
import zlib


def png(width: int = 4, height: int = 3) -> bytes:
    """A valid PNG of ``width``×``height`` red pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                                              8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def jpeg_header(width: int = 640, height: int = 480) -> bytes:
    """The start of a baseline JPEG (SOI, a JFIF APP0, SOF0 with the size), enough for
    sniffing and for reading its size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00" \
        b"\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int = 2, height: int = 5) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def wav(seconds: float = 0.5, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x10\x00" * int(rate * seconds))
    return buffer.getvalue()


HEIC = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 32
AVIF = b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf" + b"\x00" * 32
SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="20"></svg>'
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x00" + b"\x00" * 64
OGG = b"OggS\x00\x02" + b"\x00" * 30
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8L\x0a\x00\x00\x00\x2f" + (
    ((100 - 1) | ((50 - 1) << 14)).to_bytes(4, "little")) + b"\x00" * 8
TEXT = b"Dear diary, today I wrote a test.\n"
