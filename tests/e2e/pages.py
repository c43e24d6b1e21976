"""Helpers the end-to-end tests share to drive the chat page: boot it with the fake
LanguageModel, send messages and wait for answers, read the transcript and the sessions
list, ask the agent worker directly, and script the fake model's agent steps.

The fixtures (``app_server``, ``install_fake_lm``, ...) live in conftest.py; these are
plain functions on a Playwright ``Page``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

BOOT_TIMEOUT_MS = 90_000    # cold Pyodide start on a busy machine
TURN_TIMEOUT_MS = 20_000

MESSAGES = '[data-testid="message"]'
USER = '[data-testid="message"][data-role="user"]'
ASSISTANT = '[data-testid="message"][data-role="assistant"]'
SESSION_ROWS = '[data-testid="session-list"] li[data-row]'


class Watch:
    """Every request of the browser context (page and workers) and every uncaught page
    exception or console error."""

    def __init__(self, page: Page) -> None:
        self.requests: list[str] = []
        self.problems: list[str] = []
        self._page = page
        page.context.on("request", self._on_request)
        page.on("pageerror", self._on_page_error)
        page.on("console", self._on_console)

    def stop(self) -> None:
        """Stop watching (a page that outlives the test goes on without this Watch)."""
        self._page.context.remove_listener("request", self._on_request)
        self._page.remove_listener("pageerror", self._on_page_error)
        self._page.remove_listener("console", self._on_console)

    def _on_request(self, request) -> None:
        self.requests.append(request.url)

    def _on_page_error(self, error) -> None:
        # where it was thrown too: a page error without its stack is hard to place
        stack = (getattr(error, "stack", "") or "").splitlines()[1:3]
        self.problems.append(f"pageerror: {error}" + "".join(f" | {line.strip()}" for line in stack))

    def _on_console(self, message) -> None:
        if message.type == "error":
            self.problems.append(f"console.error: {message.text}")


FAKE_LM_SCRIPTS = (Path(__file__).with_name("fake_constraints.js"),
                   Path(__file__).with_name("fake_language_model.js"))


def install_fake_lm_scripts(page: Page, config: dict, *,
                            scripts: tuple[Path, ...] = FAKE_LM_SCRIPTS) -> list[Any]:
    """Put the fake LanguageModel, configured with ``config``, on every document ``page``
    opens (frames included): its config, then its scripts, as init scripts. The one way
    the fake is installed (the ``install_fake_lm`` fixture, the WPT runner, shared pages).
    Returns the init scripts (Playwright's disposables), for whoever takes the fake off
    again: ``close()`` each."""
    installed = [page.add_init_script(script=fake_lm_config_script(config))]
    for script in scripts:
        installed.append(page.add_init_script(path=str(script)))
    return installed


# What real browsers differ in, as fake configurations (install_fake_lm(page, **PROFILE)).
# "chrome" is the fake's defaults: Chrome 156 on desktop (a 9216-token window; English,
# Spanish and Japanese; llguidance's JSON-schema keywords; the seven sampling modes).
FAKE_PROFILES: dict[str, dict] = {
    "chrome": {},
    # Chrome before samplingMode (its origin trial starts in 148): no attribute, option ignored.
    "chrome-without-sampling-mode": {"samplingModes": None},
    # A schema engine that refuses anyOf, oneOf and const (our step schema uses the first two).
    "strict-schema": {"schemaSupport": "strict"},
    # Structured output switched off: every responseConstraint is refused.
    "no-constraints": {"schemaSupport": "none"},
    # Edge's Prompt API (Phi-4-mini): a guess, not measured: Microsoft documents no window,
    # language list or schema keywords; plain structure only, English, no samplingMode.
    "edge": {"schemaSupport": "edge", "languages": ["en"], "contextWindow": 4096,
             "samplingModes": None},
}


def fake_lm_config_script(config: dict) -> str:
    """The init script that hands ``config`` to the fake LanguageModel. A
    ``responderSource`` goes in as code rather than as a string for the fake to eval: the
    page's Content-Security-Policy allows no eval."""
    config = dict(config)
    source = config.pop("responderSource", None)
    script = f"window.__fakeLMConfig = {json.dumps(config)};"
    if source:
        script += f"\nwindow.__fakeLMConfig.responder = ({source});"
    return script


def wait_until(page: Page, expression: str, timeout_ms: int = 10_000):
    """Poll the JS ``expression`` until it is truthy; its value. (Playwright's
    wait_for_function evals its predicate inside the page, which the page's CSP forbids;
    page.evaluate is not an eval of the page's.)"""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_ms} ms: {expression}")
        page.wait_for_timeout(50)


