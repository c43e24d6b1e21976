"""Static builds served as a user serves them: ``python -m http.server`` in a child process,
sending no headers of ours, stopped when a test wants the network gone."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StaticServer:
    """``python -m http.server PORT --directory FOLDER`` until stop()."""

    def __init__(self, folder: Path, port: int | None = None,
                 command: list[str] | None = None, cwd: Path | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (cwd or folder.parent) / f"http-server-{self.port}.log"
        self.process = subprocess.Popen(
            command or [sys.executable, "-m", "http.server", str(self.port), "--bind",
                        "127.0.0.1", "--directory", str(folder)],
            cwd=cwd, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"http.server did not start: {self.log.read_text()}")
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def __enter__(self) -> "StaticServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
