"""serving/llama_worker.mjs: llama.cpp's worker written as a file from the installed
wllama (what an extension starts instead of wllama's Blob), and the loud refusal when
wllama changed the way it starts its worker."""

from __future__ import annotations

import json
import shutil
import pytest

from serving.common import PrepareError
from serving.paths import NODE_MODULES
from serving.runtimes import RUNTIMES, generate

WLLAMA = NODE_MODULES / "@wllama" / "wllama"
RUNTIME = next(r for r in RUNTIMES if r.package == "@wllama/wllama")


@pytest.fixture(scope="module", autouse=True)
def installed():
    if not shutil.which("node") or not (WLLAMA / "esm" / "index.js").is_file():
        pytest.skip("needs Node.js and node_modules: run `python serve.py --prepare-only`")


def test_the_file_is_wllamas_worker_with_its_run_options_read_from_its_url(tmp_path):
    out = tmp_path / RUNTIME.key_file
    generate(RUNTIME, WLLAMA, out)
    first, rest = out.read_text().split("\n", 1)
    version = json.loads((WLLAMA / "package.json").read_text())["version"]
    assert first.startswith("const RUN_OPTIONS = JSON.parse(new URL(self.location.href)"
                            ".searchParams.get('run'));")
    assert f"@wllama/wllama {version}" in first
    # wllama's own parts, as the package ships them: the emscripten glue inside
    # wModuleInit(), then the worker loop that answers wllama's messages.
    glue = (WLLAMA / "src" / "wasm" / "wllama.js").read_text()
    loop = (WLLAMA / "src" / "workers-code" / "llama-cpp.js").read_text()
    assert rest.startswith("\nfunction wModuleInit() {")
    assert glue.replace("var Module", "var ___Module", 1) in rest
    assert rest.endswith(loop)
    assert "RUN_OPTIONS = {" not in rest   # the options come from the URL only


def test_a_wllama_that_starts_its_worker_another_way_stops_the_preparation(tmp_path):
    package = tmp_path / "wllama"
    (package / "esm").mkdir(parents=True)
    shutil.copy(WLLAMA / "package.json", package / "package.json")
    source = (WLLAMA / "esm" / "index.js").read_text()
    (package / "esm" / "index.js").write_text(source.replace("ProxyToWorker", "WorkerProxy"))
    with pytest.raises(PrepareError, match="no ProxyToWorker class"):
        generate(RUNTIME, package, tmp_path / "llama_worker.js")
    assert not (tmp_path / "llama_worker.js").exists()


def test_a_worker_code_that_varies_beyond_its_options_stops_the_preparation(tmp_path):
    package = tmp_path / "wllama"
    (package / "esm").mkdir(parents=True)
    shutil.copy(WLLAMA / "package.json", package / "package.json")
    source = (WLLAMA / "esm" / "index.js").read_text()
    joined = '].join(";\\n\\n");'
    assert source.count(joined) == 1
    # The thread count written into the code itself, not only into RUN_OPTIONS.
    (package / "esm" / "index.js").write_text(
        source.replace(joined, '].join(";\\n\\n") + `// ${this.nbThread}`;'))
    with pytest.raises(PrepareError, match="changes with the thread count"):
        generate(RUNTIME, package, tmp_path / "llama_worker.js")

