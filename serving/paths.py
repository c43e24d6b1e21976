"""Where the app's files live in the repository, named once for every part of serving/.

The page is ``web/`` (served at ``/``), the agent worker is ``worker/`` (``/worker/``);
what preparation fetches and builds goes to ``web/vendor/`` (served, versioned) or to
``.cache/`` (never served).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"
WORKER = ROOT / "worker"
VENDOR = WEB / "vendor"
MANIFEST = VENDOR / "manifest.json"
CACHE = ROOT / ".cache"
NODE_MODULES = ROOT / "node_modules"
PACKAGE_LOCK = ROOT / "package-lock.json"
PYPROJECT = ROOT / "pyproject.toml"
