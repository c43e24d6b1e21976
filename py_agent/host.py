"""The agent's side of the page ↔ worker conversation, in plain Python.

The worker bootstrap hands every message from the page to :meth:`AgentHost.handle`
and gives the host a ``post`` function for replies and live events. Requests
carry an ``id`` and get exactly one ``{"type": "reply", "id", "ok", ...}``;
events of running turns and background compactions are posted as
``{"type": "event", "event": {...}}`` as they happen. ``docs/protocols.md`` lists
every request, reply and event.
"""

from __future__ import annotations

import asyncio
import traceback
from typing import Any, Awaitable, Callable

from .agent import Agent
from .attachments import MAX_BYTES, MAX_PER_MESSAGE, Attachment, AttachmentError, size_text
from .events import AgentEvent, log
from .profile import UnknownProfileFactError
from .replies import error_of, reply
from .store import UnknownSessionError
from .tools import Tool
from .transfer import SessionImportError, export_filename, parse_session

Post = Callable[[dict[str, Any]], None]


class AgentHost:
    """Routes page commands to an :class:`Agent` and streams its events back."""

    def __init__(self, agent: Agent, post: Post) -> None:
        self.agent = agent
        self.post = post
        self._aborts: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task] = set()
        agent.on_event = self._forward
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "run": self._run, "stop": self._stop, "memory": self._memory,
            "compact": self._compact, "sessions": self._sessions, "transcript": self._transcript,
            "rename_session": self._rename, "delete_session": self._delete, "tools": self._tools,
            "export": self._export, "import": self._import, "save_recall": self._save_recall,
            "recall": self._recall, "call_tool": self._call_tool,
            # the user profile (py_agent.profile)
            "profile": self._profile, "edit_profile_fact": self._edit_profile_fact,
            "forget_profile_fact": self._forget_profile_fact, "set_private": self._set_private,
            "confirm_profile_fact": self._confirm_profile_fact,
            # attachments (py_agent.attachments)
            "attachment": self._attachment, "model_inputs": self._model_inputs,
        }

    def _forward(self, event: AgentEvent) -> None:
        self.post({"type": "event", "event": event.to_dict()})

    def handle(self, message: dict[str, Any]) -> asyncio.Task:
        """Start handling one message; replies and events go out through ``post``."""
        task = asyncio.ensure_future(self._dispatch(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _dispatch(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        kind = message.get("type")
        handler = self._handlers.get(kind)  # type: ignore[arg-type]
        try:
            if handler is None:
                raise ValueError(f"unknown request type {kind!r}")
            value = await handler(message)
        except (UnknownSessionError, UnknownProfileFactError) as exc:
            self.post(reply(request_id, error=exc))
        except SessionImportError as exc:  # the user's file, not a bug: no traceback
            self.post(reply(request_id, error=error_of(exc, line=exc.line)))
        except AttachmentError as exc:     # the user's file too
            self.post(reply(request_id, error=error_of(exc, reason=exc.reason,
                                                       attachment=exc.name)))
        except Exception as exc:
            log.exception("request %s failed", kind)
            self.post(reply(request_id, error=error_of(
                exc, traceback=traceback.format_exc(limit=8))))
        else:
            self.post(reply(request_id, value))

    @staticmethod
    def _session(message: dict[str, Any]) -> str:
        return required_text(message, "session_id")

    async def _run(self, message: dict[str, Any]) -> dict[str, Any]:
        session_id = self._session(message)
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text must be a non-empty string")
        attachments = await read_attachments(message.get("attachments"))
        abort = asyncio.Event()
        self._aborts[session_id] = abort
        try:
            result = await self.agent.run(text, session_id=session_id, abort=abort,
                                          attachments=attachments)
        finally:
            if self._aborts.get(session_id) is abort:
                del self._aborts[session_id]
        return result.to_dict()

    async def _stop(self, message: dict[str, Any]) -> bool:
        abort = self._aborts.get(self._session(message))
        if abort is None:
            return False
        abort.set()
        return True

    async def _memory(self, message: dict[str, Any]) -> dict[str, Any]:
        session_id = self._session(message)
        state = (await self.agent.memory_state(session_id)).to_dict()
        shown = ("started_at", "duration_ms", "ok", "turn_ids", "tokens_before", "tokens_after",
                 "trigger", "error", "focus", "model_calls", "kind", "fallback", "facts_error",
                 "facts_turn_ids")
        state["compressions"] = [
            {**{k: getattr(r, k) for k in shown},
             "facts_added": [f.to_dict() for f in r.facts_added],
             "fact_changes": [c.to_dict() for c in r.fact_changes]}
            for r in await self.agent.compressions(session_id)]
        return state

    async def _compact(self, message: dict[str, Any]) -> dict[str, Any]:
        report = await self.agent.compact(self._session(message), focus=message.get("focus") or None)
        return {"ok": report.ok, "compacted_turns": report.compacted_turns,
                "tokens_before": report.tokens_before, "tokens_after": report.tokens_after,
                "error": report.error}

    async def _sessions(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return [vars(info) for info in await self.agent.list_sessions()]

    async def _transcript(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return [t.to_dict() for t in await self.agent.transcript(self._session(message))]

    async def _rename(self, message: dict[str, Any]) -> bool:
        await self.agent.rename_session(self._session(message), str(message.get("title", "")))
        return True

    async def _delete(self, message: dict[str, Any]) -> bool:
        return await self.agent.delete_session(self._session(message))

    async def _recall(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """``agent.recall`` for the page: ``query``, and ``session_id`` and ``k`` if given."""
        query = message.get("query")
        if not isinstance(query, str):
            raise ValueError("query must be a string")
        k = message.get("k", 5)
        if isinstance(k, bool) or not isinstance(k, int):
            raise ValueError("k must be an integer")
        hits = await self.agent.recall(query, session_id=message.get("session_id") or None, k=k)
        return [hit.to_dict() for hit in hits]

    async def _save_recall(self, message: dict[str, Any]) -> int:
        """The page is hidden (and may be closed): save the recall blobs that lag."""
        return await self.agent.save_recall()
    # ------------------------------------------------------------ the user profile

    async def _profile(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Every profile fact with its source, and the source session's title ("" if that
        session has none, ``session_listed`` False if it is gone from the list)."""
        titles = {info.session_id: info.title for info in await self.agent.store.list_sessions()}
        return [{**fact.to_dict(), "session_title": titles.get(fact.session_id, ""),
                 "session_listed": fact.session_id in titles}
                for fact in await self.agent.profile()]

    @staticmethod
    def _fact_id(message: dict[str, Any]) -> str:
        return required_text(message, "fact_id")

    async def _edit_profile_fact(self, message: dict[str, Any]) -> dict[str, Any]:
        fact = await self.agent.edit_profile_fact(self._fact_id(message), message.get("text"))
        return fact.to_dict()

    async def _confirm_profile_fact(self, message: dict[str, Any]) -> dict[str, Any]:
        return (await self.agent.confirm_profile_fact(self._fact_id(message))).to_dict()

    async def _forget_profile_fact(self, message: dict[str, Any]) -> dict[str, Any]:
        return (await self.agent.forget_profile_fact(self._fact_id(message))).to_dict()

    async def _set_private(self, message: dict[str, Any]) -> bool:
        private = message.get("private")
        if not isinstance(private, bool):
            raise ValueError("private must be true or false")
        await self.agent.set_private(self._session(message), private)
        return private

    async def _attachment(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """A kept attachment for the page to show: its metadata and bytes (a Uint8Array
        there), or None when the archive did not keep it."""
        found = await self.agent.attachment(self._session(message),
                                            required_text(message, "attachment_id"))
        if found is None:
            return None
        return {"name": found.name, "type": found.type, "size": found.size,
                "width": found.width, "height": found.height, "data": found.content}

    async def _model_inputs(self, message: dict[str, Any]) -> dict[str, Any]:
        """What the model in use takes besides text, and why not."""
        return (await self.agent.media_support()).to_dict()

    async def _tools(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return describe_tools(self.agent.tools)

    async def _call_tool(self, message: dict[str, Any]) -> str:
        """Run one of the agent's tools for another agent (the browser's, through WebMCP:
        web/page_tools.js), guarded as in a turn (see :meth:`Agent.call_tool`)."""
        return await self.agent.call_tool(required_text(message, "name"),
                                          message.get("input") or {},
                                          session_id=str(message.get("session_id") or "webmcp"))

    async def _export(self, message: dict[str, Any]) -> dict[str, Any]:
        session_id = self._session(message)
        bundle = await self.agent.export_bundle(session_id)
        return {"filename": export_filename(bundle.state.title, session_id),
                "text": bundle.to_jsonl(), "turns": len(bundle.turns)}

    async def _import(self, message: dict[str, Any]) -> dict[str, Any]:
        text = message.get("text")
        if not isinstance(text, str):
            raise ValueError("text must be the file's content as a string")
        bundle = parse_session(text)
        # Agent.import_bundle checks the wanted id (a non-empty string, if given).
        session_id = await self.agent.import_bundle(bundle, message.get("session_id") or None)
        return {"session_id": session_id, "title": bundle.state.title, "turns": len(bundle.turns)}


def describe_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """The tools as the Tools panel shows them, where each comes from read from its
    origin (``source`` is its kind: own, module, builtin, mcp, page, tab; ``origin`` all
    of it, the address with its credentials redacted; ``identity`` what a decision about
    it is kept under)."""
    return [{"name": t.name, "description": t.description, "signature": t.signature(),
             "pinned": t.pinned, "confirm": t.confirm, "source": t.origin.kind.value,
             "server": t.origin.server, "url": t.origin.url, "origin": t.origin.to_dict(),
             "identity": list(t.origin.identity(t.name)),
             "input_schema": t.input_schema()} for t in tools]


async def read_attachments(items: Any) -> list[Attachment]:
    """The ``attachments`` of a run request as :class:`Attachment` s: each ``{name,
    type, data, width?, height?}`` whose ``data`` is bytes or a Blob (read here, after
    its size is checked against the cap). A ValueError for a malformed one."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError("attachments must be a list")
    if len(items) > MAX_PER_MESSAGE:
        raise AttachmentError(f"{len(items)} attachments is too many for one message; send at "
                              f"most {MAX_PER_MESSAGE} at once.", reason="too-many")
    found = []
    for item in items:
        if not isinstance(item, dict) or item.get("data") is None:
            raise ValueError("each attachment needs its data")
        name = str(item.get("name") or "attachment")
        data = item["data"]
        size = getattr(data, "size", None)
        if isinstance(size, (int, float)) and size > MAX_BYTES:
            raise AttachmentError(f"{name} is {size_text(int(size))}; attachments may be at most "
                                  f"{size_text(MAX_BYTES)}.", reason="too-large", name=name)
        if callable(getattr(data, "arrayBuffer", None)):   # a Blob, read only now
            buffer = await data.arrayBuffer()
            data = buffer.to_bytes() if hasattr(buffer, "to_bytes") else bytes(buffer)
        elif callable(getattr(data, "to_bytes", None)) and not isinstance(data, (bytes, int)):
            data = data.to_bytes()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"the data of {name} is neither bytes nor a Blob")
        dims = {k: int(item[k]) for k in ("width", "height")
                if isinstance(item.get(k), (int, float)) and item[k] > 0}
        found.append(Attachment(content=bytes(data), name=name,
                                type=str(item.get("type") or "") or None, **dims))
    return found


def required_text(message: dict[str, Any], key: str) -> str:
    """The request's non-empty string ``key``; a ValueError the page shows if missing."""
    value = message.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} is required")
    return value
