"""Runs the vendored Prompt API web-platform-tests against the fake LanguageModel.

Each test file is served the way WPT's own server would serve it (a ``.window.js`` file
inside a generated page with ``testharness.js`` and its ``META`` scripts), loaded as a new
document of one page with the fake installed exactly as the e2e fixture installs it
(``tests/e2e/pages.install_fake_lm_scripts``, taken off again before the next file), and
every subtest result is read back from the page.

``python -m tests.wpt.runner [--fake SCRIPT...] [-- FILE...]`` prints the table per file
(``--fake`` runs other copies of the fake's scripts, e.g. an older revision, to compare);
the suite runs it in
``tests/e2e/test_wpt_prompt_api.py``.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import http.server
import io
import re
import shutil
import struct
import subprocess
import tarfile
import threading
import time
import tomllib
import wave
from pathlib import Path
from typing import Any, Iterator

from playwright.sync_api import Error as PlaywrightError

from tests.e2e.pages import FAKE_LM_SCRIPTS, install_fake_lm_scripts
from tests.unit import media_samples

WPT_ROOT = Path(__file__).resolve().parent
REPO_ROOT = WPT_ROOT.parents[1]
HARNESS = WPT_ROOT / "harness"
EXPECTATIONS = WPT_ROOT / "expectations.toml"
CACHE = REPO_ROOT / ".cache" / "wpt"

# testharness.js comes from this npm package (it ships WPT's copy); pinned by integrity.
HARNESS_PACKAGE = "wpt-runner@7.0.0"
HARNESS_INTEGRITY = ("sha512-hMFl9Dwlc8cztxhm0y2SjLA9LmZdLk5w5ySLpDFNgPh37zjzgjaTvxsyMUSkrVFSW8eVc3qQ"
                     "hyNm3wK83+VqVQ==")
HARNESS_MEMBER = "package/testharness/testharness.js"

FILE_TIMEOUT_S = 120      # a whole file, META timeout=long included, on a loaded machine
PASS = "Pass"


class HarnessUnavailable(RuntimeError):
    """testharness.js could not be fetched or failed its integrity check."""


def testharness_js() -> Path:
    """WPT's testharness.js, from the pinned npm package (fetched once with ``npm pack``
    into ``.cache/wpt``, its sha512 checked against the pinned integrity)."""
    target = CACHE / "testharness.js"
    if target.exists():
        return target
    npm = shutil.which("npm")
    if not npm:
        raise HarnessUnavailable("npm is needed once to fetch testharness.js "
                                 f"({HARNESS_PACKAGE}); install Node.js with npm.")
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "pack", HARNESS_PACKAGE, "--pack-destination", str(CACHE)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise HarnessUnavailable(f"`npm pack {HARNESS_PACKAGE}` failed: {done.stderr[-2000:]}")
    tarball = CACHE / done.stdout.strip().splitlines()[-1]
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != HARNESS_INTEGRITY:
        tarball.unlink()
        raise HarnessUnavailable(f"{tarball.name} does not match the pinned integrity")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(HARNESS_MEMBER)
        if member is None:
            raise HarnessUnavailable(f"{tarball.name} has no {HARNESS_MEMBER}")
        target.write_bytes(member.read())
    tarball.unlink()
    return target


# ------------------------------------------------------------------ serving

def window_test_page(script_path: str, source: str) -> str:
    """The page WPT's server generates for a ``.window.js`` test: testharness, its report,
    the ``// META: script=`` files in order, then the test itself."""
    title, long_timeout, scripts = "", False, []
    for line in source.splitlines():
        match = re.match(r"//\s*META:\s*(\w+)=(.*)$", line.strip())
        if not match:
            if line.strip() and not line.startswith("//"):
                break
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "title":
            title = value
        elif key == "timeout":
            long_timeout = value == "long"
        elif key == "script":
            scripts.append(value)
    tags = ["<!doctype html>", '<meta charset="utf-8">', f"<title>{title}</title>"]
    if long_timeout:
        tags.append('<meta name="timeout" content="long">')
    tags += ['<script src="/resources/testharness.js"></script>',
             '<script src="/resources/testharnessreport.js"></script>']
    tags += [f'<script src="{src}"></script>' for src in scripts]
    tags += ['<div id="log"></div>', f'<script src="{script_path}"></script>']
    return "\n".join(tags) + "\n"


def stand_in_png(width: int = 64, height: int = 48) -> bytes:
    """A red PNG for the tests that fetch WPT's /images/computer.jpg, a binary file that
    cannot be fetched here (tests/wpt/SOURCE.md): the fake decodes it and names its
    size, as it would the real photo's."""
    return media_samples.png(width, height)


