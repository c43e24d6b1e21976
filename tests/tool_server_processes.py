"""The tool servers the tests talk to, started as processes on free ports and stopped:
the reference MCP server from npm (``@modelcontextprotocol/server-everything``,
Streamable HTTP at ``/mcp``) and ours (``tests/mcp_servers.py``, written with the
``mcp`` package). Every wait has a timeout; stopping never waits long."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
START_TIMEOUT_S = 30.0


class SilentServer:
    """A port that accepts TCP connections (the kernel completes the handshake) and never
    answers a byte: a server that hangs. ``url`` is its base (no path); ``stop()`` closes it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)   # never accept(): connections wait in the backlog
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def stop(self) -> None:
        self.sock.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start ({process.returncode}): "
                               f"{process.stdout.read() if process.stdout else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {START_TIMEOUT_S:g} s")


class ServerProcess:
    """A server process on a port of its own; ``url`` is its base (no path)."""

    def __init__(self, command: list[str], port: int, what: str, env: dict | None = None):
        self.what = what
        self.port = port
        self.process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **(env or {})},
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        try:
            _wait_for_port(port, self.process, what)
        except BaseException:
            self.stop()
            raise
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self.process.stdout:
            self.process.stdout.close()


def everything_server() -> ServerProcess:
    """The reference server, ``PORT=N node …/dist/index.js streamableHttp``."""
    if not EVERYTHING.exists():
        raise RuntimeError(f"{EVERYTHING} is missing: run `python serve.py --prepare-only` "
                           "(npm ci installs it)")
    port = free_port()
    return ServerProcess(["node", str(EVERYTHING), "streamableHttp"], port,
                         "the reference MCP server", env={"PORT": str(port)})


def python_server(port: int | None = None, allow_origins: list[str] = ()) -> ServerProcess:
    """tests/mcp_servers.py on ``port`` (default: a free one), accepting ``allow_origins``
    besides localhost's."""
    port = port or free_port()
    extra = [arg for origin in allow_origins for arg in ("--allow-origin", origin)]
    return ServerProcess([sys.executable, "-m", "tests.mcp_servers", "--port", str(port),
                          *extra], port, "tests/mcp_servers.py")


def calls(server: ServerProcess) -> list[dict]:
    """What the Python server's tools were asked to do."""
    import json
    with urllib.request.urlopen(server.url + "/calls", timeout=5) as response:
        return json.loads(response.read())


def reset(server: ServerProcess) -> None:
    urllib.request.urlopen(server.url + "/reset", timeout=5).close()
