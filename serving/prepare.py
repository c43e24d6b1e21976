"""Preparation: make ``web/vendor/`` complete for the pinned versions, the current py_agent
source and the tool modules, so that the page can be served, and the manifest that says
what is there. Idempotent and, once done, offline:

1. ``npm ci`` runs only when ``node_modules`` is missing or was installed from another
   ``package-lock.json`` (and only when ``web/vendor`` is stale too); the runtime files
   of the pinned Pyodide, PyScript, MicroPython and markdown-it are copied into
   ``web/vendor/<name>-<version>/`` (serving/runtimes.py).
2. micropip's wheel and the wheels of py_agent's pinned, pure-Python dependencies are
   fetched with pip once into ``web/vendor/wheels/`` (serving/vendored_wheels.py).
3. The ``py_agent`` wheel is built from the working tree by the project's build backend
   into ``web/vendor/wheels/<source-hash>/``, only when the source changed, so a code
   change is a new URL and never a stale cache entry (serving/wheel.py).
4. The tool modules (the demo's ``demo_tools/`` and each ``--tools`` one) are zipped,
   checked and given their PEP 723 wheels (serving/page_tool_modules.py).
5. The boot snapshot browsers start from is made under Node.js (serving/boot_snapshot.py).
6. ``web/vendor/manifest.json`` tells the worker what to load (serving/manifest.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterable

from . import ui_bundle
from .boot_snapshot import SnapshotMaker
from .common import PrepareError, say, sha256_file
from .embedder import ensure_embedder
from .manifest import MANIFEST_FORMAT, page_runtime, read_manifest, url_of, write_manifest
from .paths import PACKAGE_LOCK, VENDOR, WEB
from .runtimes import (ensure_runtimes, locked_versions, pyodide_lock_info,
                       vendor_dir_names)
from .page_tool_modules import DEMO_TOOLS, ToolModules, prune
from .vendored_wheels import dependency_wheels, ensure_wheel
from .wheel import ensure_app_wheel, project_metadata

# What web/vendor/ holds besides the runtimes: removed with nothing else when those change.
OTHER_VENDOR_ENTRIES = {"wheels", "tools", "deps", "snapshots", "embedder", "manifest.json"}


def check_page_references(names: dict[str, str]) -> None:
    """index.html and web/ui.json (the PyScript config) name the versioned PyScript and
    MicroPython paths (relative ones: the page works at any path), and ui.json does not list
    the bundled UI modules; say so if they do not match (they are static files, edited by
    hand)."""
    index, config_file = WEB / "index.html", WEB / "ui.json"
    if not index.exists() or not config_file.exists():
        return
    html, config_text = index.read_text(), config_file.read_text()
    for prefix, text, where in (("pyscript", html, "web/index.html"),
                                ("micropython", config_text, "web/ui.json")):
        wanted = f"vendor/{names[prefix]}/"
        if wanted not in text:
            raise PrepareError(f"{where} does not load {wanted}: update its "
                               f"{prefix} paths to the versions pinned in package-lock.json.")
    # Every module of web/ui/ comes in one bundle (serving/ui_bundle.py) that main.py
    # unpacks; PyScript must not fetch them one by one as well.
    listed = [name for name in json.loads(config_text).get("files", {}) if "/ui/" in name]
    if listed:
        raise PrepareError(f"web/ui.json lists {', '.join(listed)} under \"files\": the UI "
                           f"modules come in one bundle ({ui_bundle.URL}); remove them.")


def prepare(tools: Iterable[Path] = (), *, snapshot: bool = True) -> dict:
    """Make web/vendor/ complete for the pinned versions, the current py_agent source and
    the tool modules (the demo's, then ``tools``), and, unless ``snapshot`` is False, the
    boot snapshot browsers start from (serving/boot_snapshot.py). Returns the manifest
    (also written to web/vendor/manifest.json)."""
    started = time.monotonic()
    VENDOR.mkdir(parents=True, exist_ok=True)
    lock_hash = sha256_file(PACKAGE_LOCK) if PACKAGE_LOCK.exists() else ""
    versions = locked_versions()
    manifest = read_manifest()
    names = vendor_dir_names(versions)
    recorded = manifest.get("runtimes") \
        if manifest and manifest.get("format") == MANIFEST_FORMAT else None
    ensure_runtimes(recorded, versions, lock_hash, keep=OTHER_VENDOR_ENTRIES)

    micropip_version, python = pyodide_lock_info(VENDOR / names["pyodide"])
    micropip_wheel = ensure_wheel("micropip", micropip_version, python)
    for stale in (VENDOR / "wheels").glob("micropip-*.whl"):
        if stale != micropip_wheel:
            stale.unlink()
    dependencies = [{"name": name, "version": version, "wheel": url_of(wheel)}
                    for name, version, wheel in dependency_wheels(python)]
    app_wheel, app_hash = ensure_app_wheel()
    check_page_references(names)

    project = project_metadata()["project"]
    new_manifest = {
        "format": MANIFEST_FORMAT,
        "runtimes": versions,
        "pyodide": {"version": versions["pyodide"], "python": python,
                    "indexURL": f"vendor/{names['pyodide']}/"},
        "pyscript": {"version": versions["@pyscript/core"],
                     "core": f"vendor/{names['pyscript']}/core.js"},
        "micropython": {"version": versions["@micropython/micropython-webassembly-pyscript"],
                        "module": f"vendor/{names['micropython']}/micropython.mjs"},
        "micropip": {"version": micropip_version, "wheel": url_of(micropip_wheel)},
        "page_model": {"wllama": f"vendor/{names['wllama']}/index.js",
                       "wasm": f"vendor/{names['wllama']}/wllama.wasm",
                       "worker": f"vendor/{names['wllama']}/llama_worker.js",
                       "sha256": f"vendor/{names['hash-wasm']}/index.esm.min.js"},
        "mcp": {"client": f"vendor/{names['mcp-client']}/mcp_client.mjs"},
        "page_reader": {"readability": f"vendor/{names['readability']}/Readability.js"},
        "py_agent": {"version": project["version"], "wheel": url_of(app_wheel),
                     "file_name": app_wheel.name, "sha256": app_hash},
        "dependencies": dependencies,
        # the sentence embedder, fetched by the worker after "ready" (serving/embedder.py)
        "embedder": ensure_embedder(),
    }
    modules = ToolModules([DEMO_TOOLS, *tools], page_runtime(new_manifest))
    new_manifest["tool_modules"] = modules.entries()
    prune(VENDOR / "tools", {VENDOR.parent / e["archive"].lstrip("/") for e in
                             new_manifest["tool_modules"] if e["archive"]})
    prune(VENDOR / "deps")
    if snapshot:
        served = SnapshotMaker().entry(new_manifest, wait=True)
        if served is not None:
            new_manifest["boot_snapshot"] = served
    if new_manifest != manifest:
        write_manifest(new_manifest)
        say("wrote web/vendor/manifest.json")
    say(f"prepared in {time.monotonic() - started:.2f} s")
    return new_manifest
