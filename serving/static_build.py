"""``serve.py --build DIR``: the app as a static site that any web server hosts, at any
path, sending no special headers (GitHub Pages, Netlify, a folder on a web server).

The folder holds the page and its files (web/, the UI modules in ``ui-bundle.json``),
``worker/``, the vendored runtimes and wheels, the tool modules, the boot snapshot, the
manifest, a ``--site`` folder in front of the page, and two files of its own:
``offline.js``, which each page loads, and ``service_worker.js`` (serving/offline/).
Every URL is relative, so the folder works wherever it is put.

What the development server sends as headers, a static host cannot:

- The Content-Security-Policy goes into each page as a ``<meta http-equiv>`` (the same
  policy, with the hashes of that page's inline scripts). A ``<meta>`` policy cannot
  say ``frame-ancestors`` (any site may frame the page), ``report-uri``/``report-to``
  or ``sandbox``, and applies to the page only, not to its workers. From the second
  visit on, the service worker serves every file with the complete policy as a header:
  the page's with ``frame-ancestors 'none'``, the workers' own.
- Cross-origin isolation (COOP/COEP) is needed by nothing today (no ``SharedArrayBuffer``
  anywhere); ``--cross-origin-isolation`` has the service worker add those headers, so
  the site is isolated from the second visit on (for an in-page model that wants threads).
- Caching: ``vendor/`` paths are versioned, everything else is revalidated, and the
  service worker keeps one build's files together for visits without a network.

``--model-url`` works when the model server allows the site's origin (CORS): the worker
fetches it directly and the policy's ``connect-src`` names it. ``--gguf`` files are
copied into ``models/`` (the browser keeps the one a visitor picks in its own storage, so
the service worker does not keep them too); ``--gguf`` URLs join ``connect-src``. Without
cross-origin isolation an in-page model runs single-threaded. The proxy (``--model-proxy``,
or an API key in the environment) needs serve.py's server and is refused here.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from py_agent.openai_compat.environment import API_KEY_VARIABLES

from . import app_files, ui_bundle
from .app_files import build_into, copy_file, prepared_manifest, visible_files
from .common import PrepareError, say
from .headers import (SECURITY_HEADERS, Policy, content_security_policy,
                      inline_script_hashes)
from .model_server import ModelServer
from .page_models import FOLDER as MODELS_FOLDER, PageModels
from .paths import ROOT

OFFLINE = ROOT / "serving" / "offline"
OFFLINE_SCRIPT = "offline.js"
SERVICE_WORKER = "service_worker.js"
# What serve.py's development server answers for SERVICE_WORKER: one that removes a
# build's service worker a browser installed for the same origin earlier.
RETIRE_SERVICE_WORKER = OFFLINE / "retire_service_worker.js"
MARKER = ".py-agent-build"          # says a folder is a build that --build may replace
# Names the build writes at its top level; a --site folder may not bring its own.
RESERVED = {"vendor", "worker", ui_bundle.URL.lstrip("/"), OFFLINE_SCRIPT, SERVICE_WORKER,
            MARKER, ".nojekyll", MODELS_FOLDER}
# Not kept by the service worker: debugging aids, the snapshot, which the agent's worker
# keeps itself (a second copy would be ~10 MB more of the visitor's disk), and the
# in-page models, which the page keeps itself (only the one the visitor picks).
NOT_KEPT_SUFFIXES = (".map",)
NOT_KEPT_FOLDERS = ("vendor/snapshots/", MODELS_FOLDER + "/")
ISOLATION_HEADERS = ("Cross-Origin-Opener-Policy", "Cross-Origin-Embedder-Policy",
                     "Cross-Origin-Resource-Policy")


@dataclass(frozen=True)
class BuildReport:
    """What a build wrote."""

    folder: Path
    files: int
    bytes: int
    kept_bytes: int       # what the service worker keeps for offline visits
    seconds: float


# ------------------------------------------------------------------ policies and pages

def connect_sources(model_server: ModelServer | None,
                    page_models: PageModels | None = None) -> list[str]:
    """The origins a built page fetches besides its own: the model server's and those of
    the ``--gguf`` URLs, when there are any."""
    return [*(model_server.connect_sources() if model_server else ()),
            *(page_models.connect_sources() if page_models else ())]


def page_policy(page: Path, model_server: ModelServer | None = None,
                page_models: PageModels | None = None) -> str:
    """The Content-Security-Policy of an HTML page: the development server's, with the
    hashes of this page's inline scripts."""
    return str(content_security_policy(script_hashes=inline_script_hashes(page),
                                       connect=connect_sources(model_server, page_models)))


