"""``python serve.py --build DIR`` served by a plain static server (Python's http.server,
no headers of ours), at / and under a sub-path: the page boots from the build's snapshot,
chats through the fake Prompt API with the calculator, keeps its session across a reload,
and, once the service worker has kept the files, works with the server stopped. The
build's policy is a <meta> of the page, and its service worker adds the rest as headers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from serving.static_build import build_site

from .pages import (ASSISTANT, BOOT_TIMEOUT_MS, Watch, answer_to, boot, chat,
                    current_session, send, tool_call_responder, wait_until)
from .static_sites import StaticServer

CALCULATOR = tool_call_responder(
    "[[/(\\d+) times (\\d+)/i, (m) => ['calculate', {expression: `${m[1]} * ${m[2]}`}]]]")
KEEP_TIMEOUT_MS = 180_000   # the service worker keeps ~20 MB; the worker its snapshot


@pytest.fixture(scope="module")
def built(app_server, tmp_path_factory) -> Path:
    """The default build (prepared by app_server, so nothing is fetched here)."""
    folder = tmp_path_factory.mktemp("build") / "site"
    build_site(folder)
    return folder


def snapshot_phase(page: Page) -> tuple[str | None, str | None, str | None]:
    item = page.locator('[data-testid="boot-phases"] li[data-phase="pyodide-loaded"]')
    return (item.get_attribute("data-snapshot"), item.get_attribute("data-snapshot-source"),
            item.get_attribute("data-snapshot-reason"))


def wait_until_kept(page: Page) -> None:
    """Until the service worker has kept the build's files and the agent's worker the
    snapshot: what a visit without a network needs."""
    wait_until(page, "navigator.serviceWorker.getRegistration().then("
                     "(r) => r && r.active && r.active.state === 'activated')",
               timeout_ms=KEEP_TIMEOUT_MS)
    expect(page.get_by_test_id("boot-snapshot")).to_have_attribute(
        "data-state", "saved", timeout=KEEP_TIMEOUT_MS)


def serve(built: Path, layout: str, tmp_path: Path) -> tuple[StaticServer, str]:
    """A static server with the build at ``layout`` ('/' or a sub-path)."""
    if layout == "/":
        return StaticServer(built), "/"
    parent = tmp_path / "www"
    shutil.copytree(built, parent / layout.strip("/"))
    return StaticServer(parent), layout


@pytest.mark.parametrize("layout", ["/", "/my-agent/"])
def test_the_build_boots_chats_reloads_and_works_offline_from_a_plain_static_server(
        page: Page, built: Path, layout: str, tmp_path: Path, install_fake_lm) -> None:
    server, path = serve(built, layout, tmp_path)
    url = server.url + path
    with server:
        watch = Watch(page)
        install_fake_lm(page, responderSource=CALCULATOR)
        boot(page, url)
        state, source, reason = snapshot_phase(page)
        assert (state, source) == ("restored", "server"), reason
        # The page's policy came as a <meta> (http.server sends no such header).
        assert page.evaluate("document.querySelector('meta[http-equiv="
                             "\"Content-Security-Policy\"]').content").startswith(
            "default-src 'self'")
        assert chat(page, "What is 17 times 23? Use the calculator.") == \
            "calculate -> 17 * 23 = 391"
        session = current_session(page)
        wait_until_kept(page)

        boot(page, url)   # a second visit, online: the service worker serves it
        expect(page.locator(ASSISTANT)).to_have_count(1, timeout=BOOT_TIMEOUT_MS)
        assert current_session(page) == session
        assert page.evaluate("navigator.serviceWorker.controller !== null")
        # ...with the headers a static host cannot send, the page's full policy included.
        headers = page.evaluate("fetch('index.html').then((r) => Object.fromEntries(r.headers))")
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert "cross-origin-embedder-policy" not in headers   # not asked for

    # The server is gone: a visit works all the same, from the browser's caches.
    boot(page, url)
    state, source, reason = snapshot_phase(page)
    assert (state, source) == ("restored", "browser"), reason
    expect(page.locator(ASSISTANT)).to_have_count(1, timeout=BOOT_TIMEOUT_MS)
    assert current_session(page) == session
    assert chat(page, "What is 6 times 7? Use the calculator.") == "calculate -> 6 * 7 = 42"
    assert not [p for p in watch.problems if "Content Security Policy" in p], watch.problems


# ------------------------------------------------------------------ your pages, embedded

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLANT_CARE = tool_call_responder(
    "[[/water my (\\w+)/i, (m) => ['plant_care', {plant: m[1]}]]]")
FERN = "plant_care -> Water a fern every 3 days; it likes shade; keep the soil moist."
# A page of someone else's site, on a server that hosts the build as its sub-folder.
HOST_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>My garden</title>
<p id="answer">Thinking…</p>
<script type="module">
  import {createAgent} from './my-agent/agent.js';
  const agent = await createAgent({tools: ['plant_tools'], session: 'garden'});
  const result = await agent.send('How often should I water my fern?');
  document.getElementById('answer').textContent = result.answer;
</script>
"""


