"""``serve.py --extension DIR``: the app as an unpacked Chrome extension (Manifest V3)
whose side panel is the chat page, and ``DIR.zip`` beside it for the Chrome Web Store.

The extension ships the same files as the static site (serving/app_files.py: one build
of the agent and its UI), plus:

- ``sidepanel.html``: web/index.html, whose inline scripts become files of their own
  (an extension page may run no inline script, whatever its policy says), and which
  starts the page tools (extension/sidepanel.js);
- ``extension/``'s scripts: the service worker (the toolbar button opens the panel),
  the page tools of the side panel, and the page reader injected into the tab the user
  reads, with Readability (``vendor/readability-*``);
- ``manifest.json``: the permissions (``activeTab``, ``scripting``, ``sidePanel``; host
  permissions only for the sites, the model server and the tool servers the build
  names) and
  the extension pages' Content-Security-Policy: the page's own, where JavaScript eval is
  impossible and only WebAssembly may be compiled (``'wasm-unsafe-eval'``, the one
  loosening Manifest V3 allows);
- the icons, drawn here.

docs/extension.md says what each permission is for and what is read when.
"""

from __future__ import annotations

import json
import re
import struct
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .app_files import (build_into, check_output, copy_app, copy_file, prepared_manifest,
                        visible_files)
from .common import PrepareError, say
from .headers import content_security_policy
from .model_server import ModelServer
from .page_models import PageModels
from .paths import ROOT
from .static_build import connect_sources, refuse_model_proxy
from .tool_servers import ToolServers
from .wheel import project_metadata

EXTENSION = ROOT / "extension"
SIDE_PANEL = "sidepanel.html"
MARKER = ".py-agent-extension"
# No "storage": the panel keeps everything in IndexedDB and localStorage, which need no
# permission, so chrome.storage would be asked for and never used (docs/extension.md).
PERMISSIONS = ["activeTab", "scripting", "sidePanel"]
ICON_SIZES = (16, 32, 48, 128)
# Prompt API for extensions since Chrome 138 (web pages since 148).
MINIMUM_CHROME = "138"

_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc\s*=)([^>]*)>(.*?)</script\s*>",
                            re.IGNORECASE | re.DOTALL)
_SITE_PATTERN = re.compile(r"^(https?|\*)://(\*|(\*\.)?[^/*:]+)(:\d+)?/.*$")


@dataclass(frozen=True)
class ExtensionReport:
    """What a build wrote."""

    folder: Path
    zip: Path
    files: int
    bytes: int
    zip_bytes: int
    seconds: float


def extension_policy(model_server: ModelServer | None = None,
                     page_models: PageModels | None = None,
                     tool_servers: ToolServers | None = None) -> str:
    """The extension pages' Content-Security-Policy: the page's (no eval, WebAssembly
    only) in the manifest's form, with the model server's, the ``--gguf`` URLs' and the
    ``--mcp`` servers' origins in ``connect-src``."""
    connect = [*connect_sources(model_server, page_models),
               *(tool_servers.connect_sources() if tool_servers else ())]
    return content_security_policy(connect=connect).extension()


def host_permissions(sites: Iterable[str], model_server: ModelServer | None = None,
                     tool_servers: ToolServers | None = None) -> list[str]:
    """The sites the user named (``--extension-site``), and the servers the panel reaches
    without CORS headers from them: the model server, each tool server."""
    hosts = list(sites)
    servers = ([model_server.origin] if model_server else []) + \
        (tool_servers.origins() if tool_servers else [])
    for origin in servers:
        if origin + "/*" not in hosts:
            hosts.append(origin + "/*")
    return hosts


def side_panel_page(index_html: str) -> tuple[str, dict[str, str]]:
    """The side panel's HTML from the page's, and the scripts its inline ones became
    (file name -> source), in order; the page tools start after the page's own."""
    scripts: dict[str, str] = {}

    def moved(match: re.Match) -> str:
        attrs, body = match.group(1), match.group(2)
        if not body.strip():
            return match.group(0)
        name = f"sidepanel-{len(scripts) + 1}.js"
        scripts[name] = body.strip("\n") + "\n"
        return f'<script{attrs} src="{name}"></script>'

    html = _INLINE_SCRIPT.sub(moved, index_html)
    start = '  <script type="module" src="sidepanel.js"></script>\n'
    at = html.lower().index("</head>")
    return html[:at] + start + html[at:], scripts


def check_sites(sites: Iterable[str]) -> list[str]:
    """The ``--extension-site`` match patterns, checked (Chrome refuses a manifest with
    a bad one, and says little)."""
    checked = []
    for site in sites:
        if site != "<all_urls>" and not _SITE_PATTERN.match(site):
            raise PrepareError(f"--extension-site {site!r}: not a match pattern such as "
                               "'https://example.org/*' or 'http://127.0.0.1/*'")
        checked.append(site)
    return checked


