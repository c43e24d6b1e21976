"""The page boots the agent worker, reports each phase, surfaces errors and stays local.

Runs against serve.py's own server (the ``app_server`` fixture), so the headers, the
Content-Security-Policy and the vendored runtime are exactly what users get.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

BOOT_PHASES = ["pyodide-loaded", "packages-installed", "agent-imported", "ready"]
# Cold Pyodide start in headless Chromium on a busy 2-core machine can take a while.
BOOT_TIMEOUT_MS = 90_000


class Recorder:
    """Every request the browser context makes (page and worker) and every console
    error or uncaught page exception."""

    def __init__(self, page: Page) -> None:
        self.requests: list[str] = []
        self.problems: list[str] = []
        page.context.on("request", lambda request: self.requests.append(request.url))
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.problems.append(f"pageerror: {error}"))

    def _on_console(self, message) -> None:
        if message.type == "error" or "Content Security Policy" in message.text:
            self.problems.append(f"console.{message.type}: {message.text}")


def boot_phases(page: Page) -> list[dict]:
    return page.eval_on_selector_all(
        '[data-testid="boot-phases"] li',
        """items => items.map(li => ({phase: li.dataset.phase, ms: Number(li.dataset.ms),
                                      took: Number(li.dataset.took),
                                      pageMs: Number(li.dataset.pageMs)}))""")


def test_page_boots_to_ready_locally(page: Page, app_server: str) -> None:
    recorder = Recorder(page)
    page.goto(app_server + "/")
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-state", "ready", timeout=BOOT_TIMEOUT_MS)
    expect(status).to_contain_text("Ready")

    # The UI really is MicroPython: main.py stamped its runtime on the status line.
    assert status.get_attribute("data-ui-runtime").startswith("micropython ")
    assert page.evaluate("crossOriginIsolated") is True

    phases = boot_phases(page)
    assert [p["phase"] for p in phases] == BOOT_PHASES
    worker_ms = [p["ms"] for p in phases]
    page_ms = [p["pageMs"] for p in phases]
    assert worker_ms == sorted(worker_ms) and worker_ms[0] > 0
    assert page_ms == sorted(page_ms)
    assert all(p["took"] >= 0 for p in phases)
    assert sum(p["took"] for p in phases) == pytest.approx(worker_ms[-1], abs=len(phases))
    expect(page.get_by_test_id("boot-error")).to_be_hidden()
    assert recorder.problems == []

    # Nothing left this server, and the recorder did see the worker's own traffic.
    origin = app_server.rstrip("/")
    assert recorder.requests, "no requests recorded"
    strays = [url for url in recorder.requests
              if not (url == origin or url.startswith(origin + "/"))]
    assert strays == []
    paths = {urlsplit(url).path for url in recorder.requests}
    assert "/worker/agent_worker.js" in paths
    assert any(p.endswith("/pyodide.asm.wasm") for p in paths)
    assert any(p.endswith("-py3-none-any.whl") and "py_agent" in p for p in paths)


def test_python_error_during_boot_reaches_the_page(page: Page, app_server: str) -> None:
    page.goto(app_server + "/?entry=py_agent.no_such_module:main")
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-state", "error", timeout=BOOT_TIMEOUT_MS)
    expect(status).to_contain_text("boot:entry")
    expect(status).to_contain_text(
        "ModuleNotFoundError: No module named 'py_agent.no_such_module'")
    details = page.get_by_test_id("boot-error")
    expect(details).to_be_visible()
    expect(details).to_contain_text("Traceback (most recent call last)")
    # The phases before the failure were still reported; ready never came.
    assert [p["phase"] for p in boot_phases(page)] == BOOT_PHASES[:-1]


def test_entry_outside_py_agent_is_refused(page: Page, app_server: str) -> None:
    page.goto(app_server + "/?entry=os:system")
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-state", "error", timeout=BOOT_TIMEOUT_MS)
    expect(status).to_contain_text("not a py_agent module")
    assert boot_phases(page) == []


def test_worker_script_that_fails_to_load_is_reported(page: Page, app_server: str) -> None:
    # A module worker whose script is missing fires a bare 'error' event on the page.
    page.route("**/worker/agent_worker.js*", lambda route: route.fulfill(status=404, body=""))
    page.goto(app_server + "/")
    status = page.get_by_test_id("status")
    expect(status).to_have_attribute("data-state", "error", timeout=BOOT_TIMEOUT_MS)
    expect(status).to_contain_text("worker-script")


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, \
                response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def test_server_headers_and_types(app_server: str) -> None:
    status, headers, body = fetch(app_server + "/vendor/manifest.json")
    assert status == 200
    manifest = json.loads(body)
    expected = {
        "/": ("text/html", "no-cache"),
        "/main.py": ("text/x-python", "no-cache"),
        "/worker/agent_worker.js": ("application/javascript", "no-cache"),
        "/vendor/manifest.json": ("application/json", "no-cache"),
        # The manifest's URLs are relative to the site's root.
        "/" + manifest["pyodide"]["indexURL"] + "pyodide.asm.wasm":
            ("application/wasm", "public, max-age=31536000, immutable"),
        "/" + manifest["pyodide"]["indexURL"] + "pyodide.mjs":
            ("application/javascript", "public, max-age=31536000, immutable"),
        "/" + manifest["py_agent"]["wheel"]:
            ("application/zip", "public, max-age=31536000, immutable"),
    }
    for path, (mime, cache) in expected.items():
        status, headers, _ = fetch(app_server + path)
        assert status == 200, path
        assert headers["content-type"].startswith(mime), path
        assert headers["cache-control"] == cache, path
        assert headers["cross-origin-opener-policy"] == "same-origin"
        assert headers["cross-origin-embedder-policy"] == "require-corp"
        assert headers["cross-origin-resource-policy"] == "same-origin"
        csp = headers["content-security-policy"]
        assert "default-src 'self'" in csp and "'wasm-unsafe-eval'" in csp
        assert "http:" not in csp and "https:" not in csp and "*" not in csp
        # No JavaScript eval, in the page or in the agent worker.
        assert "'unsafe-eval'" not in csp, path


@pytest.mark.parametrize("path", ["/vendor/", "/serve.py", "/../serve.py", "/%2e%2e/serve.py",
                                  "/worker/../serve.py", "/.git/HEAD", "/tests/e2e/conftest.py",
                                  "/worker/"])
def test_server_exposes_nothing_else(app_server: str, path: str) -> None:
    status, headers, _ = fetch(app_server + path)
    assert status == 404, path
    assert headers["cross-origin-opener-policy"] == "same-origin"
