"""serve.py's revalidated responses carry an ETag, and an unchanged one costs a 304 and no
body (serving/validators.py): the page's scripts, the worker's, the UI bundle and the
manifest are asked for again on every load, and used to be sent whole each time."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from serving.http_server import make_server


@pytest.fixture
def server(tmp_path):
    (tmp_path / "tool.js").write_text("export const answer = 42;\n")
    running = make_server("127.0.0.1", 0, quiet=True, mounts={"/mounted/": tmp_path})
    threading.Thread(target=running.serve_forever, daemon=True).start()
    yield running.url, tmp_path
    running.shutdown()
    running.server_close()


def get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, \
                response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


@pytest.mark.parametrize("path", ["/", "/worker/agent_worker.js", "/llm_host.js",
                                  "/ui-bundle.json", "/vendor/manifest.json"])
def test_an_unchanged_response_is_a_304_without_a_body(server, path):
    url, _ = server
    status, headers, body = get(url + path)
    assert status == 200 and body
    tag = headers["etag"]
    assert tag.startswith('"') and headers["cache-control"] == "no-cache"
    status, again, body = get(url + path, **{"If-None-Match": tag})
    assert (status, body) == (304, b"")
    assert again["etag"] == tag
    # The 304 carries the same policy and headers, which the browser's copy takes on.
    for name in ("content-security-policy", "cross-origin-opener-policy", "cache-control"):
        assert again[name] == headers[name], name


def test_a_changed_file_or_another_servers_copy_is_sent_whole(server):
    url, folder = server
    status, headers, body = get(url + "/mounted/tool.js")
    assert status == 200 and body == b"export const answer = 42;\n"
    (folder / "tool.js").write_text("export const answer = 43;\n")
    status, changed, body = get(url + "/mounted/tool.js", **{"If-None-Match": headers["etag"]})
    assert status == 200 and body == b"export const answer = 43;\n"
    assert changed["etag"] != headers["etag"]
    # A copy another server left on this origin: a tag of its own, or only a date (which
    # says nothing about whether it is this file).
    for other in ({"If-None-Match": '"from-a-static-build"'},
                  {"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"}):
        status, _, body = get(url + "/mounted/tool.js", **other)
        assert status == 200 and body == b"export const answer = 43;\n", other


def test_versioned_files_stay_cached_forever_without_a_revalidation(server):
    url, _ = server
    _, _, manifest = get(url + "/vendor/manifest.json")
    wheel = json.loads(manifest)["py_agent"]["wheel"]
    status, headers, _ = get(url + "/" + wheel)
    assert status == 200 and headers["cache-control"] == "public, max-age=31536000, immutable"
