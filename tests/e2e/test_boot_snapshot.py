"""The worker boots from a Pyodide memory snapshot, and never from a wrong one.

serve.py makes one (under Node.js), so even a browser's first visit restores it. Without
it, the first load has none ('missing'), boots as usual and has one made in the
background; the next load restores it. A snapshot whose bytes were damaged ('corrupt'), that Pyodide
refuses ('rejected'), or that was made for other code ('stale': a changed tool module,
another py_agent) is not used: the boot falls back, says why, and a new one is made.
And the page takes a message from its first paint: one sent while the agent starts is
queued and answered once it is ready.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from serving.http_server import make_server

from .pages import (ASSISTANT, BOOT_TIMEOUT_MS, TURN_TIMEOUT_MS, boot, chat, tool_call_responder,
                    watch_from_parsing)

pytestmark = pytest.mark.e2e

BUILD_TIMEOUT_MS = 180_000   # a second Pyodide start plus the snapshot, on a busy machine
CALC = tool_call_responder(
    "[[/what is (.+)/i, (m) => ['calculate', JSON.stringify({expression: m[1]})]]]")

# Rewrites the stored snapshot in the page (whose CSP allows no eval, hence named
# changes): 'flip' one byte in the middle, 'header' overwrites the first 64 bytes (the
# magic number and build id), 'py_agent' claims another wheel in the parts it depends
# on; `rehash` keeps the checksum right, so that only Pyodide's own checks can notice.
REWRITE = """async ({change, rehash}) => {
  const cache = await caches.open('py-agent-boot-snapshot');
  const backup = await caches.open('e2e-backup');
  let [request] = await cache.keys();
  if (change === 'backup') {
    await backup.put(request, await cache.match(request));
    return 0;
  }
  if (!request) {   // (none since the last damage: start from the good one kept)
    [request] = await backup.keys();
    await cache.put(request, await backup.match(request));
  }
  const response = await cache.match(request);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const parts = JSON.parse(decodeURIComponent(response.headers.get('x-snapshot-parts')));
  if (change === 'flip') bytes[bytes.length >> 1] ^= 0xff;
  if (change === 'header') bytes.fill(7, 0, 64);
  if (change === 'py_agent') parts.py_agent = 'an older build';
  const headers = new Headers(response.headers);
  headers.set('x-snapshot-parts', encodeURIComponent(JSON.stringify(parts)));
  if (rehash) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    headers.set('x-snapshot-sha256',
                Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''));
  }
  await cache.put(request, new Response(bytes, {headers}));
  return bytes.length;
}"""


CLEAR_SNAPSHOTS = """async () => {
  const cache = await caches.open('py-agent-boot-snapshot');
  for (const request of await cache.keys()) await cache.delete(request);
}"""


def snapshot_phase(page: Page) -> tuple[str, str]:
    """How this boot started Pyodide: (snapshot state, reason)."""
    item = page.locator('[data-testid="boot-phases"] li[data-phase="pyodide-loaded"]')
    return item.get_attribute("data-snapshot"), item.get_attribute("data-snapshot-reason")


def load(page: Page, url: str) -> tuple[str, str]:
    boot(page, url)
    return snapshot_phase(page)


def reopened(page: Page, answers: int) -> None:
    """Wait until the reloaded page shows the session's earlier answers (a restored agent
    is ready sooner than the transcript arrives)."""
    expect(page.locator(ASSISTANT)).to_have_count(
        answers, timeout=BUILD_TIMEOUT_MS)


def wait_for_new_snapshot(page: Page) -> None:
    built = page.get_by_test_id("boot-snapshot")
    expect(built).to_have_attribute("data-state", "saved", timeout=BUILD_TIMEOUT_MS)


@pytest.fixture(scope="module")
def snapshot_server(app_server):
    """serve.py's server offering no snapshot of its own: browsers make theirs."""
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False,
                                             served_snapshot=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.url
    server.shutdown()
    server.server_close()


def snapshot_source(page: Page) -> str | None:
    item = page.locator('[data-testid="boot-phases"] li[data-phase="pyodide-loaded"]')
    return item.get_attribute("data-snapshot-source")