def stand_in_wav(seconds: float = 1.0, rate: int = 16000) -> bytes:
    """A second of a 440 Hz tone for the tests that fetch /media/speech.wav."""
    import math
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i
                                                                          / rate)))
                                 for i in range(int(rate * seconds))))
    return buffer.getvalue()


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves tests/wpt as WPT's server would for these files."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".html": "text/html"}
    harness_js: Path

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        generated = self._generated(path)
        if generated is not None:
            body, kind = generated
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def _generated(self, path: str) -> tuple[bytes, str] | None:
        if path == "/resources/testharness.js":
            return self.harness_js.read_bytes(), "text/javascript"
        if path.startswith("/resources/") or path == "/common/get-host-info.sub.js":
            local = HARNESS / Path(path).name
            return (local.read_bytes(), "text/javascript") if local.exists() else None
        if path == "/images/computer.jpg":
            return stand_in_png(), "image/png"
        if path == "/media/speech.wav":
            return stand_in_wav(), "audio/wav"
        if path.endswith(".window.html"):
            script = WPT_ROOT / path.lstrip("/").replace(".window.html", ".window.js")
            if script.exists():
                page = window_test_page(path.replace(".window.html", ".window.js"),
                                        script.read_text())
                return page.encode(), "text/html; charset=utf-8"
        return None

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class WptServer:
    """tests/wpt on 127.0.0.1 (and, being one server, on localhost: another site)."""

    def __init__(self) -> None:
        handler = type("Handler", (_Handler,), {"harness_js": testharness_js()})
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(WPT_ROOT)))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "WptServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def wpt_files() -> list[str]:
    """Every vendored test, as its path under tests/wpt (``ai/...``)."""
    root = WPT_ROOT / "ai"
    found = [p for p in root.rglob("*") if p.name.endswith((".window.js", ".html"))
             and "resources" not in p.relative_to(root).parts]
    return sorted(str(p.relative_to(WPT_ROOT)) for p in found)


def page_url(path: str) -> str:
    return "/" + (path[: -len(".js")] + ".html" if path.endswith(".window.js") else path)


# ------------------------------------------------------------------ running

@dataclasses.dataclass
class FileResult:
    path: str
    harness: str                      # OK, ERROR, TIMEOUT, or NOT RUN (page never completed)
    message: str | None
    subtests: dict[str, tuple[str, str | None]]   # name -> (status, message)


class FileRun:
    """One test file in ``page``, navigated to it (a new document: no user activation
    carried over), the fake installed with ``config`` for this file only: started, then
    polled until the harness completes."""

    def __init__(self, page: Any, clicks: list[tuple[Any, str]], base_url: str, path: str,
                 config: dict[str, Any], fake_scripts: tuple[Path, ...] = FAKE_LM_SCRIPTS) -> None:
        self.path = path
        self.deadline = time.monotonic() + FILE_TIMEOUT_S
        self._page = page
        self._clicks = clicks
        self._installed = install_fake_lm_scripts(page, config, scripts=fake_scripts)
        try:
            page.goto(base_url + page_url(path))
        except BaseException:
            self.close()
            raise

    def poll(self) -> FileResult | None:
        """The file's result once its harness completed (or its time ran out), else None."""
        while self._clicks:
            frame, element_id = self._clicks.pop(0)
            try:
                frame.click(f"#{element_id}", timeout=10_000)
            except PlaywrightError:
                pass   # the frame went away: its test times out and says so
        report = self._page.evaluate("window.__wptReport && window.__wptReport.done "
                                     "? window.__wptReport : null")
        if report:
            subtests = {t["name"]: (t["status"], t["message"]) for t in report["tests"]}
            return FileResult(self.path, report["harness"]["status"],
                              report["harness"]["message"], subtests)
        if time.monotonic() > self.deadline:
            return FileResult(self.path, "NOT RUN", f"no report within {FILE_TIMEOUT_S} s", {})
        return None

    def close(self) -> None:
        """Take this file's fake and config off the page (the next file installs its own)."""
        for script in self._installed:
            script.close()
        self._clicks.clear()


class FilePage:
    """The page the files run in, one after another: a new document per file costs a
    fifth of a new page (no new renderer process each time; 20 s against 80 s for all
    files). A page that breaks is replaced, so one broken file does not hide the others."""

    def __init__(self, browser: Any) -> None:
        self._context = browser.new_context()
        self._page: Any = None
        self.clicks: list[tuple[Any, str]] = []

    def get(self) -> Any:
        if self._page is None or self._page.is_closed():
            self._page = self._context.new_page()
            self._page.expose_binding("__wptClick", lambda source, element_id:
                                      self.clicks.append((source["frame"], element_id)))
        return self._page

    def replace(self) -> None:
        if self._page is not None and not self._page.is_closed():
            self._page.close()
        self._page = None
        self.clicks.clear()

    def close(self) -> None:
        self._context.close()


def run_files(browser: Any, base_url: str, files: list[tuple[str, dict[str, Any]]],
              fake_scripts: tuple[Path, ...] = FAKE_LM_SCRIPTS) -> Iterator[FileResult]:
    """Each (path, config) in ``files``, one at a time, each in a new document of one
    page (FilePage); results in order. One broken page does not hide the others."""
    pages = FilePage(browser)
    try:
        for path, config in files:
            try:
                run = FileRun(pages.get(), pages.clicks, base_url, path, config, fake_scripts)
            except PlaywrightError as error:
                pages.replace()
                yield FileResult(path, "ERROR", f"the page failed: {error}", {})
                continue
            try:
                while (result := run.poll()) is None:
                    time.sleep(0.025)
                run.close()
            except PlaywrightError as error:
                result = FileResult(path, "ERROR", f"the page failed: {error}", {})
            if result.harness in ("NOT RUN", "ERROR"):
                pages.replace()   # whatever still runs there must not reach the next file
            yield result
    finally:
        pages.close()


