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

A fresh build is smoke-tested once: started on a tiny Q8_0 model (``tests/tiny_gguf.py``)
and asked for a few tokens, so that a binary that cannot run here fails at build time
with a reason, not at a benchmark's first request. The build targets this CPU
(``-march=native``). Some hosts report AMX in ``/proc/cpuinfo`` but do not let a process
use it; a native build then compiles llama.cpp's AMX kernels in and the server dies of
SIGSEGV at its first decode. When the smoke test crashes on a CPU that reports AMX, the
build is redone without AMX: ``GGML_NATIVE=OFF`` with the CPU's other instruction sets
named one by one (llama.cpp's ``GGML_AMX_*`` options count only then: with
``GGML_NATIVE=ON`` they are ignored and ``-march=native`` decides), and says so. The
outcome is kept beside the binary (``llama-server.checked.json``), so the smoke test runs
once per build.

    python bench/llama_server.py --build-only      # build now (quiet; idempotent)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the smoke test's model: tests/tiny_gguf.py

LLAMA_CPP_PYTHON = "0.3.36"
CACHE = Path(os.environ.get("PY_AGENT_CACHE", Path.home() / ".cache" / "py-agent"))
BUILD_TIMEOUT_S = 3 * 3600
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
SMOKE_DECODE_TIMEOUT_S = 120.0

# The instruction sets a build targets: "native" is -march=native (every set the CPU
# reports); "no-amx" names the CPU's sets one by one and leaves AMX out.
NATIVE = "native"
WITHOUT_AMX = "no-amx"
AMX_FLAGS = ("amx_tile", "amx_int8", "amx_bf16")
# With GGML_NATIVE=OFF, ggml/src/ggml-cpu/CMakeLists.txt turns each of these options into
# its -m flags; each is on when /proc/cpuinfo reports every flag it needs. (SSE 4.2, AVX,
# AVX2, BMI2, FMA and F16C default to on there; they are named so that a CPU without one
# gets a binary that runs.)
GGML_X86_OPTIONS = {
    "GGML_SSE42": ("sse4_2",), "GGML_AVX": ("avx",), "GGML_AVX2": ("avx2",),
    "GGML_BMI2": ("bmi2",), "GGML_FMA": ("fma",), "GGML_F16C": ("f16c",),
    "GGML_AVX_VNNI": ("avx_vnni",),
    "GGML_AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "GGML_AVX512_VBMI": ("avx512vbmi",), "GGML_AVX512_VNNI": ("avx512_vnni",),
    "GGML_AVX512_BF16": ("avx512_bf16",),
}

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


def check_record(binary: Path) -> Path:
    """Where the smoke test's outcome for ``binary`` is kept."""
    return binary.with_name(binary.name + ".checked.json")


def build_variant(cache: Path = CACHE) -> str | None:
    """How the cached binary was built (:data:`NATIVE` or :data:`WITHOUT_AMX`), once it
    passed its smoke test; None before."""
    try:
        return json.loads(check_record(server_binary(cache)).read_text())["variant"]
    except (OSError, ValueError, KeyError):
        return None


def cpu_flags() -> set[str]:
    """The CPU's features as Linux reports them (``flags`` in /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def cmake_options(variant: str, flags: set[str]) -> list[str]:
    """The instruction-set options of a build: -march=native, or the CPU's sets without
    AMX (llama.cpp compiles its AMX kernels in whenever the compiler targets AMX)."""
    if variant == NATIVE:
        return ["-DGGML_NATIVE=ON"]
    named = [f"-D{option}={'ON' if all(f in flags for f in needs) else 'OFF'}"
             for option, needs in GGML_X86_OPTIONS.items()]
    return ["-DGGML_NATIVE=OFF", *named,
            "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"]


@dataclass
class SmokeTest:
    """What the smoke test saw: ``returncode`` None if the server answered and was still
    running, else how it ended (negative: killed by that signal)."""

    returncode: int | None
    log: str = ""
    error: str = ""

    @property
    def passed(self) -> bool:
        return self.returncode is None and not self.error

    @property
    def crashed(self) -> bool:
        return self.returncode is not None and self.returncode < 0

    def describe(self) -> str:
        if self.returncode is not None:
            return how_it_ended(self.returncode)
        return self.error or "passed"


def how_it_ended(returncode: int) -> str:
    """A process's exit code in words: "crashed (SIGSEGV, exit -11)", "exited with 1"."""
    if returncode >= 0:
        return f"exited with {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"crashed ({name}, exit {returncode})"