def boot(page: Page, url: str, *, wait_for_chat: bool = True) -> None:
    """Load the page and wait until the agent is ready and, unless ``wait_for_chat`` is
    False (no model: the guide instead), until the message box takes text."""
    page.goto(url)
    wait_for_boot(page, wait_for_chat=wait_for_chat)


def reload(page: Page) -> None:
    """Reload the page (as a user does, whatever it was doing) and wait as ``boot``."""
    page.reload()
    wait_for_boot(page)


def wait_for_boot(page: Page, *, wait_for_chat: bool = True) -> None:
    """Wait for a page that is loading to be ready (see ``boot``)."""
    expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready",
                                                            timeout=BOOT_TIMEOUT_MS)
    if wait_for_chat:
        expect(page.get_by_test_id("chat-input")).to_be_enabled()
    # The sessions list and the reopened session's transcript are asked for after the
    # boot: wait until both show what is stored (pages without them, like an embedding
    # page, have nothing to wait for).
    wait_until(page, SHOWN_AFTER_BOOT, timeout_ms=TURN_TIMEOUT_MS)


SHOWN_AFTER_BOOT = """(() => {
  const list = document.querySelector('[data-testid="session-list"]');
  const messages = document.querySelector('[data-testid="messages"]');
  // what the model takes besides text, asked once the agent is ready (ui/attach.py)
  const inputs = document.querySelector('[data-testid="model-inputs"]');
  return (!list || !!list.dataset.state) && (!messages || messages.dataset.loading === 'false')
    && (!inputs || !!inputs.dataset.image);
})()"""


def watch_from_parsing(selector: str, attributes: list[str], setup: str, note: str) -> str:
    """An init script that runs ``setup``, then calls the JS function ``note(element,
    at)`` on the element matching ``selector`` the moment the parser adds it (``at`` is
    null) and at every change of ``attributes`` (``at``: the page's clock in ms). A
    MutationObserver on the document sees the element as soon as it exists: waiting for
    DOMContentLoaded would be too late, a fast test has used the page by then. Both
    observers stop at the shared page's teardown (``window.__e2eTeardown``), which also
    takes the records ``setup`` put on window away: a later test must not feed them."""
    return f"""(() => {{
  {setup}
  const note = {note};
  let changes = null;
  const watch = (element) => {{
    note(element, null);
    changes = new MutationObserver(() => note(element, Math.round(performance.now())));
    changes.observe(element, {{attributes: true, attributeFilter: {json.dumps(attributes)}}});
  }};
  const find = new MutationObserver(() => {{
    const element = document.querySelector({json.dumps(selector)});
    if (element) {{ find.disconnect(); watch(element); }}
  }});
  find.observe(document, {{childList: true, subtree: true}});
  (window.__e2eTeardown ||= []).push(() => {{ find.disconnect(); changes?.disconnect(); }});
}})();"""


def open_chat(page: Page, app_server: str, install_fake_lm, **config) -> Watch:
    """The app with the fake model (``config`` as for ``install_fake_lm``), booted and
    ready to chat; the Watch started before the page loaded."""
    watch = Watch(page)
    install_fake_lm(page, **config)
    boot(page, app_server + "/")
    return watch


