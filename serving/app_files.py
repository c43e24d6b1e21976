"""The app's files as every home of it ships them: the static site (``--build``,
serving/static_build.py) and the Chrome extension (``--extension``,
serving/extension_build.py) start from the same preparation and copy the same files, so
there is one build of the agent and its UI, never a second copy to keep in step.

What every home gets: the page (``web/`` without ``vendor/`` and ``ui/``), the UI
modules in one ``ui-bundle.json``, the agent worker (``worker/``), the pinned runtimes,
the wheels, tool modules and boot snapshot the manifest names, the manifest itself, and
the ``--gguf`` files. A home then adds its own files, and the folder replaces an earlier
build only once it is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from . import ui_bundle
from .common import PrepareError
from .manifest import SiteManifest
from .model_server import ModelServer
from .page_models import PageModels
from .paths import VENDOR, WEB, WORKER
from .prepare import prepare
from .runtimes import vendor_dir_names
from .tool_servers import ToolServers

# Runtimes only a home that needs them gets (the page reader's Readability is the
# extension's: a web page cannot read another tab).
HOME_ONLY_RUNTIMES = {"readability"}


def visible_files(folder: Path) -> Iterable[Path]:
    """The files of ``folder`` a build ships: no dotfiles, caches or bytecode."""
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts) \
                and path.suffix not in (".pyc", ".pyo"):
            yield path


def copy_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def manifest_files(manifest: dict) -> set[str]:
    """The files of web/ the manifest names (relative to web/), besides the runtimes."""
    urls = [manifest["micropip"]["wheel"], manifest["py_agent"]["wheel"],
            *(d["wheel"] for d in manifest.get("dependencies", []))]
    for module in manifest.get("tool_modules", []):
        urls += [module["archive"]] if module.get("archive") else []
        urls += module.get("requirements", [])
    if manifest.get("boot_snapshot"):
        urls.append(manifest["boot_snapshot"]["url"])
    return {url.lstrip("/") for url in urls}


def prepared_manifest(tools: Iterable[Path], model_server: ModelServer | None,
                      page_models: PageModels | None,
                      tool_servers: ToolServers | None = None) -> dict:
    """Prepare web/vendor/ and return the manifest a build ships (with its tool modules
    and a boot snapshot made for them)."""
    tools = list(tools)
    return SiteManifest(prepare(tools), tools, model_server=model_server,
                        page_models=page_models, tool_servers=tool_servers)(wait=True)


def copy_app(staging: Path, manifest: dict, page_models: PageModels | None = None, *,
             runtimes: Iterable[str] = ()) -> None:
    """Copy the app into the empty folder ``staging``; ``runtimes`` names the
    home-only runtimes (by prefix) this home ships too."""
    for path in visible_files(WEB):
        relative = path.relative_to(WEB)
        if relative.parts[0] not in ("vendor", "ui"):
            copy_file(path, staging / relative)
    (staging / ui_bundle.URL.lstrip("/")).write_bytes(ui_bundle.ui_bundle(WEB / "ui"))
    for path in visible_files(WORKER):
        copy_file(path, staging / "worker" / path.relative_to(WORKER))
    wanted = set(runtimes)
    for prefix, name in vendor_dir_names(manifest["runtimes"]).items():
        if prefix in HOME_ONLY_RUNTIMES and prefix not in wanted:
            continue
        for path in visible_files(VENDOR / name):
            copy_file(path, staging / "vendor" / name / path.relative_to(VENDOR / name))
    for relative in sorted(manifest_files(manifest)):
        copy_file(WEB / relative, staging / relative)
    (staging / "vendor" / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for relative, path in (page_models.local_files() if page_models else {}).items():
        copy_file(path, staging / relative)


def check_output(folder: Path, option: str, marker: str) -> None:
    """A build may write ``folder`` if it is new, empty or an earlier build (it holds
    ``marker``)."""
    if folder.exists() and not folder.is_dir():
        raise PrepareError(f"{option} {folder}: a file is in the way")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / marker).is_file():
        raise PrepareError(f"{option} {folder}: the folder is not empty and not an earlier "
                           "build; name a new or empty folder")


def build_into(folder: Path, write: Callable[[Path], None]) -> None:
    """Have ``write`` fill a fresh folder beside ``folder``, then put it in ``folder``'s
    place (an earlier build there is replaced only once the new one is complete)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        write(staging)
        staging.chmod(0o755)
        if folder.exists():
            old = folder.with_name(f".{folder.name}-old-{os.getpid()}")
            folder.rename(old)
            staging.rename(folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
