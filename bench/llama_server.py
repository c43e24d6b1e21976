"""llama.cpp's own OpenAI-compatible server (``llama-server``), built once from PyPI and
started for a benchmark run.

Why this engine: the benchmark compares the agent with the same model's *native* tool
calling, and only llama.cpp's C++ server gives a GGUF native tool calls for any chat
template (``--jinja``: the template renders the tools, a lazy grammar holds the call's
arguments to their schema once the model opens a call). llama-cpp-python's Python server
turns ``tools`` into calls only when ``tool_choice`` names one function, so with
``"auto"`` its native baseline would never call anything. The C++ server also serves
``response_format`` JSON schemas through the same grammar engine (what the agent and the
prompting baseline use) and ``/tokenize``.

Where it comes from: the sdist of ``llama-cpp-python`` on PyPI (a maintained package
that vendors llama.cpp's full source), fetched with pip; only the ``llama-server``
target is built (CMake, Release, CPU, static), into
``~/.cache/py-agent/llama-server/<version>/``, once. The build takes 10-30 minutes on
two cores; every later run finds the binary and starts at once.

    python bench/llama_server.py --build-only      # build now (quiet; idempotent)
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"
CACHE = Path(os.environ.get("PY_AGENT_CACHE", Path.home() / ".cache" / "py-agent"))
BUILD_TIMEOUT_S = 3 * 3600
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0

# The model's turns in Gemma's format, with tools rendered the way llama.cpp's tool-call
# analysis recognises (a JSON object inside <tool_call> tags, as Hermes-style templates
# write it): Gemma 3's GGUF ships no template at all, and Gemma's own has no tools, so
# without this the native baseline would never see a tool. Written for this benchmark.
GEMMA_TOOLS_TEMPLATE = r"""{{- bos_token -}}
{%- set ns = namespace(system='') -%}
{%- if messages and messages[0]['role'] == 'system' -%}
  {%- set ns.system = messages[0]['content'] -%}
{%- endif -%}
{%- if tools -%}
  {%- set ns.system = ns.system + ('\n\n' if ns.system else '') + 'You may call one or more functions to assist with the user query. The functions, as JSON schemas:\n<tools>\n' -%}
  {%- for t in tools -%}
    {%- set ns.system = ns.system + (t | tojson) + '\n' -%}
  {%- endfor -%}
  {%- set ns.system = ns.system + '</tools>\n\nFor each function call, return a JSON object with the function name and its arguments within <tool_call></tool_call> tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' -%}
{%- endif -%}
{%- set first = true -%}
{%- for message in messages -%}
  {%- if message['role'] == 'system' -%}
  {%- elif message['role'] == 'user' -%}
<start_of_turn>user
{% if loop.index0 <= 1 and ns.system %}{{ ns.system }}

