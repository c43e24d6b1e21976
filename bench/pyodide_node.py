"""Run a benchmark's measurements in Pyodide under Node.js, as the page's worker would.

The runner is an ES module given as source text; it is called as ``node runner.mjs
<pyodide.mjs> <repo root> <site-packages with snowballstemmer> ARGS...`` and prints one
JSON object per line for each result (other lines are ignored).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYODIDE = ROOT / "node_modules" / "pyodide" / "pyodide.mjs"


def run_in_pyodide(runner: str, args: list[str], timeout_s: float) -> list[dict]:
    """The JSON lines ``runner`` printed; SystemExit saying why when it could not run."""
    if not PYODIDE.exists():
        raise SystemExit(f"{PYODIDE} is missing: run `python serve.py --prepare-only` first")
    import snowballstemmer
    site = Path(snowballstemmer.__file__).resolve().parent.parent
    with tempfile.NamedTemporaryFile("w", suffix=".mjs", delete=False) as script:
        script.write(runner)
    try:
        done = subprocess.run(["node", script.name, str(PYODIDE), str(ROOT), str(site), *args],
                              capture_output=True, text=True, timeout=timeout_s)
    finally:
        Path(script.name).unlink()
    if done.returncode:
        raise SystemExit(f"Pyodide run failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
