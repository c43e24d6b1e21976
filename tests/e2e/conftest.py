"""End-to-end fixtures: Debian's Chromium, launched headless by pytest-playwright.

Playwright cannot download its own browser here, so every test uses the system
Chromium through ``executable_path``.
"""

from __future__ import annotations

import shutil

import pytest

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str:
    """The system Chromium, or a clear failure telling how to get it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium is not installed: run the README's test command, "
                    "which installs Debian's 'chromium' package.")
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": chromium_path(),
            "headless": True, "args": CHROMIUM_FLAGS}


# --- static server and fake LanguageModel (shared by the e2e tests) -------------------

import functools  # noqa: E402
import http.server  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
BLANK_PAGE = "/__e2e__/blank.html"   # an empty page any test can open on the server


class _IsolatedHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the repo with the cross-origin isolation headers the app needs."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".mjs": "text/javascript",
                      ".wasm": "application/wasm", ".json": "application/json"}

    def do_GET(self) -> None:
        if self.path.split("?")[0] == BLANK_PAGE:
            body = b"<!doctype html><meta charset=utf-8><title>blank</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # keep test output quiet
        pass


@pytest.fixture(scope="session")
def static_server():
    """Base URL (http://127.0.0.1:PORT) of the repo root, served cross-origin isolated."""
    handler = functools.partial(_IsolatedHandler, directory=str(REPO_ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def blank_url(static_server) -> str:
    """URL of an empty, cross-origin isolated page on the static server."""
    return static_server + BLANK_PAGE


@pytest.fixture
def install_fake_lm():
    """install(page, **config): put the fake LanguageModel on every document the page opens.

    Call before page.goto. config goes to window.__fakeLMConfig (see fake_language_model.js),
    e.g. install(page, availability="downloadable", contextWindow=500,
    responderSource="(input, ctx) => 'hi'", replies=["first", "second"]).
    """
    from tests.e2e.pages import install_fake_lm_scripts

    def install(page, **config) -> None:
        install_fake_lm_scripts(page, config)
    return install


# --- the app as users get it: serve.py's prepared runtime and headers ------------------

from serving.common import PrepareError  # noqa: E402
from serving.http_server import make_server  # noqa: E402
from serving.prepare import prepare  # noqa: E402


@pytest.fixture(scope="session")
def app_server():
    """Base URL (http://127.0.0.1:PORT) of the app served by serve.py: web/ at /,
    worker/ at /worker/, with the production headers (CSP, isolation, caching).
    Runs prepare() first (fast when web/vendor is already current)."""
    try:
        prepare()
    except PrepareError as error:
        pytest.fail(f"prepare() failed: {error}")
    # Pages boot from the snapshot serve.py made (as a user's first visit does), so each
    # test's fresh browser profile starts in about a second rather than four, and, being
    # restored, makes none of its own. No tool worker: a second Pyodide booting beside
    # every page doubles the suite's boot time on two cores; test_hung_tool.py,
    # test_model_server.py and test_boot_snapshot.py serve apps with it, as users get.
    # No sentence embedder either (a 31.7 MB model per fresh profile, four browsers at
    # once): test_embedder.py serves the app with the real one.
    server = make_server("127.0.0.1", 0, quiet=True, tool_worker=False, embedder=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()


# --- one booted chat page for the tests that need only a fresh chat --------------------

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test, for fixtures that act on a failure."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def shared_chat_page(browser, browser_context_args, app_server):
    """The test process's SharedChatPage (tests/e2e/shared_chat.py): one booted page
    that the tests needing only a fresh chat take turns on, across files."""
    from tests.e2e.shared_chat import SharedChatPage

    shared = SharedChatPage(browser, browser_context_args, app_server + "/")
    yield shared
    shared.close()


@pytest.fixture
def shared_chat(shared_chat_page, request):
    """``shared_chat.open(**settings) -> (page, watch)``: the booted chat page in a new
    chat of this test's own, checked to show nothing of an earlier test. A page found
    unfit at that check is replaced, and said in a warning (a test that leaves state the
    page cannot clean should say so: ``shared_chat.discard(why)``)."""
    import warnings

    reasons = len(shared_chat_page.reasons)
    yield shared_chat_page
    for reason in shared_chat_page.reasons[reasons:]:   # found when this test opened it
        warnings.warn(f"the shared chat page was booted again: {reason}", stacklevel=1)
    call = getattr(request.node, "report_call", None)
    shared_chat_page.finish(failed=call is None or call.failed)


@pytest.fixture(scope="module")
def shared_profile(browser, browser_context_args):
    """The file's SharedProfile (tests/e2e/shared_profile.py)."""
    from tests.e2e.shared_profile import SharedProfile

    shared = SharedProfile(browser, browser_context_args)
    yield shared
    shared.close()


@pytest.fixture
def quick_page(shared_profile, request):
    """A new page in the file's browser profile, its storage cleared and checked empty
    first: for tests that load a blank page and need nothing else of a new profile."""
    yield shared_profile.new_page()
    call = getattr(request.node, "report_call", None)
    shared_profile.done(failed=call is None or call.failed)


# Tests that run only when -m names their marker (python run_tests.py -- -m thorough):
# heavier than the default suite's budget (12 minutes on two cores) allows.
OPT_IN_MARKERS = ("thorough", "page_model_heavy")


def pytest_collection_modifyitems(config, items):
    chosen = config.option.markexpr or ""
    for item in items:
        for name in OPT_IN_MARKERS:
            if item.get_closest_marker(name) and name not in chosen:
                item.add_marker(pytest.mark.skip(reason=f"opt-in: run with -m {name}"))
