"""Draft canvases on the wire: the payload the server streams as SSE ``structgen.draft`` events and the
playground animates, and the short summary the audit log keeps.

Wire format (one JSON object per sampler step)::

    {"step": int, "kind": "forced"|"model"|"remask"|"final", "nfe": int,
     "cells": [{"t": "<decoded token text>", "s": "m"|"f"|"c"}, ...],   # masked, forced, committed by the model
     "text": "<decoded draft>"}

A masked cell has ``t == ""``; so has the EOS tail (special tokens decode to nothing). Drafts are shown,
never acted on: nothing here can reach an executor.

:class:`DraftTracker` follows a run's step events to know which positions the constraint forced (a
``forced`` step adds its positions, a ``model`` or ``remask`` step removes its own) and builds payloads and
summaries; :func:`draft_payload` is the pure function under it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["draft_payload", "draft_summary", "DraftTracker", "token_text"]

_TEXTS: dict[int, tuple[Any, dict[int, str]]] = {}
_TEXTS_LOCK = threading.Lock()


def token_text(tokenizer: Any, token_id: int) -> str:
    """The text of one token (special tokens give ``""``), cached per tokenizer."""
    with _TEXTS_LOCK:
        entry = _TEXTS.get(id(tokenizer))
        if entry is None or entry[0] is not tokenizer:
            if len(_TEXTS) >= 8:
                _TEXTS.pop(next(iter(_TEXTS)))
            entry = (tokenizer, {})
            _TEXTS[id(tokenizer)] = entry
        cache = entry[1]
        text = cache.get(token_id)
    if text is None:
        text = tokenizer.decode([int(token_id)], skip_special_tokens=True)
        with _TEXTS_LOCK:
            cache[token_id] = text
    return text


def _is_forced(forced_mask: Any, i: int) -> bool:
    if isinstance(forced_mask, (set, frozenset, dict)):
        return i in forced_mask
    return bool(forced_mask[i])


def draft_payload(event: Any, tokenizer: Any, forced_mask: Any) -> dict:
    """The wire payload of one ``StepEvent`` (see the module docstring). ``forced_mask`` says which
    positions hold forced tokens: a set of positions or a per-position sequence of booleans (a bool
    tensor works)."""
    cells = []
    for i, tid in enumerate(event.canvas):
        if tid < 0:
            cells.append({"t": "", "s": "m"})
        else:
            cells.append({"t": token_text(tokenizer, tid), "s": "f" if _is_forced(forced_mask, i) else "c"})
    _join_split_characters(cells, event.canvas, tokenizer)
    return {"step": int(event.step), "kind": event.kind, "nfe": int(event.nfe), "cells": cells,
            "text": event.text}


def _join_split_characters(cells: list[dict], canvas: Sequence[int], tokenizer: Any) -> None:
    """A character whose UTF-8 bytes span several byte-level tokens decodes to U+FFFD token by token. In each
    run of committed cells holding one, give the character to the cell that completes it (the cells before
    it get ``""``), so the cells of a run join to exactly the run's text (as a streaming decoder does)."""
    start = 0
    n = len(cells)
    while start < n:
        if cells[start]["s"] == "m":
            start += 1
            continue
        end = start
        while end < n and cells[end]["s"] != "m":
            end += 1
        if any("\ufffd" in cells[k]["t"] for k in range(start, end)):
            emitted = ""
            for k in range(start, end):
                full = tokenizer.decode([int(t) for t in canvas[start: k + 1]], skip_special_tokens=True)
                if full.endswith("\ufffd") and k + 1 < end:
                    cells[k]["t"] = ""
                    continue
                cells[k]["t"] = full.removeprefix(emitted)
                emitted = full
        start = end


def draft_summary(event: Any, forced_mask: Any) -> dict:
    """What the audit log keeps of a step: counts, not the canvas."""
    canvas: Sequence[int] = event.canvas
    masked = sum(1 for t in canvas if t < 0)
    forced = sum(1 for i, t in enumerate(canvas) if t >= 0 and _is_forced(forced_mask, i))
    return {"step": int(event.step), "kind": event.kind, "nfe": int(event.nfe), "masked": masked,
            "forced": forced, "committed": len(canvas) - masked - forced, "new": len(event.positions)}


class DraftTracker:
    """Follows one run's step events; ``update(event)`` first, then ``payload``/``summary``."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.forced: set[int] = set()

    def update(self, event: Any) -> None:
        positions = {int(p) for p in event.positions}
        if event.kind == "forced":
            self.forced |= positions
        elif event.kind in ("model", "remask"):
            self.forced -= positions

    def payload(self, event: Any) -> dict:
        return draft_payload(event, self.tokenizer, self.forced)

    def summary(self, event: Any) -> dict:
        return draft_summary(event, self.forced)
