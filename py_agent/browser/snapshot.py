"""What the worker's boot snapshot holds: the interpreter after the imports a boot does.

``worker/snapshot_worker.js`` starts a Pyodide of its own, unpacks the same wheels and
tool module archives as the agent worker, calls :func:`preload`, then takes a memory
snapshot. A later boot restores it and finds these modules in ``sys.modules``: the agent
worker's own imports (and ``tools.modules.load_tools``, which reuses an imported module)
cost nothing then.

A snapshot can hold no live JavaScript object other than globals reached by a path from
``globalThis``, and no open file, so nothing here keeps one: the tool modules are
imported, not loaded (``make_tools(context)`` runs at boot, with the worker's real
context). A tool module with pip dependencies is left to the boot, which installs them
with micropip first. The retriever's caches (the word vectors, the stems of the
module-level tools' and the built-in tools' words) are filled too, so that building the
agent after a restore is quicker.

Last, the modules the snapshot holds are noted (:func:`.bootstrap.note_held`): a boot
from it reports any module imported before "ready" that it did not hold.
"""

from __future__ import annotations

import gc
import importlib
import json

from ..retrieval import ToolRetriever
from ..retrieval.embeddings import default_vectors
from ..tools.modules import ToolModuleError, import_tool_module
from ..tools import Tool
from ..turn.compact_tool import compact_tool
from ..turn.recall_tool import recall_tool
from . import bootstrap
from .worker_tool_modules import TOOL_DIR, choose


def preload(entry: str, manifest_json: str, wanted: str | None = None) -> str:
    """Import the entry point (``module:function``: the function's module, and the
    function) and the chosen tool modules of the manifest, and warm the retriever;
    returns JSON ``{"imported": [names], "skipped": {name: why}, "warmed": count}`` (a
    string: no proxy to free)."""
    module_name, _, function_name = entry.partition(":")
    module = importlib.import_module(module_name)
    if function_name:
        getattr(module, function_name)
    manifest = json.loads(manifest_json)
    entries, _ = choose(manifest.get("tool_modules") or [], wanted or None)
    imported: list[str] = []
    skipped: dict[str, str] = {}
    module_tools: list[Tool] = []
    for entry in entries:
        name = str(entry.get("name"))
        if entry.get("error"):
            skipped[name] = "cannot be loaded (the boot reports why)"
        elif entry.get("requirements"):
            skipped[name] = "has pip dependencies, installed at boot"
        else:
            try:
                module = import_tool_module(TOOL_DIR / entry["path"])
            except ToolModuleError as error:
                skipped[name] = str(error)
            else:
                imported.append(name)
                module_tools += [v for v in vars(module).values() if isinstance(v, Tool)]
    warmed = warm_retrieval(module_tools)
    gc.collect()   # drop cycles that may hold JS proxies before the snapshot
    bootstrap.note_held()   # last: nothing is imported after this before the snapshot
    return json.dumps({"imported": imported, "skipped": skipped, "warmed": warmed})


def warm_retrieval(tools: list[Tool]) -> int:
    """Fill the retriever's caches the agent's first retriever would fill: the word-vector
    table, read and indexed, and the stems of the tools' words, the built-in tools'
    (``compact``, ``recall``) among them. Building the agent in the worker took ~330 ms
    from a snapshot without them, ~230 ms with. Only module-level tools of the tool
    modules: ``make_tools(context)`` is the boot's to call, with the real context.
    Returns how many tools were indexed (best effort: a failure leaves the caches cold)."""
    default_vectors()   # first, so that an odd tool below leaves the vectors read
    try:
        ToolRetriever([*tools, compact_tool(), recall_tool()])
    except Exception:   # a tool module's odd tool: the boot reports it
        return 0
    return len(tools)
