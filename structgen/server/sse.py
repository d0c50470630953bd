"""Server-sent events as the server writes them.

OpenAI chunks are plain ``data: <json>`` frames and the stream ends with ``data: [DONE]``. Draft canvases
are ``event: structgen.draft`` frames (data in the wire format of :mod:`structgen.agent.drafts`). They are
sent only when the request asks for them (``"structgen": {"drafts": true}``): the official ``openai``
client does not skip frames with an unknown ``event:`` type, it hands their data to the caller as if it
were a chunk, so a default stream carries nothing but OpenAI chunks. An error after the stream has started
is a ``data: {"error": {...}}`` frame, which the ``openai`` client raises as ``APIError``.
"""

from __future__ import annotations

import json
from typing import Any

DRAFT_EVENT = "structgen.draft"
DONE = b"data: [DONE]\n\n"

__all__ = ["DRAFT_EVENT", "DONE", "data_frame", "event_frame"]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def data_frame(obj: Any) -> bytes:
    """A default (``message``) event: what OpenAI clients read."""
    return f"data: {_dumps(obj)}\n\n".encode()


def event_frame(event: str, obj: Any) -> bytes:
    """A named event (e.g. ``structgen.draft``)."""
    return f"event: {event}\ndata: {_dumps(obj)}\n\n".encode()
