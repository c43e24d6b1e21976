#!/usr/bin/env python3
"""Benchmarks for the OpenAI-compatible backend (numbers depend on the machine: not a test).

    python bench/openai_backend.py sse --parser assel        # the SSE parser we use
    python bench/openai_backend.py sse --parser minimal      # a bare line splitter, for scale
    python bench/openai_backend.py calls [--stream|--no-stream]   # completions via the fake server
    python bench/openai_backend.py calls --via-proxy     # the same through serve.py's /model/ proxy

``sse`` parses STREAMS streams of EVENTS chat-completion chunks (short deltas, as a
model streams them), fed in 64-byte network pieces, and prints the time per event.
``calls`` sends CALLS completions of a 200-word reply to the fake server on localhost
through :class:`OpenAIModel` (the stdlib transport: a thread per request) and prints the
time per call; ``--via-proxy`` sends them through ``serve.py --model-proxy``'s same-origin
relay (what the page does when a key is set), to see what the extra hop costs. Compare
two runs side by side with a whole-process timer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STREAMS, EVENTS, PIECE = 200, 400, 64


def stream_bytes() -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "word"}, "finish_reason": None}]}
    return b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for _ in range(EVENTS)) + \
        b"data: [DONE]\n\n"


def minimal_events(pieces):
    """A bare splitter: no CR handling, no comments, no multi-line data (for scale only)."""
    buffer = b""
    for piece in pieces:
        buffer += piece
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            yield event[6:].decode()


def bench_sse(parser: str) -> None:
    raw = stream_bytes()
    pieces = [raw[i:i + PIECE] for i in range(0, len(raw), PIECE)]
    from py_agent.openai_compat.sse import new_parser
    started = time.perf_counter()
    count = 0
    for _ in range(STREAMS):
        if parser == "assel":
            sse = new_parser()
            for piece in pieces:
                count += len(sse.receive_bytes(piece))
        else:
            count += sum(1 for _ in minimal_events(pieces))
    elapsed = time.perf_counter() - started
    print(f"{parser}: {count} events in {elapsed:.3f} s, {elapsed / count * 1e6:.2f} µs/event")


def proxy_for(url: str) -> str:
    """serve.py's request handler relaying to ``url`` (/model/), on a free port; its base."""
    import threading

    from serving.http_server import AppRequestHandler, AppServer
    from serving.model_server import model_server_from_args
    handler = type("Handler", (AppRequestHandler,), {
        "quiet": True, "model_server": model_server_from_args(url, proxy=True, environ={})})
    server = AppServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.url + "/model/v1"


def bench_calls(calls: int, stream: bool, via_proxy: bool = False) -> None:
    from py_agent.openai_compat import OpenAIModel
    from tests.fake_openai_server import FakeServer, Reply

    reply = " ".join(["word"] * 200)
    with FakeServer(lambda request: Reply(content=reply, chunk_chars=8)) as server:
        url = proxy_for(server.url) if via_proxy else server.url
        model = OpenAIModel(url, "fake-model", context_window=8192, stream=stream)

        async def go() -> float:
            session = await model.create(initial_prompts=[{"role": "system", "content": "x"}])
            started = time.perf_counter()
            for _ in range(calls):
                clone = await session.clone()
                assert await clone.prompt("hello") == reply
            return time.perf_counter() - started

        elapsed = asyncio.run(go())
    print(f"{'stream' if stream else 'whole'}{' via proxy' if via_proxy else ''}: {calls} calls in {elapsed:.3f} s, "
          f"{elapsed / calls * 1000:.2f} ms/call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sse = sub.add_parser("sse")
    sse.add_argument("--parser", choices=["assel", "minimal"], default="assel")
    calls = sub.add_parser("calls")
    calls.add_argument("--calls", type=int, default=100)
    calls.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    calls.add_argument("--via-proxy", action="store_true")
    args = parser.parse_args()
    if args.what == "sse":
        bench_sse(args.parser)
    else:
        bench_calls(args.calls, args.stream, args.via_proxy)


if __name__ == "__main__":
    main()
