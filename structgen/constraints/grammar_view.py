"""Canvas bookkeeping for ``GrammarSession``: one scan of a canvas and the matcher kept in sync with it.

This module owns ``_View`` (a scanned canvas: frontier, first EOS, last committed word),
``unpack_bitmasks`` (llguidance bitmasks to boolean rows on any device) and ``_CanvasOps``, the session
mixin that re-syncs the matcher to the committed prefix, reads committed segments and checks which
tokens let them follow, picks the best allowed token, renormalises confidences and builds the errors for a
run that cannot go on.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import ConstraintViolation, DeadEnd, StructgenError
from .base import MASK

__all__ = ["unpack_bitmasks"]


_SHIFTS: dict[str, torch.Tensor] = {}


def unpack_bitmasks(packed: np.ndarray, width: int, device: torch.device | str = "cpu",
                    *, on_device: bool | None = None) -> torch.Tensor:
    """BoolTensor[R, width] on ``device`` from llguidance bitmasks (uint8[R, bytes], little-endian bits).

    On CPU numpy unpacks them; for an accelerator the packed bytes are shipped (8x smaller) and unpacked
    there with shifts (``on_device`` forces either way, for tests)."""
    device = torch.device(device)
    if not (device.type != "cpu" if on_device is None else on_device):
        bits = np.unpackbits(packed, axis=1, bitorder="little")[:, :width]
        return torch.from_numpy(np.ascontiguousarray(bits).view(np.bool_)).to(device)
    key = str(device)
    sh = _SHIFTS.get(key)
    if sh is None:
        sh = _SHIFTS[key] = torch.arange(8, dtype=torch.uint8, device=device)
    raw = torch.from_numpy(packed).to(device, non_blocking=True)
    return ((raw.unsqueeze(-1) >> sh) & 1).bool().view(packed.shape[0], -1)[:, :width]


class _View:
    """One scan of a canvas: ``ids``, frontier ``f`` (first MASK, or T) and first committed EOS ``e``."""

    __slots__ = ("ids", "f", "e", "last_word")

    def __init__(self, ids: list[int], f: int, e: int | None, eos: int):
        self.ids, self.f, self.e = ids, f, e
        self.last_word = -1  # last position holding a committed token other than EOS
        for i in range(len(ids) - 1, -1, -1):
            if ids[i] != MASK and ids[i] != eos:
                self.last_word = i
                break

    def eos_ok_after(self, pos: int) -> bool:
        """Whether EOS may go at ``pos``: no committed token other than EOS comes after it."""
        return self.last_word < pos


class _CanvasOps:
    """``GrammarSession`` methods that follow the canvas: matcher sync, segments, argmax, confidence."""

    def _sync(self, target: list[int]) -> None:
        out, m = self._out, self._m
        k = 0
        n = min(len(out), len(target))
        while k < n and out[k] == target[k]:
            k += 1
        if k < len(out):
            if not m.rollback(len(out) - k):
                m.reset()
                m.consume_tokens(target[:k])
            del out[k:]
        rest = target[k:]
        if rest:
            bad = [t for t in rest if not (0 <= t < self.V) or not self.c._ok_np[t]]
            done = m.try_consume_tokens(rest) if not bad else 0
            if bad or done < len(rest):
                if bad:
                    bad_pos = k + rest.index(bad[0])
                else:
                    m.rollback(done)
                    bad_pos = k + done
                raise ConstraintViolation(
                    f"token {target[bad_pos]} committed at position {bad_pos} is not allowed by the grammar "
                    f"after {self.c.vocab.decode(target[:bad_pos])!r}; re-mask from position {bad_pos}"
                )
            out.extend(rest)

    def _segment(self, v: "_View", j: int) -> tuple[list[int], bool]:
        """The committed segment starting at ``j`` (``j == T``: the canvas end) as (output tokens before
        its first EOS, whether the output must be complete after them)."""
        T = self.length
        if j >= T:
            return [], True
        k = j
        while k < T and v.ids[k] != MASK:
            k += 1
        seg = v.ids[j:k]
        if self.eos in seg:
            return seg[: seg.index(self.eos)], True
        return seg, k == T

    def _fits(self, tok: int, seg: list[int], need_end: bool) -> bool:
        """Whether ``tok`` at the position before the committed segment lets the segment follow."""
        m = self._m
        if tok == self.eos:
            return not seg
        if m.try_consume_tokens([tok]) != 1:
            return False
        n = m.try_consume_tokens(seg) if seg else 0
        ok = n == len(seg) and (not need_end or m.is_accepting())
        m.rollback(n + 1)
        return ok

    def _fitting_candidates(self, row: torch.Tensor, scores: torch.Tensor | None, seg, need_end,
                            first_only: bool) -> list[int]:
        """Allowed tokens of ``row`` that fit the segment, in descending score order (all, or the first)."""
        idx = row.nonzero().flatten()
        if scores is not None and idx.numel() > 1:
            idx = idx[torch.argsort(scores[idx].float(), descending=True, stable=True)]
        found = []
        for t in idx.tolist():
            if self._fits(t, seg, need_end):
                found.append(t)
                if first_only:
                    break
        return found

    @staticmethod
    def _argmax(row: torch.Tensor, scores: torch.Tensor) -> int | None:
        """The highest-scoring token the bool ``row`` allows (None when it allows nothing)."""
        top, arg = scores.masked_fill(~row, float("-inf")).max(dim=0)
        if bool(torch.isfinite(top)):
            return int(arg)
        nz = row.nonzero().flatten()
        return int(nz[0]) if nz.numel() else None

    def _stuck(self, v: "_View", j: int) -> StructgenError:
        """The dead end met at the frontier: nothing there lets the output finish before position ``j``
        (the canvas end, or a committed segment). The generator re-masks from before the frontier."""
        T = self.length
        text = self.c.vocab.decode(v.ids[: v.f])
        if j >= T:
            return DeadEnd(f"the output {_short(text)!r} cannot be finished in the {T - v.f} positions left "
                           f"of the canvas ({T} tokens); a larger max_tokens gives it room", position=v.f,
                           text=text)
        return DeadEnd(f"no token at position {v.f} lets the tokens committed from position {j} follow "
                       f"{_short(text)!r}", position=v.f, text=text)

    @staticmethod
    def _confidence(lp: torch.Tensor, top: torch.Tensor, rows: torch.Tensor, sel: torch.Tensor) -> torch.Tensor:
        """Probability of ``sel`` renormalised over the allowed tokens of each row (a shifted exp and a
        masked sum over V; rows whose allowed mass underflows use logsumexp)."""
        lp = lp.float()
        shifted = lp - top.float()[:, None]
        mass = (shifted.exp_() * rows).sum(dim=-1)
        pick = lp.gather(1, sel[:, None]).squeeze(1) - top.float()
        conf = pick.exp() / mass
        bad = ~torch.isfinite(conf) | (mass <= 0)
        if bool(bad.any()):
            lse = torch.logsumexp(lp[bad].masked_fill(~rows[bad], float("-inf")), dim=-1)
            conf[bad] = torch.nan_to_num(torch.exp(lp.gather(1, sel[:, None]).squeeze(1)[bad] - lse), nan=0.0)
        return conf.clamp_(0.0, 1.0)


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else "..." + s[-(n - 3):]