def other_policy(model_server: ModelServer | None = None,
                 page_models: PageModels | None = None) -> str:
    """The policy of every other file (what matters: the workers' scripts)."""
    return str(content_security_policy(connect=connect_sources(model_server, page_models)))


def meta_policy(policy: str) -> str:
    """``policy`` without the directives a ``<meta>`` element cannot carry."""
    return Policy.parse(policy).meta()


class _HeadFinder(html.parser.HTMLParser):
    """Where to add to a page's head: after the charset ``<meta>`` (which must stay in
    the first 1024 bytes) when nothing that loads comes before it, else after ``<head>``,
    else after ``<html>`` (a page may leave both tags out), else after the doctype."""

    LOADS = ("script", "link", "style", "base")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: dict[str, tuple[int, int, int]] = {}   # tag -> (line, column, length)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        key = "meta" if tag == "meta" and any(name == "charset" for name, _ in attrs) else tag
        key = "loads" if key in self.LOADS else key
        if key in ("head", "meta", "html", "loads") and key not in self.found:
            line, column = self.getpos()
            self.found[key] = (line, column, len(self.get_starttag_text() or ""))

    def handle_decl(self, decl: str) -> None:
        if decl.lower().startswith("doctype") and "doctype" not in self.found:
            line, column = self.getpos()
            self.found["doctype"] = (line, column, len(decl) + 3)   # <!...>


def head_insertion_point(text: str) -> int:
    finder = _HeadFinder()
    finder.feed(text)
    finder.close()
    offsets = {}
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for key, (line, column, length) in finder.found.items():
        offsets[key] = (starts[line - 1] + column, length)
    loads_at = offsets.get("loads", (len(text), 0))[0]
    if "meta" in offsets and offsets["meta"][0] < loads_at:
        return sum(offsets["meta"])
    for key in ("head", "html", "doctype"):
        if key in offsets:
            return sum(offsets[key])
    return 0


def add_to_page(text: str, policy: str, offline_script: str) -> str:
    """The page with its policy as a ``<meta>`` and the offline script, first in its head
    (a policy applies only to what comes after it)."""
    at = head_insertion_point(text)
    policy_text = meta_policy(policy).replace("&", "&amp;").replace('"', "&quot;")
    added = (f'\n<meta http-equiv="Content-Security-Policy" content="{policy_text}">'
             f'\n<script src="{offline_script}"></script>')
    return text[:at] + added + text[at:]


# ------------------------------------------------------------------ the folder

def check_output(folder: Path) -> None:
    """--build may write ``folder`` if it is new, empty or an earlier build."""
    app_files.check_output(folder, "--build", MARKER)


def check_site(site: Path) -> None:
    clashes = sorted(p.name for p in site.iterdir() if p.name in RESERVED)
    if clashes:
        raise PrepareError(f"--site {site}: {', '.join(clashes)} would replace the build's "
                           "own; rename them")
    for path in visible_files(site):
        if path.suffix in (".html", ".js", ".mjs", ".css"):
            for reference in root_references(path.read_text(encoding="utf-8", errors="replace")):
                say(f"warning: {path.relative_to(site)} loads {reference!r} from the root of "
                    "the host: that works only if the site is published at a root; write it "
                    "relative to the page (e.g. './agent.js')")


# src="/x", href="/x", url(/x), import ... from '/x', import('/x'): not "//host/x".
_ROOT_REFERENCE = re.compile(
    r"""(?:\b(?:src|href)\s*=\s*["']|\burl\(\s*["']?|\bfrom\s*["']|\bimport\s*\(\s*["'])"""
    r"""(/(?!/)[^"')\s]*)""")


def root_references(text: str) -> list[str]:
    """The URLs of a page or script that start at the host's root ('/agent.js')."""
    return sorted(set(_ROOT_REFERENCE.findall(text)))


