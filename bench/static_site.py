#!/usr/bin/env python3
"""Start-up of the static build (``serve.py --build``) against the development server.

    python bench/static_site.py [--runs N]

In headless Chromium (the system one, as in the e2e tests) it times, from navigation
start to the page getting the worker's "ready", the demo page

  served   from serve.py's own server (its headers: CSP, cross-origin isolation, caching)
  static   from the build, served by ``python -m http.server`` (no headers of ours)

each on a cold visit (a fresh browser profile: the server's snapshot is fetched; the
visit stays until the browser has kept that snapshot and, for the build, until its
service worker has kept the site's files) and a warm one (the same profile, browser
restarted), and the build once more with the network off (``offline``: everything from
the service worker's cache and the browser's snapshot). It prints medians and the ratios
static / served, side by side in one run. Not a test: numbers depend on the machine and
its load.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving.http_server import make_server  # noqa: E402
from serving.prepare import prepare  # noqa: E402
from serving.static_build import build_site  # noqa: E402
from bench.boot import ready_phases  # noqa: E402
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.e2e.pages import install_fake_lm_scripts  # noqa: E402

TIMEOUT_MS = 240_000
MODES = ("cold", "warm", "offline")


def static_server(folder: Path) -> tuple[subprocess.Popen, str]:
    """``python -m http.server`` on a free port, serving ``folder``; (process, URL)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                                "127.0.0.1", "--directory", str(folder)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=2).close()
            return process, url
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise
            time.sleep(0.1)


def visit(page, url: str, keep: bool, static: bool) -> dict:
    """Open the page; its "ready" time and how Pyodide started. With ``keep``, stay until
    what the next visit starts from is kept."""
    page.goto(url)
    phases = ready_phases(page, url, TIMEOUT_MS)
    result = {"page": int(phases["ready"]["pageMs"]),
              "snapshot": phases["pyodide-loaded"].get("snapshot", "") + "/" +
              phases["pyodide-loaded"].get("snapshotSource", "")}
    if keep:
        page.wait_for_selector('[data-testid="boot-snapshot"][data-state="saved"]',
                               state="attached", timeout=TIMEOUT_MS)
        if static:
            deadline = time.monotonic() + TIMEOUT_MS / 1000
            while not page.evaluate("navigator.serviceWorker.getRegistration().then("
                                    "(r) => !!(r && r.active && r.active.state === 'activated'))"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the service worker did not activate")
                page.wait_for_timeout(200)
    return result


def visits(playwright, url: str, static: bool) -> dict[str, dict]:
    profile = Path(tempfile.mkdtemp(prefix="py-agent-bench-"))
    try:
        results = {}
        for mode in MODES if static else MODES[:2]:
            context = playwright.chromium.launch_persistent_context(
                str(profile), executable_path=chromium_path(), headless=True,
                args=CHROMIUM_FLAGS, offline=mode == "offline")
            try:
                install_fake_lm_scripts(context, {})   # a context takes init scripts too
                page = context.pages[0] if context.pages else context.new_page()
                results[mode] = visit(page, url, keep=mode == "cold", static=static)
            finally:
                context.close()
        return results
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions (default 3)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    prepare()
    samples: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="py-agent-bench-site-") as scratch:
        started = time.monotonic()
        report = build_site(Path(scratch) / "site")
        print(f"[bench] build: {report.files} files, {report.bytes / 1e6:.1f} MB "
              f"({report.kept_bytes / 1e6:.1f} MB kept for offline) in "
              f"{time.monotonic() - started:.1f} s", flush=True)
        served = make_server("127.0.0.1", 0, quiet=True)
        threading.Thread(target=served.serve_forever, daemon=True).start()
        process, static_url = static_server(report.folder)
        try:
            with sync_playwright() as playwright:
                for run in range(args.runs):
                    order = [("served", served.url + "/"), ("static", static_url + "/")]
                    for name, url in order[run % 2:] + order[:run % 2]:
                        for mode, result in visits(playwright, url, name == "static").items():
                            samples.setdefault((name, mode), []).append(result)
                            print(f"[bench] run {run + 1} {name:6} {mode:7} {result['page']:6d} ms"
                                  f"  ({result['snapshot']})", flush=True)
        finally:
            served.shutdown()
            served.server_close()
            process.terminate()
            process.wait(timeout=10)

    def med(name: str, mode: str) -> float:
        values = [s["page"] for s in samples.get((name, mode), [])]
        return statistics.median(values) if values else float("nan")

    print(f"\nMedians of {args.runs} run(s), ms from navigation start to the worker's ready:")
    print(f"  {'':8}" + "".join(f"{mode:>10}" for mode in MODES))
    for name in ("served", "static"):
        print(f"  {name:8}" + "".join(f"{med(name, mode):10.0f}" for mode in MODES))
    for mode in ("cold", "warm"):
        print(f"  static / served, {mode}: {med('static', mode) / med('served', mode):.2f}x")
    print(f"  static offline / served warm: {med('static', 'offline') / med('served', 'warm'):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
