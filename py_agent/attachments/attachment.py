"""An attachment: an image or a sound that goes to the model with one user message.

``Attachment(path=...)``, ``Attachment(content=...)`` or ``Attachment(url=...)``, the
shape simonw/llm gives its attachments: the bytes are read when first needed, capped
before they are read whole, and the type is sniffed from them (:mod:`.sniffing`), never
taken from the name. :meth:`Attachment.loaded` gives the checked copy the agent sends:
its bytes, type, kind, size, and, for a picture, its width and height when the header
says (:mod:`.headers`).

What the archive keeps of it, and what memory says about it after its turn, is an
:class:`AttachmentRecord` (plain data, no bytes): the turn's record holds one per
attachment, and later prompts, the summary, key facts and recall carry its text.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field, replace
from typing import Any

from .headers import image_size, wav_seconds
from .sniffing import SNIFF_BYTES, Sniffed, sniff

# A file larger than this is refused before it is read whole.
MAX_BYTES = 25 * 1024 * 1024
# How many attachments one message may carry.
MAX_PER_MESSAGE = 4
# A sound longer than this is refused (when its length can be read).
MAX_AUDIO_SECONDS = 120.0
# The formats the backends take as they are; others are converted (the page) or refused.
SENDABLE = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif",
                      "audio/wav", "audio/mpeg", "audio/ogg", "audio/flac", "audio/webm",
                      "audio/mp4", "audio/aac"})


class AttachmentError(ValueError):
    """An attachment that cannot be sent; the message says why, for the user.
    ``reason``: ``not-media``, ``too-large``, ``too-many``, ``unreadable``,
    ``unsupported`` (a format no backend here takes, such as HEIC without a converter),
    ``too-long`` or ``empty``."""

    def __init__(self, message: str, *, reason: str, name: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.name = name


def size_text(size: int) -> str:
    """A byte count as people read it."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} kB"
    return f"{size / 1024 / 1024:.1f} MB"


@dataclass(frozen=True)
class Attachment:
    """An image or sound for one message. Give one of ``path``, ``content`` or ``url``;
    ``type`` is only a hint: the bytes decide (see the module docstring).

    After :meth:`loaded`: ``content`` holds the bytes, ``type`` the sniffed MIME type,
    ``size`` their count, ``width``/``height`` a picture's pixels when known.
    """

    path: str | None = None
    content: bytes | None = None
    url: str | None = None
    type: str | None = None
    name: str = ""
    width: int | None = None
    height: int | None = None
    size: int | None = None
    max_bytes: int = field(default=MAX_BYTES, compare=False, repr=False)

    def __post_init__(self) -> None:
        given = [v is not None for v in (self.path, self.content, self.url)]
        if sum(given) != 1:
            raise ValueError("an Attachment needs exactly one of path, content or url")
        if self.content is not None and not isinstance(self.content, (bytes, bytearray,
                                                                       memoryview)):
            raise TypeError(f"content must be bytes, not {type(self.content).__name__}")

    @property
    def label(self) -> str:
        """How messages name it: its name, else where it came from."""
        if self.name:
            return self.name
        if self.path:
            return os.path.basename(self.path)
        if self.url:
            return self.url.rsplit("/", 1)[-1].split("?", 1)[0] or self.url
        return "the attachment"

    @property
    def kind(self) -> str:
        """``image``, ``audio`` or ``other``, from the (sniffed) type."""
        major = (self.type or "").split("/", 1)[0]
        return major if major in ("image", "audio") else "other"

    def _read(self) -> bytes:
        if self.content is not None:
            data = bytes(self.content)
            if len(data) > self.max_bytes:
                raise self._too_large(len(data))
            return data
        if self.path is not None:
            try:
                size = os.path.getsize(self.path)
                if size > self.max_bytes:
                    raise self._too_large(size)   # before reading it whole
                with open(self.path, "rb") as file:
                    return file.read(self.max_bytes + 1)
            except OSError as exc:
                raise AttachmentError(f"{self.label} could not be read: {exc.strerror or exc}",
                                      reason="unreadable", name=self.label) from None
        return self._fetch()

    def _fetch(self) -> bytes:
        from urllib.error import URLError
        from urllib.request import urlopen
        url = str(self.url)
        if not url.startswith(("http://", "https://", "file:")):
            raise AttachmentError(f"{url} is not an http(s) address", reason="unreadable",
                                  name=self.label)
        try:
            with urlopen(url, timeout=30) as response:  # noqa: S310 (the user's own URL)
                length = response.headers.get("Content-Length")
                if length and length.isdigit() and int(length) > self.max_bytes:
                    raise self._too_large(int(length))
                data = response.read(self.max_bytes + 1)
        except (URLError, OSError, ValueError) as exc:
            raise AttachmentError(f"{url} could not be fetched: {exc}", reason="unreadable",
                                  name=self.label) from None
        if len(data) > self.max_bytes:
            raise self._too_large(len(data))
        return data

    def _too_large(self, size: int) -> AttachmentError:
        return AttachmentError(
            f"{self.label} is {size_text(size)}; attachments may be at most "
            f"{size_text(self.max_bytes)}.", reason="too-large", name=self.label)

    def sniffed(self, data: bytes) -> Sniffed:
        return sniff(data[:SNIFF_BYTES])

    def loaded(self) -> "Attachment":
        """A copy with the bytes read and checked: an image or a sound, within the caps,
        not empty. Raises :class:`AttachmentError` saying why not."""
        data = self._read()
        if not data:
            raise AttachmentError(f"{self.label} is empty.", reason="empty", name=self.label)
        found = self.sniffed(data)
        if not found.media:
            raise AttachmentError(f"{self.label} is not an image or a sound (it is a "
                                  f"{found.label}).", reason="not-media", name=self.label)
        width, height = self.width, self.height
        if found.kind == "image":
            size = image_size(data, found.mime)
            if size is not None and size[0] > 0 and size[1] > 0:
                width, height = size
        if found.mime == "audio/wav":
            seconds = wav_seconds(data)
            if seconds is not None and seconds > MAX_AUDIO_SECONDS:
                raise AttachmentError(
                    f"{self.label} lasts {seconds:.0f} s; a sound may last at most "
                    f"{MAX_AUDIO_SECONDS:.0f} s.", reason="too-long", name=self.label)
        return replace(self, path=None, url=None, content=data, type=found.mime,
                       name=self.label, width=width, height=height, size=len(data))

    def describe(self) -> str:
        """What it is, in a few words: ``"image (PNG, 800×600, 120 kB)"``."""
        kind = self.kind if self.kind != "other" else "file"
        details = [(self.type or "").split("/", 1)[-1].upper()]
        if self.width and self.height:
            details.append(f"{self.width}×{self.height}")
        if self.size is not None:
            details.append(size_text(self.size))
        return f"{kind} ({', '.join(d for d in details if d)})"


