"""serving/extension_build.py without a browser: the side panel page (no inline script
left), the extension's policy and manifest, the match patterns it accepts, the zip, and
the tool servers (--mcp) it is built with."""

from __future__ import annotations

import json
import struct
import zipfile

import pytest

from serving import extension_build
from serving.common import PrepareError
from serving.extension_build import (check_sites, extension_manifest, extension_policy,
                                     host_permissions, icon_png, side_panel_page, write_zip)
from serving.model_server import model_server_from_args
from serving.tool_servers import ToolServers
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


TOOL_SERVERS = ToolServers(("http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/other/mcp",
                            "https://tools.example.test/mcp"))


def test_tool_servers_join_the_policy_and_the_host_permissions():
    policy = extension_policy(tool_servers=TOOL_SERVERS)
    connect = dict(d.split(" ", 1) for d in policy.split("; "))["connect-src"]
    assert connect == "'self' http://127.0.0.1:3001 https://tools.example.test"
    server = model_server_from_args("http://127.0.0.1:11434/v1", environ={})
    assert host_permissions(["https://docs.example.org/*", "http://127.0.0.1:3001/*"], server,
                            TOOL_SERVERS) == ["https://docs.example.org/*",
                                              "http://127.0.0.1:3001/*",
                                              "http://127.0.0.1:11434/*",
                                              "https://tools.example.test/*"]
    assert host_permissions([]) == []


def test_an_extension_built_with_tool_servers_names_them_like_the_page(tmp_path, monkeypatch):
    asked = {}

    def prepared_manifest(tools, model_server, page_models, tool_servers=None):
        asked["tool_servers"] = tool_servers
        return {"runtimes": {}, "mcp_servers": tool_servers.manifest_entries()}

    def copy_app(staging, manifest, page_models=None, *, runtimes=()):
        (staging / "index.html").write_text(PAGE)
        (staging / "vendor").mkdir()
        (staging / "vendor" / "manifest.json").write_text(json.dumps(manifest))

    monkeypatch.setattr(extension_build, "prepared_manifest", prepared_manifest)
    monkeypatch.setattr(extension_build, "copy_app", copy_app)
    report = extension_build.build_extension(tmp_path / "ext", tool_servers=TOOL_SERVERS)
    assert asked["tool_servers"] == TOOL_SERVERS
    manifest = json.loads((report.folder / "manifest.json").read_text())
    assert manifest["host_permissions"] == ["http://127.0.0.1:3001/*",
                                            "https://tools.example.test/*"]
    assert "connect-src 'self' http://127.0.0.1:3001 https://tools.example.test;" in \
        manifest["content_security_policy"]["extension_pages"]
    worker_manifest = json.loads((report.folder / "vendor" / "manifest.json").read_text())
    assert worker_manifest["mcp_servers"] == [{"url": url} for url in TOOL_SERVERS.urls]


def test_the_command_line_builds_an_extension_with_its_tool_servers_and_refuses_a_build(
        tmp_path, monkeypatch, capsys):
    import serve

    built = {}
    monkeypatch.setattr(serve, "extension", lambda folder, *rest: built.update(
        folder=folder, tool_servers=rest[-1]) or 0)
    assert serve.main(["--extension", str(tmp_path / "ext"), "--mcp",
                       "http://127.0.0.1:3001/mcp"]) == 0
    assert built["tool_servers"].urls == ("http://127.0.0.1:3001/mcp",)
    assert serve.main(["--build", str(tmp_path / "site"), "--mcp",
                       "http://127.0.0.1:3001/mcp"]) == 1
    assert "--mcp goes with serve.py's own server or --extension" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()
