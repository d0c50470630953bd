"""The automaton engine: exact, order-free constraints on a canvas with holes.

A spec is compiled to a regex (``json_regex``), then to a token DFA over token classes (``token_dfa``).
Over a canvas of ``T`` positions (masked or committed) one *sweep* computes:

* ``alpha[t]``: states reachable after positions ``0..t-1`` (a masked position moves a state set through
  every class, a committed one through its token's class only), forward;
* backward, restricted to those live states: ``V[t][q]``, the best score of a valid completion of
  positions ``t..`` from ``q`` (−inf when none exists, so ``beta[t] = isfinite(V[t])``), with the argmax
  class per state for the Viterbi decode. Positions after the last committed one and outside the scored
  window are all masked: their reachability is the precomputed ``B[k]`` (states that accept within ``k``
  tokens, EOS padding included);
* allowed classes at ``t``: ``c`` with some ``q ∈ alpha[t]`` and ``next[q, c] ∈ beta[t+1]`` — exact;
  forced tokens are masked positions with exactly one allowed token.

Every proposal is one complete valid canvas (the Viterbi path), so any subset of it is jointly feasible.

Where the work runs: the [positions × vocabulary] work (per-class maxima of the log-probabilities, one
``scatter_reduce``; the token argmax inside the chosen class; the renormalised confidence) stays on the
model's device. The sweep works on live state sets of tens to hundreds of states and is latency-bound:
it runs in numpy on the host, where one small operation costs about a microsecond instead of a kernel
launch, and only [window × classes] scores cross over.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
import torch

from ..errors import CanvasTooSmallError, ConstraintViolation
from .base import MASK, Constraint, ConstraintSession, Proposal
from .json_regex import AutomatonUnsupported, schema_to_regex
from .token_dfa import TokenDFA
from .vocab import TokenVocab

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
_SUCC_MAX_STATES = 4096  # below this, successor sets are one bool matrix [Q, Q]


def spec_regex(spec) -> str:
    """The regex a regular spec compiles to (AutomatonUnsupported for grammars)."""
    if spec.kind == "json":
        return schema_to_regex(spec.schema)
    if spec.kind == "regex":
        return spec.pattern
    if spec.kind == "choice":
        return spec.to_regex()
    raise AutomatonUnsupported(f"{spec.kind} specs need the grammar engine")


class _DeviceTables:
    """Token-indexed tables on the model's device."""

    def __init__(self, dfa: TokenDFA, device: torch.device):
        self.class_of = torch.as_tensor(dfa.class_of, device=device)
        self.class_size = torch.as_tensor(dfa.class_size, device=device)
        self.class_token = torch.as_tensor(dfa.class_token, device=device)


