"""What the worker's boot snapshot holds: the interpreter after the imports a boot does.

``worker/snapshot_worker.js`` starts a Pyodide of its own, unpacks the same wheels and
tool module archives as the agent worker, calls :func:`preload`, then takes a memory
snapshot. A later boot restores it and finds these modules in ``sys.modules``: the agent
worker's own imports (and ``tool_modules.load_tools``, which reuses an imported module)
cost nothing then.

A snapshot can hold no live JavaScript object other than globals reached by a path from
``globalThis``, so nothing here keeps one: the tool modules are imported, not loaded
(``make_tools(context)`` runs at boot, with the worker's real context). A tool module
with pip dependencies is left to the boot, which installs them with micropip first.
"""

from __future__ import annotations

import gc
import importlib
import json

from ..tool_modules import ToolModuleError, import_tool_module
from .tool_loading import TOOL_DIR, choose


def preload(entry_module: str, manifest_json: str, wanted: str | None = None) -> str:
    """Import the entry module and the chosen tool modules of the manifest; returns JSON
    ``{"imported": [names], "skipped": {name: why}}`` (a string: no proxy to free)."""
    importlib.import_module(entry_module)
    manifest = json.loads(manifest_json)
    entries, _ = choose(manifest.get("tool_modules") or [], wanted or None)
    imported: list[str] = []
    skipped: dict[str, str] = {}
    for entry in entries:
        name = str(entry.get("name"))
        if entry.get("error"):
            skipped[name] = "cannot be loaded (the boot reports why)"
        elif entry.get("requirements"):
            skipped[name] = "has pip dependencies, installed at boot"
        else:
            try:
                import_tool_module(TOOL_DIR / entry["path"])
            except ToolModuleError as error:
                skipped[name] = str(error)
            else:
                imported.append(name)
    gc.collect()   # drop cycles that may hold JS proxies before the snapshot
    return json.dumps({"imported": imported, "skipped": skipped})
