"""Scaling a picture down, for one too large for the model's context window.

A scaler is ``async scale(attachment, factor) -> attachment``: the same picture with
each side times ``factor`` (below 1), re-encoded, loaded. The agent asks for one only
when a picture does not fit; without one, such a picture is refused with the window's
numbers. In CPython the scaler is Pillow's when it is installed
(``pip install pillow``); in the page, the agent's worker scales with
``createImageBitmap`` and ``OffscreenCanvas`` (``worker/image_scale.js``, imported the
first time it is needed).
"""

from __future__ import annotations

import io
from typing import Awaitable, Callable

from .attachment import Attachment

Scaler = Callable[[Attachment, float], Awaitable[Attachment]]


def pillow_scaler() -> Scaler | None:
    """A scaler made with Pillow, or None when Pillow is not installed."""
    try:
        from PIL import Image  # type: ignore[import-not-found]
    except ImportError:
        return None

    async def scale(attachment: Attachment, factor: float) -> Attachment:
        with Image.open(io.BytesIO(attachment.content or b"")) as picture:
            size = (max(1, int(picture.width * factor)), max(1, int(picture.height * factor)))
            smaller = picture.convert("RGB").resize(size)
            out = io.BytesIO()
            smaller.save(out, format="JPEG", quality=88)
        return Attachment(content=out.getvalue(), name=attachment.label).loaded()

    return scale