# ------------------------------------------------------------------ expectations

@dataclasses.dataclass(frozen=True)
class Exclusion:
    file: str
    subtest: str
    kind: str           # one of KINDS
    reason: str


# Kinds of exclusion. Only "deviation" is spec-required behaviour the fake gets wrong;
# the others do not test spec-required behaviour, so they leave the pass rate's base.
KINDS = {
    "model-output": "reads the quality of a real model's answer",
    "chromium-only": "tests a Chromium test-runner surface or asserts Chromium's known "
                     "deviation from the spec",
    "deviation": "spec-required behaviour the fake does not follow (yet)",
}
NOT_SPEC_REQUIRED = {"model-output", "chromium-only"}


@dataclasses.dataclass
class Expectations:
    configs: dict[str, dict[str, Any]]
    exclusions: dict[tuple[str, str], Exclusion]

    def config_for(self, path: str) -> dict[str, Any]:
        return {k: v for k, v in self.configs.get(path, {}).items() if k != "reason"}


def load_expectations(path: Path = EXPECTATIONS) -> Expectations:
    data = tomllib.loads(path.read_text())
    exclusions = {}
    for entry in data.get("excluded", []):
        item = Exclusion(entry["file"], entry["subtest"], entry["kind"], entry["reason"])
        if item.kind not in KINDS:
            raise ValueError(f"{path.name}: unknown kind {item.kind!r} for {item.subtest!r}")
        if not item.reason.strip():
            raise ValueError(f"{path.name}: {item.subtest!r} is excluded without a reason")
        exclusions[(item.file, item.subtest)] = item
    return Expectations(data.get("config", {}), exclusions)


@dataclasses.dataclass
class Row:
    """One file's counts: passed/total, and the same for spec-required subtests."""
    path: str
    passed: int
    total: int
    spec_passed: int
    spec_total: int


def tally(results: dict[str, FileResult], expectations: Expectations) -> list[Row]:
    rows = []
    for path, result in sorted(results.items()):
        passed = total = spec_passed = spec_total = 0
        for name, (status, _) in result.subtests.items():
            total += 1
            ok = status == PASS
            passed += ok
            excluded = expectations.exclusions.get((path, name))
            if excluded is None or excluded.kind not in NOT_SPEC_REQUIRED:
                spec_total += 1
                spec_passed += ok
        rows.append(Row(path, passed, total, spec_passed, spec_total))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| file | passed/total | spec-required passed/total |", "|---|---|---|"]
    for r in rows:
        short = r.path.removeprefix("ai/language-model/").removesuffix(".tentative.https.window.js")
        lines.append(f"| {short} | {r.passed}/{r.total} | {r.spec_passed}/{r.spec_total} |")
    passed, total = sum(r.passed for r in rows), sum(r.total for r in rows)
    spec_passed, spec_total = sum(r.spec_passed for r in rows), sum(r.spec_total for r in rows)
    rate = 100 * spec_passed / spec_total if spec_total else 0.0
    lines.append(f"| **all {len(rows)} files** | {passed}/{total} | "
                 f"{spec_passed}/{spec_total} ({rate:.1f}%) |")
    return "\n".join(lines)


def run_all(browser: Any, expectations: Expectations,
            fake_scripts: tuple[Path, ...] = FAKE_LM_SCRIPTS,
            paths: list[str] | None = None) -> Iterator[FileResult]:
    with WptServer() as server:
        yield from run_files(browser, server.url,
                             [(path, expectations.config_for(path)) for path in paths or wpt_files()],
                             fake_scripts)


# Chromium as the e2e conftest launches it, plus gc() for the garbage-collection tests
# (WPT's Chrome runner passes the same flag).
EXTRA_FLAGS = ["--js-flags=--expose-gc"]


def main() -> None:
    import argparse

    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fake", type=Path, nargs="+", default=list(FAKE_LM_SCRIPTS),
                        help="the fake's scripts, in install order (default: the current fake)")
    parser.add_argument("paths", nargs="*", help="test files (default: all)")
    args = parser.parse_args()
    expectations = load_expectations()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True,
                                             args=CHROMIUM_FLAGS + EXTRA_FLAGS)
        results = {}
        scripts = tuple(p.resolve() for p in args.fake)
        for result in run_all(browser, expectations, scripts, args.paths or None):
            results[result.path] = result
            failing = [f"    {status}: {name} ({message})"
                       for name, (status, message) in result.subtests.items() if status != PASS]
            print(f"{result.harness:8} {result.path}", *failing, sep="\n", flush=True)
        browser.close()
    print(table(tally(results, expectations)))


if __name__ == "__main__":
    main()
