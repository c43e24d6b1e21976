"""The extension as the tests drive it: built once by ``serve.py``'s own code (with a host
permission for 127.0.0.1, where the fixture pages are served, since no test can click the
toolbar button that grants activeTab; with the tiny GGUF as its in-page model, ``--gguf``;
and with a model server, ``--model-url``), loaded into Chromium with ``--load-extension``
in a persistent context, and a server of fixture pages.

Chromium's side panel itself cannot be opened by a headless test: the tests open the
side panel's page, chrome-extension://ID/sidepanel.html, in a tab of its own. The page
tools then read the tab used before it (extension/page_tools.js says why).
"""

from __future__ import annotations

import functools
import http.server
import random
import threading
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, Playwright

from serving.extension_build import build_extension
from serving.model_server import model_server_from_args
from serving.page_models import page_models_from_args
from serving.tool_servers import tool_servers_from_args
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path
from tests.e2e.pages import install_fake_lm_scripts

FIXTURES = Path(__file__).with_name("fixture_pages")
FIXTURE_SITE = "http://127.0.0.1/*"

# The long article: sections that each carry a word found nowhere else ("marker"), so a
# test can tell which of them reached a prompt. About 70,000 characters: several times
# the fake model's window.
ARTICLE_SECTIONS = 30
PLANTED = ("The cancellation fee for a booking made through the harbour office is "
           "thirty-five euros, refunded in full when a storm closes the harbour.")
HUGE_CHARS = 5_000_000
HUGE_NEEDLE = "The lighthouse keeper's cat is called Marmalade."


def marker(section: int) -> str:
    return f"zeta{section:02d}quill"


_WORDS = ("harbour boat tide ferry pier sail rope anchor gull wave dock crew mast keel "
          "deck cabin chart compass lantern net fish market quay storm calm breeze "
          "island coast cliff beach shell sand rock pool channel buoy beacon signal").split()


def _paragraph(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def article_html() -> str:
    rng = random.Random(7)
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<title>A harbour town guide</title></head><body>",
             "<nav><a href='/'>Home</a> <a href='/about'>About</a></nav><article>",
             "<h1>A harbour town guide</h1>"]
    for section in range(1, ARTICLE_SECTIONS + 1):
        parts.append(f"<h2>Section {section}: {marker(section)}</h2>")
        for paragraph in range(5):
            text = _paragraph(rng, 70)
            if paragraph == 2:
                text = f"Note {marker(section)} for this part. " + text
            if section == 17 and paragraph == 3:
                text = PLANTED + " " + text
            parts.append(f"<p>{text}</p>")
    parts.append("</article><footer><p>Printed by the harbour office.</p></footer></body></html>")
    return "\n".join(parts)


def huge_html() -> str:
    """About 5 MB of visible text in paragraphs; the needle is at its very end."""
    rng = random.Random(11)
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<title>Everything about the harbour</title></head><body><main>",
             "<h1>Everything about the harbour</h1>"]
    size = 0
    while size < HUGE_CHARS:
        text = _paragraph(rng, 120)
        parts.append(f"<p>{text}</p>")
        size += len(text)
    parts.append(f"<p>{HUGE_NEEDLE}</p></main></body></html>")
    return "\n".join(parts)


def pictures_html() -> str:
    """A page with two pictures: one the extension may read (this server), one whose
    address no extension may read (a port nothing listens on)."""
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Harbour "
            "pictures</title></head><body><h1>Harbour pictures</h1>"
            "<p>The harbour at dusk:</p><img src='/red.png' alt='a red harbour buoy' "
            "width='60' height='40'><p>And the old lighthouse.</p></body></html>")


def red_png() -> bytes:
    from tests.unit.media_samples import png
    return png(60, 40)


GENERATED = {"/article.html": article_html, "/huge.html": huge_html,
             "/pictures.html": pictures_html}
BINARY = {"/red.png": (red_png, "image/png")}


class _FixtureHandler(http.server.SimpleHTTPRequestHandler):
    cache: dict[str, bytes] = {}

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path in BINARY:
            make, kind = BINARY[path]
            body = make()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if path in GENERATED:
            body = self.cache.get(path)
            if body is None:
                body = self.cache[path] = GENERATED[path]().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args) -> None:
        pass


class FixtureServer:
    """The fixture pages on 127.0.0.1 (a port of its own)."""

    def __init__(self) -> None:
        handler = functools.partial(_FixtureHandler, directory=str(FIXTURES))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def build_test_extension(folder: Path, *, gguf: Path | None = None,
                         model_url: str | None = None, mcp_urls: list[str] = ()) -> Path:
    """The extension as serve.py --extension builds it, allowed to read the fixtures;
    ``gguf``: a model file it carries (--gguf), ``model_url``: a model server it
    reaches (--model-url), ``mcp_urls``: tool servers it connects to (--mcp)."""
    page_models = page_models_from_args([str(gguf)]) if gguf else None
    model_server = model_server_from_args(model_url, environ={}) if model_url else None
    return build_extension(folder, sites=[FIXTURE_SITE], page_models=page_models,
                           model_server=model_server,
                           tool_servers=tool_servers_from_args(list(mcp_urls))).folder


class ExtensionBrowser:
    """Chromium with the extension loaded, in a persistent profile (a restart is a new
    context on the same profile folder)."""

    def __init__(self, playwright: Playwright, extension: Path, profile: Path) -> None:
        self.playwright = playwright
        self.extension = extension
        self.profile = profile
        self.context: BrowserContext | None = None
        self.extension_id = ""

    def start(self) -> BrowserContext:
        self.context = self.playwright.chromium.launch_persistent_context(
            str(self.profile), executable_path=chromium_path(), headless=True,
            args=CHROMIUM_FLAGS + [f"--disable-extensions-except={self.extension}",
                                   f"--load-extension={self.extension}"])
        workers = self.context.service_workers
        worker = workers[0] if workers else self.context.wait_for_event("serviceworker",
                                                                       timeout=30_000)
        self.extension_id = worker.url.split("/")[2]
        return self.context

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
            self.context = None

    @property
    def panel_url(self) -> str:
        return f"chrome-extension://{self.extension_id}/sidepanel.html"

    def open_panel(self, **fake_config) -> Page:
        """The side panel's page in a tab, with the fake Prompt API (``fake_config``)."""
        assert self.context is not None
        page = self.context.new_page()
        install_fake_lm_scripts(page, fake_config)
        page.goto(self.panel_url)
        return page

    def open_tab(self, url: str) -> Page:
        assert self.context is not None
        page = self.context.new_page()
        page.goto(url)
        return page


def page_tools_call(panel: Page, method: str, *args):
    """Call the side panel's tab reader (extension/tab_reader.js) and return the result,
    or ``{"error": message, "name": ..., "reason": ...}``."""
    return panel.evaluate(
        """async ([method, args]) => {
             const tools = await globalThis.pyAgentTabReader;
             try { return await tools[method](...args); }
             catch (e) { return {error: e.message, name: e.name, reason: e.reason, raw: String(e.cause || "")}; }
           }""", [method, list(args)])
