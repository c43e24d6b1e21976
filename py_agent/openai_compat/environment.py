"""The API key a user hands an OpenAI-compatible server through the environment.

One place for every command that talks to a server (``py-agent chat``, ``py-agent
replay``, ``serve.py --model-url``), so that they read the same variables in the same
order.
"""

from __future__ import annotations

import os
from typing import Mapping

API_KEY_VARIABLES = ("PY_AGENT_API_KEY", "OPENAI_API_KEY")


def api_key_from_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The first of :data:`API_KEY_VARIABLES` that is set and not empty in ``environ``
    (this process's environment by default), else None."""
    environ = os.environ if environ is None else environ
    for name in API_KEY_VARIABLES:
        if environ.get(name):
            return environ[name]
    return None
