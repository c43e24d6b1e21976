"""One booted chat page that tests take turns on, each in a chat of its own.

A page boot costs about 3.4 s of CPU (a new browser profile, its renderer, Pyodide from
the snapshot, the page's own Python); a new chat in a booted page about 0.1 s. Tests that
need only a fresh chat (not a fresh browser: no boot path, no storage fault, no boot-time
model settings) share one page per test process, across files, through the
``shared_chat`` fixture (conftest.py):

    def test_something(shared_chat) -> None:
        page, watch = shared_chat.open(responderSource=RESPONDER)

Before each test the page is brought back to what a first visit shows, through the page
itself: every saved session deleted from the sessions list, a new chat opened, the fake
model reset to the test's settings, what earlier tests left on ``window`` (``__names``,
observers they registered in ``window.__e2eTeardown``), their init scripts and listeners
taken off (``shared_chat.add_init_script``, ``shared_chat.on``). Then it is checked, and
the test starts only if nothing of an earlier test can be seen: a session id never handed
out before, nothing stored (sessions, turns, compactions, profile facts, the demo tools'
records, recall indexes; in localStorage only the shown chat's id, in sessionStorage
nothing), an empty chat and memory, the fake's log empty, and every
control of the page in the state a freshly booted page has it in. Anything off, a failed
test, a broken page, a test that said it leaves something behind (``discard``): the page
is dropped and a new one booted in a new browser profile, so a test never inherits an
earlier test's state and a failure does not cascade. A test may reload the page (its
settings stay, as they would with its own page); it may not change what the page reads
at boot.
"""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Browser, Error as PlaywrightError, Page, expect

from tests.e2e.pages import (MESSAGES, SESSION_ROWS, TURN_TIMEOUT_MS, Watch, ask_worker, boot,
                             current_session, fake_lm_config_script, install_fake_lm_scripts,
                             wait_until)

# Settings of the fake model a booted page may change: the ones read at each call, not
# at boot (availability, languages, the context window, schema support and the API's
# names are read at boot: tests that set those boot a page of their own).
PER_TEST_SETTINGS = {"responderSource", "replyCheck", "replies", "latencyMs", "chunkDelayMs",
                     "chunkSize"}

IDLE_TIMEOUT_MS = 20_000   # a background compaction of the test before may still run
TURN_FINISH_TIMEOUT_MS = 5_000   # a turn the test before left running (else: a new page)

# The state of every control a test can see: per element with a data-testid or another
# data- attribute (outside the messages and the session rows, which are checked on their
# own), whether it is shown, enabled, open, its value, its data-/aria- attributes and,
# for the innermost ones with a data-testid, its text (but the status line's, which says
# how long the agent took to start: its attributes say the rest),
# except counters and ids that differ from chat to chat by design, and what says how the
# page booted (how long the page's Python took, where the boot snapshot came from, the
# phases' timings: a test may reload).
FINGERPRINT = """(() => {
  const skip = new Set(['data-replies', 'data-session-id', 'data-row', 'data-tokens', 'data-ui-ms']);
  const rows = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (![...el.attributes].some((a) => a.name.startsWith('data-'))) continue;
    if (el.closest('[data-testid="messages"] > *, [data-testid="session-list"] > *')) continue;
    if (el.closest('[data-testid="boot-snapshot"], [data-testid="boot-phases"]')) continue;
    const attrs = [...el.attributes]
      .filter((a) => /^(data-|aria-)/.test(a.name) && !skip.has(a.name) && a.name !== 'data-testid')
      .map((a) => a.name + '=' + a.value).sort().join(' ');
    rows.push([el.dataset.testid || el.tagName.toLowerCase(), el.checkVisibility() ? 'shown' : 'hidden',
               el.disabled ? 'disabled' : '', el.open ? 'open' : '',
               'value' in el && el.tagName !== 'BUTTON' && el.type !== 'file' ? el.value : '',
               attrs, el.dataset.testid && el.dataset.testid !== 'status'
                 && !el.querySelector('[data-testid]') ? el.textContent.trim().slice(0, 200) : '',
              ].join('|'));
  }
  return rows;
})()"""

# Every record in the page's database, counted per store (``meta`` holds the database's
# own bookkeeping; the profile's record is read through the worker instead).
STORED = """() => new Promise((resolve, reject) => {
  const open = indexedDB.open('py-agent');
  open.onerror = () => reject(open.error);
  open.onsuccess = () => {
    const db = open.result, names = [...db.objectStoreNames].filter((n) => !['meta', 'profile'].includes(n));
    const tx = db.transaction(names, 'readonly'), counts = {};
    for (const name of names) {
      const count = tx.objectStore(name).count();
      count.onsuccess = () => { counts[name] = count.result; };
    }
    tx.oncomplete = () => { db.close(); resolve(counts); };
    tx.onerror = () => { db.close(); reject(tx.error); };
  };
})"""

