"""Credentials kept out of everything shown, stored or logged.

A tool server's address may carry its credentials (``https://user:password@host/mcp``,
``…/mcp?token=…``), and its requests an ``Authorization`` header. The real address is
used to connect and kept nowhere else: what the user sees (the Tools panel, the terminal,
error messages), events, the trace, stored chats and exports get :func:`redact_url`'s
form, in which a password, a user name without a password, and the value of every query
or fragment parameter whose name says it is secret (``token``, ``key``, ``secret``,
``password``, ``auth``, ``sig``, ``session``...) are ``***``. The HTTP and MCP libraries
log addresses themselves (httpx2 logs each request's URL; the SDK the endpoint it
connects to): :func:`redact_library_logs` puts a filter on their loggers that rewrites
every record through :func:`redact_text` before any handler sees it.
"""

from __future__ import annotations

import logging
import re
from typing import Iterable
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# A query or fragment parameter whose name says its value is a secret.
SECRET_NAME = re.compile(r"(?i)(token|key|secret|passw|pwd|auth|sig|session|cred|jwt|bearer|"
                         r"cookie|private)")
# Addresses inside free text (a log record, an SDK's message).
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# "Bearer abc", "Basic abc": the scheme kept, the credential masked.
_AUTH_VALUE = re.compile(r"(?i)\b(bearer|basic|token)(\s+)(?!\*\*\*)[A-Za-z0-9._~+/=-]{4,}")
# authorization: value / 'authorization': 'value' / (b'authorization', b'Bearer value'):
# the header's scheme kept, its credential masked.
_AUTH_HEADER = re.compile(r"(?i)(\b(?:proxy-)?authorization['\"]?\s*[:=,]\s*\(?(?-i:b)?['\"]?)"
                          r"(?:(bearer|basic|token)\s+)?(?!\*\*\*)([^'\"\s,)}]+)")


def _masked_parameters(text: str) -> str:
    """``a=1&token=x`` with the secret-named values masked, the rest as written."""
    parts = []
    for item in text.split("&"):
        name, equals, _value = item.partition("=")
        parts.append(f"{name}={MASK}" if equals and SECRET_NAME.search(name) else item)
    return "&".join(parts)


def redact_url(url: str) -> str:
    """``url`` as it may be shown, stored or logged (see the module docstring); an
    address that cannot be parsed is redacted as text."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return redact_text(str(url), addresses=False)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if colon else f"{MASK}@{host}"
    query = _masked_parameters(parts.query) if parts.query else ""
    fragment = _masked_parameters(parts.fragment) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def host_of(url: str) -> str:
    """The host and port of ``url`` alone (never its credentials), or "" if it has none."""
    try:
        parts = urlsplit(str(url))
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if host and port else host


def redact_text(text: str, *, addresses: bool = True) -> str:
    """Free text (a log line, an error message) with every address in it redacted, and
    every bearer or basic credential and authorization header value masked."""
    if addresses:
        text = _URL.sub(lambda match: redact_url(match.group()), text)
    text = _AUTH_HEADER.sub(lambda match: match.group(1) + (
        f"{match.group(2)} " if match.group(2) else "") + MASK, text)
    return _AUTH_VALUE.sub(lambda match: f"{match.group(1)}{match.group(2)}{MASK}", text)


class RedactingFilter(logging.Filter):
    """Rewrites a log record through :func:`redact_text` (its message, and the text of
    the exception it carries) before any handler formats it; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:   # a record whose arguments do not fit: left to the handler
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


# The loggers of the libraries that speak to tool servers, and our own.
LIBRARY_LOGGERS = ("httpx2", "httpcore2", "httpx", "httpcore", "mcp", "mcp_types", "py_agent")
_FILTER = RedactingFilter()


def redact_library_logs(prefixes: Iterable[str] = LIBRARY_LOGGERS) -> None:
    """Put the redacting filter on every logger named by ``prefixes`` or under them that
    exists now (a logger's filters do not apply to its children's records, so each gets
    its own; call this after the libraries are imported). Idempotent."""
    prefixes = tuple(prefixes)
    names = [name for name in list(logging.root.manager.loggerDict)
             if any(name == p or name.startswith(p + ".") for p in prefixes)]
    for name in {*prefixes, *names}:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
