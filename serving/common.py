"""What serve.py and its helpers share: how they speak and how they write files."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable


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


# Folders being built under web/vendor and .cache start with this (never pruned as old
# builds: another prepare() may be writing one).
SCRATCH_PREFIX = ".building-"


def move_into_place(scratch: Path, folder: Path, done: Callable[[], bool]) -> None:
    """Rename a finished ``scratch`` folder to ``folder``. Several prepare() runs may build
    the same thing at once (a test run's workers, two serve.py in one checkout): when
    another one got there first (``done()``), its folder is kept and ``scratch`` is left
    to its TemporaryDirectory's cleanup."""
    try:
        scratch.rename(folder)
    except OSError:
        if not done():
            raise
        return
    scratch.mkdir()   # for TemporaryDirectory's cleanup
