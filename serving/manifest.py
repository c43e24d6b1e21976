"""The manifest: what the page's worker loads (``web/vendor/manifest.json``), and the
manifest a site hands out, which adds what its server or build was asked for.

``prepare()`` (serving/prepare.py) writes the prepared one: the pinned runtimes, micropip,
the py_agent wheel and its dependencies' wheels, the demo's tool modules and the boot
snapshot. :class:`SiteManifest` starts from it and adds the site's own tool modules
(rebuilt when their sources change), a boot snapshot made for them, the model server
the in-page models (``--gguf``) and the switches the worker obeys.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

from .boot_snapshot import SnapshotMaker
from .common import write_atomically
from .model_server import ModelServer
from .page_models import PageModels
from .tool_servers import ToolServers
from .paths import MANIFEST, WEB
from .page_tool_modules import DEMO_TOOLS, PageRuntime, ToolModules

MANIFEST_FORMAT = 1


def read_manifest() -> dict | None:
    """The prepared manifest, or None when there is none (or it is unreadable)."""
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None


def write_manifest(manifest: dict) -> None:
    write_atomically(MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())


def url_of(path: Path) -> str:
    """The URL of a file of web/ in the manifest: relative to the site's root (the worker
    resolves it there), so that a site works at any path."""
    return path.relative_to(WEB).as_posix()


def page_runtime(manifest: dict) -> PageRuntime:
    """The page's Python, Pyodide's package builds and the py_agent wheel (with those of
    its dependencies, if the manifest lists any), from a manifest."""
    index = WEB / manifest["pyodide"]["indexURL"].strip("/")
    lock = json.loads((index / "pyodide-lock.json").read_text())
    builds = {re.sub(r"[-_.]+", "-", name).lower(): package.get("version", "")
              for name, package in lock.get("packages", {}).items()}
    return PageRuntime(python=manifest["pyodide"]["python"], pyodide_packages=builds,
                       app_wheels=tuple(WEB / url.lstrip("/") for url in (
                           manifest["py_agent"]["wheel"],
                           *(d["wheel"] for d in manifest.get("dependencies", [])))))


class SiteManifest:
    """The manifest one site hands out: ``site_manifest(wait=False)`` is the prepared
    manifest with the site's tool modules as they are now (the demo's, then ``tools``),
    the boot snapshot made for them (at once if ``wait``, else in the background after a
    change), and the site's options (see serving/http_server.py's make_server)."""

    def __init__(self, prepared: dict, tools: Iterable[Path] = (), *,
                 model_server: ModelServer | None = None, snapshots: bool = True,
                 served_snapshot: bool = True, tool_worker: bool = True,
                 page_models: PageModels | None = None,
                 tool_servers: ToolServers | None = None, embedder: bool = True) -> None:
        self.prepared = prepared
        self.embedder = embedder
        self.modules = ToolModules([DEMO_TOOLS, *tools], page_runtime(prepared))
        self.modules.entries()   # prepare them now, and say what is wrong before serving
        self.maker = SnapshotMaker() if snapshots and served_snapshot else None
        self.model_server = model_server
        self.snapshots = snapshots
        self.tool_worker = tool_worker
        self.page_models = page_models
        self.tool_servers = tool_servers

    def __call__(self, wait: bool = False) -> dict:
        served = {key: value for key, value in self.prepared.items() if key != "boot_snapshot"}
        served["tool_modules"] = self.modules.entries()
        snapshot = self.maker.entry(served, wait=wait) if self.maker else None
        if snapshot is not None:
            served["boot_snapshot"] = snapshot
        if self.model_server is not None:
            served["model_server"] = self.model_server.manifest_entry()
        if self.page_models is not None and self.page_models.models:
            served["page_models"] = self.page_models.manifest_entries()
        if self.tool_servers is not None and self.tool_servers.urls:
            served["mcp_servers"] = self.tool_servers.manifest_entries()
        if not self.snapshots:
            served["snapshots"] = False
        if not self.tool_worker:
            served["tool_worker"] = False
        if not self.embedder:
            served.pop("embedder", None)   # the agent stays lexical (as ?embedder=off)
        return served
