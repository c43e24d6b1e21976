"""The worker's tool modules: the ones the manifest lists (serve.py's ``--tools`` and the
demo's), unpacked, their PEP 723 dependencies installed with micropip from the vendored
wheels, then loaded through :mod:`py_agent.tools.modules`, as in CPython.

A module that cannot be fetched, installed or imported becomes an error in the result
(the page shows it); the others load all the same.
"""

from __future__ import annotations

import asyncio
import io
import zipfile
from pathlib import Path
from typing import Any

from ..tools.modules import LoadedTools, ToolContext, ToolModuleError, load_tool_modules

TOOL_DIR = Path("/home/pyodide/tool_modules")
FETCH_TIMEOUT_S = 60.0
INSTALL_TIMEOUT_S = 120.0


def choose(entries: list[dict[str, Any]], wanted: str | None,
           ) -> tuple[list[dict[str, Any]], list[ToolModuleError]]:
    """The entries named in ``wanted`` (``"a,b"``, the worker's ``tools`` parameter), in
    that order, or all of them; an error for each name that is not served."""
    if not wanted:
        return list(entries), []
    by_name = {entry["name"]: entry for entry in entries}
    chosen, errors = [], []
    for name in dict.fromkeys(n.strip() for n in wanted.split(",") if n.strip()):
        if name in by_name:
            chosen.append(by_name[name])
        else:
            served = ", ".join(by_name) or "none"
            errors.append(ToolModuleError(name, "", f"is not served here (served: {served}); "
                                          f"start serve.py with --tools PATH/{name}.py"))
    return chosen, errors


async def load_served_tools(boot: Any, manifest: dict[str, Any], wanted: str | None,
                            context: ToolContext) -> LoadedTools:
    """Fetch, install and load the chosen tool modules of ``manifest``."""
    entries, errors = choose(manifest.get("tool_modules") or [], wanted)
    paths = []
    for entry in entries:
        name = str(entry.get("name"))
        try:
            if entry.get("error"):
                raise ToolModuleError(name, entry.get("archive") or "", str(entry["error"]))
            await _unpack(boot, entry)
            if entry.get("requirements"):
                await _install(boot, name, entry, manifest)
        except ToolModuleError as error:
            errors.append(error)
            continue
        paths.append(TOOL_DIR / entry["path"])
    loaded = load_tool_modules(paths, context)
    loaded.errors[:0] = errors
    return loaded


async def _unpack(boot: Any, entry: dict[str, Any]) -> None:
    name, url = str(entry["name"]), str(entry["archive"])
    try:
        data = (await asyncio.wait_for(boot.fetchBytes(url), FETCH_TIMEOUT_S)).to_bytes()
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(TOOL_DIR)
    except Exception as exc:  # a JsException for HTTP errors, BadZipFile, OSError, timeout
        reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else str(exc)
        raise ToolModuleError(name, url, f"could not be fetched: {reason}") from exc


async def _install(boot: Any, name: str, entry: dict[str, Any],
                   manifest: dict[str, Any]) -> None:
    """Install the module's dependency wheels (served by us) with micropip, offline."""
    import pyodide_js  # type: ignore[import-not-found]

    def absolute(url: str) -> str:
        return str(boot.siteURL(url))   # the manifest's URLs are relative to the site

    try:
        await asyncio.wait_for(_micropip_install(
            pyodide_js, absolute(manifest["micropip"]["wheel"]),
            [absolute(u) for u in entry["requirements"]]), INSTALL_TIMEOUT_S)
    except Exception as exc:
        reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"{exc}"
        wanted = ", ".join(entry.get("dependencies") or []) or "its dependencies"
        raise ToolModuleError(name, entry.get("archive") or "",
                              f"could not install {wanted} with micropip: {reason}") from exc


async def _micropip_install(pyodide_js: Any, micropip_wheel: str, wheels: list[str]) -> None:
    await pyodide_js.loadPackage(micropip_wheel)
    import micropip  # type: ignore[import-not-found]

    # deps=False: serve.py resolved every dependency already; the index is never asked.
    await micropip.install(wheels, deps=False)
