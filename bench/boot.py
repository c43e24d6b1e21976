#!/usr/bin/env python3
"""Boot benchmark: our agent's start against a bare Pyodide start.

    python bench/boot.py [--runs N] [--micropip]

In headless Chromium (the system one, as in the e2e tests) it times, from navigation
start to the page receiving the worker's message:

  bare          a page whose module worker only does ``await loadPyodide()``
  worker        a page without UI that starts our worker (no snapshot), until ready
  ours          the app's page (PyScript + MicroPython UI) until the worker says ready,
                booting without the memory snapshot (``?snapshot=off``)
  ours-snapshot the app's page as users get it: every load, the first (cold) one too,
                restores the memory snapshot serve.py made; the cold visit stays until
                the page has been idle long enough for the browser to keep that
                snapshot in Cache Storage (3 s), as a real first visit does, and the
                warm one reads it there
  ours-http     as ours-snapshot, but the cold visit ends at once: the warm one fetches
                the server's snapshot again (from the HTTP cache) and unpacks it
  ours-browser  the app's page from a server offering no snapshot: the cold load boots
                in full and makes one in the background; the warm load restores it
  ours-micropip (with --micropip) as ``ours``, installing the py_agent wheel with
                micropip instead of unpacking it (to compare the two installers)

each cold (a fresh browser profile) and warm (the same profile, browser restarted: the
HTTP cache, Chromium's compiled-wasm cache and the snapshot in Cache Storage are
filled), N times, and prints medians and the ratios against bare. For the app's page it
also reports when the message box took text, from the first paint. Not a test: numbers
depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving.http_server import make_server  # noqa: E402
from serving.prepare import prepare  # noqa: E402
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402

TIMEOUT_MS = 120_000

BARE_HTML = """<!doctype html>
<meta charset="utf-8"><title>bare loadPyodide</title><link rel="icon" href="data:,">
<script type="module" src="/bench/bare.js"></script>
<p id="out">loading</p>
"""

BARE_PAGE_JS = """
const worker = new Worker('/bench/bare_worker.js', {type: 'module'});
worker.onmessage = (event) => {
  document.body.dataset.workerMs = String(Math.round(event.data.ms));
  document.body.dataset.pageMs = String(Math.round(performance.now()));
};
worker.onerror = () => { document.body.dataset.error = 'worker failed'; };
"""

WORKER_ONLY_JS = """
const worker = new Worker('/worker/agent_worker.js?snapshot=off', {type: 'module'});
worker.onmessage = (event) => {
  if (event.data.type === 'error') document.body.dataset.error = event.data.message;
  if (event.data.type !== 'boot') return;
  document.body.dataset[event.data.phase.replace(/-(.)/g, (_, c) => c.toUpperCase())] =
    String(event.data.took);
  if (event.data.phase === 'ready') {
    document.body.dataset.workerMs = String(event.data.ms);
    document.body.dataset.pageMs = String(Math.round(performance.now()));
  }
};
worker.onerror = () => { document.body.dataset.error = 'worker failed'; };
"""

# Notes, frame by frame from the start, when the app's message box first takes text.
BOX_WATCH_JS = """
(() => {
  const watch = () => {
    const box = document.querySelector('[data-testid="chat-input"]');
    if (box && !box.disabled && !box.readOnly) window.__boxEditableMs = performance.now();
    else requestAnimationFrame(watch);
  };
  requestAnimationFrame(watch);
})();
"""

BARE_WORKER_JS = """
const started = performance.now();
const {loadPyodide} = await import('%(index)spyodide.mjs');
await loadPyodide({indexURL: '%(index)s'});
postMessage({ms: performance.now() - started});
"""


def write_bare_pages(folder: Path, index_url: str) -> None:
    (folder / "bare.html").write_text(BARE_HTML)
    (folder / "bare.js").write_text(BARE_PAGE_JS)
    (folder / "worker.html").write_text(BARE_HTML.replace("bare.js", "worker_only.js"))
    (folder / "worker_only.js").write_text(WORKER_ONLY_JS)
    (folder / "bare_worker.js").write_text(BARE_WORKER_JS % {"index": index_url})


def measure(page, base: str, scenario: str) -> dict:
    """Open the scenario's page and return its timings in ms."""
    if scenario in ("bare", "worker"):
        page.goto(f"{base}/bench/{scenario}.html")
        page.wait_for_selector("body[data-page-ms], body[data-error]", state="attached",
                               timeout=TIMEOUT_MS)
        data = page.evaluate("({...document.body.dataset})")
        if "error" in data:
            raise RuntimeError(f"{scenario} page: {data['error']}")
        result = {"page": int(data["pageMs"]), "worker": int(data["workerMs"])}
        if scenario == "worker":
            result.update(pyodide=int(data["pyodideLoaded"]),
                          install=int(data["packagesInstalled"]),
                          agent_import=int(data["agentImported"]), entry=int(data["ready"]))
        return result
    query = {"ours": "?snapshot=off", "ours-snapshot": "", "ours-http": "",
             "ours-browser": "", "ours-micropip": "?snapshot=off&install=micropip"}[scenario]
    page.goto(base + "/" + query)
    phases = ready_phases(page, scenario, TIMEOUT_MS)
    ready = phases["ready"]
    # When the message box first took text (BOX_WATCH_JS), after the first paint.
    box_ms = page.evaluate("""() => Math.max(0, window.__boxEditableMs -
      performance.getEntriesByName('first-paint')[0].startTime)""")
    restored = phases["pyodide-loaded"].get("snapshot") == "restored"
    if (scenario == "ours-browser" and not restored) or (
            scenario == "ours-snapshot" and phases["pyodide-loaded"].get(
                "snapshotSource") == "server"):
        # The cold load: wait for the snapshot the warm load will restore (made by this
        # browser, or the server's kept).
        page.wait_for_selector('[data-testid="boot-snapshot"]', state="attached",
                               timeout=TIMEOUT_MS * 2)
    return {"page": int(ready["pageMs"]), "worker": int(ready["ms"]),
            "box": box_ms, "snapshot": phases["pyodide-loaded"].get("snapshot", ""),
            "source": phases["pyodide-loaded"].get("snapshotSource", ""),
            "ui": int(page.get_by_test_id("status").get_attribute("data-ui-ms")),
            "pyodide": int(phases["pyodide-loaded"]["took"]),
            "install": int(phases["packages-installed"]["took"]),
            "agent_import": int(phases["agent-imported"]["took"]),
            "entry": int(ready["took"])}


