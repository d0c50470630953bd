"""The grammar engine's per-generation session: ``GrammarSession``.

This module owns ``GrammarSession``, which keeps one llguidance matcher on the committed prefix of the
canvas and answers the sampler (``forced``, ``propose``, ``allowed``, ``feasible``). Canvas bookkeeping
lives in ``grammar_view`` and the completion search in ``grammar_search`` (both mixed into the session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import CanvasTooSmallError, ConfigError, ConstraintViolation, DeadEnd
from .base import MASK, ConstraintSession, Proposal
from .grammar_search import _EndgameSearch
from .grammar_tokens import _byte_classes, _closing_tokens, _probe_ids, _vocab_index
from .grammar_view import _CanvasOps, _View, unpack_bitmasks

if TYPE_CHECKING:
    from .grammar import GrammarConstraint

__all__ = ["GrammarSession"]


class GrammarSession(_CanvasOps, _EndgameSearch, ConstraintSession):
    """One generation over a canvas of ``length`` positions; the language is ``L · EOS*`` cut to length.

    The session's matcher follows the committed prefix up to the frontier (the first MASK); each call
    re-syncs it to the canvas it is given, rolling back what the sampler re-masked. Committed tokens
    *after* the frontier (an EOS tail, or the rest of the output when a span was re-masked for repair)
    form a *segment* that is checked when a run reaches it: the token just before it must let the matcher
    consume the segment (and be complete at its EOS). The end of the canvas counts as a committed EOS.

    * ``forced(canvas)``: llguidance's fast-forward tokens (the forced bytes in the tokenizer's canonical
      split) on consecutive masked positions from the frontier, repeated while more are forced; once only
      EOS is allowed (or an EOS is committed) every later masked position is EOS. Forced tokens running
      into a committed segment are written only if the segment can follow; forced bytes that cannot fit
      before the canvas end even in the fewest tokens raise ``DeadEnd`` (``CanvasTooSmallError`` when
      nothing is committed yet).
    * ``propose(canvas, logprobs, window=None, noise=None, stop_below=None, run_limit=None)``: a run from
      the frontier (``prefix_only=True``), clipped to the sampler's block when ``window`` is given. At each
      masked position, the argmax of the logprobs restricted to the grammar's mask after the run so far
      (EOS only where the output is complete and nothing but EOS is committed later), with its
      probability renormalised over the allowed tokens as confidence; up to the next committed position,
      the end of the canvas, or ``max_run`` tokens, and no further than the sampler will commit (the first
      token below ``stop_below``, or ``run_limit`` tokens). After an EOS the rest of the masked stretch is
      EOS (confidence 1).
    * Finishing in time (the *endgame*: the last ``endgame`` positions before the canvas end or an EOS
      tail, widened to twice the length of a completion found from the frontier when the output is
      long): the model's token is kept only if a short search (``_finish_path``: probe tokens, forced
      bytes in the fewest tokens, ``search_budget`` grammar masks) finds a completion in the positions
      left after it; otherwise the first token of a completion that fits is taken (when the search
      finds nothing at all, the model's token stands and the search rests for 8 positions). Holes
      before a non-EOS segment are steered the same way (``_hole_path``: exactly the hole's length, the
      model's likeliest tokens first). The search is a heuristic; what it guarantees is checked exactly:
      the last position before a segment or the canvas end takes only tokens after which the segment
      follows (the output is complete), found at the frontier by scanning the allowed tokens in model
      order. If none exists the output cannot be finished in this canvas: ``DeadEnd``, and the generator
      re-masks from before the frontier and denoises again.
    * ``allowed(canvas)``: exact rows at committed positions (the committed token), at the frontier (the
      grammar's mask, filtered by that exact check when a boundary follows it) and at forced positions;
      all other rows are all False (the engine cannot tell them yet).
    """

    #: the widening search's budget, in units of ``search_budget``
    widen_budget = 2

    def __init__(self, constraint: GrammarConstraint, length: int, device: torch.device | str = "cpu",
                 *, max_run: int = 64, endgame: int = 32, search_budget: int = 256):
        super().__init__(constraint, length, device)
        if max_run < 1 or endgame < 0 or search_budget < 0:
            raise ConfigError(f"max_run must be >= 1 and endgame, search_budget >= 0; got max_run={max_run}, "
                              f"endgame={endgame}, search_budget={search_budget}")
        if self.length < max(constraint.min_tokens(), 1):
            raise CanvasTooSmallError(max(constraint.min_tokens(), 1), self.length)
        self.max_run = int(max_run)
        self.endgame = int(endgame)
        self.search_budget = int(search_budget)
        self.c: GrammarConstraint = constraint
        self._probes = _probe_ids(constraint.vocab)
        self._closes = _closing_tokens(constraint.vocab)
        self._byte_class = _byte_classes(constraint.vocab)
        self._index = _vocab_index(constraint.vocab)
        self.eos = constraint.vocab.eos_id
        self.V = constraint.vocab.size
        self._m = constraint._root.deep_copy()
        self._out: list[int] = []  # output tokens consumed on self._m
        self._search_rest_until = -1  # the endgame search found nothing: rest until this position
        self._wide_rest_until = -1  # the widening search found nothing: rest until this frontier

    # -- canvas bookkeeping --------------------------------------------------------------------------

    def _scan(self, canvas: torch.Tensor) -> "_View":
        if canvas.dim() != 1 or canvas.numel() != self.length:
            raise ConstraintViolation(f"canvas has shape {tuple(canvas.shape)}; this session was opened for "
                                      f"a canvas of {self.length} positions")
        ids = canvas.tolist()
        try:
            f = ids.index(MASK)
        except ValueError:
            f = self.length
        eos = self.eos
        e = ids.index(eos) if eos in ids else None
        if e is not None:
            bad = [i for i in range(e + 1, self.length) if ids[i] != MASK and ids[i] != eos]
            if bad:
                raise ConstraintViolation(
                    f"token {ids[bad[0]]} is committed at position {bad[0]} after EOS at position {e}; "
                    "only EOS may follow EOS — re-mask those positions"
                )
        self._sync(ids[: min(f, e) if e is not None else f])
        if e is not None and e < f and not self._m.is_accepting():
            raise ConstraintViolation(
                f"EOS is committed at position {e} but the output before it is not complete "
                f"({self.c.vocab.decode(ids[:e])!r}); re-mask from position {e}"
            )
        return _View(ids, f, e, eos)

    # -- masks ---------------------------------------------------------------------------------------

    def _bitmask(self) -> np.ndarray:
        return np.frombuffer(self._m.compute_bitmask(), dtype=np.uint8)

    def _allowed_np(self, bm: np.ndarray, tok: int) -> bool:
        return 0 <= tok < self.V and bool((bm[tok >> 3] >> (tok & 7)) & 1) and bool(self.c._ok_np[tok])

    def _rows(self, bms: list[np.ndarray], device: torch.device, eos_ok: bool) -> torch.Tensor:
        """BoolTensor[R, V] on ``device``: the tokens the engine may propose, from llguidance bitmasks."""
        rows = unpack_bitmasks(np.stack(bms), self.V, device) & self.c.ok_mask(device)
        if not eos_ok:
            rows[:, self.eos] = False
        return rows

    # -- the interface -------------------------------------------------------------------------------

    def forced(self, canvas: torch.Tensor, *, window: tuple[int, int] | None = None) -> torch.Tensor:
        """Forced tokens from the frontier on (``window`` is accepted for the sampler's sake and ignored:
        forced tokens are exact and cost nothing, so they are given beyond the block too)."""
        v = self._scan(canvas)
        T, eos, ids = self.length, self.eos, v.ids
        out = [MASK] * T
        if v.e is not None:  # everything after a committed EOS is EOS
            for i in range(v.e + 1, T):
                if ids[i] == MASK:
                    out[i] = eos
        if v.f < T and not (v.e is not None and v.e < v.f):
            self._fast_forward(v, out)
        return torch.tensor(out, dtype=torch.long, device=canvas.device)

    def _fast_forward(self, v: "_View", out: list[int]) -> None:
        """Write the grammar-forced tokens from the frontier into ``out`` (the matcher is left as it was).

        Forced tokens that would run into a committed segment are written only if the segment can follow
        them; forced bytes that cannot fit before the end of the canvas even in the fewest tokens raise
        ``CanvasTooSmallError`` (if they fit only in a non-canonical split, nothing is written and
        ``propose`` spells them)."""
        T, eos, ids, m = self.length, self.eos, v.ids, self._m
        pos, consumed = v.f, 0
        try:
            while pos < T:
                if ids[pos] != MASK:  # a committed segment: step over it (it was checked when written)
                    k = pos
                    while k < T and ids[k] != MASK:
                        k += 1
                    seg = ids[pos:k]
                    if eos in seg:
                        return
                    n = m.try_consume_tokens(seg)
                    consumed += n
                    if n < len(seg):
                        return
                    pos = k
                    continue
                if m.is_stopped():  # the output is complete and nothing but EOS can follow
                    if v.eos_ok_after(pos):
                        for i in range(pos, T):
                            if ids[i] == MASK:
                                out[i] = eos
                    return
                ff = m.compute_ff_tokens()
                if not ff:
                    return
                start = pos
                while pos < T and ids[pos] == MASK and pos - start < len(ff):
                    pos += 1
                placed = pos - start
                n = m.try_consume_tokens(ff[:placed])
                consumed += n
                if n < placed:  # cannot happen for llguidance's own fast-forward tokens
                    return
                if pos >= T and not (placed == len(ff) and m.is_accepting()):
                    # the forced text does not end inside the canvas, in llguidance's split at least
                    m.rollback(n)
                    consumed -= n
                    fewest = self._forced_fewest()
                    n = m.try_consume_tokens(fewest)
                    consumed += n
                    need = start + len(fewest) + (0 if n == len(fewest) and m.is_accepting() else 1)
                    if need > T:
                        if v.f == 0:
                            raise CanvasTooSmallError(need, T)
                        raise DeadEnd(f"the text the grammar forces after the committed prefix needs {need} "
                                      f"positions, the canvas has {T}", position=v.f)
                    return  # it fits only in a shorter split: propose spells it
                if placed < len(ff):  # a committed segment follows: write them only if it can follow
                    seg, need_end = self._segment(v, pos)
                    if not self._goal(seg, need_end):
                        return
                out[start:pos] = ff[:placed]
        finally:
            if consumed:
                m.rollback(consumed)

    def propose(self, canvas: torch.Tensor, logprobs: torch.Tensor, *, window: tuple[int, int] | None = None,
                noise: torch.Tensor | None = None, stop_below: float | None = None,
                run_limit: int | None = None) -> Proposal:
        """The constrained greedy run from the frontier (see the class docstring).

        ``window`` [start, end) clips the run (the sampler's current block; rows outside it are not read);
        ``noise`` [T, V] (sampling noise, repair penalties) is added to the scores that choose the tokens,
        for the rows read only; confidences come from ``logprobs`` alone.

        ``stop_below`` and ``run_limit`` say what the sampler will commit of the run (a prefix: while the
        confidence stays at or above ``stop_below``, at least one token; or the first ``run_limit``): the
        run stops at the first token below ``stop_below`` (kept) or after ``run_limit`` tokens, since the
        rest would be proposed, steered through the endgame searches, and thrown away. The commits are the
        same; with a weak model the run is a tenth as long."""
        dev = logprobs.device
        v = self._scan(canvas)
        T, eos = self.length, self.eos
        if logprobs.shape[0] != T or logprobs.shape[-1] < self.V:
            raise ConstraintViolation(f"logprobs have shape {tuple(logprobs.shape)}; expected [{T}, {self.V}]")
        tokens = canvas.to(dev).clone()
        conf = torch.zeros(T, dtype=torch.float32, device=dev)
        elig = torch.zeros(T, dtype=torch.bool, device=dev)
        stop = T if window is None else min(T, int(window[1]))
        if v.f >= stop:
            return Proposal(tokens, conf, elig, prefix_only=True)
        j = v.f
        while j < T and v.ids[j] == MASK:
            j += 1  # first committed position after the frontier (T: the canvas end)
        if v.e is not None and v.e < v.f:  # output complete: the masked stretch is EOS
            tokens[v.f:min(j, stop)] = eos
            conf[v.f:min(j, stop)] = 1.0
            elig[v.f:min(j, stop)] = True
            return Proposal(tokens, conf, elig, prefix_only=True)
        seg, need_end = self._segment(v, j)
        deadline = need_end and not seg  # the output must be complete by position j
        end = min(j, v.f + self.max_run, stop)
        lp = logprobs[v.f:end, : self.V]
        sc = lp if noise is None else lp + noise[v.f:end, : self.V].to(lp.dtype)
        _, raw_t = sc.max(dim=-1)
        raw = raw_t.tolist()
        m = self._m
        chosen: list[int] = []
        plan: list[int] | None = None  # a completion (or hole filling) found at the previous position
        zone = self.endgame  # steer this many positions before the deadline
        if deadline and self.endgame and j - v.f > self.endgame:
            # a long output may need more than the endgame to finish: widen it to twice a completion
            # found from here (or to everything when none is found), and start from that completion.
            # A search that finds nothing is the costly kind (its whole budget): after one, the next
            # 8 frontier positions take the same answer without searching, and so does the steering
            if v.f >= self._wide_rest_until:
                plan = self._finish_path(j - v.f, [self.widen_budget * self.search_budget])
                if plan is None:
                    self._wide_rest_until = v.f + 8
                    self._search_rest_until = max(self._search_rest_until, v.f + 8)
            zone = j - v.f if plan is None else max(self.endgame, 2 * len(plan) + 8)
        tops: list[list[int]] | None = None
        tops_from = v.f
        confs: list[torch.Tensor] = []  # the confidence of each chosen token, as it is chosen
        consumed = 0
        try:
            for i, pos in enumerate(range(v.f, end)):
                bm = self._bitmask()
                eos_ok = v.eos_ok_after(pos)
                row = self._rows([bm], dev, eos_ok)  # [1, V]: what may go here (the choice, the confidence)
                tok = raw[i]
                if not self._allowed_np(bm, tok) or (tok == eos and not eos_ok):
                    tok = self._argmax(row[0], sc[i])
                    if tok is None:
                        if i == 0:
                            raise self._stuck(v, j)
                        break
                model_tok = tok
                if deadline and pos < j - 1 and j - pos <= zone:
                    tok, plan = self._steer(tok, j - pos, plan, pos)
                elif not deadline and pos < j - 1 and j - pos <= self.endgame:
                    if tops is None:  # the model's likeliest tokens at each position up to the segment
                        rows_ahead = logprobs[pos:j, : self.V]
                        if noise is not None:
                            rows_ahead = rows_ahead + noise[pos:j, : self.V].to(rows_ahead.dtype)
                        tops = rows_ahead.topk(min(8, self.V), dim=-1).indices.tolist()
                        tops_from = pos
                    tok, plan = self._steer_hole(tok, j - pos, plan, seg, need_end, tops[pos - tops_from:], pos)
                else:  # not steered here: a plan stays valid only if the token follows it
                    plan = plan[1:] if plan and plan[0] == tok else None
                if tok != model_tok and not (self._allowed_np(bm, tok) and (tok != eos or eos_ok)):
                    tok, plan = model_tok, None  # never happens with a plan made for this state
                if pos == j - 1 and not self._fits(tok, seg, need_end):
                    # the last position before the committed segment / the canvas end
                    if i > 0:
                        break  # leave it masked: it is searched at the frontier next step
                    found = self._fitting_candidates(row[0], sc[i], seg, need_end, first_only=True)
                    if not found:
                        raise self._stuck(v, j)
                    tok = found[0]
                chosen.append(tok)
                c_tok = self._confidence(lp[i:i + 1], lp[i].max()[None], row, torch.tensor([tok], device=dev))
                confs.append(c_tok)
                if tok == eos:
                    break
                if (run_limit is not None and len(chosen) >= run_limit) or \
                        (stop_below is not None and float(c_tok[0]) < stop_below):
                    break  # the sampler commits nothing after this token
                if not m.consume_token(tok):  # pragma: no cover - the mask said it was allowed
                    raise ConstraintViolation(f"llguidance refused token {tok} it allowed: {m.get_error()}")
                consumed += 1
        finally:
            if consumed:
                m.rollback(consumed)
        R = len(chosen)
        if R:
            tokens[v.f:v.f + R] = torch.tensor(chosen, dtype=torch.long, device=dev)
            conf[v.f:v.f + R] = torch.cat(confs)
            elig[v.f:v.f + R] = True
            tail = min(j, stop)
            if chosen[-1] == eos and v.f + R < tail:
                tokens[v.f + R:tail] = eos
                conf[v.f + R:tail] = 1.0
                elig[v.f + R:tail] = True
        return Proposal(tokens, conf, elig, prefix_only=True)


    def allowed(self, canvas: torch.Tensor) -> torch.Tensor:
        v = self._scan(canvas)
        T, dev = self.length, self.device
        out = torch.zeros(T, self.V, dtype=torch.bool, device=dev)
        committed = [i for i in range(T) if v.ids[i] != MASK]
        if committed:
            idx = torch.tensor(committed, device=dev)
            out[idx, torch.tensor([v.ids[i] for i in committed], device=dev)] = True
        forced = self.forced(canvas).to(dev)
        fpos = (forced != MASK).nonzero().flatten()
        if fpos.numel():
            out[fpos, forced[fpos]] = True
        if v.f < T:
            out[v.f] = self._frontier_row(v)
        return out

    def feasible(self, canvas: torch.Tensor) -> bool:
        """False when the committed tokens break the grammar or nothing can go at the frontier."""
        try:
            v = self._scan(canvas)
        except ConstraintViolation:
            return False
        if v.f >= self.length:
            return v.e is not None or self._m.is_accepting()
        return bool(self._frontier_row(v).any())

    def _frontier_row(self, v: "_View") -> torch.Tensor:
        T = self.length
        if v.e is not None and v.e < v.f:
            row = torch.zeros(self.V, dtype=torch.bool, device=self.device)
            row[self.eos] = True
            return row
        row = self._rows([self._bitmask()], self.device, v.eos_ok_after(v.f))[0]
        j = v.f + 1
        if j >= T or v.ids[j] != MASK:
            seg, need_end = self._segment(v, j)
            keep = self._fitting_candidates(row, None, seg, need_end, first_only=False)
            row = torch.zeros_like(row)
            if keep:
                row[torch.tensor(keep, device=row.device)] = True
        return row
