"""Typed errors of an OpenAI-compatible server, with messages a user can act on.

Every class is a :class:`~py_agent.model.ModelError`, so the agent treats them as
it treats a Prompt API failure: the turn ends with the message, is saved as
failed, and the next turn tries again. Each also derives from the closest
generic model error (unavailable, network, quota) so code that only knows the
generic protocol still sorts them right. ``retryable`` says whether the same
call may succeed later without the user changing anything.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..model import (ModelError, ModelNetworkError, ModelUnavailableError, QuotaExceededError,
                     ResponseConstraintError)


class ServerError(ModelError):
    """An error talking to an OpenAI-compatible server.

    ``status`` is the HTTP status (None when no reply came), ``code`` the
    ``error.code``/``error.type`` the server gave, ``detail`` its own message.
    """

    speaks_to_user = True  # names the server, the URL or the model, and what to check

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail


class ServerUnreachableError(ServerError, ModelNetworkError):
    """No connection: refused, unknown host, reset before a reply."""

    retryable = True


class ServerTimeoutError(ServerError, ModelNetworkError):
    """The server accepted the request but did not answer in time."""

    retryable = True


class AuthenticationError(ServerError, ModelUnavailableError):
    """401/403: the API key is missing, wrong, or lacks access."""

    retryable = False


class ModelNotFoundError(ServerError, ModelUnavailableError):
    """404: the server does not serve the model asked for (or the URL is wrong)."""

    retryable = False


class RateLimitError(ServerError, ModelNetworkError):
    """429: too many requests; ``retry_after`` seconds if the server said so."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerFailureError(ServerError):
    """5xx: the server failed on its side (overloaded, crashed, model loading)."""

    retryable = True


class BadRequestError(ServerError):
    """400/422 and other 4xx: the server refused the request as we sent it."""

    retryable = False


class UnsupportedFeatureError(BadRequestError):
    """The server refused a feature (``response_format``, ``stream_options``) by name."""


class ResponseFormatRefusedError(UnsupportedFeatureError, ResponseConstraintError):
    """The server refused the response's JSON schema in every ``response_format`` it
    was offered in: to the agent, a refused response constraint like Chrome's
    ``NotSupportedError``, so it asks again under a simpler schema, or none
    (:mod:`py_agent.constraints`)."""

    def __init__(self, message: str, **kwargs: Any) -> None:
        UnsupportedFeatureError.__init__(self, message, **kwargs)
        self.original_name = None


class ContextLengthError(ServerError, QuotaExceededError):
    """The server says the conversation does not fit the model's context window."""

    retryable = False

    def __init__(self, message: str, *, quota: int | None = None, **kwargs: Any) -> None:
        ServerError.__init__(self, message, **kwargs)
        self.requested = None
        self.quota = quota


class MalformedReplyError(ServerError):
    """The reply was not the JSON (or event stream) the API promises."""

    retryable = True


def error_detail(body: bytes) -> tuple[str, str | None]:
    """``(message, code)`` from an error body: OpenAI's ``{"error": {...}}``, a bare
    ``{"error": "text"}`` (Ollama), ``{"detail": ...}`` (FastAPI), or plain text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500], None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, str):
            return error[:500], None
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or data.get("message") or ""
            if isinstance(message, (list, dict)):
                message = json.dumps(message)
            code = error.get("code") or error.get("type")
            return str(message)[:500], (None if code is None else str(code))
    return text[:500], None


_CONTEXT_HINTS = ("context length", "context_length", "context window", "context size",
                  "maximum context", "too many tokens", "exceeds the available context",
                  "prompt is too long", "max_model_len")
_FEATURE_HINTS = ("response_format", "json_schema", "stream_options", "structured output")


def looks_like_context_overflow(detail: str, code: str | None) -> bool:
    lowered = f"{detail} {code or ''}".lower()
    return any(hint in lowered for hint in _CONTEXT_HINTS)


def unsupported_feature(detail: str, code: str | None) -> str | None:
    """The request field a 400 complains about, if it names one we can drop."""
    lowered = f"{detail} {code or ''}".lower()
    for hint in _FEATURE_HINTS:
        if hint in lowered:
            return "stream_options" if hint == "stream_options" else "response_format"
    return None


_MEDIA_HINTS = ("image", "vision", "multimodal", "multi-modal", "mmproj", "audio",
                "input_audio", "image_url", "modality", "modalities")


def looks_like_media_refusal(detail: str, code: str | None) -> bool:
    """Does a server's error (for a request that carried an image or a sound) say the
    model cannot take them? llama.cpp: "image input is not supported ... mmproj"; vLLM:
    "... is not a multimodal model"; Ollama: "... does not support images"."""
    lowered = f"{detail} {code or ''}".lower()
    return any(hint in lowered for hint in _MEDIA_HINTS)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The ``Retry-After`` header in seconds (delta form; HTTP dates are ignored)."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def error_for_status(status: int, body: bytes, headers: Mapping[str, str], *, url: str,
                     model: str) -> ServerError:
    """The typed error for a non-2xx reply, its message saying what to do about it."""
    detail, code = error_detail(body)
    said = f" The server said: {detail}" if detail else ""
    common = {"status": status, "code": code, "detail": detail}
    if status in (401, 403):
        return AuthenticationError(
            f"The model server at {url} refused the request ({status}): the API key is "
            f"missing or not accepted. Set PY_AGENT_API_KEY (or OPENAI_API_KEY) to a key this "
            f"server accepts.{said}", **common)
    if status == 404:
        return ModelNotFoundError(
            f"The model server at {url} has no model {model!r} (404). Check the model name "
            f"(list the server's models at {url}/models) and that the base URL ends with "
            f"/v1.{said}", **common)
    if status == 429:
        wait = retry_after_seconds(headers)
        when = f" It asks to wait {wait:g} s." if wait is not None else ""
        return RateLimitError(f"The model server at {url} is rate-limiting requests (429)."
                              f"{when} Try again shortly.{said}", retry_after=wait, **common)
    if status >= 500:
        return ServerFailureError(
            f"The model server at {url} failed ({status}). It may be overloaded or still "
            f"loading the model; try again, and check the server's log if it persists.{said}",
            **common)
    if looks_like_context_overflow(detail, code):
        return ContextLengthError(f"The conversation is too long for the model's context "
                                  f"window ({status}).{said}", **common)
    feature = unsupported_feature(detail, code)
    if feature:
        return UnsupportedFeatureError(f"The model server at {url} does not support "
                                       f"{feature} ({status}).{said}", **common)
    return BadRequestError(f"The model server at {url} refused the request ({status}).{said}",
                           **common)
