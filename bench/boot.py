#!/usr/bin/env python3
"""Boot benchmark: our agent's start against a bare Pyodide start, side by side.

    python bench/boot.py [--runs N] [--scenarios NAME,...] [--micropip]

In headless Chromium (the system one, as in the e2e tests) it times, from navigation
start to the page receiving the worker's "ready" message:

  bare          a page whose module worker only does ``await loadPyodide()``: the yardstick
  served        the app's page as users get it (PyScript + MicroPython UI, the agent's
                worker and its tool worker): every load, the first (cold) one too,
                restores the memory snapshot serve.py made; the cold visit stays until
                the browser has kept that snapshot in Cache Storage (3 s idle), as a
                real first visit does, and the warm one reads it there.  **The target:
                at most 0.6x bare, cold and warm** (issue 41, docs/startup.md)
  served-http   as served, but the cold visit ends at once: the warm one fetches the
                server's snapshot again (from the HTTP cache) and unpacks it
  no-snapshot   the app's page booting without the memory snapshot (``?snapshot=off``)
  browser-made  the app's page from a server offering no snapshot: the cold load boots
                in full and makes one in the background; the warm load restores it
  worker        a page without UI that starts our worker (no snapshot), until ready
  micropip      (with --micropip) as no-snapshot, installing the py_agent wheel with
                micropip instead of unpacking it (to compare the two installers)

each cold (a fresh browser profile) and warm (the same profile, browser restarted: the
HTTP cache, Chromium's compiled-wasm cache and the snapshot in Cache Storage are
filled), N times. In each run bare and the page as served go one right after the other
(which first alternates), and the other scenarios rotate around them, so that drift in
the machine's load favours none. It prints

  - the verdict: the page as served against bare, as the ratio of the medians and as
    the spread of the per-run ratios (each run's two were measured one right after the
    other);
  - where the time goes, phase by phase, beside bare's: the worker's script starting
    (navigation start to its first line: HTML, the page's scripts, the worker's module
    graph), Pyodide (loadPyodide, or the snapshot's restore), installing the wheels,
    importing py_agent, the entry point (storage, tools, agent), the "ready" message
    reaching the page's main thread, and the page's MicroPython UI being up;
  - when the message box took text (after the first paint), and the load average of
    the machine at the start, during and at the end.

Not a test: numbers depend on the machine and its load; read the ratios, measured side
by side, rather than the seconds. On a shared machine, run it when ``uptime``'s load is
lowest and quote the load average with the numbers.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
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
TARGET = 0.6           # the page as served, against bare (issue 41)
AS_SERVED = "served"
SCENARIOS = ("bare", "served", "served-http", "no-snapshot", "browser-made", "worker")

BARE_HTML = """<!doctype html>
<meta charset="utf-8"><title>bare loadPyodide</title><link rel="icon" href="data:,">
<script type="module" src="/bench/bare.js"></script>
<p id="out">loading</p>
"""

BARE_PAGE_JS = """
const worker = new Worker('/bench/bare_worker.js', {type: 'module'});
worker.onmessage = (event) => {
  document.body.dataset.workerMs = String(event.data.ms);
  document.body.dataset.workerAt = String(event.data.at);
  document.body.dataset.pageMs = String(event.timeStamp);
};
worker.onerror = () => { document.body.dataset.error = 'worker failed'; };
"""

WORKER_ONLY_JS = """
const worker = new Worker('/worker/agent_worker.js?snapshot=off', {type: 'module'});
worker.onmessage = (event) => {
  if (event.data.type === 'error') document.body.dataset.error = event.data.message;
  if (event.data.type !== 'boot') return;
  if (event.data.phase === 'ready') document.body.dataset.pageMs = String(event.timeStamp);
};
worker.onerror = () => { document.body.dataset.error = 'worker failed'; };
"""

BARE_WORKER_JS = """
const started = performance.now();
const {loadPyodide} = await import('%(index)spyodide.mjs');
await loadPyodide({indexURL: '%(index)s'});
const now = performance.now();
postMessage({ms: now - started, at: performance.timeOrigin + now});
"""

# Run in every page before its own scripts: notes each boot message of the page's
# workers as the page's main thread gets it (event.timeStamp: a busy main thread gets it
# late), when the message box first takes text, and when the status line says ready.
WATCH_JS = """
(() => {
  const seen = window.__bootSeen = [];
  const Original = window.Worker;
  window.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        const data = event.data || {};
        if (data.type === 'boot' || data.type === 'tool-worker') {
          seen.push({type: data.type, phase: data.phase, ms: data.ms, took: data.took,
                     at: data.at, snapshot: data.snapshot || '',
                     source: data.snapshot_source || '', received: event.timeStamp,
                     late: data.imported_after_restore || null});
        }
      });
    }
  };
  const watch = () => {
    const box = document.querySelector('[data-testid="chat-input"]');
    if (box && !box.disabled && !box.readOnly && window.__boxEditableMs === undefined) {
      window.__boxEditableMs = performance.now();
    }
    const status = document.querySelector('[data-testid="status"]');
    if (status && status.dataset.state === 'ready') window.__shownReadyMs = performance.now();
    else requestAnimationFrame(watch);
  };
  requestAnimationFrame(watch);
})();
"""

PHASES = ("start", "pyodide", "install", "imports", "entry", "deliver", "ready", "shown",
          "ui", "tools")
PHASE_HELP = {
    "start": "navigation start -> the worker's first line (HTML, page scripts, worker module graph)",
    "pyodide": "loadPyodide(), or restoring the snapshot",
    "install": "the wheels unpacked (or installed by micropip) before ready",
    "imports": "import py_agent",
    "entry": "the entry point: storage, tool modules, the agent, up to boot.ready()",
    "deliver": "the worker's 'ready' -> the page's main thread receiving it",
    "ready": "navigation start -> the page received 'ready' (the measure)",
    "shown": "navigation start -> the status line says ready (the UI handled it)",
    "ui": "navigation start -> the page's MicroPython UI up (web/main.py)",
    "tools": "the tool worker ready (its own clock, from its first line)",
}


def write_bench_pages(folder: Path, index_url: str) -> None:
    (folder / "bare.html").write_text(BARE_HTML)
    (folder / "bare.js").write_text(BARE_PAGE_JS)
    (folder / "worker.html").write_text(BARE_HTML.replace("bare.js", "worker_only.js"))
    (folder / "worker_only.js").write_text(WORKER_ONLY_JS)
    (folder / "bare_worker.js").write_text(BARE_WORKER_JS % {"index": index_url})


def load_average() -> str:
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "unknown"


def measure(page, base: str, scenario: str) -> dict:
    """Open the scenario's page and return its timings (ms) and how it booted."""
    origin_ms = None
    if scenario in ("bare", "worker"):
        page.goto(f"{base}/bench/{scenario}.html")
        page.wait_for_selector("body[data-page-ms], body[data-error]", state="attached",
                               timeout=TIMEOUT_MS)
        data = page.evaluate("({...document.body.dataset})")
        if "error" in data:
            raise RuntimeError(f"{scenario} page: {data['error']}")
        if scenario == "bare":
            origin_ms = page.evaluate("performance.timeOrigin")
            ready, worker_ms = float(data["pageMs"]), float(data["workerMs"])
            sent = float(data["workerAt"]) - origin_ms
            return {"ready": ready, "pyodide": worker_ms, "start": sent - worker_ms,
                    "deliver": ready - sent}
    else:
        query = {"served": "", "served-http": "", "browser-made": "",
                 "no-snapshot": "?snapshot=off",
                 "micropip": "?snapshot=off&install=micropip"}[scenario]
        page.goto(base + "/" + query)
        ready_phases(page, scenario, TIMEOUT_MS)
    origin_ms = page.evaluate("performance.timeOrigin")
    seen = page.evaluate("window.__bootSeen")
    agent = {m["phase"]: m for m in seen if m["type"] == "boot"}
    if "ready" not in agent:
        raise RuntimeError(f"{scenario}: no 'ready' boot message was seen")
    ready = agent["ready"]
    sent = ready["at"] - origin_ms
    result = {"ready": ready["received"], "start": sent - ready["ms"],
              "deliver": ready["received"] - sent,
              "pyodide": agent["pyodide-loaded"]["took"],
              "install": agent["packages-installed"]["took"],
              "imports": agent["agent-imported"]["took"], "entry": ready["took"],
              "snapshot": agent["pyodide-loaded"]["snapshot"],
              "source": agent["pyodide-loaded"]["source"]}
    if scenario == "worker":
        return result
    tools = [m for m in seen if m["type"] == "tool-worker" and m["phase"] == "ready"]
    if tools:
        result["tools"] = tools[0]["ms"]
    result["ui"] = float(page.get_by_test_id("status").get_attribute("data-ui-ms"))
    result["shown"] = page.evaluate("window.__shownReadyMs")
    # When the message box first took text, after the first paint.
    result["box"] = page.evaluate("""() => Math.max(0, window.__boxEditableMs -
      performance.getEntriesByName('first-paint')[0].startTime)""")
    if (scenario == "browser-made" and result["snapshot"] != "restored") or (
            scenario == "served" and result["source"] == "server"):
        # The cold load: wait for the snapshot the warm load will restore (made by this
        # browser, or the server's kept).
        page.wait_for_selector('[data-testid="boot-snapshot"]', state="attached",
                               timeout=TIMEOUT_MS * 2)
    return result


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
                context.add_init_script(script=WATCH_JS)
                page = context.pages[0] if context.pages else context.new_page()
                results.append(measure(page, base, scenario))
            finally:
                context.close()
        return results[0], results[1]
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def run_order(scenarios: list[str], run: int) -> list[str]:
    """The scenarios of one run: bare and the page as served next to each other (which
    goes first alternates), so that each run's ratio compares loads made moments apart;
    the others rotate around them, so that drift in the machine's load favours none."""
    pair = ["bare", AS_SERVED] if run % 2 == 0 else [AS_SERVED, "bare"]
    others = [s for s in scenarios if s not in pair]
    shift = run % (len(others) or 1)
    others = others[shift:] + others[:shift]
    at = run % (len(others) + 1)
    return others[:at] + pair + others[at:]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cell(value: float, width: int = 8) -> str:
    return f"{'-' if value != value else f'{value:.0f}':>{width}}"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        browser = subprocess.run([chromium_path(), "--version"], capture_output=True,
                                 text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        browser = "Chromium (version unknown)"
    return f"{os.cpu_count()} cores ({cpu}), {browser}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated, from: " + ", ".join(SCENARIOS) +
                        " (default: all; bare and served are always run)")
    parser.add_argument("--micropip", action="store_true",
                        help="also time installing the wheel with micropip")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    chosen = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    scenarios = [s for s in SCENARIOS if s in {"bare", AS_SERVED, *chosen}]
    if args.micropip:
        scenarios.append("micropip")

    manifest = prepare()
    samples: dict[tuple[str, str], list[dict]] = {(s, m): [] for s in scenarios
                                                  for m in ("cold", "warm")}
    loads = [load_average()]
    print(f"[bench] {machine()}; Pyodide {manifest['pyodide']['version']}; "
          f"{args.runs} run(s) of {', '.join(scenarios)}", flush=True)
    print(f"[bench] load average at the start (1, 5, 15 min): {loads[0]}", flush=True)
    with tempfile.TemporaryDirectory(prefix="py-agent-bench-pages-") as pages:
        write_bench_pages(Path(pages), "/" + manifest["pyodide"]["indexURL"])  # site-relative
        server = make_server("127.0.0.1", 0, mounts={"/bench/": Path(pages)}, quiet=True)
        # The same app, offering no snapshot of its own (browsers make theirs).
        unserved = make_server("127.0.0.1", 0, quiet=True, served_snapshot=False)
        for running in (server, unserved):
            threading.Thread(target=running.serve_forever, daemon=True).start()
        started = time.monotonic()
        try:
            with sync_playwright() as playwright:
                for run in range(args.runs):
                    for scenario in run_order(scenarios, run):
                        base = unserved.url if scenario == "browser-made" else server.url
                        cold, warm = cold_and_warm(playwright, base, scenario)
                        samples[(scenario, "cold")].append(cold)
                        samples[(scenario, "warm")].append(warm)
                        print(f"[bench] run {run + 1} {scenario:13} cold {cold['ready']:6.0f} ms"
                              f"  warm {warm['ready']:6.0f} ms   (load {load_average()})",
                              flush=True)
                    loads.append(load_average())
        finally:
            for running in (server, unserved):
                running.shutdown()
                running.server_close()

    def values(scenario: str, mode: str, key: str = "ready") -> list[float]:
        return [s[key] for s in samples[(scenario, mode)] if s.get(key) is not None]

    def med(scenario: str, mode: str, key: str = "ready") -> float:
        return median(values(scenario, mode, key))

    print()
    print(f"== Verdict: the page as served against bare loadPyodide(), {args.runs} run(s) "
          f"side by side (target: at most {TARGET:.2f}x) ==")
    for mode in ("cold", "warm"):
        ratio = med(AS_SERVED, mode) / med("bare", mode)
        per_run = [o / b for o, b in zip(values(AS_SERVED, mode), values("bare", mode))]
        spread = (f"per-run ratios {min(per_run):.2f}-{max(per_run):.2f}, median "
                  f"{median(per_run):.2f}") if per_run else ""
        print(f"  {mode}: {med(AS_SERVED, mode):.0f} ms / {med('bare', mode):.0f} ms = "
              f"{ratio:.2f}x  ({spread})  {'within' if ratio <= TARGET else 'ABOVE'} the target")
    print()
    print(f"== Medians of {args.runs} run(s), ms from navigation start to the page "
          "receiving 'ready' ==")
    print(f"  {'':15}{'cold':>9}{'warm':>9}{'cold/bare':>11}{'warm/bare':>11}")
    for scenario in scenarios:
        cells = [med(scenario, m) for m in ("cold", "warm")]
        ratios = [c / med("bare", m) for c, m in zip(cells, ("cold", "warm"))]
        print(f"  {scenario:15}" + "".join(cell(c, 9) for c in cells) +
              "".join(f"{r:>10.2f}x" for r in ratios))
    print()
    print("== Where the time goes (medians, ms) ==")
    for name in PHASES:
        print(f"  {name:8} {PHASE_HELP[name]}")
    print(f"  {'':22}" + "".join(f"{name:>8}" for name in PHASES))
    for scenario in scenarios:
        for mode in ("cold", "warm"):
            print(f"  {scenario + ' ' + mode:22}" +
                  "".join(cell(med(scenario, mode, key)) for key in PHASES))
    print()
    for scenario in [s for s in scenarios if s not in ("bare", "worker")]:
        for mode in ("cold", "warm"):
            states = sorted({f"{s.get('snapshot', '')} ({s.get('source') or '-'})"
                             for s in samples[(scenario, mode)]})
            print(f"  {scenario} {mode}: snapshot {'/'.join(states)}; the message box took "
                  f"text {med(scenario, mode, 'box'):.0f} ms after the first paint "
                  f"(worst {max(values(scenario, mode, 'box') or [float('nan')]):.0f} ms)")
    if args.micropip:
        print()
        for mode in ("cold", "warm"):
            unpack, pip = med("no-snapshot", mode, "install"), med("micropip", mode, "install")
            print(f"  wheel install, {mode}: unpackArchive {unpack:.0f} ms, micropip "
                  f"{pip:.0f} ms")
    loads.append(load_average())
    print()
    print(f"[bench] load average (1, 5, 15 min) at the start, after each run and at the "
          f"end: {' | '.join(loads)}")
    print(f"[bench] done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
