"""What serve.py and its helpers share: how they speak and how they write files."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def say(message: str) -> None:
    print(f"[serve] {message}", flush=True)


class PrepareError(RuntimeError):
    """Preparation cannot go on; the message says what to do."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomically(target: Path, data: bytes) -> None:
    """Write via a unique temporary file and a rename, so that a reader (or another
    prepare() running at the same time) never sees a half-written file."""
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}-",
                                         delete=False)
    try:
        with handle:
            handle.write(data)
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