ROLL = tool_call_responder("[[/roll/i, (m) => ['roll_dice', JSON.stringify({dice: '100d1000'})]]]")


def test_a_first_visit_restores_the_snapshot_the_server_made(
        page: Page, app_server: str, install_fake_lm) -> None:
    install_fake_lm(page, responderSource=ROLL)
    rolls = []
    for _ in range(2):
        state, reason = load(page, app_server + "/")
        assert (state, snapshot_source(page)) == ("restored", "server"), reason
        assert "made by the server" in reason
        rolls.append(chat(page, "roll a die"))
        assert rolls[-1].startswith("roll_dice -> "), rolls[-1]
        page.evaluate(CLEAR_STORAGE)
    # Two boots from one snapshot still draw different numbers (random is reseeded).
    assert rolls[0] != rolls[1]
    # Once the page is idle, the browser keeps the server's snapshot (no build of its
    # own), and the next visit reads it from there.
    state, reason = load(page, app_server + "/")
    wait_for_new_snapshot(page)
    expect(page.get_by_test_id("boot-snapshot")).to_have_attribute("data-source", "server")
    state, reason = load(page, app_server + "/")
    assert (state, snapshot_source(page)) == ("restored", "browser"), reason
    assert chat(page, "roll again").startswith("roll_dice -> ")


# Clears this origin's sessions, so that the next load starts like a first visit.
CLEAR_STORAGE = """async () => {
  for (const db of await indexedDB.databases()) indexedDB.deleteDatabase(db.name);
  for (const name of await caches.keys()) await caches.delete(name);
}"""


