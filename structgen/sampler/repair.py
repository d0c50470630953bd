"""Repair: turn validator issues (character spans) into canvas positions to re-mask.

Rounds escalate: first only the tokens of each failing span, then from the first failing span to the
end of the output, then the whole canvas. A frontier engine (grammar) always re-masks from the span on.
After a dead end (no way to finish inside the canvas) the sampler backs off from the dead end's position:
a quarter of the prefix, then half, then everything. ``complete_prefix`` and ``finish_prefix`` are the last
resorts of a spec whose every output is a safe answer (``Spec.salvage``: ``Sql``): the longest complete
prefix that passes every validator, else the longest prefix the grammar engine can finish in the canvas,
finished, else the grammar's shortest output.
"""

from __future__ import annotations

import torch

from ..constraints.base import MASK


def positions_to_remask(issues, offsets: list[tuple[int, int]], n_text: int, round_no: int,
                        prefix_only: bool) -> list[int]:
    T = len(offsets)
    out_len = sum(1 for s, e in offsets if e > s)
    spans = []
    for iss in issues:
        sp = getattr(iss, "span", None)
        spans.append((0, max(1, n_text)) if sp is None else (sp[0], max(sp[1], sp[0] + 1)))
    hit = set()
    for s, e in spans:
        for i, (a, b) in enumerate(offsets):
            if b > a and a < e and b > s:
                hit.add(i)
            elif b == a and i < out_len and a == s:
                hit.add(i)
    if not hit:  # the span is at the very end (e.g. a missing closing bracket): redo the last token
        hit = {max(0, out_len - 1)}
    first = min(hit)
    if round_no >= 3:
        return list(range(T))
    if round_no >= 2 or prefix_only:
        return list(range(first, T))
    # the output ends where EOS starts: if the span touches the end, let the tail move too
    if max(hit) >= out_len - 1:
        return sorted(hit | set(range(out_len, T)))
    return sorted(hit)


def backoff_positions(position: int, length: int, round_no: int) -> list[int]:
    """Positions to re-mask after a dead end at ``position``: the last quarter of the prefix before it in
    round 1, the last half in round 2, everything from round 3 on (always at least one token back)."""
    share = {1: 0.25, 2: 0.5}.get(round_no, 1.0)
    start = max(0, min(position - 1, int(position * (1.0 - share))))
    return list(range(start, length))


def remask(canvas: torch.Tensor, positions: list[int], penalty: torch.Tensor) -> None:
    """Re-mask ``positions`` and penalise the tokens they held, so the repair explores something else."""
    if not positions:
        return
    idx = torch.as_tensor(positions, device=canvas.device)
    old = canvas[idx]
    ok = old >= 0
    penalty[idx[ok], old[ok]] += 4.0
    canvas[idx] = MASK


def complete_prefix(constraint, ids: list[int], end: int, passes, *, max_checks: int = 8) -> int | None:
    """The longest ``k <= end`` at which ``ids[:k]`` is a complete output of ``constraint`` (every token
    before ``end`` committed, none of them EOS) and ``passes(k)`` holds (the validators found nothing);
    None when there is none. At most ``max_checks`` complete prefixes are validated, longest first."""
    stop = next((i for i, t in enumerate(ids[:end]) if t < 0 or t == constraint.vocab.eos_id), end)
    checked = 0
    for k in range(stop, max(constraint.min_tokens(), 1) - 1, -1):
        if not constraint.accepts(ids[:k]):
            continue
        if passes(k):
            return k
        checked += 1
        if checked >= max_checks:
            return None
    return None


#: the most tokens ``finish_prefix`` lets the grammar add, one try each, least first
FINISH_ROOM = (4, 8, 16, 32, 64)


def finish_prefix(session, ids: list[int], end: int, passes, *,
                  budget: int = 1024) -> tuple[int, list[int]] | None:
    """``(k, tail)``: a prefix ``ids[:k]`` of ``ids[:end]`` (up to the first MASK or EOS) and the tokens
    that finish it inside the canvas of ``session`` (a grammar session, ``completion``) into an output
    that ``passes`` (the validators found nothing in those tokens). Each try lets the grammar add at most
    ``FINISH_ROOM`` tokens, least first, and keeps as much of the prefix as leaves that room (the model's
    own tokens before the search's); the search gets ``budget`` grammar masks per try. When none of them
    finds one, ``k = 0``: the grammar's shortest known output (``constraint.shortest_output``, searched once
    per grammar), so that a grammar whose shortest output passes the validators always ends valid (a
    runaway ``SUM(oi.quantity * c.country * ...`` needs a FROM with two joins to define its aliases, longer
    than the search finds). None when that does not pass either."""
    eos = session.constraint.vocab.eos_id
    stop = next((i for i, t in enumerate(ids[:end]) if t < 0 or t == eos), end)
    for room in FINISH_ROOM:
        k = max(0, min(stop, session.length - room))
        tail = session.completion(ids[:k], budget, room)
        if tail is not None and passes(ids[:k] + tail):
            return k, tail
    shortest = getattr(session.constraint, "shortest_output", lambda: None)()
    if shortest is not None and len(shortest) <= session.length and passes(list(shortest)):
        return 0, list(shortest)
    return None
