"""Entity tags for the development server's revalidated responses (``Cache-Control:
no-cache``): a browser asks again on every use, and gets ``304 Not Modified`` with no
body when its copy is still this one, instead of the whole file again.

A tag is the SHA-256 of what the browser would get: the body and the headers that vary
with the server's options (the Content-Security-Policy). So a copy another server left on
the same origin (a static build tried on the same port) or one served with other options
never matches; dates, which ``If-Modified-Since`` compares, could not tell those apart.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


@functools.lru_cache(maxsize=512)
def _file_digest(path: str, mtime_ns: int, size: int) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.digest()


def file_digest(path: Path) -> bytes:
    """The SHA-256 of a file's content, computed again only when the file changed."""
    stat = path.stat()
    return _file_digest(str(path), stat.st_mtime_ns, stat.st_size)


def entity_tag(content_digest: bytes, *varying: str) -> str:
    """A strong ``ETag`` value for a body (its digest) served with these headers."""
    digest = hashlib.sha256(content_digest)
    for value in varying:
        digest.update(b"\0" + value.encode())
    return '"' + digest.hexdigest()[:32] + '"'


def body_tag(body: bytes, *varying: str) -> str:
    """The ``ETag`` of a generated body."""
    return entity_tag(hashlib.sha256(body).digest(), *varying)


def not_modified(if_none_match: str | None, tag: str) -> bool:
    """Whether a request's ``If-None-Match`` names ``tag`` (or is ``*``)."""
    if not if_none_match:
        return False
    listed = [t.strip() for t in if_none_match.split(",")]
    return "*" in listed or tag in listed or f"W/{tag}" in listed
