"""The API key a user hands an OpenAI-compatible server through the environment.

One place for every command that talks to a server (``py-agent chat``, ``py-agent
replay``), so that they read the same variables in the same order.
"""

from __future__ import annotations

import os

API_KEY_VARIABLES = ("PY_AGENT_API_KEY", "OPENAI_API_KEY")


def api_key_from_environment() -> str | None:
    """The first of :data:`API_KEY_VARIABLES` that is set and not empty, else None."""
    for name in API_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return None
