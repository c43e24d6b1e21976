"""serve.py's boot snapshot: what names it, and what happens when it cannot be made.

(Making a real one, under Node.js, and restoring it in a browser is covered end to end
in tests/e2e/test_boot_snapshot.py.)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from serving import boot_snapshot
from serving.boot_snapshot import SnapshotMaker, prune_snapshots, snapshot_key

MANIFEST = {
    "pyodide": {"version": "314.0.7", "indexURL": "/vendor/pyodide-314.0.7/"},
    "py_agent": {"wheel": "/vendor/wheels/a/py_agent.whl", "sha256": "aa"},
    "dependencies": [{"name": "assel", "wheel": "/vendor/wheels/assel.whl"}],
    "tool_modules": [{"name": "demo_tools", "archive": "/vendor/tools/1/demo_tools.zip",
                      "requirements": [], "error": None}],
    "model_server": {"url": "http://localhost:1/v1"},
}


def changed(path: list[str], value) -> dict:
    manifest = json.loads(json.dumps(MANIFEST))
    target = manifest
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return manifest


def test_the_key_follows_what_the_snapshot_holds_and_nothing_else() -> None:
    key = snapshot_key(MANIFEST)
    assert snapshot_key(json.loads(json.dumps(MANIFEST))) == key
    for path, value in ((["py_agent", "sha256"], "bb"), (["pyodide", "version"], "315"),
                        (["tool_modules", 0, "archive"], "/vendor/tools/2/demo_tools.zip"),
                        (["dependencies"], [])):
        assert snapshot_key(changed(path, value)) != key, path
    # The model server is chosen at run time: not part of the snapshot.
    assert snapshot_key(changed(["model_server", "url"], "http://other/v1")) == key


@pytest.fixture
def snapshots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "vendor" / "snapshots"
    monkeypatch.setattr(boot_snapshot, "SNAPSHOTS", folder)
    monkeypatch.setattr(boot_snapshot, "WEB", tmp_path)
    return folder


def test_without_node_there_is_no_served_snapshot_and_it_says_why(
        snapshots: Path, capsys: pytest.CaptureFixture) -> None:
    maker = SnapshotMaker()
    maker.node = None
    assert maker.entry(MANIFEST) is None
    assert "Node.js is not installed" in capsys.readouterr().out
    assert not snapshots.exists() or not any(snapshots.iterdir())


def test_a_failing_builder_is_said_once_and_not_retried(
        snapshots: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fake_node = tmp_path / "node"
    calls = tmp_path / "calls"
    fake_node.write_text(f"#!{sys.executable}\nimport sys\n"
                         f"open({str(calls)!r}, 'a').write('x')\n"
                         "sys.stderr.write('TypeError: no snapshot for you\\n')\n"
                         "sys.exit(1)\n")
    fake_node.chmod(0o755)
    maker = SnapshotMaker(node=str(fake_node))
    assert maker.entry(MANIFEST) is None
    assert "TypeError: no snapshot for you" in capsys.readouterr().out
    assert maker.entry(MANIFEST) is None and maker.entry(MANIFEST, wait=False) is None
    assert calls.read_text() == "x"


def test_a_made_snapshot_is_found_again_and_only_the_newest_are_kept(
        snapshots: Path, tmp_path: Path) -> None:
    snapshots.mkdir(parents=True)
    for number in range(boot_snapshot.KEEP + 2):
        key = f"{number:016x}"
        (snapshots / f"{key}.bin.gz").write_bytes(b"gz")
        (snapshots / f"{key}.json").write_text(json.dumps(
            {"url": f"/vendor/snapshots/{key}.bin.gz", "sha256": "s", "bytes": 2}))
        os.utime(snapshots / f"{key}.json", (number, number))
    prune_snapshots()
    kept = sorted(p.stem for p in snapshots.glob("*.json"))
    assert kept == [f"{n:016x}" for n in range(2, boot_snapshot.KEEP + 2)]
    assert sorted(p.name[:16] for p in snapshots.glob("*.bin.gz")) == kept

    # One described but whose bytes are gone is not offered.
    maker = SnapshotMaker(node=None)
    assert maker._read(kept[-1])["url"].endswith(f"{kept[-1]}.bin.gz")
    (snapshots / f"{kept[-1]}.bin.gz").unlink()
    assert maker._read(kept[-1]) is None
