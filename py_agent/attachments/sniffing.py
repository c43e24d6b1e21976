"""What a file is, read from its first bytes: a small table of magic numbers.

An attachment's type comes from its bytes, never from its name or the type a browser
guessed from the name: ``receipt.jpg`` that holds a PDF is refused as "not an image or
sound". The table knows the image and sound formats the backends take or the page can
convert (WHATWG's "sniffing images specifically" and "audio or video" rules, plus
HEIC/AVIF and SVG), and a few common formats that are neither, so a refusal can name
what the file is.

Why a table and not a library: ``filetype`` (20 kB, last release 2022) knows no SVG,
``puremagic`` (43 kB, and a JSON database read at import) knows hundreds of formats we
would only refuse, and each would be one more wheel for the page's worker to install
on first use. The formats here are the ones the agent acts on; the table is 40 lines.
"""

from __future__ import annotations

from dataclasses import dataclass

# How many leading bytes sniffing reads.
SNIFF_BYTES = 512


@dataclass(frozen=True)
class Sniffed:
    """What the first bytes say: the MIME type (``application/octet-stream`` when no
    rule matched), its kind (``image``, ``audio`` or ``other``) and a short name."""

    mime: str
    kind: str
    label: str

    @property
    def media(self) -> bool:
        return self.kind in ("image", "audio")


def _ftyp(head: bytes) -> Sniffed | None:
    """ISO base media files (MP4, M4A, HEIC, AVIF) by their ``ftyp`` brands."""
    if len(head) < 12 or head[4:8] != b"ftyp":
        return None
    brands = {head[8:12]} | {head[i:i + 4] for i in range(16, min(len(head), 64), 4)}
    if brands & {b"avif", b"avis"}:
        return Sniffed("image/avif", "image", "AVIF")
    if brands & {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1"}:
        return Sniffed("image/heic", "image", "HEIC")
    if head[8:12] in (b"M4A ", b"M4B ", b"M4P "):
        return Sniffed("audio/mp4", "audio", "M4A")
    return Sniffed("video/mp4", "other", "MP4 video")


def _mp3(head: bytes) -> bool:
    """MPEG audio: an ID3 tag, or a frame sync with a valid layer and bitrate."""
    if head.startswith(b"ID3"):
        return True
    return (len(head) >= 3 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0
            and head[1] & 0x06 != 0 and head[2] & 0xF0 != 0xF0 and head[2] & 0x0C != 0x0C)


def _svg(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not text.startswith(b"<"):
        return False
    return b"<svg" in text[:SNIFF_BYTES]


# (prefix, offset, result), tried in order.
_PREFIXES: list[tuple[bytes, int, Sniffed]] = [
    (b"\x89PNG\r\n\x1a\n", 0, Sniffed("image/png", "image", "PNG")),
    (b"\xff\xd8\xff", 0, Sniffed("image/jpeg", "image", "JPEG")),
    (b"GIF87a", 0, Sniffed("image/gif", "image", "GIF")),
    (b"GIF89a", 0, Sniffed("image/gif", "image", "GIF")),
    (b"BM", 0, Sniffed("image/bmp", "image", "BMP")),
    (b"\x00\x00\x01\x00", 0, Sniffed("image/x-icon", "image", "ICO")),
    (b"II*\x00", 0, Sniffed("image/tiff", "image", "TIFF")),
    (b"MM\x00*", 0, Sniffed("image/tiff", "image", "TIFF")),
    (b"fLaC", 0, Sniffed("audio/flac", "audio", "FLAC")),
    (b"OggS", 0, Sniffed("audio/ogg", "audio", "Ogg")),
    (b"\x1aE\xdf\xa3", 0, Sniffed("audio/webm", "audio", "WebM")),
    (b"#!AMR", 0, Sniffed("audio/amr", "audio", "AMR")),
    (b"%PDF-", 0, Sniffed("application/pdf", "other", "PDF document")),
    (b"PK\x03\x04", 0, Sniffed("application/zip", "other", "ZIP archive")),
]


def sniff(head: bytes) -> Sniffed:
    """The type of a file from its first bytes (at least :data:`SNIFF_BYTES` when the
    file has them)."""
    head = bytes(head[:SNIFF_BYTES])
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return Sniffed("audio/wav", "audio", "WAV")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return Sniffed("image/webp", "image", "WebP")
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return Sniffed("audio/aiff", "audio", "AIFF")
    for prefix, offset, result in _PREFIXES:
        if head[offset:offset + len(prefix)] == prefix:
            return result
    iso = _ftyp(head)
    if iso is not None:
        return iso
    if _mp3(head):
        return Sniffed("audio/mpeg", "audio", "MP3")
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xF6 == 0xF0:
        return Sniffed("audio/aac", "audio", "AAC")
    if _svg(head):
        return Sniffed("image/svg+xml", "image", "SVG")
    if head and all(b in b"\t\n\r" or 32 <= b < 127 or b >= 128 for b in head):
        return Sniffed("text/plain", "other", "text file")
    return Sniffed("application/octet-stream", "other", "file of an unknown kind")