def ask_the_example_page(page: Page, url: str) -> None:
    """The example page (examples/index.html): ready, then one question answered."""
    page.goto(url)
    expect(page.locator("#answer")).to_have_text("Ready: ask about plant_care, compact, recall.",
                                                 timeout=BOOT_TIMEOUT_MS)
    page.locator("#ask button").click()
    expect(page.locator("#answer")).to_have_text(FERN, timeout=BOOT_TIMEOUT_MS)


@pytest.mark.thorough   # four visits, a service worker's install and an isolated reload
def test_create_agent_works_from_the_builds_pages_and_from_another_sites_page(
        page: Page, app_server: str, tmp_path: Path, install_fake_lm) -> None:
    # The example page at the top of --site, and the same page one folder down.
    site = tmp_path / "my_site"
    shutil.copytree(EXAMPLES, site)
    (site / "plants").mkdir()
    (site / "plants" / "ask.html").write_text(
        (EXAMPLES / "index.html").read_text().replace("'./agent.js'", "'../agent.js'"))
    www = tmp_path / "www"
    build_site(www / "my-agent", tools=[EXAMPLES / "plant_tools.py"], site=site,
               isolation=True)
    (www / "index.html").write_text(HOST_PAGE)
    install_fake_lm(page, responderSource=PLANT_CARE)
    with StaticServer(www) as server:
        ask_the_example_page(page, server.url + "/my-agent/")
        assert page.evaluate("crossOriginIsolated") is False   # not on a first visit
        ask_the_example_page(page, server.url + "/my-agent/plants/ask.html")
        page.goto(server.url + "/")
        expect(page.locator("#answer")).to_have_text(FERN, timeout=BOOT_TIMEOUT_MS)

        # --cross-origin-isolation: isolated from the second visit on.
        page.goto(server.url + "/my-agent/")
        wait_until(page, "navigator.serviceWorker.getRegistration().then("
                         "(r) => r && r.active && r.active.state === 'activated')",
                   timeout_ms=KEEP_TIMEOUT_MS)
        ask_the_example_page(page, server.url + "/my-agent/")
        assert page.evaluate("crossOriginIsolated && typeof SharedArrayBuffer") == "function"


# ------------------------------------------------------------------ a model server

def test_a_build_with_model_url_chats_through_a_server_that_allows_its_origin(
        page: Page, app_server: str, tmp_path: Path) -> None:
    from serving.model_server import model_server_from_args
    from tests.fake_openai_server import FakeServer, agent_responder

    with FakeServer(agent_responder, models=("fake-model",)) as fake:   # CORS: allowed
        folder = tmp_path / "site"
        build_site(folder, model_server=model_server_from_args(fake.url, "fake-model",
                                                               environ={}))
        with StaticServer(folder) as server:
            boot(page, server.url + "/")   # no Gemini Nano here: the server's model
            expect(page.get_by_test_id("status")).to_have_attribute("data-backend", "server")
            assert "391" in chat(page, "What is 17 times 23?")
            origin = fake.url.split("/v1")[0].rstrip("/")
            policy = page.evaluate("document.querySelector('meta[http-equiv="
                                   "\"Content-Security-Policy\"]').content")
            assert f"connect-src 'self' {origin};" in policy
        assert fake.chat_requests()


# ------------------------------------------------------------------ an in-page model

def test_a_build_with_gguf_runs_the_model_in_the_page_under_a_sub_path(
        page: Page, app_server: str, tmp_path: Path) -> None:
    """No Gemini Nano (none at all), no isolation headers: the build's copy of the GGUF
    downloads from models/ under the sub-path and answers, single-threaded."""
    from serving.page_models import page_models_from_args
    from tests.e2e.page_model_app import NO_PROMPT_API, write_models

    models = write_models(tmp_path / "models")
    www = tmp_path / "www"
    build_site(www / "my-agent", page_models=page_models_from_args([str(models["tiny.gguf"])]))
    assert (www / "my-agent" / "models" / "tiny.gguf").read_bytes() == \
        models["tiny.gguf"].read_bytes()
    page.add_init_script(script=NO_PROMPT_API)
    with StaticServer(www) as server:
        boot(page, server.url + "/my-agent/", wait_for_chat=False)
        page.get_by_test_id("page-model-offer-button").click()
        status = page.get_by_test_id("status")
        expect(status).to_contain_text("running in this page", timeout=BOOT_TIMEOUT_MS)
        expect(status).to_contain_text("single-threaded (this page is not cross-origin isolated")
        send(page, "Hello from a static site")
        expect(answer_to(page, "Hello from a static site")).to_have_attribute(
            "data-state", "answered", timeout=BOOT_TIMEOUT_MS)


# ------------------------------------------------------------------ docs/publish.md

PUBLISH = Path(__file__).resolve().parents[2] / "docs" / "publish.md"


