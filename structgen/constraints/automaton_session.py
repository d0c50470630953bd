"""The automaton engine's per-canvas session: the sweep over positions and the session API.

See ``automaton.py`` for the algorithm. One ``_sweep`` computes the live state sets forward, then backward
either reachability (``forced``/``allowed``) or the Viterbi scores and choices (``propose``); the
vocabulary-sized work stays on the model's device, the sweep runs in numpy on the host.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import CanvasTooSmallError, ConstraintViolation
from .base import MASK, ConstraintSession, Proposal

if TYPE_CHECKING:
    from .automaton import AutomatonConstraint

NEG = float("-inf")


def _one_thread(fn):
    """Run a session method with one intra-op thread on CPU: its tensors are small, and several threads
    per operation cost more in wake-ups than they save (on a busy machine, ten times more)."""

    @functools.wraps(fn)
    def wrapper(self, *a, **kw):
        n = torch.get_num_threads()
        if self.device.type != "cpu" or n == 1:
            return fn(self, *a, **kw)
        torch.set_num_threads(1)
        try:
            return fn(self, *a, **kw)
        finally:
            torch.set_num_threads(n)

    return wrapper


class _Sweep:
    """The result of one sweep over a canvas: live states, allowed classes and Viterbi choices."""

    __slots__ = ("f", "end", "q0", "alpha", "rows", "allowed", "args", "v0")


class AutomatonSession(ConstraintSession):
    """Reachability, allowed masks, forced tokens and Viterbi proposals over one canvas."""

    constraint: AutomatonConstraint

    def __init__(self, constraint: AutomatonConstraint, length: int, device="cpu"):
        super().__init__(constraint, length, device)
        need = constraint.min_tokens()
        if need < 0:
            raise CanvasTooSmallError(10**9, length, "output (the spec accepts no string at all)")
        if need > length:
            raise CanvasTooSmallError(need, length)
        self.tb = constraint.tables(self.device)
        self.B = constraint.suffix_sets(length)
        self._prefix: list[int] = []
        self._prefix_state = constraint.dfa.start
        self._memo: tuple | None = None  # (canvas bytes, rows bytes, sweep) of the last feasibility sweep
        self._alpha_memo: tuple | None = None
        self._free_cache: dict[tuple, np.ndarray] = {}
        self._sparse_cache: dict[bytes, tuple] = {}

    # -- the sweep -------------------------------------------------------------------------------------
    def _prefix_walk(self, c: np.ndarray, f: int) -> int:
        """DFA state after the committed prefix ``c[:f]``, cached incrementally."""
        d = self.constraint.dfa
        pre = self._prefix
        k = 0
        n = min(len(pre), f)
        while k < n and pre[k] == c[k]:
            k += 1
        if k < len(pre):  # the prefix was re-masked or changed: walk again from the start
            self._prefix, self._prefix_state, k = [], d.start, 0
        q = self._prefix_state
        nxt, cof = self.constraint.nxt, d.class_of
        for t in range(k, f):
            tok = int(c[t])
            q = int(nxt[q, cof[tok]]) if 0 <= tok < len(cof) else d.dead
            self._prefix.append(tok)
        self._prefix_state = q
        if q == d.dead:
            raise ConstraintViolation("the committed prefix of the canvas is not a valid prefix of the output")
        return q

    def _sweep(self, c: np.ndarray, rows: np.ndarray, scores: np.ndarray | None) -> _Sweep:
        """Forward live sets, then a backward pass over ``[f, end)``: with ``scores`` None, reachability and
        the allowed classes at ``rows``; else the Viterbi pass scoring ``rows`` with ``scores``
        ([len(rows), C] class scores) and the argmax class per live state for the decode."""
        k = self.constraint
        d, nxt = k.dfa, k.nxt
        T = self.length
        masked = c == MASK
        f = int(np.argmax(masked)) if masked.any() else T
        committed = np.flatnonzero(~masked[f:])
        last = f + int(committed[-1]) + 1 if len(committed) else f
        end = max(last, int(rows[-1]) + 1 if len(rows) else f)
        q0 = self._prefix_walk(c, f)
        cls = np.where(masked, -1, d.class_of[np.where(masked, 0, c)])
        alpha = self._alpha(c, masked, cls, f, q0, end)
        sw = _Sweep()
        sw.f, sw.end, sw.q0, sw.alpha, sw.rows = f, end, q0, alpha, rows
        row_at = {int(t): i for i, t in enumerate(rows)}
        allowed = np.zeros((len(rows), d.n_classes), dtype=bool)
        a_end = alpha[end - f]
        ok_end = self.B[T - end][a_end]
        if scores is None:  # feasibility only: boolean backward over the live states up to the last commit;
            # beyond it everything is masked, so reachability there is B[k] and allowed rows come from a cache
            last = max(f, int(np.flatnonzero(~masked)[-1]) + 1) if (~masked[f:]).any() else f
            for t in rows[rows >= last]:
                allowed[row_at[int(t)]] = self._allowed_free(alpha[t - f], T - t - 1)
            a_last = alpha[last - f]
            live = np.zeros(d.n_states, dtype=bool)
            live[a_last] = self.B[T - last][a_last]
            for t in range(last - 1, f - 1, -1):
                a = alpha[t - f]
                if not masked[t]:
                    v = live[nxt[a, cls[t]]]
                else:  # over the live transitions of the set: a segment "any" per source state
                    src_has, e_cls, e_tgt, starts, _, _ = self._sparse_rows(a)
                    ok = live[e_tgt]
                    i = row_at.get(t)
                    if i is not None:
                        allowed[i, e_cls[ok]] = True
                    v = np.zeros(len(a), dtype=bool)
                    if len(ok):
                        v[src_has] = np.logical_or.reduceat(ok, starts)
                live = np.zeros(d.n_states, dtype=bool)
                live[a] = v
            sw.allowed, sw.args, sw.v0 = allowed, None, 0.0 if live[q0] else NEG
        else:  # Viterbi: best completion scores (float32) and the argmax class per live state
            scores = scores.astype(np.float32, copy=False)
            V = np.full(d.n_states, NEG, dtype=np.float32)
            V[a_end] = np.where(ok_end, 0.0, NEG)
            args: list = [None] * (end - f)
            for t in range(end - 1, f - 1, -1):
                a = alpha[t - f]
                if not masked[t]:
                    v = V[nxt[a, cls[t]]]
                    args[t - f] = cls[t]
                else:
                    # only the live (non-dead) transitions of the set: a segment max per source state
                    src_has, e_cls, e_tgt, starts, seg_of, pos = self._sparse_rows(a)
                    vals = V[e_tgt]
                    i = row_at.get(t)
                    if i is not None:
                        vals += scores[i][e_cls]
                    v = np.full(len(a), NEG, dtype=np.float32)
                    j = np.zeros(len(a), dtype=np.int64)
                    if len(vals):
                        seg_max = np.maximum.reduceat(vals, starts)
                        first = np.minimum.reduceat(np.where(vals == seg_max[seg_of], pos, len(vals)), starts)
                        v[src_has] = seg_max
                        j[src_has] = e_cls[np.minimum(first, len(vals) - 1)]
                    args[t - f] = (a, j)
                V = np.full(d.n_states, NEG, dtype=np.float32)
                V[a] = v
            sw.allowed, sw.args, sw.v0 = None, args, V[q0]  # allowed classes: the feasibility sweep
        if not np.isfinite(sw.v0):
            raise ConstraintViolation("no valid completion of the canvas exists (infeasible canvas)")
        return sw

    def _allowed_free(self, a: np.ndarray, k: int) -> np.ndarray:
        """Classes allowed from live set ``a`` when the next ``k`` positions are all masked (cached;
        ``B[k]`` stops changing past ``k*``, so saturated sets share one entry)."""
        k = min(k, self.constraint.suffix_stable)
        key = (a.tobytes(), k)
        r = self._free_cache.get(key)
        if r is None:
            if len(self._free_cache) >= 1024:
                self._free_cache.clear()
            _, e_cls, e_tgt, _, _, _ = self._sparse_rows(a)
            r = np.zeros(self.constraint.n_classes, dtype=bool)
            r[e_cls[self.B[k][e_tgt]]] = True
            self._free_cache[key] = r
        return r

    def _sparse_rows(self, a: np.ndarray):
        """The live transitions out of state set ``a``, grouped by source state (cached): (indices into ``a``
        that have any, their classes, their targets, segment starts, the segment of each transition, and
        0..n-1). Gathered from the constraint's CSR edges: O(transitions), not O(|a| x classes)."""
        key = a.tobytes()
        r = self._sparse_cache.get(key)
        if r is None:
            indptr, cls, tgt = self.constraint.edges()
            lo = indptr[a]
            deg = indptr[a + 1] - lo
            first = np.cumsum(deg) - deg  # where each state's transitions start in the gathered arrays
            n = int(deg.sum())
            idx = np.repeat(lo - first, deg) + np.arange(n)
            has = np.flatnonzero(deg)
            if len(self._sparse_cache) >= 256:
                self._sparse_cache.clear()
            r = self._sparse_cache[key] = (has, cls[idx], tgt[idx], first[has],
                                           np.repeat(np.arange(len(has)), deg[has]), np.arange(n))
        return r

    def _alpha(self, c: np.ndarray, masked: np.ndarray, cls: np.ndarray, f: int, q0: int, end: int) -> list:
        """Live state sets (index arrays) at ``f..end``, with a shortcut once a masked run saturates;
        memoised for the last canvas (``forced`` and the following ``propose`` share it)."""
        key = (c.tobytes(), f, end)
        if self._alpha_memo is not None and self._alpha_memo[0] == key:
            return self._alpha_memo[1]
        k = self.constraint
        nxt = k.nxt
        alpha = [np.array([q0], dtype=np.int64)]
        for t in range(f, end):
            a = alpha[-1]
            if masked[t]:
                if t > f and masked[t - 1] and len(alpha) > 1 and len(alpha[-2]) == len(a) \
                        and np.array_equal(alpha[-2], a):
                    alpha.append(a)
                    continue
                alpha.append(k.step_any(a))
            else:
                alpha.append(k.state_set(nxt[a, cls[t]]))
        self._alpha_memo = (key, alpha)
        return alpha

    def _decode(self, sw: _Sweep) -> np.ndarray:
        """Classes chosen by the Viterbi path at ``sw.rows``."""
        nxt = self.constraint.nxt
        q, out, j = sw.q0, np.empty(len(sw.rows), dtype=np.int64), 0
        rows = sw.rows
        for t in range(sw.f, sw.end):
            arg = sw.args[t - sw.f]
            if isinstance(arg, tuple):
                states, choice = arg
                cl = int(choice[np.searchsorted(states, q)])
            else:
                cl = int(arg)
            if j < len(rows) and rows[j] == t:
                out[j] = cl
                j += 1
            q = int(nxt[q, cl])
        return out

    def _canvas(self, canvas: torch.Tensor) -> np.ndarray:
        c = canvas.detach().to("cpu").numpy().astype(np.int64)
        if len(c) != self.length:
            raise ValueError(f"canvas has {len(c)} positions, session was opened for {self.length}")
        return c

    @staticmethod
    def _rows(c: np.ndarray, window) -> np.ndarray:
        w0, w1 = window if window is not None else (0, len(c))
        rows = np.flatnonzero(c[:w1] == MASK)
        return rows[rows >= w0]

    def _feasibility(self, c: np.ndarray, rows: np.ndarray) -> _Sweep:
        key = (c.tobytes(), rows.tobytes())
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        sw = self._sweep(c, rows, None)
        self._memo = (key, sw)
        return sw

    # -- the session API ---------------------------------------------------------------------------------
    @_one_thread
    def allowed(self, canvas: torch.Tensor) -> torch.Tensor:
        c = self._canvas(canvas)
        out = torch.zeros(self.length, self.constraint.vocab.size, dtype=torch.bool, device=self.device)
        rows = self._rows(c, None)
        if len(rows) == 0:
            return out
        sw = self._feasibility(c, rows)
        ac = torch.as_tensor(sw.allowed, device=self.device)
        out[torch.as_tensor(rows, device=self.device)] = ac[:, self.tb.class_of]
        return out

    @_one_thread
    def forced(self, canvas: torch.Tensor, *, window: tuple[int, int] | None = None) -> torch.Tensor:
        """Masked positions (within ``window`` if given) that have exactly one allowed token."""
        c = self._canvas(canvas)
        res = torch.full((self.length,), MASK, dtype=torch.long, device=self.device)
        rows = self._rows(c, window)
        if len(rows) == 0:
            return res
        sw = self._feasibility(c, rows)
        sizes = self.constraint.dfa.class_size
        n_tokens = (sw.allowed * sizes[None, :]).sum(axis=1)
        if (n_tokens == 0).any():
            raise ConstraintViolation("the canvas has a masked position with no allowed token (infeasible canvas)")
        one = np.flatnonzero(n_tokens == 1)
        if len(one):
            cls = sw.allowed[one].argmax(axis=1)
            res[torch.as_tensor(rows[one], device=self.device)] = self.tb.class_token[
                torch.as_tensor(cls, device=self.device)]
        return res

    @_one_thread
    def propose(self, canvas: torch.Tensor, logprobs: torch.Tensor, *, window: tuple[int, int] | None = None,
                noise: torch.Tensor | None = None, stop_below: float | None = None,
                run_limit: int | None = None) -> Proposal:
        """Best valid completion under ``logprobs`` (+ ``noise`` for sampling) for positions in ``window``.

        Positions outside the window stay feasible but are not scored or proposed (not eligible).
        ``stop_below`` and ``run_limit`` (what a frontier engine may stop its run at) do not apply: the
        sampler may commit any subset of this proposal.
        """
        c = self._canvas(canvas)
        T, dev = self.length, self.device
        tokens = torch.as_tensor(c, device=dev).clone()
        conf = torch.zeros(T, device=dev)
        elig = torch.zeros(T, dtype=torch.bool, device=dev)
        rows = self._rows(c, window)
        if len(rows) == 0:
            return Proposal(tokens, conf, elig)
        tb = self.tb
        r = torch.as_tensor(rows, device=dev)
        lp = logprobs.index_select(0, r).float()
        sc = lp if noise is None else lp + noise.index_select(0, r).float()
        cls_idx = tb.class_of[None, :].expand(len(rows), -1)
        C = self.constraint.n_classes
        cls_score = torch.full((len(rows), C), NEG, device=dev).scatter_reduce_(1, cls_idx, sc, "amax")
        sw = self._sweep(c, rows, cls_score.cpu().numpy())
        chosen = torch.as_tensor(self._decode(sw), device=dev)
        in_class = tb.class_of[None, :] == chosen[:, None]
        tok = sc.masked_fill(~in_class, NEG).argmax(dim=1)
        # confidence: probability of the token renormalised over the tokens allowed at its position
        allowed = self._feasibility(c, rows).allowed  # memoised: forced() swept this canvas already
        allowed_tok = torch.as_tensor(allowed, device=dev).gather(1, cls_idx)
        lse = torch.logsumexp(lp.masked_fill(~allowed_tok, NEG), dim=1)
        p = torch.exp(lp.gather(1, tok[:, None])[:, 0] - lse)
        tokens[r] = tok
        conf[r] = torch.nan_to_num(p, nan=0.0)
        elig[r] = True
        return Proposal(tokens, conf, elig)