def check_count(attachments: list[Attachment]) -> None:
    """Refuse more than :data:`MAX_PER_MESSAGE` attachments for one message."""
    if len(attachments) > MAX_PER_MESSAGE:
        raise AttachmentError(f"{len(attachments)} attachments is too many for one message; "
                              f"send at most {MAX_PER_MESSAGE} at once.", reason="too-many")


def new_attachment_id() -> str:
    """An id for an attachment kept in the archive, unique enough across tabs."""
    return "a" + secrets.token_hex(8)


@dataclass
class AttachmentRecord:
    """What a turn's record keeps of an attachment (no bytes: those are a blob of the
    store, under ``id``, when ``kept``). ``description`` is the model's words about it,
    written after the answer; ``note`` says why the bytes were not kept, if not."""

    id: str
    name: str
    type: str
    size: int
    width: int | None = None
    height: int | None = None
    description: str = ""
    kept: bool = False
    note: str = ""
    source: str = "user"   # "user", or the tool whose result it was

    @property
    def kind(self) -> str:
        major = self.type.split("/", 1)[0]
        return major if major in ("image", "audio") else "file"

    @classmethod
    def of(cls, attachment: Attachment, attachment_id: str | None = None) -> "AttachmentRecord":
        return cls(id=attachment_id or new_attachment_id(), name=attachment.label,
                   type=attachment.type or "application/octet-stream",
                   size=attachment.size or len(attachment.content or b""),
                   width=attachment.width, height=attachment.height)

    def text(self, turn_id: int | None = None) -> str:
        """How memory and later prompts name it: its name, kind, size and what the model
        said it shows (the bytes are never sent again)."""
        what = "picture" if self.kind == "image" else "recording" if self.kind == "audio" \
            else "file"
        pixels = f", {self.width}×{self.height}" if self.width and self.height else ""
        where = f" from turn {turn_id}" if turn_id else ""
        said = f": {self.description}" if self.description else ""
        return f"[{what} {self.name}{where}{pixels}{said}]"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type,
                                "size": self.size, "kept": self.kept}
        for key in ("width", "height"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        for key in ("description", "note"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.source != "user":
            data["source"] = self.source
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AttachmentRecord":
        def number(key: str) -> int | None:
            value = data.get(key)
            return int(value) if isinstance(value, (int, float)) and value > 0 else None
        return cls(id=str(data.get("id", "")), name=str(data.get("name", "")),
                   type=str(data.get("type", "")), size=int(data.get("size") or 0),
                   width=number("width"), height=number("height"),
                   description=str(data.get("description", "")),
                   kept=data.get("kept") is True, note=str(data.get("note", "")),
                   source=str(data.get("source") or "user"))
