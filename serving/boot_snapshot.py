"""The boot snapshot serve.py makes, so that a browser's first visit starts fast too.

A browser makes its own memory snapshot after its first boot (worker/boot_snapshot.js);
until then it would start Pyodide, unpack the wheels and import everything. Here the
same snapshot (worker/snapshot_build.js) is made once under Node.js
(serving/make_boot_snapshot.mjs), gzipped (38 MB of heap is about 8 MB on the wire),
kept in ``web/vendor/snapshots/`` and named in the manifest as ``boot_snapshot``: {url,
sha256 (of the heap), bytes, parts (what it was made from, compared by the worker with
what it boots)}. A snapshot that cannot be made is said and skipped: the page then
boots as before.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from .common import say, write_atomically
from .paths import ROOT, VENDOR, WEB, WORKER

SNAPSHOTS = VENDOR / "snapshots"
BUILDER = ROOT / "serving" / "make_boot_snapshot.mjs"
# What the snapshot is made by, besides the manifest's wheels and archives: a change to
# any of these makes a new one.
BUILD_SOURCES = (BUILDER, WORKER / "snapshot_build.js", WORKER / "python_runtime.js",
                 WORKER / "snapshot_store.js")
AGENT_ENTRY = "py_agent.browser.main:main"   # the agent worker's entry (worker/agent_worker.js)
BUILD_TIMEOUT_S = 240
KEEP = 8   # snapshots kept on disk (one per set of tool modules recently served)


def snapshot_key(manifest: dict) -> str:
    """A name for the snapshot of this manifest's default boot."""
    digest = hashlib.sha256()
    digest.update(json.dumps({
        "pyodide": manifest["pyodide"], "py_agent": manifest["py_agent"],
        "dependencies": manifest.get("dependencies", []),
        "tool_modules": manifest.get("tool_modules", []), "entry": AGENT_ENTRY,
    }, sort_keys=True).encode())
    for source in BUILD_SOURCES:
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


class SnapshotMaker:
    """Makes and finds served boot snapshots: ``entry(manifest)`` is the manifest's
    ``boot_snapshot`` (made first if ``wait``, else in the background), or None."""

    def __init__(self, node: str | None = None) -> None:
        self.node = node or shutil.which("node")
        self._lock = threading.Lock()
        self._building: set[str] = set()
        self._failed: set[str] = set()   # keys whose build failed: not tried again

    def entry(self, manifest: dict, *, wait: bool = True) -> dict | None:
        key = snapshot_key(manifest)
        found = self._read(key)
        if found is not None or key in self._failed:
            return found
        if wait:
            return self._build(key, manifest)
        with self._lock:
            if key in self._building:
                return None
            self._building.add(key)
        threading.Thread(target=self._build, args=(key, manifest), daemon=True).start()
        return None

    def _read(self, key: str) -> dict | None:
        try:
            entry = json.loads((SNAPSHOTS / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        return entry if (WEB / entry["url"].lstrip("/")).is_file() else None

    def _build(self, key: str, manifest: dict) -> dict | None:
        try:
            entry = self._make(key, manifest)
        except BootSnapshotError as error:
            self._failed.add(key)
            say(f"no boot snapshot from the server ({error}); browsers make their own")
            return None
        finally:
            with self._lock:
                self._building.discard(key)
        say(f"made the boot snapshot: {entry['bytes'] / 1e6:.1f} MB of heap, "
            f"{entry['gzipped'] / 1e6:.1f} MB gzipped")
        return entry

    def _make(self, key: str, manifest: dict) -> dict:
        if not self.node:
            raise BootSnapshotError("Node.js is not installed")
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="py-agent-snapshot-") as scratch:
            heap = Path(scratch) / "heap.bin"
            request = Path(scratch) / "request.json"
            request.write_text(json.dumps({"manifest": manifest, "web_root": str(WEB),
                                           "out": str(heap), "entry": AGENT_ENTRY}))
            try:
                done = subprocess.run([self.node, str(BUILDER), str(request)],
                                      capture_output=True, text=True, cwd=ROOT,
                                      timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise BootSnapshotError(f"Node.js took over {BUILD_TIMEOUT_S} s") from None
            if done.returncode:
                lines = (done.stderr or done.stdout).strip().splitlines()
                raise BootSnapshotError(_last_error(lines))
            try:
                report = json.loads(done.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                raise BootSnapshotError("the builder said nothing readable") from None
            packed = gzip.compress(heap.read_bytes(), compresslevel=6, mtime=0)
        target = SNAPSHOTS / f"{key}.bin.gz"
        write_atomically(target, packed)
        entry = {"url": target.relative_to(WEB).as_posix(), "sha256": report["sha256"],
                 "bytes": report["bytes"], "gzipped": len(packed), "parts": report["parts"],
                 "imported": report.get("imported", []), "skipped": report.get("skipped", {}),
                 "warmed": report.get("warmed", 0)}
        write_atomically(SNAPSHOTS / f"{key}.json", json.dumps(entry, indent=1).encode())
        prune_snapshots(keep=KEEP)
        return entry


class BootSnapshotError(RuntimeError):
    """The server could not make a boot snapshot (the page boots without one)."""


def _last_error(lines: list[str]) -> str:
    """The line of a Node.js failure that names the error."""
    for line in reversed(lines):
        if "Error" in line and len(line) < 400:
            return line.strip()
    return (lines[-1].strip()[:300] if lines else "Node.js failed")


def prune_snapshots(keep: int = KEEP) -> None:
    """Keep the ``keep`` newest snapshots (by when they were made)."""
    described = sorted(SNAPSHOTS.glob("*.json"), key=lambda p: p.stat().st_mtime,
                       reverse=True)
    for old in described[keep:]:
        (SNAPSHOTS / f"{old.stem}.bin.gz").unlink(missing_ok=True)
        old.unlink(missing_ok=True)
