"""Model and store implementations that forward every call over an RPC transport.

In the browser the transport is a JavaScript function that posts to the LLM host
on the main thread (the Prompt API is Window-only) or calls the IndexedDB module
in the worker. Keeping these classes pure Python, with the transport injected,
lets CPython tests drive them with a fake transport.

A transport is ``async (method, args) -> reply`` where ``reply`` is a dict
``{"ok": True, "value": ...}`` or ``{"ok": False, "error": {"name", "message", ...}}``;
it never raises for errors the other side reports.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, Awaitable, Callable

from .model import (MEDIA_KINDS, Availability, InputNotSupportedError, MediaSupport, Message,
                    ModelAbortedError, ModelError, ModelNetworkError, ModelUnavailableError,
                    Prompt, Purpose, QuotaExceededError, ResponseConstraintError)
from .profile import UserProfile
from .state import CompressionRecord, SessionInfo, SessionState, Turn
from .store import StateConflictError, StorageError, check_blob, check_blob_bytes, written

Transport = Callable[[str, list[Any]], Awaitable[dict[str, Any]]]

# The LLM host's error names (web/llm_host.js), as Chrome raises them, to Python errors:
# a session destroyed before or during a call (InvalidStateError) is gone, as
# FunctionModel's destroyed sessions are; a call's own abort signal is an abort; a refused
# response constraint is its own error, never a missing model.
_MODEL_ERRORS: dict[str, type[ModelError]] = {
    "QuotaExceededError": QuotaExceededError,
    "ModelUnavailableError": ModelUnavailableError,
    "NotSupportedError": ModelUnavailableError,
    "NotAllowedError": ModelUnavailableError,
    "InvalidStateError": ModelUnavailableError,
    "AbortError": ModelAbortedError,
    "NetworkError": ModelNetworkError,
    "ResponseConstraintError": ResponseConstraintError,
    # An image or sound the model refused or could not decode (web/llm_host.js names it).
    "MediaInputError": InputNotSupportedError,
}

_STORAGE_KINDS = {"StorageQuotaError": "quota", "QuotaExceededError": "quota",
                  "StorageBlockedError": "blocked", "VersionError": "version"}


def model_error(error: dict[str, Any]) -> ModelError:
    """The Python exception for an error the LLM host reported by name."""
    name = str(error.get("name", "Error"))
    message = str(error.get("message", "")) or name
    cls = _MODEL_ERRORS.get(name, ModelError)
    if cls is QuotaExceededError:
        return QuotaExceededError(message, requested=error.get("requested"),
                                  quota=error.get("quota"))
    if cls is ResponseConstraintError:
        original = str(error.get("originalName") or "") or None
        return ResponseConstraintError(f"{original}: {message}" if original else message,
                                       original_name=original)
    return cls(message if cls is not ModelError else f"{name}: {message}")


def wire_prompt(prompt: Prompt) -> Any:
    """A prompt as the bridge carries it: text as it is; content parts with each image or
    sound as ``{type, value: bytes, mime, name}`` (bytes cross as a Uint8Array, never
    as base64 text; the host makes each a Blob of its type)."""
    if isinstance(prompt, str):
        return prompt
    parts: list[dict[str, Any]] = []
    for part in prompt:
        value = part["value"]
        if part["type"] == "text":
            parts.append({"type": "text", "value": str(value)})
        else:
            parts.append({"type": part["type"], "value": bytes(value.content or b""),
                          "mime": value.type or "", "name": value.label})
    return parts


def storage_error(error: dict[str, Any]) -> StorageError:
    name = str(error.get("name", "StorageError"))
    if name == "StateConflictError":
        return StateConflictError(str(error.get("message", "")))
    return StorageError(str(error.get("message", name)), kind=_STORAGE_KINDS.get(name, "unknown"))


async def call_transport(transport: Transport, method: str, args: list[Any],
                         to_error: Callable[[dict[str, Any]], Exception]) -> Any:
    """Call ``method`` over ``transport``: its value, or ``to_error(error)`` raised."""
    reply = await transport(method, args)
    if not isinstance(reply, dict) or "ok" not in reply:
        raise to_error({"name": "ProtocolError", "message": f"malformed reply to {method}"})
    if not reply["ok"]:
        raise to_error(reply.get("error") or {})
    return reply.get("value")


class BridgeSession:
    """A Prompt API session living on the main thread, addressed by id.

    ``conversation_id`` is the agent's chat this session serves: each prompt names it,
    and the LLM host tags the prompt's streamed pieces with it (a
    :class:`~py_agent.model.TaggedSession`). A clone keeps it.
    """

    def __init__(self, model: "BridgeModel", info: dict[str, Any], purpose: Purpose,
                 conversation_id: str = "") -> None:
        self._model = model
        self.id = str(info["sessionId"])
        self.purpose = purpose
        self.conversation_id = conversation_id
        self._window = int(info.get("contextWindow") or 0)
        self._usage = int(info.get("contextUsage") or 0)

    @property
    def context_window(self) -> int:
        return self._window

    @property
    def context_usage(self) -> int:
        return self._usage

    def _update(self, value: dict[str, Any]) -> None:
        self._window = int(value.get("contextWindow") or self._window)
        self._usage = int(value.get("contextUsage") or self._usage)

    async def prompt(self, text: Prompt, *, response_constraint: dict[str, Any] | None = None,
                     purpose: Purpose = Purpose.STEP) -> str:
        request_id = self._model.next_request_id()
        # The schema is not added to the model's input (omitResponseConstraintInput): the
        # instructions and examples already show the reply's shape, the schema would cost
        # its tokens on every step (docs/prompt-api.md has the measurement), and Chrome's
        # measureContextUsage() never counts it, so what is sent is what measure() counts.
        options = {"responseConstraint": response_constraint, "purpose": Purpose(purpose).value,
                   "omitResponseConstraintInput": response_constraint is not None,
                   "requestId": request_id,
                   "stream": Purpose(purpose) in self._model.stream_purposes,
                   "conversationId": self.conversation_id}
        try:
            value = await self._model.call("prompt", [self.id, wire_prompt(text), options])
        except asyncio.CancelledError:
            # Stop the generation on the main thread too; do not wait for it.
            asyncio.ensure_future(self._model.transport("abort", [request_id]))
            raise
        self._update(value)
        if value.get("overflowed"):
            # Chrome evicted the oldest context (maybe the instructions) to fit this
            # reply, so the reply cannot be trusted; the caller recovers as on a quota error.
            raise QuotaExceededError("the session overflowed its context window and "
                                     "dropped earlier context", quota=self._window)
        return str(value.get("text", ""))

    async def append(self, text: str, *, purpose: Purpose = Purpose.STEP) -> None:
        """Read ``text`` without answering (``session.append``); an append that made
        the session evict earlier context raises, so it is never used as it is."""
        request_id = self._model.next_request_id()
        try:
            value = await self._model.call("append", [self.id, text, {"requestId": request_id}])
        except asyncio.CancelledError:
            asyncio.ensure_future(self._model.transport("abort", [request_id]))
            raise
        self._update(value or {})
        if (value or {}).get("overflowed"):
            raise QuotaExceededError("the session overflowed its context window while "
                                     "appending and dropped earlier context", quota=self._window)

    async def measure(self, text: Prompt) -> int | None:
        value = await self._model.call("measure", [self.id, wire_prompt(text)])
        return None if value is None else int(value)

    async def clone(self) -> "BridgeSession":
        return BridgeSession(self._model, await self._model.call("clone", [self.id]), self.purpose,
                             self.conversation_id)

    async def destroy(self) -> None:
        try:
            await self._model.call("destroy", [self.id])
        except ModelError:
            pass  # already gone on the other side


class BridgeModel:
    """A LanguageModel whose sessions live with the LLM host, reached by ``transport``.

    ``languages`` are the languages of the text going in and out; ``availability()``
    and ``create()`` both declare them (``expectedInputs``/``expectedOutputs``), as
    Chrome asks. ``context_window`` is the window of the last session created (None
    before the first), so the agent can estimate budgets without a session of its own.
    """

    def __init__(self, transport: Transport, *, stream_purposes: frozenset[Purpose] = frozenset(),
                 languages: tuple[str, ...] = ("en",)) -> None:
        self.transport = transport
        self.stream_purposes = stream_purposes
        self.context_window: int | None = None
        self.languages = tuple(languages)
        self._ids = itertools.count(1)
        self._media: MediaSupport | None = None

    # How the model is named in what the user reads.
    label = "Chrome's built-in model"

    def next_request_id(self) -> str:
        return f"r{next(self._ids)}"

    def expected_io(self, media: tuple[str, ...] = ()) -> dict[str, Any]:
        """The ``expectedInputs``/``expectedOutputs`` options: text in ``languages``, and
        the kinds of ``media`` the prompts will carry."""
        options = {key: [{"type": "text", "languages": list(self.languages)}]
                   for key in ("expectedInputs", "expectedOutputs")}
        options["expectedInputs"] += [{"type": kind} for kind in media]
        return options

    async def call(self, method: str, args: list[Any]) -> Any:
        return await call_transport(self.transport, method, args, model_error)

    async def availability(self) -> Availability:
        value = await self.call("availability", [self.expected_io()])
        return value.get("availability", "unavailable") if isinstance(value, dict) else value

    async def media_support(self) -> MediaSupport:
        """Which of images and sounds the model takes here: ``availability()`` asked with
        each declared beside text (once; a model that takes text only says why)."""
        if self._media is None:
            text = await self.availability()
            takes, why = set(), {}
            for kind in MEDIA_KINDS:
                value = await self.call("availability", [self.expected_io((kind,))])
                answer = value.get("availability", "unavailable") if isinstance(value, dict) \
                    else value
                if answer != "unavailable" and text != "unavailable":
                    takes.add(kind)
                else:
                    why[kind] = (f"{self.label} takes no {kind} input on this device (the "
                                 f"Prompt API's availability() for {kind} says "
                                 f"{answer!r}).")
            self._media = MediaSupport(frozenset(takes), why, self.label)
        return self._media

    async def create(self, *, initial_prompts: list[Message],
                     purpose: Purpose = Purpose.STEP,
                     expected_inputs: tuple[str, ...] = ()) -> BridgeSession:
        info = await self.call("create", [{"initialPrompts": initial_prompts,
                                           "purpose": Purpose(purpose).value,
                                           **self.expected_io(tuple(expected_inputs))}])
        session = BridgeSession(self, info, Purpose(purpose))
        if session.context_window > 0:
            self.context_window = session.context_window
        return session


class StorageClient:
    """The client end of the IndexedDB module's transport, for :class:`RpcStore` and the
    tools' key-value store (py_agent.kv): calls whose errors become :class:`StorageError`,
    and replies that may come as JSON text."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    async def _call(self, method: str, *args: Any) -> Any:
        return await call_transport(self.transport, method, list(args), storage_error)

    @staticmethod
    def _json(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value


class RpcStore(StorageClient):
    """The store protocol over a transport to the IndexedDB module (JSON strings both ways)."""

    async def load(self, session_id: str) -> SessionState | None:
        value = self._json(await self._call("load", session_id))
        return None if value is None else SessionState.from_dict(value)

    # State writes are checked against the stored version on the other side, which
    # stores version + 1; the written object learns it on success.

    async def save(self, state: SessionState) -> None:
        await self._call("save", json.dumps(state.to_dict()))
        written(state)

    async def commit_turn(self, state: SessionState, turns: list[Turn]) -> None:
        await self._call("commitTurn", json.dumps(state.to_dict()),
                         json.dumps([t.to_dict() for t in turns]))
        written(state)

    async def commit_compaction(self, state: SessionState | None, record: CompressionRecord,
                                profile: UserProfile | None = None) -> None:
        await self._call("commitCompaction",
                         None if state is None else json.dumps(state.to_dict()),
                         json.dumps(record.to_dict()),
                         None if profile is None else json.dumps(profile.to_dict()))
        written(state, profile)

    async def read_archive(self, session_id: str) -> list[Turn]:
        return [Turn.from_dict(t) for t in self._json(await self._call("readArchive", session_id))]

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        return [CompressionRecord.from_dict({k: v for k, v in r.items()
                                             if k in CompressionRecord.__dataclass_fields__})
                for r in self._json(await self._call("compressions", session_id))]

    async def list_sessions(self) -> list[SessionInfo]:
        return [SessionInfo(str(i["session_id"]), str(i.get("title", "")),
                            float(i.get("updated_at", 0)), int(i.get("turns", 0)),
                            i.get("private") is True)
                for i in self._json(await self._call("listSessions"))]

    async def delete_session(self, session_id: str) -> bool:
        return bool(await self._call("deleteSession", session_id))

    # The recall index's blobs travel as bytes (the browser transport hands them to
    # JavaScript as a Uint8Array and back): no JSON, no base64.

    async def save_recall(self, session_id: str, blob: bytes | None) -> bool:
        check_blob(blob)
        return bool(await self._call("saveRecall", session_id,
                                     None if blob is None else bytes(blob)))

    async def load_recall(self) -> dict[str, bytes]:
        rows = await self._call("loadRecall")
        return {str(session_id): as_bytes(blob) for session_id, blob in rows or []}

    async def save_vectors(self, session_id: str, blob: bytes | None) -> bool:
        check_blob(blob)
        return bool(await self._call("saveVectors", session_id,
                                     None if blob is None else bytes(blob)))

    async def load_vectors(self) -> dict[str, bytes]:
        rows = await self._call("loadVectors")
        return {str(session_id): as_bytes(blob) for session_id, blob in rows or []}

    async def read_turns(self, session_id: str, turn_ids: list[int]) -> list[Turn]:
        ids = sorted({int(i) for i in turn_ids})
        return [Turn.from_dict(t) for t in self._json(await self._call("readTurns", session_id,
                                                                       json.dumps(ids)))]

    # Attachments' bytes travel as bytes too (a Uint8Array on the other side).

    async def put_blob(self, session_id: str, blob_id: str, data: bytes, meta: dict) -> None:
        await self._call("putBlob", session_id, str(blob_id), check_blob_bytes(data),
                         json.dumps(dict(meta)))

    async def get_blob(self, session_id: str, blob_id: str) -> tuple[bytes, dict] | None:
        value = await self._call("getBlob", session_id, str(blob_id))
        if value is None:
            return None
        meta, data = value
        return as_bytes(data), self._json(meta) or {}

    async def blob_sizes(self, session_id: str) -> dict[str, int]:
        return {str(k): int(v) for k, v in (self._json(await self._call("blobSizes", session_id))
                                            or {}).items()}

    # The user profile: one JSON document, written with the version it was read at.

    async def load_profile(self) -> UserProfile:
        return UserProfile.from_dict(self._json(await self._call("loadProfile")))

    async def save_profile(self, profile: UserProfile,
                           state: SessionState | None = None) -> None:
        await self._call("saveProfile", json.dumps(profile.to_dict()),
                         None if state is None else json.dumps(state.to_dict()))
        written(state, profile)


def as_bytes(value: Any) -> bytes:
    """Bytes from what a transport gives for binary data: bytes, a buffer (memoryview),
    or a JavaScript typed array not converted yet."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    to_bytes = None if isinstance(value, (int, str)) else getattr(value, "to_bytes", None)
    if callable(to_bytes):
        return bytes(to_bytes())
    raise StorageError(f"a recall blob came back as {type(value).__name__}, not bytes")
