"""serving/extension_build.py without a browser: the side panel page (no inline script
left), the extension's policy and manifest, the match patterns it accepts, and the zip."""

from __future__ import annotations

import json
import struct
import zipfile

import pytest

from serving.common import PrepareError
from serving.extension_build import (check_sites, extension_manifest, extension_policy,
                                     icon_png, side_panel_page, write_zip)
from serving.model_server import model_server_from_args
from serving.paths import WEB

PAGE = """<!doctype html>
<html><head>
  <meta charset="utf-8">
  <script>console.log('first')</script>
  <script type="module">import {x} from './x.js'; x();</script>
  <script type="module" src="app.js"></script>
  <script></script>
</head><body><script type="mpy" src="main.py"></script></body></html>
"""


def test_the_side_panel_has_no_inline_script_and_keeps_their_order():
    html, scripts = side_panel_page(PAGE)
    assert list(scripts) == ["sidepanel-1.js", "sidepanel-2.js"]
    assert scripts["sidepanel-1.js"].strip() == "console.log('first')"
    order = [html.index(s) for s in ('src="sidepanel-1.js"', 'type="module" src="sidepanel-2.js"',
                                     'src="app.js"', 'src="sidepanel.js"', "</head>")]
    assert order == sorted(order)
    assert "console.log" not in html and 'src="main.py"' in html


def test_the_real_page_becomes_a_side_panel_without_inline_scripts():
    html, scripts = side_panel_page((WEB / "index.html").read_text())
    assert len(scripts) >= 3
    assert all('src="' in tag for tag in html.split("<script")[1:]
               if not tag.lstrip().startswith('type="mpy"'))


def test_the_policy_allows_webassembly_and_nothing_looser():
    policy = extension_policy()
    directives = dict(d.split(" ", 1) for d in policy.split("; "))
    assert directives["script-src"] == "'self' 'wasm-unsafe-eval'"
    assert directives["worker-src"] == "'self'"   # MV3 refuses blob: here
    assert "unsafe-inline" not in policy and "unsafe-eval'" not in policy.replace(
        "wasm-unsafe-eval'", "")
    assert "frame-ancestors" not in policy
    server = model_server_from_args("http://127.0.0.1:11434/v1")
    assert "connect-src 'self' http://127.0.0.1:11434" in extension_policy(server)


def test_the_manifest_asks_for_the_least_permission():
    manifest = extension_manifest(extension_policy(), [])
    assert manifest["manifest_version"] == 3
    assert manifest["permissions"] == ["activeTab", "scripting", "sidePanel"]
    assert "host_permissions" not in manifest
    assert manifest["side_panel"]["default_path"] == "sidepanel.html"
    with_sites = extension_manifest(extension_policy(), ["https://docs.example.org/*"])
    assert with_sites["host_permissions"] == ["https://docs.example.org/*"]


@pytest.mark.parametrize("pattern", ["https://example.org/*", "http://127.0.0.1/*",
                                     "*://*.example.org/docs/*", "<all_urls>",
                                     "http://localhost:8080/*"])
def test_match_patterns_are_accepted(pattern):
    assert check_sites([pattern]) == [pattern]


@pytest.mark.parametrize("pattern", ["example.org", "https://example.org", "ftp://x/*",
                                     "https://exa*mple.org/*"])
def test_bad_match_patterns_are_refused_with_the_form_wanted(pattern):
    with pytest.raises(PrepareError, match="not a match pattern"):
        check_sites([pattern])


def test_the_icons_are_png_of_their_size():
    data = icon_png(48)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert struct.unpack(">II", data[16:24]) == (48, 48)


def test_the_zip_has_the_manifest_at_its_top(tmp_path):
    folder = tmp_path / "ext"
    (folder / "icons").mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"manifest_version": 3}))
    (folder / "icons" / "icon-16.png").write_bytes(icon_png(16))
    (folder / ".py-agent-extension").write_text("{}")
    write_zip(folder, tmp_path / "ext.zip")
    names = zipfile.ZipFile(tmp_path / "ext.zip").namelist()
    assert sorted(names) == ["icons/icon-16.png", "manifest.json"]