class AutomatonConstraint(Constraint):
    engine = "automaton"

    def __init__(self, spec, vocab: TokenVocab, dfa: TokenDFA, regex: str):
        super().__init__(spec, vocab)
        self.dfa, self.regex = dfa, regex
        d = dfa
        self.nxt = d.next.astype(np.int32)
        Q = d.n_states
        self.succ = None
        if Q <= _SUCC_MAX_STATES:
            succ = np.zeros((Q, Q), dtype=bool)
            succ[np.repeat(np.arange(Q), d.n_classes), self.nxt.reshape(-1)] = True
            succ[:, d.dead] = False
            self.succ = succ
        self._suffix = d.accept[None, :].copy()
        self.suffix_stable = 10**9  # the k from which B[k] no longer changes (once seen)
        self._tables: dict[torch.device, _DeviceTables] = {}
        self._lock = threading.Lock()
        self._min = None
        self._coreach = None

    @classmethod
    def build(cls, spec, vocab: TokenVocab) -> "AutomatonConstraint":
        regex = spec_regex(spec)
        return cls(spec, vocab, TokenDFA.from_regex(regex, vocab), regex)

    @property
    def n_states(self) -> int:
        return self.dfa.n_states

    @property
    def n_classes(self) -> int:
        return self.dfa.n_classes

    def tables(self, device="cpu") -> _DeviceTables:
        device = torch.device(device)
        with self._lock:
            t = self._tables.get(device)
            if t is None:
                t = self._tables[device] = _DeviceTables(self.dfa, device)
            return t

    def step_any(self, states: np.ndarray) -> np.ndarray:
        """Sorted states reachable from ``states`` through any class (the dead state dropped)."""
        if self.succ is not None:
            return np.flatnonzero(self.succ[states].any(axis=0))
        out = np.unique(self.nxt[states])
        return out[out != self.dfa.dead]

    def suffix_sets(self, k: int) -> np.ndarray:
        """``B[0..k]``: ``B[j][q]`` is True when q accepts within exactly ``j`` tokens (EOS pads)."""
        with self._lock:
            while self._suffix.shape[0] <= k:
                last = self._suffix[-1]
                nxt = last[self.nxt].any(axis=1)
                if self.suffix_stable >= 10**9 and np.array_equal(nxt, last):
                    self.suffix_stable = self._suffix.shape[0] - 1
                self._suffix = np.concatenate([self._suffix, nxt[None]], axis=0)
            return self._suffix[: k + 1]

    # -- whole sequences -------------------------------------------------------------------------------
    def accepts(self, token_ids) -> bool:
        return bool(self.dfa.accept[self.dfa.walk(token_ids)])

    def _coreachable(self) -> np.ndarray:
        if self._coreach is None:
            live = self.dfa.accept.copy()
            while True:
                new = live | live[self.nxt].any(axis=1)
                if (new == live).all():
                    break
                live = new
            self._coreach = live
        return self._coreach

    def accepts_prefix(self, token_ids) -> bool:
        q = self.dfa.walk(token_ids)
        return q != self.dfa.dead and bool(self._coreachable()[q])

    def min_tokens(self) -> int:
        """Shortest valid output in tokens (EOS not counted), by breadth-first search."""
        if self._min is None:
            d = self.dfa
            finals = d.accept.copy()
            finals[d.end] = False
            frontier = np.array([d.start])
            seen = np.zeros(d.n_states, dtype=bool)
            seen[d.start] = True
            steps = 0
            non_eos = np.ones(d.n_classes, dtype=bool)
            non_eos[d.eos_class] = False
            nxt = self.nxt[:, non_eos]
            while not finals[frontier].any():
                reach = np.unique(nxt[frontier])
                reach = reach[(reach != d.dead) & ~seen[reach]]
                if len(reach) == 0:
                    self._min = -1  # empty language
                    break
                seen[reach] = True
                frontier = reach
                steps += 1
            else:
                self._min = steps
        return self._min

    def session(self, length: int, device="cpu") -> "AutomatonSession":
        return AutomatonSession(self, length, device)


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
        self._rows_cache: dict[bytes, np.ndarray] = {}
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
        """Forward live sets, then a backward pass over ``[f, end)`` that scores ``rows`` with ``scores``
        ([len(rows), C] class scores; None = feasibility only) and collects allowed classes there."""
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
                else:
                    cand = live.take(self._next_rows(a))  # [|a|, C]
                    i = row_at.get(t)
                    if i is not None:
                        allowed[i] = cand.any(axis=0)
                    v = cand.any(axis=1)
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
                    src_has, e_cls, e_tgt, starts = self._sparse_rows(a)
                    vals = V[e_tgt]
                    i = row_at.get(t)
                    if i is not None:
                        allowed[i, e_cls[np.isfinite(vals)]] = True
                        vals = vals + scores[i][e_cls]
                    v = np.full(len(a), NEG, dtype=np.float32)
                    j = np.zeros(len(a), dtype=np.int64)
                    if len(vals):
                        seg_max = np.maximum.reduceat(vals, starts)
                        pos = np.arange(len(vals))
                        is_max = vals == np.repeat(seg_max, np.diff(np.append(starts, len(vals))))
                        first = np.minimum.reduceat(np.where(is_max, pos, len(vals)), starts)
                        v[src_has] = seg_max
                        j[src_has] = e_cls[np.minimum(first, len(vals) - 1)]
                    args[t - f] = (a, j)
                V = np.full(d.n_states, NEG, dtype=np.float32)
                V[a] = v
            sw.allowed, sw.args, sw.v0 = allowed, args, V[q0]
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
            r = self._free_cache[key] = self.B[k].take(self._next_rows(a)).any(axis=0)
        return r

    def _sparse_rows(self, a: np.ndarray):
        """The non-dead transitions out of live set ``a``, grouped by source state (cached):
        (indices into ``a`` that have any, their classes, their targets, segment starts)."""
        key = a.tobytes()
        r = self._sparse_cache.get(key)
        if r is None:
            rows = self._next_rows(a)
            src, cl = np.nonzero(rows != self.constraint.dfa.dead)
            tgt = rows[src, cl]
            has, starts = np.unique(src, return_index=True)
            if len(self._sparse_cache) >= 256:
                self._sparse_cache.clear()
            r = self._sparse_cache[key] = (has, cl, tgt, starts)
        return r

    def _next_rows(self, a: np.ndarray) -> np.ndarray:
        """``next[a]`` for a live state set, cached: saturated sets recur across positions and steps."""
        key = a.tobytes()
        r = self._rows_cache.get(key)
        if r is None:
            if len(self._rows_cache) >= 256:
                self._rows_cache.clear()
            r = self._rows_cache[key] = self.constraint.nxt[a]
        return r

    def _alpha(self, c: np.ndarray, masked: np.ndarray, cls: np.ndarray, f: int, q0: int, end: int) -> list:
        """Live state sets (index arrays) at ``f..end``, with a shortcut once a masked run saturates;
        memoised for the last canvas (``forced`` and the following ``propose`` share it)."""
        key = (c.tobytes(), f, end)
        if self._alpha_memo is not None and self._alpha_memo[0] == key:
            return self._alpha_memo[1]
        k = self.constraint
        nxt, dead = k.nxt, k.dfa.dead
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
                b = np.unique(nxt[a, cls[t]])
                alpha.append(b[b != dead])
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
                noise: torch.Tensor | None = None) -> Proposal:
        """Best valid completion under ``logprobs`` (+ ``noise`` for sampling) for positions in ``window``.

        Positions outside the window stay feasible but are not scored or proposed (not eligible).
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
        allowed_tok = torch.as_tensor(sw.allowed, device=dev).gather(1, cls_idx)
        lse = torch.logsumexp(lp.masked_fill(~allowed_tok, NEG), dim=1)
        p = torch.exp(lp.gather(1, tok[:, None])[:, 0] - lse)
        tokens[r] = tok
        conf[r] = torch.nan_to_num(p, nan=0.0)
        elig[r] = True
        return Proposal(tokens, conf, elig)
