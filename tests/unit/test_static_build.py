"""serving/static_build.py without a browser: the <meta> policy each page gets (and what a
<meta> cannot carry), where it goes, and what --build refuses before it writes anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from serving.common import PrepareError
from serving.headers import inline_script_hashes
from serving.model_server import model_server_from_args
from serving.static_build import (MARKER, add_to_page, check_output, check_site, meta_policy,
                                  page_policy, refuse_model_proxy)

ROOT = Path(__file__).resolve().parents[2]
PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>t</title>
  <script>console.log('inline')</script>
  <script type="module" src="app.js"></script>
</head>
<body></body>
</html>
"""


def test_a_page_gets_its_policy_as_a_meta_after_the_charset_and_before_any_script(tmp_path):
    page = tmp_path / "index.html"
    page.write_text(PAGE)
    policy = page_policy(page)
    [inline] = inline_script_hashes(page)
    assert f"'{inline}'" in policy and "frame-ancestors 'none'" in policy
    built = add_to_page(PAGE, policy, "../offline.js")
    head = built.index('<meta charset="utf-8">') + len('<meta charset="utf-8">')
    assert built[head:].startswith('\n<meta http-equiv="Content-Security-Policy" content="'
                                   "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' "
                                   f"'{inline}'")
    meta_end = built.index('">', head)
    assert built[meta_end:].startswith('">\n<script src="../offline.js"></script>')
    assert built.index("http-equiv") < built.index("console.log")
    # What a <meta> cannot carry is left out of it (browsers would ignore it, warning).
    assert "frame-ancestors" not in built
    assert built.replace(built[head:meta_end + 2] + '\n<script src="../offline.js"></script>',
                         "") == PAGE


def test_meta_policy_drops_only_what_a_meta_cannot_carry():
    policy = "default-src 'self'; frame-ancestors 'none'; sandbox; report-uri /r; img-src data:"
    assert meta_policy(policy) == "default-src 'self'; img-src data:"


@pytest.mark.parametrize("page,expected_before", [
    ("<!doctype html>\n<html><meta charset=utf-8><p>hi", "<meta charset=utf-8>"),
    ("<!doctype html>\n<p>no head at all", "<!doctype html>"),
    ("<html><head><script>1</script><meta charset=utf-8>", "<head>"),
])
def test_the_policy_goes_before_anything_the_page_loads(page, expected_before):
    built = add_to_page(page, "default-src 'self'", "offline.js")
    assert built[:built.index("\n<meta http-equiv")].endswith(expected_before)


def test_the_model_servers_origin_is_in_the_policy_when_the_page_reaches_it(tmp_path):
    page = tmp_path / "index.html"
    page.write_text(PAGE)
    server = model_server_from_args("http://127.0.0.1:11434/v1", environ={})
    assert "connect-src 'self' http://127.0.0.1:11434;" in page_policy(page, server)


def test_the_proxy_and_api_keys_are_refused_with_the_reason():
    refuse_model_proxy(model_server_from_args("http://127.0.0.1:11434/v1", environ={}))
    with pytest.raises(PrepareError, match="needs serve.py's own server"):
        refuse_model_proxy(model_server_from_args("http://127.0.0.1:11434/v1", proxy=True,
                                                  environ={}))
    with pytest.raises(PrepareError, match="PY_AGENT_API_KEY or OPENAI_API_KEY.*a static "
                                           "site cannot keep"):
        refuse_model_proxy(model_server_from_args("http://127.0.0.1:11434/v1",
                                                  environ={"OPENAI_API_KEY": "sk-x"}))
    # the extension's build says so of an extension
    with pytest.raises(PrepareError, match="an extension cannot keep"):
        refuse_model_proxy(model_server_from_args("http://127.0.0.1:11434/v1",
                                                  environ={"OPENAI_API_KEY": "sk-x"}),
                           "an extension")


def test_only_a_new_empty_or_earlier_build_folder_is_written(tmp_path):
    check_output(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_output(tmp_path / "empty")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / MARKER).write_text("{}")
    (earlier / "index.html").write_text("old")
    check_output(earlier)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(PrepareError, match="not empty and not an earlier build"):
        check_output(tmp_path / "mine")
    (tmp_path / "file").write_text("")
    with pytest.raises(PrepareError, match="a file is in the way"):
        check_output(tmp_path / "file")


def test_a_site_may_not_bring_what_the_build_writes(tmp_path):
    (tmp_path / "index.html").write_text("mine")
    check_site(tmp_path)
    (tmp_path / "worker").mkdir()
    (tmp_path / "service_worker.js").write_text("")
    with pytest.raises(PrepareError, match="service_worker.js, worker would replace"):
        check_site(tmp_path)


def serve_py(*arguments: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PY_AGENT_API_KEY", "OPENAI_API_KEY")}
    return subprocess.run([sys.executable, str(ROOT / "serve.py"), *arguments],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=environment)


def test_the_command_line_refuses_a_proxied_build_before_writing_anything(tmp_path):
    result = serve_py("--build", str(tmp_path / "out"), "--model-url",
                      "http://127.0.0.1:9/v1", "--model-proxy")
    assert result.returncode == 1 and "needs serve.py's own server" in result.stderr
    assert not (tmp_path / "out").exists()
    result = serve_py("--cross-origin-isolation")
    assert result.returncode == 1 and "goes with --build" in result.stderr


def test_a_site_page_that_loads_from_the_hosts_root_is_warned_about(tmp_path, capsys):
    (tmp_path / "index.html").write_text(
        "<script type=module>import {createAgent} from '/agent.js';</script>"
        "<link rel=stylesheet href=\"./style.css\"><img src=\"//cdn.example/x.png\">")
    (tmp_path / "ok.html").write_text("<script type=module>import {createAgent} from "
                                      "'../agent.js';</script>")
    check_site(tmp_path)
    said = capsys.readouterr().out
    assert "warning: index.html loads '/agent.js' from the root of the host" in said
    assert "ok.html" not in said and "cdn.example" not in said and "style.css" not in said
