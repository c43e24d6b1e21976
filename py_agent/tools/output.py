"""What a tool returns when its result holds pictures or sounds: :class:`ToolOutput`.

A tool's result is text for the model, always. A tool that sees (a screenshot of the
tab, a tool server's image content) returns a :class:`ToolOutput`: its text, and the
media it returned as :class:`~py_agent.attachments.Attachment` s. The turn sends them
as parts of the observation to a model that can see or hear them, after the
observation's text and inside its data marks when the tool is untrusted; to a model
that cannot, the text names each one instead (:func:`media_note`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..attachments import Attachment


@dataclass(frozen=True)
class ToolOutput:
    """A tool's text, and the pictures or sounds that came with it (loaded: bytes and
    sniffed type)."""

    text: str
    media: tuple[Attachment, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.text


def media_note(media: tuple[Attachment, ...] | list[Attachment], *, seen: bool) -> str:
    """The line an observation adds for its media: what follows it (``seen``), or what
    the model cannot see or hear."""
    if not media:
        return ""
    names = "; ".join(f"{m.label}: {m.describe()}" for m in media)
    if seen:
        return f"[the tool's result includes, shown after this: {names}]"
    senses = {"image": "see", "audio": "hear"}
    cannot = " or ".join(sorted({senses.get(m.kind, "read") for m in media}))
    return f"[the tool's result includes {names}, which this model cannot {cannot}]"