def send(page: Page, text: str) -> None:
    page.get_by_test_id("chat-input").fill(text)
    page.get_by_test_id("send-button").click()


def answer_to(page: Page, text: str) -> Locator:
    """The agent's answer right after the newest user message reading ``text``. (Found
    from the question rather than by counting answers: a transcript may still be
    re-rendering a session when a message is sent, and counts taken then are wrong.)"""
    asked = page.locator(USER).filter(
        has=page.locator(".text").get_by_text(text, exact=True)).last
    return asked.locator('xpath=following-sibling::li[@data-role="assistant"][1]')


def chat(page: Page, text: str) -> str:
    """Send a message, wait for the answer; its text."""
    send(page, text)
    answer = answer_to(page, text)
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("send-button")).to_be_enabled()
    return answer.locator(".text").text_content()


def compact(page: Page, focus: str = "") -> None:
    """Press "Compact now" (with a focus) and wait for the worker's reply to arrive,
    whatever it says. (The button's label alone cannot tell: it reads "Compact now"
    both before the click is handled and after the reply.)"""
    button = page.get_by_test_id("compact-button")
    expect(button).to_be_enabled(timeout=TURN_TIMEOUT_MS)
    replies = int(button.get_attribute("data-replies") or 0)
    page.get_by_test_id("compact-focus").fill(focus)
    button.click()
    expect(button).to_have_attribute("data-replies", str(replies + 1),
                                     timeout=TURN_TIMEOUT_MS)


def failed_turn(page: Page, text: str, error: str = "The model crashed.") -> Locator:
    """Send ``text`` with the model set to fail the turn's first step prompt (an
    OperationError saying ``error``); the turn's answer, once it shows the error. (The
    step prompt, not just the next call: the host may first ask availability() whether
    the browser offers a sampling mode, and shrugs off a failure there.)"""
    page.evaluate("(message) => __fakeLM.failNext('OperationError', "
                  "{message, method: 'promptStreaming'})", error)
    send(page, text)
    failed = answer_to(page, text)
    expect(failed).to_have_attribute("data-state", "error", timeout=TURN_TIMEOUT_MS)
    expect(failed.locator(".text")).to_contain_text(error)
    expect(failed.get_by_test_id("message-error")).to_contain_text("OperationError")
    # Pinned by position: a retry adds a newer message with the same text.
    position = failed.evaluate(
        "(node) => [...document.querySelectorAll(selector)].indexOf(node)".replace(
            "selector", repr(ASSISTANT)))
    return page.locator(ASSISTANT).nth(position)


def texts(page: Page, selector: str = MESSAGES) -> list[str]:
    """The messages shown, as "role: text"."""
    return page.eval_on_selector_all(
        selector, "nodes => nodes.map(n => n.dataset.role + ': ' + "
                  "n.querySelector('.text').textContent)")


# ------------------------------------------------------------------ sessions

def current_session(page: Page) -> str:
    return page.get_by_test_id("session-list").locator('[aria-current="true"]') \
        .get_attribute("data-session-id")


def row(page: Page, session_id: str):
    """The sessions list's row of ``session_id``."""
    return page.locator(f'{SESSION_ROWS}[data-row="{session_id}"]')


def session_ids(page: Page) -> list[str]:
    """The sessions listed, in order."""
    return page.eval_on_selector_all(
        '[data-testid="session-list"] [data-session-id]',
        "nodes => nodes.map(n => n.dataset.sessionId)")