# What tests leave on window: globals named __something (their flags and records), and
# teardown functions they register in window.__e2eTeardown (say, to disconnect an
# observer). Run and removed; returns the names removed.
TAKE_OFF_WINDOW = """(kept) => {
  for (const teardown of window.__e2eTeardown || []) teardown();
  const removed = Object.getOwnPropertyNames(window)
    .filter((name) => name.startsWith('__') && !kept.includes(name));
  for (const name of removed) delete window[name];
  return removed;
}"""


class StaleChatPage(Exception):
    """The shared page does not look like a fresh one: it is replaced."""


class SharedChatPage:
    """A booted chat page on ``url`` handed to one test after another (see the module's
    docstring); ``boots`` counts the page boots, ``reasons`` why each boot after the
    first was needed."""

    def __init__(self, browser: Browser, context_args: dict[str, Any], url: str) -> None:
        self.browser = browser
        self.context_args = context_args
        self.url = url
        self.page: Page | None = None
        self.boots = 0
        self.reasons: list[str] = []
        self._seen: set[str] = set()
        self._window: list[str] = []
        self._fresh: list[str] = []
        self._viewport: dict | None = None
        self._test_scripts: list[Any] = []   # Playwright's disposables
        self._listeners: list[tuple[str, Any]] = []
        self._watch: Watch | None = None
        self._discard: str | None = None

    # ------------------------------------------------------------------ for tests

    def open(self, **settings) -> tuple[Page, Watch]:
        """The page in a new, empty chat, the fake model set to ``settings`` (as for
        ``install_fake_lm``, per-test ones only), and a Watch started now."""
        unknown = set(settings) - PER_TEST_SETTINGS
        if unknown:
            raise ValueError(f"{sorted(unknown)} are read at boot: this test needs a page "
                             "of its own (open_chat)")
        if self.page is not None:
            try:
                self._new_chat()
                self._start(settings)
                return self.page, self._watch
            except (StaleChatPage, AssertionError, PlaywrightError) as error:
                self.finish(failed=False)
                self._drop(f"{type(error).__name__}: {str(error)[:1000]}")
        self._boot()
        self._start(settings)
        return self.page, self._watch

    def add_init_script(self, script: str) -> None:
        """``page.add_init_script`` for this test only."""
        self._test_scripts.append(self.page.add_init_script(script=script))

    def on(self, event: str, handler) -> None:
        """``page.on`` for this test only."""
        self.page.on(event, handler)
        self._listeners.append((event, handler))

    def discard(self, why: str) -> None:
        """Say that this test leaves something behind the page cannot clean up (``why``):
        the next test gets a new page, and nobody is warned about it."""
        self._discard = why

    def finish(self, failed: bool) -> None:
        """After a test: its settings, scripts, listeners and Watch taken off; the page
        dropped if the test failed (whatever state it left is not for the next test)."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        for event, handler in self._listeners:
            if self.page is not None:
                self.page.remove_listener(event, handler)
        self._listeners.clear()
        for script in self._test_scripts:
            try:
                script.close()
            except PlaywrightError:
                pass
        self._test_scripts.clear()
        if failed and self.page is not None:
            self._drop("the test before failed")
        elif self._discard and self.page is not None:
            self._drop(f"the test before left {self._discard}")
        self._discard = None

    def close(self) -> None:
        if self.page is not None:
            self.page.context.close()
            self.page = None

    # ------------------------------------------------------------------ internals

    def _boot(self) -> None:
        context = self.browser.new_context(**self.context_args)
        page = context.new_page()
        install_fake_lm_scripts(page, {})
        boot(page, self.url)
        self.page = page
        self.boots += 1
        self._viewport = page.viewport_size
        self._window = page.evaluate("Object.getOwnPropertyNames(window)"
                                     ".filter((name) => name.startsWith('__'))")
        self._fresh = page.evaluate(FINGERPRINT)

    def _start(self, settings: dict) -> None:
        """The fake set to the test's settings (now, and after any reload in the test),
        the proof that nothing of an earlier test shows, then a Watch from here on."""
        script = fake_lm_config_script(settings) + \
            "\nwindow.__fakeLM && window.__fakeLM.reset(window.__fakeLMConfig);"
        self.add_init_script(script)
        self.page.evaluate(f"() => {{ {script} }}")
        self._check_fresh()
        self._watch = Watch(self.page)

    def _drop(self, reason: str) -> None:
        self.reasons.append(reason)
        try:
            self.close()
        except PlaywrightError:
            self.page = None

    def _new_chat(self) -> None:
        """Bring the booted page back to a first visit's state, through the page."""
        page = self.page
        if page.is_closed():
            raise StaleChatPage("the page was closed")
        for other in page.context.pages:
            if other != page:
                other.close()   # a second tab a test opened
        if page.viewport_size != self._viewport:
            page.set_viewport_size(self._viewport)
        self._wait_idle()
        page.evaluate(TAKE_OFF_WINDOW, self._window)
        page.evaluate("sessionStorage.clear()")   # the page keeps nothing there; tests may
        # Every saved session deleted, as a user does it (the list's inline confirmation);
        # deleting the last one opens a new, empty chat.
        for session_id in [s["session_id"] for s in ask_worker(page, "sessions")]:
            row = page.locator(f'{SESSION_ROWS}[data-row="{session_id}"]')
            if row.count() != 1:
                raise StaleChatPage(f"session {session_id} is stored but not listed")
            row.get_by_test_id("delete-session").click()
            row.get_by_test_id("confirm-delete").click()
            expect(row).to_have_count(0, timeout=TURN_TIMEOUT_MS)
        shown = current_session(page)
        if shown in self._seen:
            page.get_by_test_id("new-session-button").click()
            wait_until(page, "document.querySelector('[data-testid=\"session-list\"] "
                       "[aria-current=\"true\"]')?.dataset.sessionId !== %s"
                       % json.dumps(shown), TURN_TIMEOUT_MS)
        wait_until(page, "document.querySelector('[data-testid=\"messages\"]')"
                   ".dataset.loading === 'false'", TURN_TIMEOUT_MS)
        # What a user left open or typed in the panels: closed and emptied again; and the
        # screen readers' last announcement (the page keeps it until the next answer).
        page.evaluate("""(fresh) => {
          document.querySelector('[data-testid="answer-announcer"]').replaceChildren();
          for (const box of document.querySelectorAll('details[data-testid]')) {
            const open = fresh.includes(box.dataset.testid);
            if (box.open !== open) box.open = open;
          }
          for (const id of ['chat-input', 'compact-focus']) {
            const field = document.querySelector(`[data-testid="${id}"]`);
            if (field.value) { field.value = ''; field.dispatchEvent(new Event('input')); }
          }
        }""", [row.split("|")[0] for row in self._fresh if row.split("|")[3] == "open"])
        now = page.evaluate(FINGERPRINT)
        if now != self._fresh:
            changed = [f"{was!r} is now {is_!r}" for was, is_ in zip(self._fresh, now)
                       if was != is_] or [f"{len(self._fresh)} controls, now {len(now)}"]
            raise StaleChatPage("controls differ from a fresh page: " + "; ".join(changed[:4]))

    def _wait_idle(self) -> None:
        """No turn running, no compaction under way (a test may end while its last turn's
        compaction still runs in the background), the agent ready."""
        page = self.page
        try:   # a test may end right after sending: its turn ends soon after
            wait_until(page, """document.querySelector('[data-testid="status"]').dataset.state
                === 'ready' && document.querySelector('[data-testid="stop-button"]').disabled""",
                       TURN_FINISH_TIMEOUT_MS)
        except AssertionError:
            state = page.get_by_test_id("status").get_attribute("data-state")
            raise StaleChatPage(f"the page is not idle (status {state!r})") from None
        wait_until(page, """(async () => {
          const ask = (type, fields) => new Promise((resolve) => {
            const worker = window.pyAgentWorker.worker, id = 'e2e-idle-' + Math.random();
            const listen = (event) => {
              if (event.data?.type !== 'reply' || event.data.id !== id) return;
              worker.removeEventListener('message', listen);
              resolve(event.data.value);
            };
            worker.addEventListener('message', listen);
            worker.postMessage({...fields, type, id});
          });
          for (const session of await ask('sessions', {})) {
            if ((await ask('memory', {session_id: session.session_id})).compacting) return false;
          }
          return true;
        })()""", IDLE_TIMEOUT_MS)

    def _check_fresh(self) -> None:
        """Nothing of an earlier test can be seen: the proof each test starts from."""
        page = self.page
        session = current_session(page)
        assert session not in self._seen, f"session {session} was handed out before"
        self._seen.add(session)
        expect(page.locator(SESSION_ROWS)).to_have_count(1)
        expect(page.locator(f'{SESSION_ROWS}[data-row="{session}"]')).to_contain_text(
            "New session")
        expect(page.locator(MESSAGES)).to_have_count(0)
        expect(page.get_by_test_id("chat-hint")).to_be_visible()
        stored = page.evaluate(STORED)
        assert stored == {"sessions": 0, "archive": 0, "compressions": 0, "kv": 0,
                          "recall": 0, "blobs": 0, "vectors": 0}, f"records left in the database: {stored}"
        profile = ask_worker(page, "profile")
        assert profile == [], f"profile facts left: {profile}"
        kept = page.evaluate("[{...localStorage}, sessionStorage.length]")
        assert kept == [{"py-agent.session": session}, 0], f"web storage left: {kept}"
        expect(page.get_by_test_id("memory-summary")).to_have_text("")
        expect(page.get_by_test_id("memory-facts").locator("li")).to_have_count(0)
        expect(page.get_by_test_id("profile-facts").locator("li")).to_have_count(0)
        assert page.evaluate("__fakeLM.calls.length") == 0, "the fake model's log is not empty"
        assert page.evaluate(FINGERPRINT) == self._fresh, "the controls changed meanwhile"