def damage_served_snapshot(page: Page, how: str) -> None:
    """Serve the page a damaged copy of serve.py's snapshot ('flip': one byte of the gzip
    stream changed) or a manifest that says it was made for another py_agent ('stale')."""
    if how == "flip":
        def flip(route):
            body = bytearray(route.fetch().body())
            body[len(body) // 2] ^= 0xFF
            route.fulfill(status=200, body=bytes(body),
                          headers={"Content-Type": "application/octet-stream"})
        page.route("**/vendor/snapshots/*.bin.gz", flip)
    else:
        def restale(route):
            response = route.fetch()
            manifest = response.json()
            manifest["boot_snapshot"]["parts"]["py_agent"] = "an older build"
            route.fulfill(response=response, json=manifest)
        page.route("**/vendor/manifest.json", restale)


@pytest.mark.thorough   # two full boots and a snapshot build each
@pytest.mark.parametrize("how", ["flip", "stale"])
def test_a_damaged_or_stale_served_snapshot_falls_back_and_the_browser_makes_its_own(
        page: Page, app_server: str, install_fake_lm, how: str) -> None:
    install_fake_lm(page, responderSource=CALC)
    damage_served_snapshot(page, how)
    state, reason = load(page, app_server + "/")
    if how == "flip":
        assert state == "corrupt" and reason.startswith("the server's:"), reason
    else:
        assert state == "missing" and "the server's is for other code (the py_agent wheel)" \
            in reason, reason
    assert chat(page, "what is 6*7") == "calculate -> 6*7 = 42"
    wait_for_new_snapshot(page)
    state, reason = load(page, app_server + "/")
    assert (state, snapshot_source(page)) == ("restored", "browser"), reason
    reopened(page, answers=1)
    assert chat(page, "what is 2+3") == "calculate -> 2+3 = 5"


@pytest.mark.thorough   # five full boots and three snapshot builds
def test_second_load_restores_and_damaged_snapshots_are_rebuilt(
        page: Page, snapshot_server: str, install_fake_lm) -> None:
    install_fake_lm(page, responderSource=CALC)
    url = snapshot_server + "/"
    assert load(page, url) == ("missing", "no snapshot stored yet")
    wait_for_new_snapshot(page)

    state, reason = load(page, url)
    assert state == "restored", reason
    # The restored agent works, tools and all, and no second snapshot is made.
    assert chat(page, "what is 6*7") == "calculate -> 6*7 = 42"
    page.wait_for_timeout(4_500)   # longer than the builder's idle wait
    expect(page.get_by_test_id("boot-snapshot")).to_have_count(0)

    # Damaged bytes (checksum no longer matches): not even handed to Pyodide.
    page.evaluate(REWRITE, {"change": "backup", "rehash": False})
    page.evaluate(REWRITE, {"change": "flip", "rehash": False})
    state, reason = load(page, url)
    assert state == "corrupt" and "checksum" in reason
    wait_for_new_snapshot(page)

    # A snapshot Pyodide refuses (here: not a snapshot at all, checksum fine).
    page.evaluate(REWRITE, {"change": "header", "rehash": True})
    state, reason = load(page, url)
    assert state == "rejected" and "magic" in reason.lower(), reason
    reopened(page, answers=1)
    assert chat(page, "what is 2+3") == "calculate -> 2+3 = 5"
    # (Its rebuild is the same as after any fallback: not waited for here.)
    page.evaluate(CLEAR_SNAPSHOTS)

    # Made for another py_agent wheel.
    page.evaluate(REWRITE, {"change": "py_agent", "rehash": False})
    state, reason = load(page, url)
    assert state == "stale" and "the py_agent wheel" in reason, reason
    wait_for_new_snapshot(page)
    assert load(page, url)[0] == "restored"


TOOL_MODULE = '''
from py_agent import tool


@tool
def greet(name: str) -> str:
    """Greet someone by name."""
    return "{greeting}, " + name
'''


@pytest.fixture
def greeting_server(app_server, tmp_path):
    """serve.py's server with a tool module of our own that the test edits."""
    module = tmp_path / "greeting_tools.py"
    module.write_text(TOOL_MODULE.format(greeting="Hello"))
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, tools=[module],
                                             served_snapshot=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.url, module
    server.shutdown()
    server.server_close()


@pytest.mark.thorough   # three full boots, two snapshot builds
def test_a_changed_tool_module_invalidates_the_snapshot(
        page: Page, greeting_server: tuple[str, Path], install_fake_lm) -> None:
    base, module = greeting_server
    install_fake_lm(page, responderSource=tool_call_responder(
        "[[/greet (\\w+)/i, (m) => ['greet', JSON.stringify({name: m[1]})]]]"))
    url = base + "/"
    assert load(page, url)[0] == "missing"
    wait_for_new_snapshot(page)
    assert load(page, url)[0] == "restored"
    assert chat(page, "greet Ada") == "greet -> Hello, Ada"

    module.write_text(TOOL_MODULE.format(greeting="Welcome"))
    state, reason = load(page, url)
    assert state == "stale" and "tool module greeting_tools changed" in reason, reason
    reopened(page, answers=1)
    assert chat(page, "greet Ada") == "greet -> Welcome, Ada"
    wait_for_new_snapshot(page)
    assert load(page, url)[0] == "restored"
    reopened(page, answers=2)
    assert chat(page, "greet Bob") == "greet -> Welcome, Bob"


def test_a_message_sent_while_the_agent_starts_waits_for_it(
        page: Page, app_server: str, install_fake_lm) -> None:
    install_fake_lm(page, responderSource=CALC)
    page.add_init_script(script=WATCH_BOX)
    page.goto(app_server + "/?snapshot=off", wait_until="commit")
    box = page.get_by_test_id("chat-input")
    box.wait_for()
    box.fill("what is 20+22")
    typed_at = page.evaluate("performance.now()")
    page.get_by_test_id("send-button").click()   # PyScript may not even be up yet
    status = page.get_by_test_id("status")
    expect(page.get_by_test_id("composer")).to_have_attribute("data-queued", "true",
                                                              timeout=BOOT_TIMEOUT_MS)
    assert status.get_attribute("data-state") != "ready"
    expect(page.get_by_test_id("chat-hint")).to_contain_text("queued")
    answer = page.locator(ASSISTANT).last
    expect(answer).to_have_attribute("data-state", "answered",
                                     timeout=BOOT_TIMEOUT_MS + TURN_TIMEOUT_MS)
    expect(answer.locator(".text")).to_have_text("calculate -> 20+22 = 42")
    expect(box).to_have_value("")
    expect(page.get_by_test_id("composer")).not_to_have_attribute("data-queued", "true")
    # The box took text from the moment it existed, and nothing locked it before the
    # message was sent (then it is read-only while the message waits). How soon after the
    # first paint a busy page lets one type is bench/boot.py's to measure.
    locked = page.evaluate("window.__boxLocked")
    assert "when parsed" not in locked and all(when > typed_at for when in locked), locked


# Notes every time the message box is disabled or made read-only, from its parsing on.
WATCH_BOX = watch_from_parsing(
    '[data-testid="chat-input"]', ["disabled", "readonly"], "window.__boxLocked = [];",
    """(box, at) => {
      if (box.disabled || box.readOnly) window.__boxLocked.push(at === null ? 'when parsed' : at);
    }""")


@pytest.mark.thorough   # serve.py makes a second snapshot; test_your_tools edits a module too
def test_a_changed_tool_module_gets_a_new_served_snapshot(
        page: Page, app_server: str, install_fake_lm, tmp_path: Path) -> None:
    module = tmp_path / "greeting_tools.py"
    module.write_text(TOOL_MODULE.format(greeting="Hi"))
    # Made here for this tool module, before the server answers anyone.
    server = make_server("127.0.0.1", 0, quiet=True, embedder=False, tools=[module],
                                             tool_worker=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        install_fake_lm(page, responderSource=tool_call_responder(
            "[[/greet (\\w+)/i, (m) => ['greet', JSON.stringify({name: m[1]})]]]"))
        url = server.url + "/"
        state, reason = load(page, url)
        assert (state, snapshot_source(page)) == ("restored", "server"), reason
        assert chat(page, "greet Ada") == "greet -> Hi, Ada"

        # Changed: the old snapshot is no longer offered; the server makes a new one
        # while this boot goes without.
        greeting = f"Hey {time.time_ns()}"   # new code this run: no snapshot on disk yet
        module.write_text(TOOL_MODULE.format(greeting=greeting))
        state, reason = load(page, url)
        assert state == "missing", reason
        reopened(page, answers=1)
        assert chat(page, "greet Ada") == f"greet -> {greeting}, Ada"

        deadline = time.monotonic() + BUILD_TIMEOUT_MS / 1000
        while "boot_snapshot" not in page.request.get(url + "vendor/manifest.json").json():
            assert time.monotonic() < deadline, "the server made no new snapshot"
            page.wait_for_timeout(250)
        page.evaluate(CLEAR_STORAGE)   # (this browser may have made one meanwhile)
        state, reason = load(page, url)
        assert (state, snapshot_source(page)) == ("restored", "server"), reason
        assert chat(page, "greet Bob") == f"greet -> {greeting}, Bob"
    finally:
        server.shutdown()
        server.server_close()


WORKER_SAID_READY = """() => (globalThis.pyAgentWorker?.early || []).some(
  (event) => event.data && event.data.type === 'boot' && event.data.phase === 'ready')"""


def test_side_panels_started_after_the_agent_was_ready_catch_up(
        page: Page, app_server: str, install_fake_lm) -> None:
    install_fake_lm(page)
    boot(page, app_server + "/")
    assert chat(page, "remember the blue door") == "You said: remember the blue door"

    # Reload, holding the UI's modules back until the worker (restored from the snapshot)
    # has said it is ready: the session list and the memory panel, started after the
    # page has painted (web/main.py), start after the boot has finished.
    held = []
    page.route("**/ui-bundle.json", lambda route: held.append(route))
    page.reload(wait_until="commit")
    page.wait_for_function(WORKER_SAID_READY, timeout=BOOT_TIMEOUT_MS, polling=100)
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the page never asked for /ui-bundle.json"
    assert page.get_by_test_id("status").get_attribute("data-state") != "ready"
    for route in held:
        route.continue_()
    page.unroute("**/ui-bundle.json")

    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                            timeout=BOOT_TIMEOUT_MS)
    reopened(page, answers=1)   # the session shown last, its transcript
    rows = page.locator('[data-testid="session-list"] button[data-action="open"]')
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("remember the blue door")
    expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-state", "idle")
    expect(page.get_by_test_id("new-session-button")).to_be_enabled()
    assert chat(page, "and the red key") == "You said: and the red key"
