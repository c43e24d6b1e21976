"""What tool servers (MCP) cost: the page's SDK bundle (size, load time in Chromium), the
CPython SDK's import and a connection, and tool retrieval over 500 tools from two
servers against the same tools made locally.

    .venv/bin/python bench/tool_servers.py

Needs ``serve.py --prepare-only`` (the bundle, the reference server from npm) and the
``mcp`` package (``pip install 'py-agent[mcp]'``). Prints numbers; asserts nothing.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving.http_server import make_server  # noqa: E402
from tests.tool_server_processes import python_server  # noqa: E402


def bundle() -> Path:
    manifest = json.loads((ROOT / "web" / "vendor" / "manifest.json").read_text())
    return ROOT / "web" / manifest["mcp"]["client"]


def bundle_size() -> None:
    path = bundle()
    raw = path.read_bytes()
    print(f"bundle {path.relative_to(ROOT)}: {len(raw) / 1024:.0f} KiB, "
          f"{len(gzip.compress(raw)) / 1024:.0f} KiB gzipped")


def bundle_load_time(runs: int = 5) -> None:
    from playwright.sync_api import sync_playwright
    server = make_server("127.0.0.1", 0, quiet=True, tool_worker=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"{server.url}/{bundle().relative_to(ROOT / 'web').as_posix()}"
    times = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            for _ in range(runs):
                page = browser.new_page()   # a fresh page: nothing of the module cached in it
                page.goto(server.url + "/vendor/manifest.json")
                times.append(page.evaluate("""async (url) => {
                  const started = performance.now();
                  await import(url);
                  return performance.now() - started; }""", url))
                page.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print(f"bundle import in Chromium: median {statistics.median(times):.0f} ms "
          f"(first {times[0]:.0f} ms, {runs} pages)")


def python_sdk() -> None:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "import mcp.client.client"], cwd=ROOT)
    assert done.returncode == 0
    print(f"CPython: `import mcp.client.client` in a fresh process: "
          f"{time.perf_counter() - started:.2f} s (interpreter start included)")


async def retrieval(server_url: str) -> None:
    from py_agent import schema_tool
    from py_agent.mcp import connect_mcp
    from py_agent.retrieval import ToolRetriever

    started = time.perf_counter()
    first = await connect_mcp(server_url + "/raw/many?count=250&offset=0&page=100")
    connected = time.perf_counter() - started
    second = await connect_mcp(server_url + "/raw/many?count=250&offset=250&page=100")
    remote = [*first.tools, *second.tools]
    print(f"connect and list 250 tools (2025 protocol, 3 pages): {connected * 1000:.0f} ms "
          "(first connection: SDK import included)")
    data = ROOT / "tests" / "data" / "bfcl"
    specs = [json.loads(line) for line in
             (data / "synthetic_tools.jsonl").read_text().splitlines()][:500]
    local = [schema_tool(s["name"], s["description"], {"type": "object", "properties": {
        p["name"]: {"type": "string", "description": p["description"]} for p in s["params"]}},
        lambda **kw: "") for s in specs]
    names = {s["name"] for s in specs}
    queries = [q for q in (json.loads(line) for line in
                           (data / "synthetic_queries.jsonl").read_text().splitlines())
               if q["tool"] in names]
    for label, tools in (("from two servers", remote), ("made locally", local)):
        started = time.perf_counter()
        retriever = ToolRetriever(tools)
        built = (time.perf_counter() - started) * 1000
        times, hits = [], 0
        for query in queries:
            started = time.perf_counter()
            offered = retriever.retrieve(query["query"])
            times.append((time.perf_counter() - started) * 1000)
            hits += query["tool"] in [s.tool.name for s in offered]
        times.sort()
        print(f"500 tools {label}: index built in {built:.0f} ms; retrieval median "
              f"{statistics.median(times):.1f} ms, p95 {times[int(len(times) * 0.95)]:.1f} ms, "
              f"max {times[-1]:.1f} ms; right tool offered for {hits}/{len(queries)} "
              f"({hits / len(queries):.0%})")
    await first.close()
    await second.close()


def main() -> int:
    bundle_size()
    bundle_load_time()
    python_sdk()
    server = python_server()
    try:
        asyncio.run(retrieval(server.url))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