def publish_commands() -> list[list[str]]:
    """The commands of docs/publish.md's "Build and try it" block, as a shell splits them."""
    import re
    import shlex

    text = PUBLISH.read_text(encoding="utf-8")
    section = re.search(r"^## Build and try it\n(.*?)^## ", text, re.MULTILINE | re.DOTALL)
    block = re.search(r"^```bash\n(.*?)^```$", section.group(1), re.MULTILINE | re.DOTALL)
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines()
            if shlex.split(line, comments=True)]


def test_the_publish_steps_build_serve_and_open_the_page(
        page: Page, app_server: str, tmp_path: Path, install_fake_lm) -> None:
    import subprocess
    import sys

    from .static_sites import free_port

    build, static = publish_commands()
    assert build[:3] == ["python", "serve.py", "--build"]
    assert static[:4] == ["python", "-m", "http.server", "--directory"]
    # Run as written, from a folder of the user's (python is this one, serve.py the repo's).
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(repo / "serve.py"), *build[2:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[serve] built " in done.stdout
    port = free_port()
    command = [sys.executable, *static[1:-1], str(port)]
    assert static[-1] == "8080"
    with StaticServer(tmp_path / build[3], port=port, command=command, cwd=tmp_path) as server:
        install_fake_lm(page, responderSource=CALCULATOR)
        boot(page, f"http://localhost:{server.port}/")   # the address the docs give
        assert chat(page, "What is 17 times 23? Use the calculator.") == \
            "calculate -> 17 * 23 = 391"


# ------------------------------------------------------------------ back to serve.py

def test_serve_py_on_the_same_origin_retires_an_earlier_builds_service_worker(
        page: Page, built: Path, install_fake_lm) -> None:
    """A build tried on localhost:8000, then serve.py on the same port: the development
    server's page, not the build's cached one, after at most one reload, even while the
    build's page has a request in flight through the build's worker (the browser activates
    no new worker until the old one's fetches end, and a slow download on a loaded machine
    kept the old build past the deadline on CI). (The browser's HTTP cache may also hold
    the static server's copies, without the isolation headers serve.py's page needs, for a
    while: docs/publish.md tries builds on another port. Here that cache is cleared, as
    time would, to see what the service worker does.)"""
    import threading
    import time

    from serving.http_server import make_server

    install_fake_lm(page, responderSource=CALCULATOR)
    with StaticServer(built) as static:
        boot(page, static.url + "/")
        wait_until(page, "navigator.serviceWorker.getRegistration().then("
                         "(r) => r && r.active && r.active.state === 'activated')",
                   timeout_ms=KEEP_TIMEOUT_MS)
    page.context.new_cdp_session(page).send("Network.clearBrowserCache")
    server = make_server("127.0.0.1", static.port, quiet=True, embedder=False, tool_worker=False)
    release = threading.Event()

    class SlowDownload(server.RequestHandlerClass):
        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/slow-download":   # answered (404) when the test ends
                release.wait(BOOT_TIMEOUT_MS / 1000)
            super().do_GET()

    server.RequestHandlerClass = SlowDownload
    threading.Thread(target=server.serve_forever, daemon=True).start()
    events: list[str] = []
    page.on("console", lambda message: message.text.startswith("[retire-test]")
            and events.append(message.text))
    page.add_init_script("""(() => {
        const note = (what) => console.log(`[retire-test] ${what} ${location.href}`);
        note(`load, controlled: ${Boolean(navigator.serviceWorker.controller)}`);
        if (navigator.serviceWorker.controller) fetch('slow-download').catch(() => {});
        navigator.serviceWorker.addEventListener('controllerchange', () => note('controllerchange'));
        navigator.serviceWorker.addEventListener('message', (event) => note(`message ${event.data?.type}`));
        navigator.serviceWorker.getRegistration().then((registration) => registration
            ?.addEventListener('updatefound', () => {
                const worker = registration.installing;
                note('updatefound');
                worker.addEventListener('statechange', () => note(`new worker ${worker.state}`));
            }));
    })()""")
    try:
        page.goto(server.url + "/")
        deadline = time.monotonic() + BOOT_TIMEOUT_MS / 1000
        while True:   # through the reload the retiring service worker asks for
            try:
                state = page.evaluate(
                    "({controlled: Boolean(navigator.serviceWorker.controller), "
                    "isolated: crossOriginIsolated, "
                    "build: Boolean(document.querySelector('meta[http-equiv]'))})")
                if state == {"controlled": False, "isolated": True, "build": False}:
                    break
            except Exception as error:   # the page is navigating
                state = repr(error)
            assert time.monotonic() < deadline, \
                f"the build's service worker stayed: {state}; {events}"
            page.wait_for_timeout(200)
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                                timeout=BOOT_TIMEOUT_MS)
        assert page.evaluate("navigator.serviceWorker.getRegistration()") is None
        assert not [name for name in page.evaluate("caches.keys()")
                    if name.startswith("py-agent-site ")]
    finally:
        release.set()
        server.shutdown()
        server.server_close()
