"""serving/ui_bundle.py: the page's UI modules in one response, rebuilt when one changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from serving.ui_bundle import ui_bundle


def test_the_bundle_holds_every_module_and_follows_edits(tmp_path):
    (tmp_path / "app.py").write_text("A = 'é'\n", encoding="utf-8")
    (tmp_path / "chat.py").write_text("B = 2\n")
    (tmp_path / "notes.txt").write_text("not a module")
    first = ui_bundle(tmp_path)
    assert json.loads(first) == {"app.py": "A = 'é'\n", "chat.py": "B = 2\n"}
    assert ui_bundle(tmp_path) is first   # unchanged files: the same bundle, not rebuilt

    (tmp_path / "chat.py").write_text("B = 3\n")
    stat = (tmp_path / "chat.py").stat()
    os.utime(tmp_path / "chat.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert json.loads(ui_bundle(tmp_path))["chat.py"] == "B = 3\n"


def test_the_real_ui_folder_is_bundled_whole():
    folder = Path(__file__).resolve().parents[2] / "web" / "ui"
    assert set(json.loads(ui_bundle(folder))) == {p.name for p in folder.glob("*.py")}