def start_worker_request(page: Page, name: str, request_type: str, **fields) -> None:
    """Send the agent worker a request directly, as the page does (``{type, id,
    **fields}``), without waiting: its reply's value (or error) becomes the promise
    ``window[name]`` (the page's own handler ignores replies it did not ask for)."""
    page.evaluate("""([type, fields, name]) => {
      const worker = window.pyAgentWorker.worker, id = 'e2e-' + type + '-' + Math.random();
      window[name] = new Promise((resolve, reject) => {
        const listen = (event) => {
          const data = event.data;
          if (!data || data.type !== 'reply' || data.id !== id) return;
          worker.removeEventListener('message', listen);
          data.ok ? resolve(data.value) : reject(new Error(JSON.stringify(data.error)));
        };
        worker.addEventListener('message', listen);
      });
      worker.postMessage({...fields, type, id});
    }""", [request_type, fields, name])


def ask_worker(page: Page, request_type: str, **fields):
    """Ask the agent worker directly, as the page does, and return the value of its
    reply (see :func:`start_worker_request`)."""
    name = f"__e2e_{request_type}_{id(fields)}"
    start_worker_request(page, name, request_type, **fields)
    return page.evaluate(f"window[{name!r}]")


def stored_sessions(page: Page) -> list[dict]:
    """The worker's list of saved sessions (IndexedDB), asked directly."""
    return ask_worker(page, "sessions")


# ------------------------------------------------------------------ scripted model

def step_responder(body: str, setup: str = "") -> str:
    """JS source of a fake-model responder (``responderSource``) that scripts the agent's
    steps.

    Prompts under the agent's step schema (the ones with a ``toolName``) run ``body``:
    JS statements that see ``input``, ``ctx``, ``schema``, ``text`` (``String(input)``)
    and ``step({thought, toolName, toolInput, finalAnswer})``, which makes a step reply
    (fields left out are empty, ``toolName`` 'none'), and return the reply or a Promise
    of it. Every other prompt (summaries, facts) gets the fake's default reply.
    ``setup`` runs once, for state kept across calls (``let steps = 0;``).
    """
    return ("(() => {\n  " + setup + """
  const step = (fields) => JSON.stringify(Object.assign(
      {thought: '', toolName: 'none', toolInput: '', finalAnswer: ''}, fields));
  return async (input, ctx) => {
    const schema = ctx.responseConstraint;
    if (!(schema && schema.properties && schema.properties.toolName)) {
      return window.__fakeLM.defaultResponder(input, ctx);
    }
    const text = String(input);
""" + body + """
  };
})()""")


def tool_call_responder(rules: str, obey: str = "null") -> str:
    """A step responder that calls the tool a rule picks for the user's message, then
    answers with what the tool returned, as ``"<tool> -> <observation>"``.

    ``rules`` is JS source of an array of ``[pattern, (match) => [toolName, toolInput]]``;
    a picked tool the retriever did not offer gets ``"NOT OFFERED <tool>: <offered>"``,
    a message no rule matches ``"You said: <message>"``. ``obey`` is JS source of
    ``(tool, observation) => [toolName, toolInput] or null``: a model that does what an
    observation tells it (the worst case, for the hostile set) makes that call instead.
    """
    return step_responder(r"""
    const observed = /^Observation from ([\w.-]+): ([\s\S]*)$/.exec(text);
    const obeyed = observed && (""" + obey + r""")?.(observed[1], observed[2]);
    if (obeyed) return step({thought: 'the result says to', toolName: obeyed[0], toolInput: obeyed[1]});
    if (observed) return step({thought: 'scripted', finalAnswer: `${observed[1]} -> ${observed[2]}`});
    const message = text.slice(text.lastIndexOf('User: ') + 6).trim();
    const offered = schema.properties.toolName.enum;
    for (const [pattern, make] of """ + rules + r""") {
      const match = pattern.exec(message);
      if (!match) continue;
      const [tool, args] = make(match);
      if (!offered.includes(tool)) {
        return step({thought: 'scripted', finalAnswer: `NOT OFFERED ${tool}: ${offered.join(', ')}`});
      }
      return step({thought: 'scripted', toolName: tool, toolInput: args});
    }
    return step({thought: 'scripted', finalAnswer: `You said: ${message}`});""")