def smoke_test(binary: Path) -> SmokeTest:
    """Start ``binary`` on a tiny Q8_0 model and decode a few tokens: a prompt of several
    tokens (the batched kernels), then one at a time (the single-row ones)."""
    from tests.tiny_gguf import write_tiny_gguf

    with tempfile.TemporaryDirectory(prefix="llama-smoke-") as scratch:
        gguf = write_tiny_gguf(Path(scratch) / "tiny-q8_0.gguf", quantized=True)
        server = LlamaServer(gguf, threads=min(2, os.cpu_count() or 1), context=256,
                             template=None, binary=binary)
        try:
            try:
                server.start()
            except EngineError as exc:
                code = server.process.returncode if server.process else None
                return SmokeTest(code, server.last_log, "" if code is not None else str(exc))
            request = urllib.request.Request(
                f"{server.url}/completion", method="POST",
                headers={"Content-Type": "application/json"},
                data=json.dumps({"prompt": "what is the weather like in the city today",
                                 "n_predict": 4, "temperature": 0}).encode())
            try:
                with urllib.request.urlopen(request, timeout=SMOKE_DECODE_TIMEOUT_S) as reply:
                    json.loads(reply.read())
                error = ""
            except (OSError, ValueError) as exc:
                error = f"no answer to a 4-token completion: {exc}"
            try:
                code = server.process.wait(timeout=1) if error else server.process.poll()
            except subprocess.TimeoutExpired:
                code = None
            log = server.read_log()
            return SmokeTest(code, log, error if code is None else "")
        finally:
            server.stop()


def ensure_built(cache: Path = CACHE, *, quiet: bool = True) -> Path:
    """The ``llama-server`` binary, built and smoke-tested first if the cache does not
    hold one that passed its smoke test yet (a binary cached before the smoke test
    existed is tested once, and rebuilt only if it fails)."""
    binary = server_binary(cache)
    record = check_record(binary)
    if binary.exists() and build_variant(cache) is not None:
        return binary
    say = (lambda _: None) if quiet else (lambda m: print(f"[llama-server] {m}", flush=True))
    flags = cpu_flags()
    with tempfile.TemporaryDirectory(prefix="llama-build-") as scratch:
        work = Path(scratch)
        variant = NATIVE
        if binary.exists():
            candidate = binary  # built before builds were smoke-tested
        else:
            print(f"building llama.cpp's server from llama-cpp-python {LLAMA_CPP_PYTHON} "
                  f"(once; 10-30 minutes on two cores) into {binary.parent}",
                  file=sys.stderr, flush=True)
            candidate = compile_server(work, variant, flags, say)
        say("smoke test: a tiny model, a few tokens")
        try:
            result = smoke_test(candidate)
        except ImportError as exc:  # gguf and numpy: the test extra, in .venv
            print(f"llama-server is not smoke-tested yet ({exc}: run with the tests' "
                  "virtualenv, .venv/bin/python, to test it)", file=sys.stderr, flush=True)
            install(candidate, binary)
            return binary
        if not result.passed:
            variant = after_failed_smoke_test(result, flags)
            candidate = compile_server(work, variant, flags, say)
            result = smoke_test(candidate)
            if not result.passed:
                raise EngineError(
                    f"llama-server built without AMX still fails its smoke test: "
                    f"{result.describe()}.\n{result.log[-3000:]}\nStart a server yourself "
                    "and pass --model-url/--model.")
            print("llama-server built without AMX passed its smoke test; the benchmark uses "
                  "it (this CPU's other instruction sets are all in)", file=sys.stderr,
                  flush=True)
        install(candidate, binary)
        record.write_text(json.dumps({"variant": variant, "smoke_test": "passed",
                                      "options": cmake_options(variant, flags)}) + "\n")
    return binary


