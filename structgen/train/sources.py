"""Pointer targets: which prompt tokens each target value token was rendered from.

The generators know where a value of the target comes from (``base.ValueSource``: ``"due": "2026-07-14"``
from "July 14, 2026"). This module turns that into token positions: for each target token inside the
value, the prompt positions of the request words it was rendered from. The trainer's *source loss*
(``objective.llada_loss``, ``TrainConfig.source_loss``) then asks the copy head's pointer to put its weight
on those positions: the pointer learns *which* words a slot reads, so a converted value (a month named in
words, a currency named by its symbol, the origin of a pair) has a source for the conversion path to read,
instead of a pointer that can only find what matches (training log, run 19).

Matching is on token ids, not characters: the pre-tokenizer keeps a word the same token wherever it stands
(``structgen.tokenizers``), so a source text's tokens are a run of the prompt's. A text is looked for as a
whole (its edge punctuation stripped) and, where that fails, word by word; every occurrence counts (the
pointer may read any of them). A value whose text is not found gets no target, and nothing is an error:
the targets are a hint for the loss, never a requirement of the data.

Within a value, each token gets the narrowest target the source allows (``_narrowed``), because any
position of a target satisfies the loss and the pointer takes the easiest: with the whole of "July 14,
2026" as the target of every token of ``2026-07-14``, run 20's pointer read digits at the month's slot and
never the month. So a token the source spells (``14``, ``2026``'s pieces) points at those tokens; a token it
does not (``07``) points at the source's *words* no token of the value copies (``July``); a token of
punctuation alone (``-``, ``:``) gets no target: the generator writes those.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from array import array
from collections.abc import Sequence

from .data.base import ValueSource, canonical_json
from .tokenizer import encode_target

_EDGE = " \t\n.,;:!?()[]{}\"'`-/|*<>"
_WORD = re.compile(r"\w+")

#: one target token's pointer target: (its index in the target, the prompt positions it reads)
Pointer = tuple[int, tuple[int, ...]]


def find_runs(haystack: Sequence[int], needle: Sequence[int]) -> list[int]:
    """Every start index of ``needle`` as a contiguous run of ``haystack`` (token ids; a C-speed search)."""
    if not needle or len(needle) > len(haystack):
        return []
    hay, pin = array("I", haystack).tobytes(), array("I", needle).tobytes()
    found, at = [], hay.find(pin)
    while at >= 0:
        if at % 4 == 0:  # aligned on a whole id
            found.append(at // 4)
        at = hay.find(pin, at + 1)
    return found


def text_positions(tok, prompt_ids: Sequence[int], text: str) -> list[int]:
    """The prompt positions of ``text``: its tokens as a run of ``prompt_ids`` (every occurrence), else the
    runs of its words one by one; empty when neither is there."""
    core = text.strip(_EDGE)
    if not core:
        return []
    ids = _ids(tok, core)
    hits = {s + i for s in find_runs(prompt_ids, ids) for i in range(len(ids))}
    if not hits:
        for word in _WORD.findall(core):
            w = _ids(tok, word)
            hits.update(s + i for s in find_runs(prompt_ids, w) for i in range(len(w)))
    return sorted(hits)


def value_tokens(offsets: Sequence[tuple[int, int]], target: str, source: ValueSource) -> list[int]:
    """The target tokens (by their character ``offsets``) of ``source``'s value, without a string's quotes;
    the first ``"key": value`` pair of the target that spells it."""
    pair = f"{canonical_json(source.key)}: {source.value}"
    at = target.find(pair)
    if at < 0:
        return []
    lo, hi = at + len(pair) - len(source.value), at + len(pair)
    if source.value.startswith('"'):
        lo, hi = lo + 1, hi - 1
    return [i for i, (a, b) in enumerate(offsets) if a < hi and b > lo]


def pointer_targets(tok, prompt_ids: Sequence[int], target: str, target_ids: Sequence[int],
                    sources: Sequence[ValueSource], *,
                    offsets: Sequence[tuple[int, int]] | None = None) -> tuple[Pointer, ...]:
    """Each value token's prompt positions for ``sources`` (``target_ids`` must be ``encode_target(tok,
    target)``; a tokenizer whose offsets disagree with them gets no targets). ``offsets``: the target tokens'
    character offsets where the caller has them (``tokenizer.encode_targets(..., offsets=True)``), else the
    target is encoded again for them."""
    if not sources:
        return ()
    if offsets is None:
        enc = tok(target, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True)
        if list(enc["input_ids"]) != list(target_ids):
            return ()
        offsets = enc["offset_mapping"]
    out: dict[int, set[int]] = {}
    for s in sources:
        where = sorted({j for text in s.texts for j in text_positions(tok, prompt_ids, text)})
        if where:
            for i, js in _narrowed(tok, prompt_ids, target_ids, value_tokens(offsets, target, s), where):
                out.setdefault(i, set()).update(js)
    return tuple((i, tuple(sorted(js))) for i, js in sorted(out.items()))


def _narrowed(tok, prompt_ids: Sequence[int], target_ids: Sequence[int], value: list[int],
              where: list[int]) -> list[tuple[int, list[int]]]:
    """Each of a value's tokens (indices ``value`` into ``target_ids``) with its own targets among the source
    positions ``where`` (module docstring): its copies there, else the source's words the value does not
    copy (all of ``where`` if there are none); punctuation-only tokens are left out."""
    ids = {target_ids[i] for i in value}
    spare = [j for j in where if prompt_ids[j] not in ids and _is_word(tok, prompt_ids[j])] or where
    out = []
    for i in value:
        if _is_word(tok, target_ids[i]):
            out.append((i, [j for j in where if prompt_ids[j] == target_ids[i]] or spare))
    return out


_WORDISH: "weakref.WeakKeyDictionary[object, dict[int, bool]]" = weakref.WeakKeyDictionary()
_CACHED_CHARS = 32  # longer source texts are not remembered
_IDS: "weakref.WeakKeyDictionary[object, dict[str, list[int]]]" = weakref.WeakKeyDictionary()


def _ids(tok, text: str) -> list[int]:
    """``encode_target(tok, text)``, remembered per tokenizer: source texts and their words repeat across a
    run's examples (a month, a city, a tool's name)."""
    if len(text) > _CACHED_CHARS:  # a body or a title: seen once
        return encode_target(tok, text)
    seen = _IDS.setdefault(tok, {})
    if text not in seen:
        seen[text] = encode_target(tok, text)
    return seen[text]


def _is_word(tok, token_id: int) -> bool:
    """Whether a token has a character that is neither space nor punctuation (letters, digits, ``£``);
    remembered per tokenizer."""
    seen = _WORDISH.setdefault(tok, {})
    if token_id not in seen:
        text = tok.decode([token_id])
        seen[token_id] = any(not c.isspace() and not unicodedata.category(c).startswith("P") for c in text)
    return seen[token_id]


__all__ = ["Pointer", "find_runs", "text_positions", "value_tokens", "pointer_targets"]