def refuse_model_proxy(model_server: ModelServer | None, home: str = "a static site") -> None:
    """:class:`PrepareError` if ``model_server`` needs serve.py's proxy (``--model-proxy``,
    an API key, an IPv6 address), which a build (``home``: a static site, an extension)
    cannot carry."""
    if model_server is None or not model_server.proxy:
        return
    if model_server.api_key:
        raise PrepareError(
            f"an API key is set ({' or '.join(API_KEY_VARIABLES)}): {home} cannot keep "
            "it secret, since every user's browser would get it. Serve the page with "
            "`python serve.py --model-url ...` (its proxy adds the key), or build without "
            "the key for a server that needs none")
    raise PrepareError(
        "the model proxy (--model-proxy, or a server address the policy cannot name, such as "
        f"an IPv6 literal) needs serve.py's own server: {home} reaches the model server "
        "directly, so that server must allow its origin (CORS). Build without "
        "--model-proxy, or serve with `python serve.py --model-url ... --model-proxy`")


def write_site(staging: Path, manifest: dict, site: Path | None,
               model_server: ModelServer | None, isolation: bool,
               page_models: PageModels | None = None) -> list[str]:
    """Write the site into the empty folder ``staging``; the files the service worker
    keeps."""
    app_files.copy_app(staging, manifest, page_models)
    if site is not None:
        for path in visible_files(site):
            copy_file(path, staging / path.relative_to(site))
    copy_file(OFFLINE / OFFLINE_SCRIPT, staging / OFFLINE_SCRIPT)

    pages = {}
    for page in sorted(staging.rglob("*.html")):
        relative = page.relative_to(staging)
        if relative.parts[0] == "vendor":
            continue
        pages[relative.as_posix()] = policy = page_policy(page, model_server, page_models)
        up = "../" * (len(relative.parts) - 1)
        page.write_text(add_to_page(page.read_text(encoding="utf-8"), policy,
                                    up + OFFLINE_SCRIPT), encoding="utf-8")
    (staging / ".nojekyll").write_text("")   # GitHub Pages: publish the files as they are

    files = sorted(p.relative_to(staging).as_posix() for p in visible_files(staging))
    kept = [f for f in files if not f.endswith(NOT_KEPT_SUFFIXES)
            and not f.startswith(NOT_KEPT_FOLDERS)]
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (staging / name).read_bytes() + b"\0")
    headers = {name: value for name, value in SECURITY_HEADERS.items()
               if isolation or name not in ISOLATION_HEADERS}
    build = {"version": digest.hexdigest()[:16], "files": kept,
             "headers": {"all": headers, "pages": pages,
                         "other": other_policy(model_server, page_models)}}
    (staging / SERVICE_WORKER).write_text(
        f"const BUILD = {json.dumps(build, indent=1)};\n\n" +
        (OFFLINE / SERVICE_WORKER).read_text(encoding="utf-8"), encoding="utf-8")
    (staging / MARKER).write_text(json.dumps({"version": build["version"],
                                              "built_at": int(time.time())}) + "\n")
    return kept


def build_site(folder: Path, *, tools: Iterable[Path] = (), site: Path | None = None,
               model_server: ModelServer | None = None, isolation: bool = False,
               page_models: PageModels | None = None) -> BuildReport:
    """Prepare, then write the static site into ``folder`` (replacing an earlier build
    there only once the new one is complete)."""
    started = time.monotonic()
    folder = folder.resolve()
    tools = list(tools)
    refuse_model_proxy(model_server)
    check_output(folder)
    if site is not None:
        check_site(site)
    manifest = prepared_manifest(tools, model_server, page_models)
    if "boot_snapshot" not in manifest:
        say("warning: no boot snapshot in this build (see above); browsers make their own")
    kept: list[str] = []

    def write(staging: Path) -> None:
        kept.extend(write_site(staging, manifest, site, model_server, isolation, page_models))

    build_into(folder, write)
    files = list(visible_files(folder))
    return BuildReport(folder=folder, files=len(files),
                       bytes=sum(p.stat().st_size for p in files),
                       kept_bytes=sum((folder / name).stat().st_size for name in kept),
                       seconds=time.monotonic() - started)