def install(built: Path, binary: Path) -> None:
    """Copy a new build into the cache, whole or not at all, forgetting the old one's
    smoke test."""
    if built == binary:
        return
    binary.parent.mkdir(parents=True, exist_ok=True)
    check_record(binary).unlink(missing_ok=True)
    partial = binary.with_suffix(".partial")
    shutil.copy2(built, partial)
    partial.replace(binary)


def after_failed_smoke_test(result: SmokeTest, flags: set[str]) -> str:
    """The variant to build after ``result``: without AMX when the server crashed on a
    CPU that reports AMX (said on stderr); otherwise an :class:`EngineError` that says
    what happened."""
    amx = [flag for flag in AMX_FLAGS if flag in flags]
    if result.crashed and amx:
        print(f"llama-server {result.describe()} at its first decode on a tiny model. This "
              f"CPU reports AMX ({', '.join(amx)}), which some hosts report but do not let "
              "a process use, and llama.cpp's AMX kernels are built in; rebuilding without "
              "AMX (GGML_NATIVE=OFF, this CPU's other instruction sets by name; once, "
              "10-30 minutes on two cores)", file=sys.stderr, flush=True)
        return WITHOUT_AMX
    why = ("; this CPU reports no AMX, so a build without it would not help"
           if result.crashed else "")
    raise EngineError(f"llama-server failed its smoke test on a tiny model: "
                      f"{result.describe()}{why}.\n{result.log[-3000:]}\n"
                      "Start a server yourself and pass --model-url/--model.")


def compile_server(work: Path, variant: str, flags: set[str], say) -> Path:
    """Build ``llama-server`` in ``work`` with ``variant``'s instruction sets; the sdist is
    fetched and unpacked on the first call, and a second call reconfigures the same build
    folder, so that only what the options change is compiled again."""
    missing = [tool for tool in ("cmake", "c++", "cc") if shutil.which(tool) is None]
    if missing:
        raise EngineError(f"building llama.cpp's server needs {', '.join(missing)} (a "
                          "C/C++ compiler and CMake): on Debian, apt-get install "
                          "build-essential cmake; or start a server yourself and pass "
                          "--model-url/--model")
    source = next(work.glob("llama_cpp_python-*/vendor/llama.cpp"), None)
    if source is None:
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
    say(f"configuring: {' '.join(cmake_options(variant, flags))}")
    _run(["cmake", "-S", str(source), "-B", str(build), *generator,
          "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
          "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
          "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_CURL=OFF",
          "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
          *cmake_options(variant, flags)], "configuring (cmake)", work)
    jobs = str(os.cpu_count() or 2)
    _run(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
         "compiling llama-server", work)
    built = next(build.rglob("llama-server"), None)
    if built is None or not os.access(built, os.X_OK):
        raise EngineError(f"the build finished without a llama-server binary in {build}")
    return built


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
    last_log: str = ""  # the log of a server that exited while starting
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
                self.last_log = self.read_log()
                self.stop()
                raise EngineError(f"llama-server {how_it_ended(self.process.returncode)} "
                                  f"while starting:\n{self.last_log[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise EngineError(f"llama-server did not become ready within {START_TIMEOUT_S:g} s")

    def read_log(self) -> str:
        """What the server has written so far ("" once it is stopped)."""
        try:
            return self.log_path.read_text(errors="replace") if self.log_path else ""
        except OSError:
            return ""

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
