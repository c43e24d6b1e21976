"""Make the README's screenshots of the demo page, in headless Chromium.

    python scripts/screenshots.py                 # all of them, into docs/screenshots/
    python scripts/screenshots.py --only phone    # just some (names below; repeatable)
    python scripts/screenshots.py --out /tmp/shots --list

It prepares the runtime (what `python serve.py --prepare-only` does), serves the app with
serve.py's own server on a free local port, and drives the page with Playwright in
Debian's Chromium with the end-to-end tests' launch flags. Gemini Nano is not available
headless, so the page gets the tests' fake LanguageModel (tests/e2e/fake_language_model.js)
with a scripted demo conversation: a unit conversion, a vegetarian recipe search, a
weekday question, then a compaction so the memory inspector has a summary and key facts.
The tools are the real ones, run by the real agent in its worker: only the model's
replies are scripted, and a reply falls back to answering directly when the retriever
did not offer the tool it wanted.

Runs itself with the test virtualenv's Python (.venv/, made by `python run_tests.py`)
when there is one, so it uses the tests' Playwright; else this Python needs Playwright.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv" / ("Scripts" if os.name == "nt" else "bin") / "python"
E2E = ROOT / "tests" / "e2e"
FAKE_LM_SCRIPTS = (E2E / "fake_constraints.js", E2E / "fake_language_model.js")
OUT = ROOT / "docs" / "screenshots"

DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 360, "height": 760}
BOOT_TIMEOUT_MS = 120_000
TURN_TIMEOUT_MS = 30_000

# The demo's model: scripted replies by what the user asked. Each turn clones the base
# session, so a turn's steps share one fake session id.
DEMO_RESPONDER = r"""(() => {
  const plans = [
    {match: /grams .*ounces|ounces .*grams/i, tool: /convert/,
     input: {value: 3, from_unit: 'oz', to_unit: 'g'},
     thought: 'A unit conversion from ounces to grams: the converter is exact.',
     answer: (obs) => `3 ounces is about **85 grams** (${obs}).`},
    {match: /vegetarian/i, tool: /find_recipe/,
     input: {ingredients: 'chickpeas', diet: 'vegetarian', max_minutes: 30},
     thought: 'The user is vegetarian and wants a quick dinner with chickpeas.',
     answer: (obs) => {
       const picks = obs.split('\n').filter((l) => l.startsWith('- ')).slice(0, 3)
         .map((l) => l.replace(/^- /, '').replace(/ \(.*$/, ''));
       return picks.length
         ? `Here are quick vegetarian dinners with chickpeas:\n\n${picks.map((p) => `- ${p}`).join('\n')}\n\nThe **chickpea and spinach curry** takes about 30 minutes. Want the recipe?`
         : 'A chickpea and spinach curry is quick, filling and vegetarian.';
     }},
    {match: /christmas|weekday|day of the week/i, tool: /day_of_week/,
     input: {date: '2026-12-25'},
     thought: 'Which weekday is 2026-12-25? The date tool knows.',
     answer: (obs) => `Christmas 2026 falls on a **${(obs.match(/(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)/) || ['', 'Friday'])[1]}**.`},
  ];
  const turns = {};
  return (input, ctx) => {
    const text = String(input);
    const schema = ctx.responseConstraint;
    if (schema && schema.properties && schema.properties.facts) {
      return JSON.stringify({facts: [
        {category: 'preference', text: 'The user is vegetarian.'},
        {category: 'need', text: 'Wants quick dinners, ready in 30 minutes or less.'},
      ]});
    }
    if (!schema && text.includes('<turns>')) {
      return 'Summary: The user asked how many grams 3 ounces is: about 85 g.';
    }
    if (!(schema && schema.properties && schema.properties.toolName)) {
      return window.__fakeLM.defaultResponder(input, ctx);
    }
    let turn = turns[ctx.sessionId];
    if (!turn) {
      // The turn's first prompt ends with the user's message (memory and tools come first).
      const at = text.lastIndexOf('User: ');
      const message = at >= 0 ? text.slice(at + 6) : text;
      turn = turns[ctx.sessionId] = {plan: plans.find((p) => p.match.test(message)), step: 0};
    }
    turn.step += 1;
    const plan = turn.plan;
    const offered = schema.properties.toolName.enum || [];
    const tool = plan && offered.find((name) => plan.tool.test(name));
    if (plan && tool && turn.step === 1) {
      return JSON.stringify({thought: plan.thought, toolName: tool, toolInput: plan.input,
                             finalAnswer: ''});
    }
    const observation = (/^Observation from \w+: ([\s\S]*)$/.exec(text) || ['', ''])[1].trim();
    return JSON.stringify({
      thought: observation ? 'The observation answers the question.' : 'I can answer directly.',
      toolName: 'none', toolInput: '',
      finalAnswer: plan ? plan.answer(observation) : window.__fakeLM.defaultResponder(input, ctx),
    });
  };
})()"""

CONVERSATION = [
    "How many grams is 3 ounces?",
    "I'm vegetarian. Suggest a quick dinner with chickpeas.",
    "What day of the week is Christmas 2026?",
]

SHOTS = {
    "desktop-light": "the chat after the demo conversation, desktop, light theme",
    "desktop-dark": "the same, dark theme",
    "memory-inspector": "the sidebar's memory inspector after a compaction",
    "tools-panel": "the tools panel, with the tools offered for the last turn",
    "phone": "the chat at phone width (360 px)",
    "phone-drawer": "the sessions, memory and tools drawer at phone width",
    "model-download": "the model downloading on first use, with its progress bar",
    "model-guide": "the guide shown when Chrome's built-in model is not available",
    "extension": "the extension's side panel next to the page it answered from",
}


def reexec_in_venv() -> None:
    """Run with the test virtualenv's Python (the tests' Playwright) when there is one;
    else with this Python, if it has Playwright."""
    if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != VENV_PYTHON.parents[1].resolve():
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        sys.exit("Playwright for Python is missing: run `python run_tests.py --unit` once "
                 "(it makes .venv/ with the test dependencies), then run this again.")


def chromium_flags() -> list[str]:
    """The end-to-end tests' launch flags (CHROMIUM_FLAGS in tests/e2e/conftest.py), read
    without importing the conftest (which needs pytest)."""
    tree = ast.parse((E2E / "conftest.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CHROMIUM_FLAGS" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("CHROMIUM_FLAGS not found in tests/e2e/conftest.py")


def wait_until(page, expression: str, timeout: int) -> None:
    """Poll the JS ``expression`` until truthy (Playwright's wait_for_function evals its
    predicate in the page, which the page's CSP forbids)."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout} ms: {expression}")
        page.wait_for_timeout(50)


class Demo:
    def __init__(self, browser, url: str, out: Path, wanted: set[str]) -> None:
        self.browser, self.url, self.out, self.wanted = browser, url, out, wanted
        self.made: list[Path] = []

    def want(self, *names: str) -> bool:
        return any(name in self.wanted for name in names)

    def page(self, viewport: dict, scheme: str = "light", **fake_config):
        context = self.browser.new_context(viewport=viewport, color_scheme=scheme,
                                           device_scale_factor=1, reduced_motion="reduce")
        page = context.new_page()
        if fake_config.get("availability") != "none":
            # The responder goes in as code: the page's CSP allows no eval.
            source = fake_config.pop("responderSource", None)
            page.add_init_script(script=f"window.__fakeLMConfig = {json.dumps(fake_config)};"
                                 + (f"window.__fakeLMConfig.responder = ({source});"
                                    if source else ""))
            for script in FAKE_LM_SCRIPTS:
                page.add_init_script(path=str(script))
        page.on("pageerror", lambda error: print(f"[screenshots] page error: {error}"))
        page.goto(self.url + "/")
        page.wait_for_selector('[data-testid="status"][data-state="ready"]',
                               timeout=BOOT_TIMEOUT_MS)
        return page

    def save(self, name: str, target, **options) -> None:
        """Screenshot ``target`` (a page or locator) as ``name``, if that one is wanted;
        ``options`` go to its ``screenshot``."""
        if name not in self.wanted:
            return
        path = self.out / f"{name}.png"
        target.screenshot(path=str(path), animations="disabled", caret="hide", **options)
        self.made.append(path)
        print(f"[screenshots] {self.shown(path)}")

    def save_panel(self, page, name: str, testid: str, pad: int = 12,
                   max_height: int = 1000) -> None:
        """One sidebar panel, whole (the sidebar scrolls on its own, so it is let out of
        its box for the picture), with a margin, cut at ``max_height``."""
        if name not in self.wanted:
            return
        page.evaluate("""() => Object.assign(document.getElementById('sidebar').style,
                                             {position: 'static', maxHeight: 'none',
                                              overflow: 'visible'})""")
        box = page.get_by_test_id(testid).evaluate("""(el) => {
          const r = el.getBoundingClientRect();
          return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};
        }""")
        clip = {"x": max(0, box["x"] - pad), "y": max(0, box["y"] - pad),
                "width": box["width"] + 2 * pad,
                "height": min(box["height"] + 2 * pad, max_height)}
        self.save(name, page, full_page=True, clip=clip)
        page.evaluate("document.getElementById('sidebar').removeAttribute('style')")

    @staticmethod
    def shown(path: Path) -> str:
        return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)

    @staticmethod
    def chat(page, text: str) -> None:
        answers = '[data-testid="message"][data-role="assistant"]'
        before = page.locator(answers).count()
        page.get_by_test_id("chat-input").fill(text)
        page.get_by_test_id("send-button").click()
        wait_until(
            page,
            f"document.querySelectorAll('{answers}').length > {before} && "
            f"document.querySelectorAll('{answers}')[{before}].dataset.state === 'answered'",
            timeout=TURN_TIMEOUT_MS)
        page.wait_for_selector('[data-testid="send-button"]:not([disabled])')

    @staticmethod
    def compact(page) -> None:
        toggle = page.get_by_test_id("drawer-toggle")
        drawer = toggle.is_visible()   # at phone width the memory panel is in the drawer
        if drawer:
            toggle.click()
        focus = page.get_by_test_id("compact-focus")
        if focus.count():
            focus.fill("keep the dietary constraints")
        page.get_by_test_id("compact-button").click()
        wait_until(
            page,
            "document.querySelector('[data-testid=\"memory-summary\"]').textContent.trim() !== ''",
            timeout=TURN_TIMEOUT_MS)
        page.wait_for_selector('[data-testid="compact-button"]:not([disabled])')
        focus = page.get_by_test_id("compact-focus")
        if focus.count():
            focus.fill("")
        if drawer:
            page.keyboard.press("Escape")

    def conversation(self, page) -> None:
        for text in CONVERSATION:
            self.chat(page, text)
        self.compact(page)
        # The live traces opened as the turns ran; keep only the last one open.
        page.evaluate("""() => {
          const traces = [...document.querySelectorAll('[data-testid="trace"]')];
          traces.forEach((t, i) => { t.open = i === traces.length - 1; });
          document.activeElement?.blur();
          window.scrollTo(0, document.documentElement.scrollHeight);
        }""")
        time.sleep(0.3)

    def desktop(self) -> None:
        if not self.want("desktop-light", "desktop-dark", "memory-inspector", "tools-panel"):
            return
        page = self.page(DESKTOP, responderSource=DEMO_RESPONDER)
        self.conversation(page)
        self.save("desktop-light", page)
        for name, testid in (("memory-inspector", "memory-panel"), ("tools-panel", "tools-panel")):
            self.save_panel(page, name, testid)
        page.emulate_media(color_scheme="dark")
        time.sleep(0.2)
        self.save("desktop-dark", page)
        page.context.close()

    def phone(self) -> None:
        if not self.want("phone", "phone-drawer"):
            return
        page = self.page(PHONE, responderSource=DEMO_RESPONDER)
        self.conversation(page)
        self.save("phone", page)
        if "phone-drawer" in self.wanted:
            page.get_by_test_id("drawer-toggle").click()
            page.evaluate("document.activeElement?.blur()")
            page.get_by_test_id("memory-panel").scroll_into_view_if_needed()
            time.sleep(0.2)
            self.save("phone-drawer", page)
        page.context.close()

    def download(self) -> None:
        if not self.want("model-download"):
            return
        # A slow download, held at about 40 % for the picture.
        page = self.page(DESKTOP, availability="downloadable", downloadSteps=100,
                         downloadStepMs=400)
        page.get_by_test_id("chat-input").fill("Hello! What can you do?")
        page.get_by_test_id("send-button").click()
        wait_until(
            page,
            "Number(document.querySelector('[data-testid=\"download-progress\"]')"
            ".getAttribute('value')) >= 0.4", timeout=TURN_TIMEOUT_MS * 2)
        page.evaluate("document.activeElement?.blur()")
        self.save("model-download", page)
        page.context.close()

    def guide(self) -> None:
        if not self.want("model-guide"):
            return
        page = self.page(DESKTOP, availability="unavailable")
        self.save("model-guide", page)
        page.context.close()


