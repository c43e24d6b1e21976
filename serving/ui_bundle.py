"""The page's UI modules (``web/ui/*.py``) in one response.

``web/main.py`` fetches ``/ui-bundle.json`` (``{file name: source}``; index.html
preloads it while MicroPython starts) and writes the modules into MicroPython's file
system before importing them: one request at start instead of one per module. (PyScript
can unpack a zip itself, but its unzipper starts a worker from a blob: URL, which the
page's Content-Security-Policy forbids.) The server builds the bundle from the files as
they are now, so an edited module is served on the next reload, like the tool modules.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

URL = "/ui-bundle.json"

_lock = threading.Lock()
_built: dict[Path, tuple[tuple, bytes]] = {}


def ui_bundle(folder: Path) -> bytes:
    """The ``.py`` files of ``folder`` as JSON ``{name: source}``, rebuilt only when one
    of them changed."""
    files = sorted(folder.glob("*.py"))
    stamp = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    with _lock:
        cached = _built.get(folder)
        if cached and cached[0] == stamp:
            return cached[1]
        body = json.dumps({f.name: f.read_text(encoding="utf-8") for f in files},
                          ensure_ascii=False).encode()
        _built[folder] = (stamp, body)
        return body