def extension_manifest(policy: str, host_permissions: list[str]) -> dict:
    """The extension's manifest.json."""
    project = project_metadata()["project"]
    icons = {str(size): f"icons/icon-{size}.png" for size in ICON_SIZES}
    manifest = {
        "manifest_version": 3,
        "name": "py-agent",
        "version": project["version"],
        "description": "An AI agent in the side panel that helps with the page you are "
                       "reading, on Chrome's built-in model: nothing leaves your device.",
        "minimum_chrome_version": MINIMUM_CHROME,
        "permissions": PERMISSIONS,
        "background": {"service_worker": "background.js"},
        "side_panel": {"default_path": SIDE_PANEL},
        "action": {"default_title": "Open py-agent", "default_icon": icons},
        "icons": icons,
        "content_security_policy": {"extension_pages": policy},
    }
    if host_permissions:
        manifest["host_permissions"] = host_permissions
    return manifest


def icon_png(size: int) -> bytes:
    """The icon: a blue disc with a white ring, as a PNG (drawn here: no image tools)."""
    rows = []
    centre = (size - 1) / 2
    for y in range(size):
        row = bytearray([0])   # filter: none
        for x in range(size):
            r = ((x - centre) ** 2 + (y - centre) ** 2) ** 0.5 / (size / 2)
            if r > 1:
                row += bytes((0, 0, 0, 0))
            elif 0.42 < r < 0.62:
                row += bytes((255, 255, 255, 255))
            else:
                row += bytes((37, 99, 235, 255))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def write_extension(staging: Path, manifest: dict, model_server: ModelServer | None,
                    page_models: PageModels | None, sites: list[str],
                    tool_servers: ToolServers | None = None) -> None:
    """Write the unpacked extension into the empty folder ``staging``."""
    copy_app(staging, manifest, page_models, runtimes=("readability",))
    for path in visible_files(EXTENSION):
        copy_file(path, staging / path.relative_to(EXTENSION))
    index = staging / "index.html"
    html, scripts = side_panel_page(index.read_text(encoding="utf-8"))
    index.unlink()
    (staging / SIDE_PANEL).write_text(html, encoding="utf-8")
    for name, source in scripts.items():
        (staging / name).write_text(source, encoding="utf-8")
    for size in ICON_SIZES:
        (staging / "icons").mkdir(exist_ok=True)
        (staging / "icons" / f"icon-{size}.png").write_bytes(icon_png(size))
    # The model server and tool servers the user named are reached without CORS (a host
    # permission each).
    hosts = host_permissions(sites, model_server, tool_servers)
    policy = extension_policy(model_server, page_models, tool_servers)
    (staging / "manifest.json").write_text(
        json.dumps(extension_manifest(policy, hosts), indent=2) + "\n", encoding="utf-8")
    (staging / MARKER).write_text(json.dumps({"built_at": int(time.time())}) + "\n")


def write_zip(folder: Path, target: Path) -> None:
    """``folder``'s files in a zip with manifest.json at its top (the Web Store's form);
    written beside and renamed, so a reader never sees half of it."""
    partial = target.with_name(f".{target.name}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in visible_files(folder):
            archive.write(path, path.relative_to(folder).as_posix())
    partial.replace(target)


def build_extension(folder: Path, *, tools: Iterable[Path] = (),
                    model_server: ModelServer | None = None,
                    page_models: PageModels | None = None,
                    sites: Iterable[str] = (),
                    tool_servers: ToolServers | None = None) -> ExtensionReport:
    """Prepare, then write the unpacked extension into ``folder`` and its zip beside it
    (``folder`` + ``.zip``)."""
    started = time.monotonic()
    folder = folder.resolve()
    sites = check_sites(sites)
    refuse_model_proxy(model_server, "an extension")
    check_output(folder, "--extension", MARKER)
    manifest = prepared_manifest(tools, model_server, page_models, tool_servers)
    if "boot_snapshot" not in manifest:
        say("warning: no boot snapshot in this build (see above); the panel makes its own")
    build_into(folder, lambda staging: write_extension(staging, manifest, model_server,
                                                       page_models, sites, tool_servers))
    packed = folder.with_name(folder.name + ".zip")
    write_zip(folder, packed)
    files = list(visible_files(folder))
    return ExtensionReport(folder=folder, zip=packed, files=len(files),
                           bytes=sum(p.stat().st_size for p in files),
                           zip_bytes=packed.stat().st_size,
                           seconds=time.monotonic() - started)
