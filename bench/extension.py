#!/usr/bin/env python3
"""The Chrome extension (``serve.py --extension``): its size, its side panel's start
against the page's, the in-page model's start in each, and what reading a 5 MB page costs.

    python bench/extension.py [--runs N] [--gguf PATH] [--only model|boot|extract]

In headless Chromium (the system one, as in the e2e tests), with the fake Prompt API:

  size      the unpacked extension and its zip
  boot      navigation start to the agent's "ready": the side panel's page (opened in a
            tab: headless Chromium has no side panel) against serve.py's page, each in a
            fresh profile (cold) and again in the same one (warm); both with the tool
            worker, as users get them
  model     the in-page model's start (PageModel.load(): the GGUF fetched or read, llama.cpp's
            worker started, the weights loaded) in the side panel, where the GGUF is a
            file of the extension read in place, against serve.py's page, where the first
            start downloads it into Cache Storage (with its SHA-256) and the next one
            reads it from there; each in a fresh profile. The tiny random-weight GGUF of
            the tests, or ``--gguf PATH`` (say Gemma 3 270M, 240 MB)
  extract   reading tests/e2e's 5 MB fixture page in the tab (the page reader's own time,
            and the round trip from the side panel), and a whole read_page turn on it

Medians of ``--runs`` runs. Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from serving.app_files import visible_files  # noqa: E402
from serving.http_server import make_server  # noqa: E402
from serving.page_models import page_models_from_args  # noqa: E402
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.e2e.extension_app import (ExtensionBrowser, FixtureServer,  # noqa: E402
                                     build_test_extension, page_tools_call)
from tests.e2e.page_model_app import write_model  # noqa: E402
from tests.e2e.pages import chat, install_fake_lm_scripts  # noqa: E402
from tests.e2e.test_extension import RESPONDER  # noqa: E402

READY = '[data-testid="status"][data-state="ready"]'


def boot_ms(page, url: str) -> float:
    started = time.monotonic()
    page.goto(url)
    page.wait_for_selector(READY, timeout=180_000)
    return (time.monotonic() - started) * 1000


def page_boots(playwright, url: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            times = []
            for _ in range(2):
                page = context.new_page()
                install_fake_lm_scripts(page, {})
                times.append(boot_ms(page, url))
                page.close()
            return times[0], times[1]
        finally:
            context.close()


def panel_boots(playwright, extension: Path) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as profile:
        browser = ExtensionBrowser(playwright, extension, Path(profile))
        browser.start()
        try:
            times = []
            for _ in range(2):
                page = browser.context.new_page()
                install_fake_lm_scripts(page, {})
                times.append(boot_ms(page, browser.panel_url))
                page.close()
            return times[0], times[1]
        finally:
            browser.close()


# Load the site's first offered model twice (the second time: kept, or read in place
# again), in the page or the panel (both at the site's root); milliseconds of each load.
MODEL_STARTS = """async () => {
  const {PageModel} = await import(new URL('page_model/language_model.js', location.href).href);
  const manifest = await (await fetch('vendor/manifest.json')).json();
  const offered = manifest.page_models[0];
  const source = {...offered, url: new URL(offered.url, location.href).href};
  const times = [];
  for (let run = 0; run < 2; run++) {
    const model = await PageModel.fromManifest({source});
    const started = performance.now();
    const info = await model.load();
    times.push(performance.now() - started);
    model.terminate();
    if (!info.contextWindow) throw new Error('not loaded');
  }
  return times;
}"""


def page_model_starts(playwright, url: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            page = context.new_page()
            page.goto(url)
            first, again = page.evaluate(MODEL_STARTS)
            return first, again
        finally:
            context.close()


def panel_model_starts(playwright, extension: Path) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as profile:
        browser = ExtensionBrowser(playwright, extension, Path(profile))
        browser.start()
        try:
            page = browser.context.new_page()
            page.goto(browser.panel_url)
            first, again = page.evaluate(MODEL_STARTS)
            return first, again
        finally:
            browser.close()


def extraction(playwright, extension: Path, fixtures: FixtureServer) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as profile:
        browser = ExtensionBrowser(playwright, extension, Path(profile))
        browser.start()
        try:
            browser.open_tab(fixtures.url + "/huge.html")
            panel = browser.context.new_page()
            install_fake_lm_scripts(panel, {"responderSource": RESPONDER})
            boot_ms(panel, browser.panel_url)
            started = time.monotonic()
            read = page_tools_call(panel, "readPage")
            round_trip = (time.monotonic() - started) * 1000
            panel.evaluate("globalThis.pyAgentTabReader.then((r) => { r._lastRead = null; })")
            started = time.monotonic()
            chat(panel, "What does the page say about the harbour ferry?")
            turn = (time.monotonic() - started) * 1000
            steps = panel.evaluate("window.__fakeLM.calls.filter((c) => c.method === "
                                   "'promptStreaming' || c.method === 'prompt')"
                                   ".map((c) => c.input.slice(0, 40))")
            assert any(s.startswith("Observation from read_page") for s in steps), steps
            return {"in the tab (ms)": read["ms"], "round trip (ms)": round_trip,
                    "read_page turn (ms)": turn, "chars read": read["chars"],
                    "chars on the page": read["totalChars"]}
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gguf", type=Path, help="the model whose start is measured "
                                                  "(default: the tests' tiny random one)")
    parser.add_argument("--only", choices=("model", "boot", "extract"),
                        help="measure only this (the size is always said)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        extension = build_test_extension(Path(folder) / "py-agent")
        files = list(visible_files(extension))
        size = sum(p.stat().st_size for p in files)
        packed = extension.with_name(extension.name + ".zip").stat().st_size
        print(f"size: {len(files)} files, {size / 1e6:.1f} MB unpacked, {packed / 1e6:.1f} MB zip")
        gguf = args.gguf or write_model(Path(folder) / "models", "tiny.gguf")
        with_model = build_test_extension(Path(folder) / "with-model", gguf=gguf)
        server = make_server("127.0.0.1", 0, quiet=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        model_page = make_server("127.0.0.1", 0, quiet=True,
                                 page_models=page_models_from_args([str(gguf)]))
        threading.Thread(target=model_page.serve_forever, daemon=True).start()
        fixtures = FixtureServer()
        try:
            with sync_playwright() as playwright:
                starts: dict[str, list[float]] = {}
                for _ in range(args.runs if args.only in (None, "model") else 0):
                    for name, (first, again) in (
                            ("page", page_model_starts(playwright, model_page.url + "/")),
                            ("panel", panel_model_starts(playwright, with_model))):
                        starts.setdefault(f"{name}, first", []).append(first)
                        starts.setdefault(f"{name}, again", []).append(again)
                for name, values in starts.items():
                    print(f"model start ({gguf.name}) {name}: median {statistics.median(values):.0f} ms "
                          f"({', '.join(f'{v:.0f}' for v in values)})")
                results: dict[str, list[float]] = {}
                for _ in range(args.runs if args.only in (None, "boot") else 0):
                    for name, (cold, warm) in (("page", page_boots(playwright, server.url + "/")),
                                               ("panel", panel_boots(playwright, extension))):
                        results.setdefault(f"{name} cold", []).append(cold)
                        results.setdefault(f"{name} warm", []).append(warm)
                for name, values in results.items():
                    print(f"boot {name}: median {statistics.median(values):.0f} ms "
                          f"({', '.join(f'{v:.0f}' for v in values)})")
                rows = [extraction(playwright, extension, fixtures)
                        for _ in range(args.runs if args.only in (None, "extract") else 0)]
                for key in rows[0] if rows else ():
                    values = [row[key] for row in rows]
                    print(f"5 MB page, {key}: median {statistics.median(values):,.0f} "
                          f"({', '.join(f'{v:,.0f}' for v in values)})")
        finally:
            fixtures.close()
            for running in (server, model_page):
                running.shutdown()
                running.server_close()


if __name__ == "__main__":
    main()
