"""A small async key-value protocol for tools' own data (the demo's notes and to-dos).

Keys are non-empty strings; values are anything JSON can carry. ``list(prefix)``
returns every ``(key, value)`` whose key starts with ``prefix``, in key order, so a
tool keeps its records under one prefix (``note:``, ``todo:``).

Implementations:

- :class:`InMemoryKeyValueStore`: a dict; for tests, and for the page when IndexedDB
  could not be opened (the data then lasts as long as the worker).
- :class:`RpcKeyValueStore`: the worker's IndexedDB (``worker/idb_store.js``, object
  store ``kv``) over the same transport as :class:`py_agent.rpc.RpcStore`.

Both raise :class:`py_agent.store.StorageError` when a read or write fails, and
``ValueError`` for a bad key or a value JSON cannot carry.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

from .rpc import StorageClient
from .store import FailNextWrite


@runtime_checkable
class KeyValueStore(Protocol):
    """Async get/put/delete/list-by-prefix of JSON values under string keys."""

    async def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None."""
        ...

    async def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-able) under ``key``, replacing any earlier value."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove ``key``; False if it was not there."""
        ...

    async def list(self, prefix: str = "") -> list[tuple[str, Any]]:
        """Every ``(key, value)`` whose key starts with ``prefix``, in key order."""
        ...


def check_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise ValueError(f"a key must be a non-empty string, not {key!r}")
    return key


def to_json(value: Any) -> str:
    """``value`` as JSON text, or a ValueError saying it cannot be stored."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the value cannot be stored as JSON: {exc}") from None


class InMemoryKeyValueStore(FailNextWrite):
    """A :class:`KeyValueStore` in a dict of JSON texts (so values are copies, as in a db).

    ``fail_next`` makes the next write raise that :class:`StorageError`, to test how
    callers cope with a full or broken storage.
    """

    def __init__(self) -> None:
        self._data: dict[str, str] = {}

    async def get(self, key: str) -> Any | None:
        text = self._data.get(check_key(key))
        return None if text is None else json.loads(text)

    async def put(self, key: str, value: Any) -> None:
        text = to_json(value)
        check_key(key)
        self._check_failure()
        self._data[key] = text

    async def delete(self, key: str) -> bool:
        check_key(key)
        self._check_failure()
        return self._data.pop(key, None) is not None

    async def list(self, prefix: str = "") -> list[tuple[str, Any]]:
        return [(key, json.loads(self._data[key]))
                for key in sorted(self._data) if key.startswith(prefix)]


class RpcKeyValueStore(StorageClient):
    """The :class:`KeyValueStore` protocol over a transport to ``IdbStore``'s kv methods.

    Values cross as JSON text (``kvPut(key, json)``, ``kvGet(key) -> json | null``,
    ``kvList(prefix) -> json [[key, value], ...]``, ``kvDelete(key) -> bool``); errors the
    other side reports become :class:`StorageError`.
    """

    async def get(self, key: str) -> Any | None:
        return self._json(await self._call("kvGet", check_key(key)))

    async def put(self, key: str, value: Any) -> None:
        text = to_json(value)
        await self._call("kvPut", check_key(key), text)

    async def delete(self, key: str) -> bool:
        return bool(await self._call("kvDelete", check_key(key)))

    async def list(self, prefix: str = "") -> list[tuple[str, Any]]:
        if not isinstance(prefix, str):
            raise ValueError(f"a prefix must be a string, not {prefix!r}")
        rows = self._json(await self._call("kvList", prefix)) or []
        return [(str(key), value) for key, value in rows]