{% endif %}{{ message['content'] }}<end_of_turn>
{% elif message['role'] == 'assistant' -%}
<start_of_turn>model
{% if message['content'] %}{{ message['content'] }}{% endif %}
{%- if message['tool_calls'] -%}
{%- for call in message['tool_calls'] -%}
{%- set f = call['function'] if call['function'] is defined else call -%}
{{ '\n' if not loop.first or message['content'] else '' }}<tool_call>
{"name": "{{ f['name'] }}", "arguments": {{ f['arguments'] | tojson if f['arguments'] is not string else f['arguments'] }}}
</tool_call>
{%- endfor -%}
{%- endif -%}<end_of_turn>
{% elif message['role'] == 'tool' -%}
<start_of_turn>user
<tool_response>
{{ message['content'] }}
</tool_response><end_of_turn>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<start_of_turn>model
{% endif -%}
"""


class EngineError(RuntimeError):
    """The engine could not be built or started; the message says why and what to do."""


def server_binary(cache: Path = CACHE) -> Path:
    return cache / "llama-server" / LLAMA_CPP_PYTHON / "llama-server"


def ensure_built(cache: Path = CACHE, *, quiet: bool = True) -> Path:
    """The ``llama-server`` binary, built first if it is not in the cache yet."""
    binary = server_binary(cache)
    if binary.exists():
        return binary
    missing = [tool for tool in ("cmake", "c++", "cc") if shutil.which(tool) is None]
    if missing:
        raise EngineError(f"building llama.cpp's server needs {', '.join(missing)} (a C/C++ "
                          "compiler and CMake): on Debian, apt-get install build-essential "
                          "cmake; or start a server yourself and pass --model-url/--model")
    say = (lambda _: None) if quiet else (lambda m: print(f"[llama-server] {m}", flush=True))
    print(f"building llama.cpp's server from llama-cpp-python {LLAMA_CPP_PYTHON} (once; "
          f"10-30 minutes on two cores) into {binary.parent}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="llama-build-") as scratch:
        work = Path(scratch)
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
              "--disable-pip-version-check", "-d", str(work),
              f"llama-cpp-python=={LLAMA_CPP_PYTHON}"], "downloading the sdist", work)
        sdist = next(work.glob("llama_cpp_python-*.tar.gz"))
        say(f"unpacking {sdist.name}")
        with tarfile.open(sdist) as archive:
            archive.extractall(work, filter="data")
        source = next(work.glob("llama_cpp_python-*/vendor/llama.cpp"))
        build = work / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run(["cmake", "-S", str(source), "-B", str(build), *generator,
              "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
              "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
              "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_CURL=OFF",
              "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
              "-DGGML_NATIVE=ON"], "configuring (cmake)", work)
        jobs = str(os.cpu_count() or 2)
        _run(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
             "compiling llama-server", work)
        built = next(build.rglob("llama-server"), None)
        if built is None or not os.access(built, os.X_OK):
            raise EngineError(f"the build finished without a llama-server binary in {build}")
        binary.parent.mkdir(parents=True, exist_ok=True)
        partial = binary.with_suffix(".partial")
        shutil.copy2(built, partial)
        partial.replace(binary)  # the cache holds a whole binary or none
    return binary


def _run(cmd: list[str], what: str, cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=BUILD_TIMEOUT_S)
    if done.returncode:
        raise EngineError(f"building llama-server failed while {what} "
                          f"(exit {done.returncode}):\n{done.stdout[-3000:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LlamaServer:
    """A running ``llama-server`` on loopback; use as a context manager, or call
    :meth:`start` and :meth:`stop` (which never waits longer than ``STOP_TIMEOUT_S``)."""

    gguf: Path
    threads: int = 2
    context: int = 8192
    # a Jinja chat template; None: the GGUF's own (llama.cpp's default if it has none)
    template: str | None = GEMMA_TOOLS_TEMPLATE
    binary: Path | None = None
    extra_args: list[str] = field(default_factory=list)
    port: int = 0
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    _scratch: tempfile.TemporaryDirectory | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self, template: Path | None) -> list[str]:
        chosen = ["--chat-template-file", str(template)] if template else []
        return [str(self.binary), "-m", str(self.gguf), "--host", "127.0.0.1",
                "--port", str(self.port), "-t", str(self.threads), "-c", str(self.context),
                "-np", "1", "--jinja", *chosen, "--no-webui", "--seed", "0", *self.extra_args]

    def start(self) -> "LlamaServer":
        if not Path(self.gguf).is_file():
            raise EngineError(f"no GGUF file at {self.gguf}")
        self.binary = self.binary or ensure_built()
        self.port = self.port or free_port()
        self._scratch = tempfile.TemporaryDirectory(prefix="llama-server-")
        scratch = Path(self._scratch.name)
        template = None
        if self.template is not None:
            template = scratch / "template.jinja"
            template.write_text(self.template)
        self.log_path = scratch / "server.log"
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(self.command(template), stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                self.stop()
                raise EngineError(f"llama-server exited with {self.process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise EngineError(f"llama-server did not become ready within {START_TIMEOUT_S:g} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-only", action="store_true",
                        help="build the server into the cache (if missing) and print its path")
    parser.add_argument("--verbose", action="store_true", help="say each build step")
    args = parser.parse_args()
    try:
        print(ensure_built(quiet=not args.verbose))
    except EngineError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