def ready_phases(page, what: str, timeout_ms: float) -> dict[str, dict[str, str]]:
    """Wait until the app page is ready (RuntimeError if it failed, naming ``what``);
    its boot phases by name, each with its ``data-`` attributes."""
    page.wait_for_selector('[data-testid="status"][data-state="ready"], '
                           '[data-testid="status"][data-state="error"]', timeout=timeout_ms)
    status = page.get_by_test_id("status")
    if status.get_attribute("data-state") == "error":
        raise RuntimeError(f"{what}: {status.inner_text()}")
    return page.eval_on_selector_all(
        '[data-testid="boot-phases"] li',
        "items => Object.fromEntries(items.map(li => [li.dataset.phase, {...li.dataset}]))")


def cold_and_warm(playwright, base: str, scenario: str) -> tuple[dict, dict]:
    profile = Path(tempfile.mkdtemp(prefix="py-agent-bench-"))
    try:
        results = []
        for _ in ("cold", "warm"):
            context = playwright.chromium.launch_persistent_context(
                str(profile), executable_path=chromium_path(), headless=True,
                args=CHROMIUM_FLAGS)
            try:
                context.add_init_script(script=BOX_WATCH_JS)
                page = context.pages[0] if context.pages else context.new_page()
                results.append(measure(page, base, scenario))
            finally:
                context.close()
        return results[0], results[1]
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--micropip", action="store_true",
                        help="also time installing the wheel with micropip")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    manifest = prepare()
    scenarios = ["bare", "worker", "ours", "ours-snapshot", "ours-http", "ours-browser"]
    if args.micropip:
        scenarios.append("ours-micropip")
    samples = {(s, mode): [] for s in scenarios for mode in ("cold", "warm")}
    with tempfile.TemporaryDirectory(prefix="py-agent-bench-pages-") as pages:
        write_bare_pages(Path(pages), "/" + manifest["pyodide"]["indexURL"])   # site-relative
        server = make_server("127.0.0.1", 0, mounts={"/bench/": Path(pages)}, quiet=True)
        # The same app, offering no snapshot of its own (browsers make theirs).
        unserved = make_server("127.0.0.1", 0, quiet=True, served_snapshot=False)
        for running in (server, unserved):
            threading.Thread(target=running.serve_forever, daemon=True).start()
        print(f"[bench] server {server.url}, Pyodide {manifest['pyodide']['version']}, "
              f"{args.runs} run(s)", flush=True)
        started = time.monotonic()
        try:
            with sync_playwright() as playwright:
                for run in range(args.runs):
                    # Rotate the order so drift in machine load does not favour one.
                    shift = run % len(scenarios)
                    order = scenarios[shift:] + scenarios[:shift]
                    for scenario in order:
                        base = unserved.url if scenario == "ours-browser" else server.url
                        cold, warm = cold_and_warm(playwright, base, scenario)
                        samples[(scenario, "cold")].append(cold)
                        samples[(scenario, "warm")].append(warm)
                        print(f"[bench] run {run + 1} {scenario:13} cold {cold['page']:5d} ms"
                              f"  warm {warm['page']:5d} ms", flush=True)
        finally:
            for running in (server, unserved):
                running.shutdown()
                running.server_close()

    def med(scenario: str, mode: str, key: str = "page") -> float:
        return median([s[key] for s in samples[(scenario, mode)] if key in s])

    print()
    print(f"Medians of {args.runs} run(s), ms from navigation start to the page getting "
          "the message (worker's own clock in brackets):")
    print(f"  {'':15}{'cold':>16}{'warm':>16}")
    for scenario in scenarios:
        cells = [f"{med(scenario, m):7.0f} [{med(scenario, m, 'worker'):5.0f}]"
                 for m in ("cold", "warm")]
        print(f"  {scenario:15}{cells[0]:>16}{cells[1]:>16}")
    print()
    print("Where the time goes (medians, ms; worker = our worker on a page without UI):")
    keys = ["pyodide", "install", "agent_import", "entry"]
    print(f"  {'':20}" + "".join(f"{k:>13}" for k in keys + ["ui up"]))
    for scenario in [s for s in scenarios if s not in ("bare",)]:
        for mode in ("cold", "warm"):
            cells = [med(scenario, mode, k) for k in keys + ["ui"]]
            print(f"  {scenario + ' ' + mode:20}" + "".join(
                f"{'-' if c != c else f'{c:.0f}':>13}" for c in cells))
    print(f"  {'bare cold / warm':20}{med('bare', 'cold', 'worker'):>13.0f}"
          f"  /{med('bare', 'warm', 'worker'):>6.0f}   (loadPyodide alone)")
    print()
    for scenario in ("worker", "ours", "ours-snapshot", "ours-http", "ours-browser"):
        for mode in ("cold", "warm"):
            ratio = med(scenario, mode) / med("bare", mode)
            extra = med(scenario, mode) - med("bare", mode)
            print(f"  {scenario} / bare, {mode}: {ratio:.2f}x  ({extra:+.0f} ms)")
    print()
    for scenario in ("ours-snapshot", "ours-http", "ours-browser"):
        for mode in ("cold", "warm"):
            states = sorted({f"{s.get('snapshot', '')} ({s.get('source') or '-'})"
                             for s in samples[(scenario, mode)]})
            box = med(scenario, mode, "box")
            print(f"  {scenario} {mode}: snapshot {'/'.join(states)}; the message box took "
                  f"text {box:.0f} ms after the first paint")
    if args.micropip:
        print()
        for mode in ("cold", "warm"):
            unpack, pip = med("ours", mode, "install"), med("ours-micropip", mode, "install")
            print(f"  wheel install, {mode}: unpackArchive {unpack:.0f} ms, micropip "
                  f"{pip:.0f} ms (micropip slower by {pip - unpack:.0f} ms, "
                  f"{pip / max(unpack, 1):.1f}x)")
    print(f"\n[bench] done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
