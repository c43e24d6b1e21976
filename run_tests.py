"""One command for the whole suite: set up what it needs, then run unit and e2e tests.

Idempotent: each step checks before it installs. Usage:
    python run_tests.py            # everything
    python run_tests.py --unit     # CPython unit tests only (no browser needed)
    python run_tests.py -- -k loop # extra arguments after -- go to pytest
    python run_tests.py -- tests/e2e/test_chat.py   # test paths replace the defaults
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"


def say(message: str) -> None:
    print(f"[run_tests] {message}", flush=True)


def run(cmd: list[str], **kwargs) -> None:
    subprocess.run(cmd, check=True, **kwargs)


def run_quietly(cmd: list[str], **kwargs) -> None:
    """Run a noisy installer; show its output only if it fails."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          **kwargs)
    if done.returncode:
        print(done.stdout[-4000:], file=sys.stderr)
        raise subprocess.CalledProcessError(done.returncode, cmd)


def ensure_venv() -> None:
    """A virtual environment with py-agent and its test dependencies."""
    if not PYTHON.exists():
        say(f"creating a virtual environment in {VENV.name}/")
        venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / ".installed"
    wanted = (ROOT / "pyproject.toml").read_text()
    if not stamp.exists() or stamp.read_text() != wanted:
        say("installing py-agent with its test dependencies (pip)")
        run_quietly([str(PYTHON), "-m", "pip", "install", "--quiet",
                     "--disable-pip-version-check", "-e", f"{ROOT}[test]"])
        without_dependencies = no_deps_packages()
        if without_dependencies:
            run_quietly([str(PYTHON), "-m", "pip", "install", "--quiet", "--no-deps",
                         "--disable-pip-version-check", *without_dependencies])
        stamp.write_text(wanted)


def no_deps_packages() -> list[str]:
    """Test packages installed without their declared dependencies (pyproject.toml's
    [tool.py-agent] test-no-deps says why)."""
    import tomllib
    with open(ROOT / "pyproject.toml", "rb") as file:
        return list(tomllib.load(file).get("tool", {}).get("py-agent", {}).get("test-no-deps", []))


def ensure_chromium() -> None:
    """Debian's Chromium: Playwright's own browser download does not work offline."""
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        return
    if shutil.which("apt-get") is None:
        sys.exit("Chromium is missing and apt-get is not available: install Chromium "
                 "and put it on PATH as 'chromium'.")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    say("installing Debian's chromium package (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run_quietly([*sudo, "apt-get", "update", "-qq"], env=env)
    run_quietly([*sudo, "apt-get", "install", "-y", "-qq", "chromium"], env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", action="store_true", help="only the CPython unit tests")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    args = parser.parse_args()
    ensure_venv()
    if not args.unit:
        ensure_chromium()
    # The unit tests need it too: the reference MCP server comes with the npm packages.
    say("preparing the browser runtime (python serve.py --prepare-only)")
    run([str(PYTHON), str(ROOT / "serve.py"), "--prepare-only"], cwd=ROOT)
    # Test paths among the extra arguments replace the default targets.
    chosen = [a for a in args.pytest_args if a.startswith("tests")]
    options = [a for a in args.pytest_args if not a.startswith("tests")]
    if chosen:
        groups = [[c for c in chosen if not c.startswith("tests/e2e")],
                  [c for c in chosen if c.startswith("tests/e2e")]]
    else:
        groups = [["tests/unit"]] + ([] if args.unit else [["tests/e2e"]])
    # Test processes (pytest-xdist), each taking whole files. The unit tests keep both
    # cores busy with one process per core. The browser tests wait on their pages between
    # bursts, so they take two processes per core: on two cores, four processes ran the
    # browser tests in 472 s where two took 554 s (side by side, same load; six: 460 s).
    # "-n N" among the extra arguments overrides both; "-n 0" runs one process.
    # Unit and browser tests run apart: once Playwright's sync API has run in a process,
    # its event loop stays set there and the unit tests' own loops refuse to start.
    chosen_workers = any(a.startswith(("-n", "--numprocesses")) for a in options)
    cores = max(2, os.cpu_count() or 2)

    def parallel(group: list[str]) -> list[str]:
        if chosen_workers:
            return []
        browser = any(path.startswith("tests/e2e") for path in group)
        return ["-n", str(min(8, 2 * cores) if browser else cores), "--dist", "loadfile"]

    codes = []
    for group in filter(None, groups):
        say("running " + " ".join(group))
        codes.append(subprocess.run([str(PYTHON), "-m", "pytest", *parallel(group), *group,
                                     *options], cwd=ROOT).returncode)
    return combined_exit_code(codes)


def combined_exit_code(codes: list[int]) -> int:
    """The first failure's code; 0 if some run passed and the rest found no tests (5)."""
    failures = [code for code in codes if code not in (0, 5)]
    if failures:
        return failures[0]
    return 0 if 0 in codes else 5


if __name__ == "__main__":
    sys.exit(main())
