"""The response side of Chat Completions: a finished turn as OpenAI's JSON, or as its stream of chunks.

:class:`Completion` is what a worker hands back (released calls, content, finish reason, usage, and the
``structgen`` extension with the policy decisions, parked approval ids and executions). From it,
:func:`completion_body` builds a ``chat.completion`` object and :func:`completion_chunks` the
``chat.completion.chunk`` objects of a stream, in the order OpenAI sends them: the role, the content or, per
call, a header delta (id, name, empty arguments) and an arguments delta, then an empty delta with the
``finish_reason``, then (with ``stream_options.include_usage``) a usage chunk with no choices.

Nothing is streamed before the turn is final: a diffusion canvas is not written left to right, and a tool
call is released only once the whole canvas is final, validated and allowed (drafts travel separately, see
:mod:`.sse`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .. import __version__

FINGERPRINT = f"structgen-{__version__}"


@dataclass
class Completion:
    """One finished chat completion."""

    id: str
    model: str
    content: str | None
    tool_calls: list[dict] = field(default_factory=list)  # OpenAI ``tool_calls`` entries, released only
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extension: dict = field(default_factory=dict)  # the ``structgen`` field
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def usage(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}


def completion_body(c: Completion) -> dict:
    """The non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": c.content, "refusal": None}
    if c.tool_calls:
        message["tool_calls"] = c.tool_calls
    return {"id": c.id, "object": "chat.completion", "created": c.created, "model": c.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": c.finish_reason}],
            "usage": c.usage, "structgen": c.extension}


def _chunk(c: Completion, delta: dict | None, finish_reason: str | None = None, **extra) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None,
                                          "finish_reason": finish_reason}]
    return {"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
            "system_fingerprint": FINGERPRINT, "choices": choices, **extra}


def completion_chunks(c: Completion, *, include_usage: bool = False) -> list[dict]:
    """The ``chat.completion.chunk`` objects of ``c``, in stream order (see the module docstring)."""
    out = [_chunk(c, {"role": "assistant", "content": None if c.tool_calls and not c.content else "",
                      "refusal": None})]
    if c.content:
        out.append(_chunk(c, {"content": c.content}))
    for i, call in enumerate(c.tool_calls):
        fn = call["function"]
        out.append(_chunk(c, {"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                              "function": {"name": fn["name"], "arguments": ""}}]}))
        out.append(_chunk(c, {"tool_calls": [{"index": i, "function": {"arguments": fn["arguments"]}}]}))
    last = _chunk(c, {}, c.finish_reason, structgen=c.extension)
    last["usage"] = None
    out.append(last)
    if include_usage:
        out.append(_chunk(c, None, usage=c.usage))
    return out
