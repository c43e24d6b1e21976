"""Images and sounds that go to the model with a user message ([attachments](../docs/attachments.md)).

- ``attachment``: :class:`Attachment` (path, content or url; bytes read on first use,
  capped, type sniffed), :class:`AttachmentRecord` (what a turn keeps of one: no bytes),
  :class:`AttachmentError`, and the caps;
- ``sniffing``: the type of a file from its first bytes;
- ``headers``: an image's size and a WAV file's length from their headers;
- ``scaling``: a picture scaled down for a window it does not fit (Pillow, or the page's
  worker).
"""

from .attachment import (MAX_AUDIO_SECONDS, MAX_BYTES, MAX_PER_MESSAGE, SENDABLE, Attachment,
                         AttachmentError, AttachmentRecord, check_count, new_attachment_id,
                         size_text)
from .headers import image_size, wav_seconds
from .scaling import Scaler, pillow_scaler
from .sniffing import Sniffed, sniff

__all__ = ["MAX_AUDIO_SECONDS", "MAX_BYTES", "MAX_PER_MESSAGE", "SENDABLE", "Attachment",
           "AttachmentError", "AttachmentRecord", "Scaler", "Sniffed", "check_count", "image_size",
           "new_attachment_id", "pillow_scaler", "size_text", "sniff", "wav_seconds"]
