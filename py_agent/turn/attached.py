"""A turn's attachments: kept in the archive, sent with the turn's prompts only, and
named in memory by what the model said of them.

- Before the turn is archived, each attachment's bytes become a blob of the store
  (:class:`~py_agent.store.BlobStore`), within the session's cap; its
  :class:`~py_agent.attachments.AttachmentRecord` (no bytes) goes into the turn's record,
  with ``kept`` and, if not kept, why.
- The turn's first prompt carries them as content parts after its text, with a line
  naming each (:func:`prompt_with`); later prompts of the turn send only the new
  observation, and later turns never send them again.
- After the answer, the turn's own model session (which has seen them) is asked for a
  sentence about each (:func:`describe`): memory, the summary, key facts and recall
  carry that text and the name ("the receipt photo from turn 12"), never the bytes.
  A model that cannot say (a refused constraint, a timeout, an unusable reply) leaves
  a plain description from what is known (kind, format, pixels).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..attachments import Attachment, AttachmentRecord
from ..boundary import clean_text, describe as describe_error
from ..events import log
from ..model import ModelError, ModelSession, Prompt, Purpose, with_media
from ..store import MAX_SESSION_BLOB_BYTES, BlobStore
from ..waiting import bounded
from .policies import StepPolicy

DESCRIPTION_CHARS = 300


def attached_line(attachments: Sequence[Attachment]) -> str:
    """The line a first prompt adds for its attachments, naming each."""
    names = "; ".join(f"{a.label}, {a.describe()}" for a in attachments)
    return f"Attached to this message (shown after it): {names}"


def prompt_with(text: str, attachments: Sequence[Attachment]) -> Prompt:
    """A turn's first prompt: its text, the line naming the attachments, then each as a
    content part; plain text when there are none."""
    if not attachments:
        return text
    return with_media(f"{text}\n{attached_line(attachments)}", list(attachments))


async def keep(store: object, session_id: str, attachments: Sequence[Attachment],
               records: Sequence[AttachmentRecord],
               cap: int = MAX_SESSION_BLOB_BYTES) -> None:
    """Keep each attachment's bytes as a blob of the store, within the session's
    ``cap``; each record says whether it was kept, and if not, why. Never raises: a
    failed write costs only the copy in the archive."""
    if not isinstance(store, BlobStore):
        for record in records:
            record.note = "this store keeps no attachments"
        return
    try:
        used = sum((await store.blob_sizes(session_id)).values())
    except Exception as exc:
        log.warning("could not read the attachments of %s: %s", session_id, describe_error(exc))
        used = 0
    for attachment, record in zip(attachments, records):
        data = attachment.content or b""
        if used + len(data) > cap:
            record.note = (f"not kept: this chat's attachments would take more than "
                           f"{cap // (1024 * 1024)} MB")
            continue
        meta = {"name": record.name, "type": record.type, "size": record.size,
                "width": record.width, "height": record.height}
        try:
            await store.put_blob(session_id, record.id, data, meta)
        except Exception as exc:
            record.note = f"not kept: {describe_error(exc, 200)}"
            continue
        record.kept = True
        used += len(data)


DESCRIBE_SCHEMA_KEY = "descriptions"


def describe_prompt(records: Sequence[AttachmentRecord]) -> str:
    """What the turn's session is asked after its answer, to remember the attachments."""
    names = "\n".join(f"{i + 1}. {r.name} ({r.kind})" for i, r in enumerate(records))
    return ("For your memory of this conversation: in one short sentence each, say what "
            "each attachment of the user's message shows or says, with any numbers, names "
            "or words in it that matter. Reply with JSON: {\"descriptions\": [one string "
            f"per attachment, in order]}}.\nThe attachments:\n{names}")


def describe_schema(count: int) -> dict[str, Any]:
    return {"type": "object", "properties": {DESCRIBE_SCHEMA_KEY: {
        "type": "array", "minItems": count, "maxItems": count,
        "items": {"type": "string", "maxLength": DESCRIPTION_CHARS}}},
        "required": [DESCRIBE_SCHEMA_KEY]}


def _parsed(reply: str, count: int) -> list[str] | None:
    try:
        value = json.loads(reply)
    except ValueError:
        return None
    items = value.get(DESCRIBE_SCHEMA_KEY) if isinstance(value, dict) else None
    if not isinstance(items, list) or len(items) != count:
        return None
    texts = [" ".join(clean_text(str(item)).split())[:DESCRIPTION_CHARS] for item in items]
    return texts if all(texts) else None


def plain_description(attachment: Attachment) -> str:
    """What is known without a model: kind, format, pixels, size."""
    return f"an {attachment.describe()}" if attachment.kind == "image" \
        else f"a {attachment.describe()}"


async def describe(session: ModelSession, attachments: Sequence[Attachment],
                   records: Sequence[AttachmentRecord], policy: StepPolicy) -> None:
    """Fill in each record's description: asked of ``session`` (the turn's own, which
    has seen them), under the step deadline; a plain one where the model gave none."""
    texts: list[str] | None = None
    try:
        reply = await bounded(session.prompt(describe_prompt(records),
                                             response_constraint=describe_schema(len(records)),
                                             purpose=Purpose.DESCRIBE),
                              timeout=policy.timeout_s)
        texts = _parsed(reply, len(records))
    except ModelError as exc:
        log.info("the model could not describe the attachments: %s", describe_error(exc))
    except Exception as exc:   # a deadline, a bug: the plain description will do
        log.info("describing the attachments failed: %s", describe_error(exc))
    for i, (attachment, record) in enumerate(zip(attachments, records)):
        record.description = texts[i] if texts else plain_description(attachment)
