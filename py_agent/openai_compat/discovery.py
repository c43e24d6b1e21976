"""Learning the context window (and a tokenizer endpoint) from the server itself.

The chat-completions API does not tell the window, and guessing it wrong is
costly: too large and the server truncates or refuses long conversations, too
small and memory is compacted needlessly. Servers that do tell, each its own way:

- vLLM: ``GET /v1/models`` lists ``max_model_len`` per model; ``POST /tokenize``.
- llama.cpp's ``llama-server``: ``GET /props`` has ``default_generation_settings.n_ctx``
  (the window of one slot, which is what one conversation gets); ``POST /tokenize``.
- Ollama: ``POST /api/show`` gives the model's trained ``<arch>.context_length`` and
  any ``num_ctx`` set for it; ``GET /api/ps`` the ``context_length`` a loaded model
  runs with. Without either, Ollama runs a small default window (2,048 or 4,096
  tokens depending on version and memory) and silently truncates, so we assume
  :data:`OLLAMA_ASSUMED_WINDOW`, capped by the trained length.
- LM Studio: ``GET /api/v0/models/<id>`` has ``loaded_context_length``.

Each probe is one short request; a 404 or an odd body moves on to the next.
The parsers are plain functions over the JSON, tested on the servers' real shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .client import ChatClient
from .errors import ServerError, ServerTimeoutError, ServerUnreachableError

OLLAMA_ASSUMED_WINDOW = 4096


@dataclass(frozen=True)
class ServerFacts:
    """What discovery found; ``source`` says where the window came from."""

    context_window: int | None = None
    source: str = "unknown"
    tokenizer: str | None = None  # "llama.cpp" or "vllm": how POST /tokenize is spoken
    models: tuple[str, ...] = ()


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0 and int(value) == value:
        return int(value)
    return None


def model_ids(data: Any) -> tuple[str, ...]:
    """The ids in a ``GET /v1/models`` reply."""
    entries = data.get("data") if isinstance(data, dict) else None
    return tuple(str(e["id"]) for e in entries or [] if isinstance(e, dict) and "id" in e)


def vllm_window(data: Any, model: str) -> int | None:
    """``max_model_len`` of ``model`` (or of the only model) in vLLM's ``/v1/models``."""
    entries = [e for e in (data.get("data") if isinstance(data, dict) else None) or []
               if isinstance(e, dict)]
    chosen = [e for e in entries if e.get("id") == model or e.get("root") == model]
    if not chosen and len(entries) == 1:
        chosen = entries
    return _positive_int(chosen[0].get("max_model_len")) if chosen else None


def llama_cpp_window(data: Any) -> int | None:
    """``n_ctx`` of a slot in llama-server's ``/props`` (top level in old versions)."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    if isinstance(settings, dict):
        found = _positive_int(settings.get("n_ctx"))
        if found:
            return found
    return _positive_int(data.get("n_ctx"))


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def ollama_window(show: Any, running: Any, model: str) -> int | None:
    """The window Ollama runs ``model`` with, from ``/api/show`` and ``/api/ps``."""
    names = {model} if ":" in model else {model, model + ":latest"}
    if isinstance(running, dict):
        for entry in running.get("models") or []:
            if isinstance(entry, dict) and names & {entry.get("name"), entry.get("model")}:
                found = _positive_int(entry.get("context_length"))
                if found:
                    return found
    if not isinstance(show, dict):
        return None
    trained = None
    info = show.get("model_info")
    if isinstance(info, dict):
        trained = next((_positive_int(v) for k, v in info.items()
                        if k.endswith(".context_length") and _positive_int(v)), None)
    parameters = show.get("parameters")
    if isinstance(parameters, str) and (match := _NUM_CTX.search(parameters)):
        return int(match.group(1))
    if trained is None and not isinstance(info, dict):
        return None
    return min(trained or OLLAMA_ASSUMED_WINDOW, OLLAMA_ASSUMED_WINDOW)


def lm_studio_window(data: Any) -> int | None:
    if not isinstance(data, dict):
        return None
    return _positive_int(data.get("loaded_context_length")) or \
        _positive_int(data.get("max_context_length"))


async def _probe(client: ChatClient, path: str, *, body: Any = None) -> Any:
    """The JSON at ``path`` under the server root, or None when it is not there."""
    try:
        return await client.get_json(path, root=True, body=body)
    except (ServerUnreachableError, ServerTimeoutError):
        raise
    except ServerError:
        return None


async def discover(client: ChatClient) -> ServerFacts:
    """Ask the server what it tells; raises only when the server cannot be reached."""
    try:
        listing = await client.get_json("/models")
    except (ServerUnreachableError, ServerTimeoutError):
        raise
    except ServerError:
        listing = None
    models = model_ids(listing)
    window = vllm_window(listing, client.model)
    if window:
        return ServerFacts(window, "vLLM /v1/models max_model_len", "vllm", models)
    window = llama_cpp_window(await _probe(client, "/props"))
    if window:
        return ServerFacts(window, "llama.cpp /props n_ctx", "llama.cpp", models)
    show = await _probe(client, "/api/show", body={"model": client.model})
    if isinstance(show, dict) and ("model_info" in show or "parameters" in show):
        window = ollama_window(show, await _probe(client, "/api/ps"), client.model)
        if window:
            return ServerFacts(window, "Ollama /api/show and /api/ps", None, models)
    window = lm_studio_window(await _probe(client, "/api/v0/models/" + quote(client.model,
                                                                             safe="")))
    if window:
        return ServerFacts(window, "LM Studio /api/v0/models", None, models)
    return ServerFacts(None, "unknown", None, models)


def token_count(tokenizer: str, data: Any) -> int | None:
    """The count in a ``/tokenize`` reply (llama.cpp: ``tokens``; vLLM: ``count``)."""
    if not isinstance(data, dict):
        return None
    if tokenizer == "vllm" and _positive_int(data.get("count")) is not None:
        return int(data["count"])
    tokens = data.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


def tokenize_body(tokenizer: str, model: str, text: str) -> dict[str, Any]:
    if tokenizer == "vllm":
        return {"model": model, "prompt": text, "add_special_tokens": False}
    return {"content": text, "add_special": False}
