"""The demo's key-value protocol: the in-memory store and the IndexedDB bridge."""

from __future__ import annotations

import json

import pytest

from py_agent.kv import InMemoryKeyValueStore, KeyValueStore, RpcKeyValueStore
from py_agent.store import StorageError
from tests.unit.support import run


def js_like_transport(backing: InMemoryKeyValueStore, log: list, fail: dict):
    """What worker/idb_store.js does for the kv methods: JSON text in and out, errors as
    {name, message} replies (fail maps a method to the error its next call reports)."""

    async def transport(method, args):
        log.append((method, list(args)))
        if method in fail:
            return {"ok": False, "error": fail.pop(method)}
        if method == "kvGet":
            value = await backing.get(args[0])
            return {"ok": True, "value": None if value is None else json.dumps(value)}
        if method == "kvPut":
            assert isinstance(args[1], str), "values cross the bridge as JSON text"
            await backing.put(args[0], json.loads(args[1]))
            return {"ok": True, "value": None}
        if method == "kvDelete":
            return {"ok": True, "value": await backing.delete(args[0])}
        if method == "kvList":
            return {"ok": True, "value": json.dumps(await backing.list(args[0]))}
        return {"ok": False, "error": {"name": "TypeError", "message": f"no method {method}"}}

    return transport


@pytest.fixture(params=["memory", "rpc"])
def kv(request) -> KeyValueStore:
    if request.param == "memory":
        return InMemoryKeyValueStore()
    return RpcKeyValueStore(js_like_transport(InMemoryKeyValueStore(), [], {}))


def test_get_put_delete_list_by_prefix(kv):
    async def go():
        assert isinstance(kv, KeyValueStore)
        assert await kv.get("note:1") is None
        await kv.put("note:000002", {"title": "b", "tags": ["x"], "n": 1.5})
        await kv.put("note:000001", {"title": "a"})
        await kv.put("todo:000001", {"task": "milk", "done": False})
        await kv.put("notes", "not a note: the prefix is note: with a colon")
        assert await kv.get("note:000002") == {"title": "b", "tags": ["x"], "n": 1.5}
        assert await kv.list("note:") == [("note:000001", {"title": "a"}),
                                          ("note:000002", {"title": "b", "tags": ["x"], "n": 1.5})]
        assert [k for k, _ in await kv.list()] == ["note:000001", "note:000002", "notes",
                                                   "todo:000001"]
        assert await kv.list("zzz") == []
        await kv.put("note:000001", {"title": "a2"})   # put replaces
        assert await kv.get("note:000001") == {"title": "a2"}
        assert await kv.delete("note:000001") is True
        assert await kv.delete("note:000001") is False
        assert await kv.get("note:000001") is None
        await kv.put("n", None)
        await kv.put("unicode", "café ☕ 漢字")
        assert await kv.get("unicode") == "café ☕ 漢字"
    run(go())


def test_values_are_copies_and_must_be_json(kv):
    async def go():
        value = {"items": [1, 2]}
        await kv.put("k", value)
        value["items"].append(3)
        got = await kv.get("k")
        assert got == {"items": [1, 2]}
        got["items"].append(4)
        assert await kv.get("k") == {"items": [1, 2]}
        with pytest.raises(ValueError, match="cannot be stored as JSON"):
            await kv.put("k", {"when": object()})
        with pytest.raises(ValueError, match="cannot be stored as JSON"):
            await kv.put("k", float("nan"))
        with pytest.raises(ValueError, match="non-empty string"):
            await kv.put("", 1)
        with pytest.raises(ValueError, match="non-empty string"):
            await kv.get(3)
        assert await kv.get("k") == {"items": [1, 2]}
    run(go())


def test_in_memory_fail_next_raises_once_and_writes_nothing():
    kv = InMemoryKeyValueStore()

    async def go():
        await kv.put("a", 1)
        kv.fail_next = StorageError("Storage is full", kind="quota")
        with pytest.raises(StorageError, match="Storage is full"):
            await kv.put("a", 2)
        assert await kv.get("a") == 1
        await kv.put("a", 3)
        assert await kv.get("a") == 3 and kv.writes == 2
    run(go())


def test_rpc_bridge_speaks_json_text_and_maps_errors():
    log, fail = [], {}
    kv = RpcKeyValueStore(js_like_transport(InMemoryKeyValueStore(), log, fail))

    async def go():
        await kv.put("todo:000001", {"task": "milk"})
        assert log[-1] == ("kvPut", ["todo:000001", '{"task": "milk"}'])
        assert await kv.list("todo:") == [("todo:000001", {"task": "milk"})]
        assert log[-1] == ("kvList", ["todo:"])
        fail["kvPut"] = {"name": "StorageQuotaError", "message": "Storage is full: ..."}
        with pytest.raises(StorageError) as info:
            await kv.put("todo:000002", {"task": "bread"})
        assert info.value.kind == "quota" and "Storage is full" in str(info.value)
        fail["kvList"] = {"name": "VersionError", "message": "Reload this page."}
        with pytest.raises(StorageError) as info:
            await kv.list("todo:")
        assert info.value.kind == "version"
        fail["kvGet"] = {"name": "StorageError", "message": "IndexedDB failed (UnknownError)"}
        with pytest.raises(StorageError, match="UnknownError"):
            await kv.get("todo:000001")
        # Values the JS side hands back already parsed (not text) are accepted too.
        async def parsed(method, args):
            return {"ok": True, "value": [["a", 1]] if method == "kvList" else {"x": 1}}
        other = RpcKeyValueStore(parsed)
        assert await other.list() == [("a", 1)] and await other.get("a") == {"x": 1}
        # A malformed reply is a storage error, not a crash in the caller.
        async def broken(method, args):
            return "nonsense"
        with pytest.raises(StorageError, match="malformed reply to kvGet"):
            await RpcKeyValueStore(broken).get("a")
    run(go())
