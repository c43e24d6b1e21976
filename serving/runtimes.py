"""The browser runtimes from npm: Pyodide, PyScript, MicroPython, markdown-it, wllama,
hash-wasm, the MCP client SDK and (for the extension) Readability, pinned by
``package-lock.json``, installed with ``npm ci`` only when needed and copied into
``web/vendor/<name>-<version>/`` (versioned paths, so browsers may cache them forever).

To vendor another npm package, add a :class:`Runtime` to :data:`RUNTIMES` (and the
package to ``package.json``): preparation, the manifest's ``runtimes`` and the static
build pick it up from there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .common import PrepareError, say
from .paths import NODE_MODULES, PACKAGE_LOCK, ROOT, VENDOR

# Our stamp inside node_modules: the sha256 of the package-lock.json it was installed from.
NPM_STAMP = NODE_MODULES / ".py-agent-lock.sha256"


@dataclass(frozen=True)
class Runtime:
    """One npm package's contribution to web/vendor/."""

    package: str                  # the npm package, as package-lock.json names it
    prefix: str                   # copied to web/vendor/<prefix>-<version>/
    patterns: tuple[str, ...]     # which of its files (globs; copied flat)
    key_file: str                 # present once the copy is complete (copies are atomic)
    # An entry module (a path under the repository) that esbuild bundles, with the
    # package, into key_file: for a package that is ESM with dependencies, which a module
    # worker cannot import as it is (no import maps there).
    bundle: str | None = None
    # A Node script (a path under the repository) that writes key_file from the copied
    # package, run as ``node SCRIPT PACKAGE_DIR KEY_FILE``: for a file the package makes
    # only at run time (wllama's llama.cpp worker, which it starts from a Blob).
    generate: str | None = None


RUNTIMES = [
    # Only what loadPyodide() fetches (plus source maps for the debugger).
    Runtime("pyodide", "pyodide", ("pyodide.mjs", "pyodide.mjs.map", "pyodide.asm.mjs",
                                   "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"),
            "pyodide.asm.wasm"),
    # PyScript's self-contained browser build: core.js lazily imports its chunks.
    Runtime("@pyscript/core", "pyscript", ("dist/*",), "core.js"),
    # The MicroPython engine PyScript runs for <script type="mpy">; the -settrace and
    # -ulab builds are picked by PyScript when a page asks for debug or ulab.
    Runtime("@micropython/micropython-webassembly-pyscript", "micropython", ("*.mjs", "*.wasm"),
            "micropython.wasm"),
    # The page's Markdown parser: its self-contained browser ES module (no eval inside).
    Runtime("markdown-it", "markdown-it", ("dist/browser/markdown-it.esm.min.mjs",
                                           "dist/browser/markdown-it.esm.min.mjs.map", "LICENSE"),
            "markdown-it.esm.min.mjs"),
    # The in-page model (web/page_model/): llama.cpp in WebAssembly, its worker as a file
    # (an extension may not start workers from blob:; docs/extension.md), and the
    # streaming SHA-256 that checks a downloaded GGUF.
    Runtime("@wllama/wllama", "wllama", ("esm/index.js", "esm/wasm/wllama.wasm", "LICENCE"),
            "llama_worker.js", generate="serving/llama_worker.mjs"),
    Runtime("hash-wasm", "hash-wasm", ("dist/index.esm.min.js", "LICENSE"), "index.esm.min.js"),
    # The MCP client SDK, for tool servers reached from the agent worker (worker/mcp_client.js):
    # ESM with dependencies (zod, a JSON Schema validator), bundled into one module.
    Runtime("@modelcontextprotocol/client", "mcp-client", ("LICENSE",), "mcp_client.mjs",
            bundle="serving/mcp_client_entry.mjs"),
    # The extension's page reader (extension/page_reader.js): Firefox's reader view,
    # injected into the tab the user reads. Only the extension ships it.
    Runtime("@mozilla/readability", "readability", ("Readability.js", "LICENSE.md"),
            "Readability.js"),
]

# esbuild's JavaScript API (it finds its platform binary without an install script).
_BUNDLE_SCRIPT = """
const [entry, out] = process.argv.slice(1);
const {buildSync} = await import('esbuild');
buildSync({entryPoints: [entry], outfile: out, bundle: true, format: 'esm', minify: true,
           platform: 'browser', target: 'es2022', legalComments: 'eof', logLevel: 'warning'});
"""


