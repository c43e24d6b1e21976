"""``serve.py --gguf PATH_OR_URL``: the GGUF models the page offers to run in itself.

The page runs them with llama.cpp in WebAssembly (web/page_model/); the browser
downloads the one the user picks, once, checks it and keeps it. Each ``--gguf`` is:

- **a local file**: served same-origin at ``models/<file name>`` (in a static build, a
  copy of it there), and listed with its size and SHA-256 (computed once per file
  version and remembered in ``.cache/gguf-sha256.json``), which the browser checks the
  download against;
- **a URL** (http or https): the browser fetches it from there, so its origin joins the
  Content-Security-Policy's ``connect-src``, and its server must send CORS headers
  (``Access-Control-Allow-Origin``) to let the page read it. Its size is asked once at
  start (a HEAD request); unknown when the server will not say.

The manifest lists them as ``page_models: [{url, name, size, sha256}]``; a local file's
``url`` is relative to the site's root, like the manifest's other URLs.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import unquote, urlsplit

from .common import PrepareError, sha256_file, write_atomically

FOLDER = "models"           # where a site has the local files, under its root
GGUF_MAGIC = b"GGUF"
PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class OfferedModel:
    """One ``--gguf``: where the page gets it (``url``: relative to the site's root for a
    local file), what it is called, and for a local file the file itself."""

    url: str
    name: str
    size: int | None = None
    sha256: str | None = None
    path: Path | None = None

    def manifest_entry(self) -> dict:
        return {"url": self.url, "name": self.name, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class PageModels:
    """The offered models: their manifest entries, the local files to serve, the
    origins the page may fetch them from, and what to tell the user at start."""

    models: tuple[OfferedModel, ...]
    notes: tuple[str, ...] = ()

    def manifest_entries(self) -> list[dict]:
        return [model.manifest_entry() for model in self.models]

    def local_file(self, url_path: str) -> Path | None:
        """The file a server at the site's root serves at ``url_path`` (``/models/<name>``),
        or None."""
        for model in self.models:
            if model.path is not None and "/" + model.url == url_path:
                return model.path
        return None

    def local_files(self) -> dict[str, Path]:
        """{path in the site (``models/<name>``): file} of the local models."""
        return {model.url: model.path for model in self.models if model.path is not None}

    def connect_sources(self) -> list[str]:
        """The origins of the remote models, for the CSP's ``connect-src``."""
        origins = []
        for model in self.models:
            if model.path is None:
                parts = urlsplit(model.url)
                origin = f"{parts.scheme}://{parts.netloc}"
                if origin not in origins:
                    origins.append(origin)
        return origins


def page_models_from_args(values: Iterable[str], *, hash_cache: Path | None = None,
                          probe: bool = True) -> PageModels:
    """The models of the ``--gguf`` arguments, checked (PrepareError says what is wrong)."""
    models: list[OfferedModel] = []
    notes: list[str] = []
    cache = _HashCache(hash_cache)
    for value in values:
        if urlsplit(value).scheme in ("http", "https"):
            model, note = _remote(value, probe)
            notes.append(note)
        else:
            model = _local(Path(value).expanduser(), cache)
            notes.append(f"offering {model.name} ({model.size / 1e6:.1f} MB) to run in the "
                         f"page, at {model.url}")
        if any(other.url == model.url for other in models):
            raise PrepareError(f"--gguf {value}: another --gguf is offered at {model.url} "
                               "already (two files with one name?)")
        models.append(model)
    cache.save()
    return PageModels(tuple(models), tuple(notes))


def _local(path: Path, cache: "_HashCache") -> OfferedModel:
    if not path.is_file():
        raise PrepareError(f"--gguf {path}: no such file")
    with path.open("rb") as handle:
        head = handle.read(len(GGUF_MAGIC))
    if head != GGUF_MAGIC:
        raise PrepareError(f"--gguf {path}: not a GGUF model file (it starts with {head!r}, "
                           f"not {GGUF_MAGIC!r})")
    return OfferedModel(url=f"{FOLDER}/{path.name}", name=path.name, size=path.stat().st_size,
                        sha256=cache.sha256(path), path=path.resolve())


def _remote(url: str, probe: bool) -> tuple[OfferedModel, str]:
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or url
    size = None
    note = f"offering {name} from {url} (the browser fetches it; its server must allow CORS)"
    if probe:
        try:
            request = urllib.request.Request(url, method="HEAD")
            with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
                length = response.headers.get("Content-Length")
            size = int(length) if length and length.isdigit() and int(length) > 0 else None
        except (OSError, ValueError, urllib.error.URLError) as error:
            note += f"; its size is unknown ({getattr(error, 'reason', None) or error})"
    if size:
        note = note.replace(f"offering {name}", f"offering {name} ({size / 1e6:.1f} MB)", 1)
    return OfferedModel(url=url, name=name, size=size), note


class _HashCache:
    """SHA-256 of local model files, remembered by path, size and modification time (a
    1 GB file takes seconds to hash)."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self.changed = False
        self.known: dict[str, dict] = {}
        if file is not None:
            try:
                self.known = json.loads(file.read_text())
            except (OSError, ValueError):
                self.known = {}

    def sha256(self, path: Path) -> str:
        stat = path.stat()
        key = str(path.resolve())
        entry = self.known.get(key)
        if entry and entry.get("size") == stat.st_size and entry.get("mtime_ns") == stat.st_mtime_ns:
            return entry["sha256"]
        digest = sha256_file(path)
        self.known[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
        self.changed = True
        return digest

    def save(self) -> None:
        if self.file is not None and self.changed and self.file.parent.is_dir():
            try:
                write_atomically(self.file, (json.dumps(self.known, indent=1) + "\n").encode())
            except OSError:
                pass   # only a cache