def extension_shot(playwright, out: Path) -> Path:
    """The extension (built as serve.py --extension does, loaded unpacked) beside a
    fixture page: a question answered from the page, its quote clicked and highlighted.
    Headless Chromium has no side panel, so the panel's page and the page are each
    photographed and set side by side."""
    import base64
    import tempfile

    from tests.e2e.extension_app import ExtensionBrowser, FixtureServer, build_test_extension
    from tests.e2e.test_extension import RESPONDER

    fixtures = FixtureServer()
    try:
        with tempfile.TemporaryDirectory() as folder:
            extension = build_test_extension(Path(folder) / "py-agent")
            browser = ExtensionBrowser(playwright, extension, Path(folder) / "profile")
            browser.start()
            try:
                tab = browser.open_tab(fixtures.url + "/selection.html")
                tab.set_viewport_size({"width": 820, "height": 760})
                panel = browser.open_panel(responderSource=RESPONDER)
                panel.set_viewport_size({"width": 420, "height": 760})
                panel.wait_for_selector('[data-testid="status"][data-state="ready"]',
                                        timeout=BOOT_TIMEOUT_MS)
                Demo.chat(panel, "What does this agreement say about cancellation notice?")
                panel.locator('[data-testid="page-quote"]').last.click()
                panel.wait_for_selector('[data-testid="page-quote"][data-state="shown"]')
                # The answer rather than its trace: the traces folded, the chat at its end.
                panel.evaluate("""() => { for (const d of document.querySelectorAll(
                    '[data-testid="message"] details')) d.open = false;
                  document.querySelector('[data-testid="messages"]').lastElementChild
                    .scrollIntoView({block: 'end'}); }""")
                shots = [base64.b64encode(target.screenshot(animations="disabled",
                                                            caret="hide")).decode()
                         for target in (tab, panel)]
                sheet = browser.context.new_page()
                sheet.set_viewport_size({"width": 1252, "height": 772})
                sheet.set_content(
                    "<body style='margin:0;display:flex;gap:12px;padding:6px;background:#d0d4da'>"
                    + "".join(f"<img src='data:image/png;base64,{shot}'>" for shot in shots)
                    + "</body>")
                path = out / "extension.png"
                sheet.screenshot(path=str(path))
                return path
            finally:
                browser.close()
    finally:
        fixtures.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(SHOTS), metavar="NAME",
                        help="make only this screenshot (repeatable): " + ", ".join(SHOTS))
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    parser.add_argument("--list", action="store_true", help="list the screenshots and exit")
    args = parser.parse_args()
    if args.list:
        for name, what in SHOTS.items():
            print(f"{name:18} {what}")
        return 0
    reexec_in_venv()
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from serving.common import PrepareError
    from serving.http_server import make_server
    from serving.prepare import prepare
    try:
        prepare()
    except PrepareError as error:
        print(f"[screenshots] prepare() failed: {error}", file=sys.stderr)
        return 1
    server = make_server("127.0.0.1", 0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        with sync_playwright() as playwright:
            executable = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
            browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                                 args=chromium_flags())
            demo = Demo(browser, server.url, args.out, set(args.only or SHOTS))
            demo.desktop()
            demo.phone()
            demo.download()
            demo.guide()
            browser.close()
            if "extension" in demo.wanted:
                path = extension_shot(playwright, args.out)
                demo.made.append(path)
                print(f"[screenshots] {Demo.shown(path)}")
    finally:
        server.shutdown()
        server.server_close()
    print(f"[screenshots] {len(demo.made)} screenshot(s) in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