def locked_versions() -> dict[str, str]:
    """Exact versions of the runtime packages (npm name -> version), from package-lock.json."""
    if not PACKAGE_LOCK.exists():
        raise PrepareError(f"{PACKAGE_LOCK.name} is missing: it pins the browser runtime.")
    packages = json.loads(PACKAGE_LOCK.read_text())["packages"]
    versions = {}
    for runtime in RUNTIMES:
        entry = packages.get(f"node_modules/{runtime.package}")
        if entry is None:
            raise PrepareError(f"{runtime.package} is not in {PACKAGE_LOCK.name}; "
                               "run `npm install` once.")
        versions[runtime.package] = entry["version"]
    return versions


def vendor_dir_name(prefix: str, version: str) -> str:
    return f"{prefix}-{version}"


def vendor_dir_names(versions: dict[str, str]) -> dict[str, str]:
    """prefix -> the vendor folder of its pinned version (e.g. pyodide -> pyodide-314.0.7)."""
    return {r.prefix: vendor_dir_name(r.prefix, versions[r.package]) for r in RUNTIMES}


def runtimes_current(recorded: dict | None, versions: dict[str, str]) -> bool:
    """True when web/vendor holds the pinned versions, as ``recorded`` in the manifest."""
    if recorded != versions:
        return False
    return all((VENDOR / vendor_dir_name(r.prefix, versions[r.package]) / r.key_file).is_file()
               for r in RUNTIMES)


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


def copy_runtime(runtime: Runtime, version: str) -> str:
    """Copy one package's runtime files to web/vendor/<prefix>-<version>/ (atomically)."""
    source = NODE_MODULES / runtime.package
    installed = json.loads((source / "package.json").read_text())["version"]
    if installed != version:
        raise PrepareError(f"node_modules has {runtime.package} {installed}, the lock pins "
                           f"{version}; delete node_modules and run again.")
    name = vendor_dir_name(runtime.prefix, version)
    target = VENDOR / name
    files = sorted({path for pattern in runtime.patterns for path in source.glob(pattern)
                    if path.is_file()})
    if not files:
        raise PrepareError(f"{runtime.package} {version} has none of {list(runtime.patterns)}.")
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=VENDOR))
    staging.chmod(0o755)
    for path in files:
        shutil.copy2(path, staging / path.name)
    if runtime.bundle is not None:
        bundle(runtime, staging / runtime.key_file)
        files.append(staging / runtime.key_file)
    if runtime.generate is not None:
        generate(runtime, source, staging / runtime.key_file)
        files.append(staging / runtime.key_file)
    size = sum(p.stat().st_size for p in staging.iterdir())
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    say(f"copied {runtime.package} {version} -> web/vendor/{name}/ ({len(files)} files, "
        f"{size / 1e6:.1f} MB)")
    return name


def bundle(runtime: Runtime, out: Path) -> None:
    """esbuild ``runtime.bundle`` (with the packages it imports) into ``out``."""
    node, _ = require_node()
    result = subprocess.run([node, "--input-type=module", "-e", _BUNDLE_SCRIPT,
                             str(ROOT / runtime.bundle), str(out)],
                            cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0 or not out.is_file():
        raise PrepareError(f"bundling {runtime.package} with esbuild failed:\n"
                           f"{(result.stderr or result.stdout).strip()[-2000:]}")


def generate(runtime: Runtime, package: Path, out: Path) -> None:
    """Run ``runtime.generate`` to write ``out`` from the installed ``package``."""
    node, _ = require_node()
    result = subprocess.run([node, str(ROOT / runtime.generate), str(package), str(out)],
                            cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0 or not out.is_file():
        raise PrepareError(f"making {out.name} from {runtime.package} failed:\n"
                           f"{(result.stderr or result.stdout).strip()[-2000:]}")


def ensure_runtimes(recorded: dict | None, versions: dict[str, str], lock_hash: str,
                    keep: set[str]) -> None:
    """Copy the pinned runtimes into web/vendor/ unless they are there already (as
    ``recorded``); then remove what is neither one of them nor in ``keep`` (the other
    preparation steps' folders)."""
    if runtimes_current(recorded, versions):
        say("web/vendor runtimes match package-lock.json")
        return
    ensure_node_modules(lock_hash)
    for runtime in RUNTIMES:
        copy_runtime(runtime, versions[runtime.package])
    wanted = set(vendor_dir_names(versions).values()) | keep
    for entry in VENDOR.iterdir():
        if entry.name not in wanted:
            say(f"removing stale web/vendor/{entry.name}")
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def pyodide_lock_info(pyodide_dir: Path) -> tuple[str, str]:
    """(micropip version, CPython major.minor) from the vendored pyodide-lock.json."""
    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    python = ".".join(lock["info"]["python"].split(".")[:2])
    return lock["packages"]["micropip"]["version"], python
