"""A whole session as JSON Lines, so it can leave the browser and come back.

The memory inspector's Export and Import buttons move one session between
profiles, machines or a bug report. Pure functions, no agent or store: the
agent gathers a :class:`SessionBundle` and writes it through the store API.

Format ``py-agent-session/2``, one JSON object per line (UTF-8, ``\\n`` ends each)::

    {"type": "session", "format": "py-agent-session/2", "exported_at": 1718000000,
     "turns": 12, "compressions": 2, "attachments": 1, "state": SessionState.to_dict()}
    {"type": "turn", **Turn.to_dict()}                  one per archived turn, oldest first
    {"type": "compression", **CompressionRecord.to_dict()}   one per log entry, oldest first
    {"type": "attachment", "id", "turn_id", "name", "mime", "size", "width", "height",
     "data": base64}                                    one per attachment the archive kept;
                                                        "left_out": why, instead of "data",
                                                        for one left out (over the cap)

Version 1 (no attachment lines) is read too.

The header carries the whole state (recent turns included), so an import is
lossless even for turns the archive lacks; ``turns``/``compressions`` let a
truncated file be caught. Blank lines are ignored.

Version 2 keeps provenance: whose words a step's observation is (``untrusted``), the
untrusted text a key fact was taken from, and the summary's marked part
(``untrusted_summary``, ``untrusted_sources``), with the untrusted passes' prompts and
replies in each compression record. Version 1 files still import: a step whose stored
observation carries the data marks is read as untrusted (the marks say whose words it
was); their summaries and facts have no provenance to read and count as trusted.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Iterator

from .state import TURN_STATUSES, CompressionRecord, SessionState, Turn

FORMAT = "py-agent-session/2"
READABLE_FORMATS = ("py-agent-session/1", FORMAT)
FORMAT_FAMILY = "py-agent-session/"
# The attachments' bytes an export carries at most; those past it are named as left out.
EXPORT_MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024


@dataclass
class ExportedAttachment:
    """An attachment of an exported session: its record's fields, and its bytes, or why
    they were left out."""

    id: str
    turn_id: int
    name: str
    mime: str
    size: int
    width: int | None = None
    height: int | None = None
    data: bytes | None = None
    left_out: str = ""

    def meta(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.mime, "size": self.size,
                "width": self.width, "height": self.height}

    def to_dict(self) -> dict[str, Any]:
        line: dict[str, Any] = {"type": "attachment", "id": self.id, "turn_id": self.turn_id,
                                "name": self.name, "mime": self.mime, "size": self.size,
                                "width": self.width, "height": self.height}
        if self.data is not None:
            line["data"] = base64.b64encode(self.data).decode("ascii")
        else:
            line["left_out"] = self.left_out or "not kept"
        return line


class SessionImportError(ValueError):
    """A session file that cannot be imported; the message names the line and the problem."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {reason}" if line else reason)
        self.reason = reason
        self.line = line


class _Invalid(Exception):
    """A problem inside one record; the parser adds the line number."""


@dataclass
class SessionBundle:
    """Everything one session holds: its state, its raw-turn archive, its compression log."""

    state: SessionState
    turns: list[Turn] = field(default_factory=list)
    compressions: list[CompressionRecord] = field(default_factory=list)
    exported_at: float | None = None
    attachments: list[ExportedAttachment] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return self.state.session_id

    def with_session_id(self, session_id: str) -> "SessionBundle":
        """The same session under another id (state and log records both carry it), as a
        new session: its state's write ``version`` starts over."""
        return replace(self, state=replace(self.state.copy(), session_id=session_id, version=0),
                       compressions=[replace(r, session_id=session_id) for r in self.compressions])

    def to_jsonl(self, exported_at: float | None = None) -> str:
        """The bundle in the ``py-agent-session/2`` format; ``exported_at`` defaults to now."""
        when = exported_at if exported_at is not None else int(time.time())
        state = self.state.to_dict()
        del state["version"]  # a store's write counter, not part of the conversation
        header = {"type": "session", "format": FORMAT, "exported_at": when,
                  "turns": len(self.turns), "compressions": len(self.compressions),
                  "attachments": len(self.attachments), "state": state}
        lines = [header]
        lines += [{"type": "turn", **t.to_dict()} for t in self.turns]
        lines += [{"type": "compression", **r.to_dict()} for r in self.compressions]
        lines += [a.to_dict() for a in self.attachments]
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


# ------------------------------------------------------------------ validation

Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return _is_int(v) or (isinstance(v, float) and math.isfinite(v))


_STR: tuple[Check, str] = (lambda v: isinstance(v, str), "a string")
_OPT_STR: tuple[Check, str] = (lambda v: v is None or isinstance(v, str), "a string or null")
_NUM: tuple[Check, str] = (_is_num, "a number")
_BOOL: tuple[Check, str] = (lambda v: isinstance(v, bool), "true or false")
_COUNT: tuple[Check, str] = (lambda v: _is_int(v) and v >= 0, "a non-negative integer")
_TURN_ID: tuple[Check, str] = (lambda v: _is_int(v) and v >= 1, "a positive integer")
_LIST: tuple[Check, str] = (lambda v: isinstance(v, list), "a list")


def _one_of(*values: str) -> tuple[Check, str]:
    return (lambda v: v in values), "one of " + ", ".join(repr(v) for v in values)


# field -> (check, what it must be, required)
_TURN = {"id": (*_TURN_ID, True), "user": (*_STR, True), "answer": (*_STR, True),
         "steps": (*_LIST, False), "status": (*_one_of(*TURN_STATUSES), False),
         "created_at": (*_NUM, False)}
_SOURCES = ((lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
            "a list of strings")
_STEP = {"thought": (*_STR, False), "tool": (*_STR, False), "observation": (*_STR, False),
         "corrective": (*_BOOL, False), "untrusted": (*_STR, False)}
_FACT = {"category": (*_STR, False), "text": (*_STR, True),
         "turn_id": ((lambda v: v is None or _is_int(v)), "an integer or null", False),
         "id": (*_STR, False), "untrusted": (*_SOURCES, False)}
_FACT_CHANGE = {"action": (*_one_of("superseded", "retracted", "folded", "kept"), True),
                "fact": ((lambda v: isinstance(v, dict)), "an object", True),
                "reason": (*_STR, False),
                "replaced_by": ((lambda v: v is None or isinstance(v, dict)),
                                "an object or null", False),
                "by": (*_one_of("model", "rule"), False)}
_STATE = {"session_id": ((lambda v: isinstance(v, str) and v.strip() != ""),
                         "a non-empty string", True),
          "title": (*_STR, False), "summary": (*_STR, False), "facts": (*_LIST, False),
          "recent_turns": (*_LIST, False), "next_turn_id": (*_TURN_ID, False),
          "compactions": (*_COUNT, False), "failed_compactions": (*_COUNT, False),
          "created_at": (*_NUM, False), "updated_at": (*_NUM, False),
          "next_fact_id": (*_TURN_ID, False), "facts_through": (*_COUNT, False),
          "consecutive_failures": (*_COUNT, False), "degraded": (*_STR, False),
          "version": (*_COUNT, False), "untrusted_summary": (*_STR, False),
          "untrusted_sources": (*_SOURCES, False)}
_RECORD = {"started_at": (*_NUM, True), "duration_ms": (*_NUM, True), "ok": (*_BOOL, True),
           "turn_ids": ((lambda v: isinstance(v, list) and all(map(_is_int, v))),
                        "a list of integers", True),
           "previous_summary": (*_STR, True), "summary_prompt": (*_STR, True),
           "summary": (*_STR, True), "facts_added": (*_LIST, False),
           "tokens_before": (*_COUNT, False), "tokens_after": (*_COUNT, False),
           "model_calls": (*_COUNT, False), "focus": (*_OPT_STR, False),
           "error": (*_OPT_STR, False), "trigger": (*_one_of("auto", "manual", "tool"), False),
           "session_id": (*_STR, False),
           "summary_reply": (*_STR, False), "summary_system": (*_STR, False),
           "summary_ms": (*_NUM, False), "facts_prompt": (*_STR, False),
           "facts_system": (*_STR, False), "facts_reply": (*_STR, False),
           "facts_ms": (*_NUM, False), "facts_error": (*_OPT_STR, False),
           "facts_turn_ids": ((lambda v: isinstance(v, list) and all(map(_is_int, v))),
                              "a list of integers", False),
           "facts_before": (*_LIST, False), "folded": (*_LIST, False),
           "fact_changes": (*_LIST, False), "fallback": (*_BOOL, False),
           "policy": ((lambda v: isinstance(v, dict)), "an object", False),
           "kind": (*_one_of("compaction", "facts"), False),
           **{name: (*_STR, False) for name in (
               "previous_untrusted_summary", "untrusted_summary_prompt",
               "untrusted_summary_reply", "untrusted_summary", "untrusted_facts_prompt",
               "untrusted_facts_reply")}}


def _check(data: Any, spec: dict[str, tuple[Check, str, bool]], what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _Invalid(f"{what} must be a JSON object")
    for key, (ok, must_be, required) in spec.items():
        if key not in data:
            if required:
                raise _Invalid(f"{what} has no {key!r}")
        elif not ok(data[key]):
            raise _Invalid(f"{what}: {key!r} must be {must_be}, not {_show(data[key])}")
    return data


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _facts(items: list[Any], what: str) -> None:
    for i, fact in enumerate(items):
        _check(fact, _FACT, f"{what}[{i}]")


def _turn(data: Any, what: str) -> Turn:
    _check(data, _TURN, what)
    for i, step in enumerate(data.get("steps", [])):
        _check(step, _STEP, f"{what} step {i + 1}")
    return Turn.from_dict(data)


def _state(data: Any) -> SessionState:
    _check(data, _STATE, "the session state")
    _facts(data.get("facts", []), "the session state's facts")
    seen: set[int] = set()
    for i, turn in enumerate(data.get("recent_turns", [])):
        turn_id = _turn(turn, f"the session state's recent turn {i + 1}").id
        if turn_id in seen:
            raise _Invalid(f"the session state repeats recent turn id {turn_id}")
        seen.add(turn_id)
    return SessionState.from_dict(data)


def _record(data: Any, session_id: str) -> CompressionRecord:
    _check(data, _RECORD, "the compression record")
    for name in ("facts_added", "facts_before", "folded"):
        _facts(data.get(name, []), f"the compression record's {name}")
    for i, change in enumerate(data.get("fact_changes", [])):
        what = f"the compression record's fact_changes[{i}]"
        _check(change, _FACT_CHANGE, what)
        _check(change["fact"], _FACT, what + ".fact")
        if change.get("replaced_by") is not None:
            _check(change["replaced_by"], _FACT, what + ".replaced_by")
    known = {f.name for f in fields(CompressionRecord)}
    kept = {k: v for k, v in data.items() if k in known}  # newer fields are dropped
    return CompressionRecord.from_dict({**kept, "session_id": session_id})


_ATTACHMENT = {"id": ((lambda v: isinstance(v, str) and 0 < len(v) <= 64), "an id", True),
               "turn_id": (*_TURN_ID, True), "name": (*_STR, False), "mime": (*_STR, True),
               "size": (*_COUNT, False),
               "width": ((lambda v: v is None or _is_int(v)), "an integer or null", False),
               "height": ((lambda v: v is None or _is_int(v)), "an integer or null", False),
               "data": (*_STR, False), "left_out": (*_STR, False)}


def _attachment(data: Any) -> ExportedAttachment:
    _check(data, _ATTACHMENT, "the attachment")
    raw = None
    if "data" in data:
        try:
            raw = base64.b64decode(data["data"], validate=True)
        except (binascii.Error, ValueError):
            raise _Invalid("the attachment's data is not valid base64") from None
    elif "left_out" not in data:
        raise _Invalid("the attachment has neither 'data' nor 'left_out'")
    return ExportedAttachment(id=data["id"], turn_id=data["turn_id"], name=data.get("name", ""),
                              mime=data["mime"], size=len(raw) if raw is not None
                              else int(data.get("size") or 0),
                              width=data.get("width"), height=data.get("height"), data=raw,
                              left_out=str(data.get("left_out", "")))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _records(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line as (line number, object with a string ``type``)."""
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except ValueError as exc:
            raise SessionImportError(f"not valid JSON ({exc})", number) from None
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise SessionImportError('each line must be a JSON object with a "type"', number)
        yield number, value


def parse_session(text: str) -> SessionBundle:
    """Read a ``py-agent-session/1`` or ``/2`` file; raise :class:`SessionImportError` on
    any problem.

    Lenient only where it is safe: blank lines, a byte-order mark, unknown
    extra keys. A ``next_turn_id`` at or below a turn in the file is raised, so
    the next turn never reuses an archived id.
    """
    if not isinstance(text, str):
        raise SessionImportError(f"expected the file's text, got {type(text).__name__}")
    records = _records(text)
    first = next(records, None)
    if first is None:
        raise SessionImportError("the file is empty")
    number, header = first
    if header["type"] != "session":
        raise SessionImportError('missing header: the first line must be a {"type": "session"} '
                                 f"record, not {header['type']!r}", number)
    version = header.get("format")
    if version not in READABLE_FORMATS:
        if isinstance(version, str) and version.startswith(FORMAT_FAMILY):
            reason = f"unsupported format version {version!r}; this py-agent reads {FORMAT!r}"
        else:
            reason = f"not a py-agent session file (format {_show(version)}, expected {FORMAT!r})"
        raise SessionImportError(reason, number)
    try:
        state = _state(header.get("state"))
    except _Invalid as exc:
        raise SessionImportError(str(exc), number) from None

    turns: list[Turn] = []
    compressions: list[CompressionRecord] = []
    attachments: list[ExportedAttachment] = []
    first_seen: dict[int, int] = {}
    for number, record in records:
        kind = record["type"]
        try:
            if kind == "turn":
                turn = _turn(record, "the turn")
                if turn.id in first_seen:
                    raise _Invalid(f"duplicate turn id {turn.id} (first on line "
                                   f"{first_seen[turn.id]})")
                first_seen[turn.id] = number
                turns.append(turn)
            elif kind == "compression":
                compressions.append(_record(record, state.session_id))
            elif kind == "attachment" and version != READABLE_FORMATS[0]:
                attachments.append(_attachment(record))
            elif kind == "session":
                raise _Invalid("a second session header; a file holds one session")
            else:
                raise _Invalid(f"unknown record type {kind!r}")
        except _Invalid as exc:
            raise SessionImportError(str(exc), number) from None

    for key, found in (("turns", len(turns)), ("compressions", len(compressions)),
                       ("attachments", len(attachments))):
        promised = header.get(key)
        if promised is not None and promised != found:
            raise SessionImportError(f"the header lists {_show(promised)} {key} but the file "
                                     f"holds {found}; is it truncated?", first[0])
    ids = [t.id for t in turns] + [t.id for t in state.recent_turns]
    state.next_turn_id = max([state.next_turn_id, *(i + 1 for i in ids)])
    exported_at = header.get("exported_at")
    _mark_left_out(turns, state.recent_turns, attachments)
    return SessionBundle(state, turns, compressions,
                         exported_at=exported_at if _is_num(exported_at) else None,
                         attachments=attachments)


def _mark_left_out(turns: list[Turn], recent: list[Turn],
                   attachments: list[ExportedAttachment]) -> None:
    """Records of attachments the file does not carry say so (they are not kept here)."""
    carried = {a.id for a in attachments if a.data is not None}
    why = {a.id: a.left_out for a in attachments if a.data is None}
    for turn in [*turns, *recent]:
        for record in turn.attachments:
            if record.id not in carried:
                record.kept = False
                record.note = f"left out of the export: {why.get(record.id) or 'not kept'}"


def id_candidates(session_id: str) -> Iterator[str]:
    """``id``, then ``id-2``, ``id-3``, ...: names to try until one is free."""
    yield session_id
    n = 2
    while True:
        yield f"{session_id}-{n}"
        n += 1


def export_filename(title: str, session_id: str, limit: int = 60) -> str:
    """A file name safe on every OS: the title's letters and digits, else the id's."""
    for source in (title, session_id):
        words = "".join(ch if ch.isalnum() else " " for ch in source).split()
        name = "-".join(words)[:limit].strip("-")
        if name:
            return name + ".jsonl"
    return "session.jsonl"
