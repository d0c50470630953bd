"""The automaton engine: exact, order-free constraints on a canvas with holes.

A spec is compiled to a regex (``json_regex``), then to a token DFA over token classes (``token_dfa``).
Over a canvas of ``T`` positions (masked or committed) it computes, with tensors on the model's device:

* ``alpha[t]``: states reachable after positions ``0..t-1``; ``beta[t]``: states from which an accepting
  state is reachable through positions ``t..T-1``. A masked position moves a state set through every
  class, a committed one through its token's class only. The all-masked suffix uses precomputed sets
  ``B[k]`` (states that accept within ``k`` more tokens, EOS padding included).
* allowed tokens at ``t``: classes ``c`` with ``q ∈ alpha[t]`` and ``next[q, c] ∈ beta[t+1]`` — exact;
* forced tokens: masked positions with exactly one allowed token;
* the most probable valid completion: a backward Viterbi pass over positions × states × classes
  (per-class scores are the max token log-probability, one ``scatter_reduce`` over the vocabulary), then a
  forward decode. Every proposal is one complete valid canvas, so any subset of it is jointly feasible.
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
    """Run a session method with one intra-op thread on CPU.

    The constraint's tensors are small ([Q, C] with Q, C in the hundreds): several threads per op cost
    far more in wake-ups than they save, and on a busy machine a 60 µs step becomes a millisecond.
    """

    @functools.wraps(fn)
    def wrapper(self, *a, **kw):
        if self.device.type != "cpu":
            return fn(self, *a, **kw)
        n = torch.get_num_threads()
        if n == 1:
            return fn(self, *a, **kw)
        torch.set_num_threads(1)
        try:
            return fn(self, *a, **kw)
        finally:
            torch.set_num_threads(n)

    return wrapper
_GATHER_BUDGET = 8_000_000  # elements per chunk of the [P, Q, C] gather
_ADJ_MAX_STATES = 3000  # below this, masked-position steps are one [Q, Q] matrix product


def spec_regex(spec) -> str:
    """The regex a regular spec compiles to (AutomatonUnsupported for grammars)."""
    if spec.kind == "json":
        return schema_to_regex(spec.schema)
    if spec.kind == "regex":
        return spec.pattern
    if spec.kind == "choice":
        return spec.to_regex()
    raise AutomatonUnsupported(f"{spec.kind} specs need the grammar engine")


class _Tables:
    """Torch copies of a TokenDFA on one device."""

    def __init__(self, dfa: TokenDFA, device: torch.device):
        self.device = device
        self.next = torch.as_tensor(dfa.next, device=device)
        self.next_flat = self.next.reshape(-1)
        self.class_of = torch.as_tensor(dfa.class_of, device=device)
        self.class_size = torch.as_tensor(dfa.class_size, device=device)
        self.class_token = torch.as_tensor(dfa.class_token, device=device)
        self.accept = torch.as_tensor(dfa.accept, device=device)
        self.Q, self.C = dfa.next.shape
        self.suffix = self.accept[None, :].clone()  # B[k], grown on demand
        # adjacency counts A[q, q'] = number of classes leading q -> q' (masked positions), when small enough
        self.adj = None
        if self.Q <= _ADJ_MAX_STATES:
            adj = torch.zeros(self.Q * self.Q, device=device)
            src = torch.arange(self.Q, device=device)[:, None].expand(self.Q, self.C).reshape(-1)
            adj.index_add_(0, src * self.Q + self.next_flat, torch.ones_like(src, dtype=adj.dtype))
            adj = adj.view(self.Q, self.Q)
            adj[:, dfa.dead] = 0.0
            self.adj = (adj > 0).float()

    def gather(self, vec: torch.Tensor) -> torch.Tensor:
        """``vec[next]`` as [Q, C] (index_select is much faster than advanced indexing)."""
        return vec.index_select(0, self.next_flat).view(self.Q, self.C)

    def step_masked_back(self, beta_next: torch.Tensor) -> torch.Tensor:
        """States with some class leading into ``beta_next`` (bool [Q])."""
        if self.adj is not None:
            return (self.adj @ beta_next.float()) > 0
        return self.gather(beta_next).any(dim=1)

    def step_masked_fwd(self, alpha: torch.Tensor) -> torch.Tensor:
        """States reachable from ``alpha`` (float 0/1 [Q]) through any class."""
        if self.adj is not None:
            return ((alpha @ self.adj) > 0).float()
        out = torch.zeros_like(alpha)
        src = alpha[:, None].expand(self.Q, self.C).reshape(-1)
        return out.scatter_reduce_(0, self.next_flat, src, "amax")

    def suffix_sets(self, k: int) -> torch.Tensor:
        """``B[0..k]``: B[j][q] is True when q reaches an accepting state in exactly j tokens (EOS pads)."""
        while self.suffix.shape[0] <= k:
            last = self.suffix[-1]
            self.suffix = torch.cat([self.suffix, self.step_masked_back(last)[None]], dim=0)
        return self.suffix[: k + 1]


class AutomatonConstraint(Constraint):
    engine = "automaton"

    def __init__(self, spec, vocab: TokenVocab, dfa: TokenDFA, regex: str):
        super().__init__(spec, vocab)
        self.dfa, self.regex = dfa, regex
        self._tables: dict[torch.device, _Tables] = {}
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

    def tables(self, device="cpu") -> _Tables:
        device = torch.device(device)
        with self._lock:
            t = self._tables.get(device)
            if t is None:
                t = self._tables[device] = _Tables(self.dfa, device)
            return t

    # -- whole sequences -------------------------------------------------------------------------------
    def accepts(self, token_ids) -> bool:
        return bool(self.dfa.accept[self.dfa.walk(token_ids)])

    def _coreachable(self) -> np.ndarray:
        if self._coreach is None:
            live = self.dfa.accept.copy()
            while True:
                new = live | live[self.dfa.next].any(axis=1)
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
            frontier = np.zeros(d.n_states, dtype=bool)
            frontier[d.start] = True
            seen = frontier.copy()
            steps = 0
            non_eos = np.ones(d.n_classes, dtype=bool)
            non_eos[d.eos_class] = False
            nxt = d.next[:, non_eos]
            while not (frontier & finals).any():
                reach = np.zeros_like(frontier)
                reach[np.unique(nxt[frontier])] = True
                reach[d.dead] = False
                frontier = reach & ~seen
                if not frontier.any():
                    self._min = -1  # empty language
                    break
                seen |= frontier
                steps += 1
            else:
                self._min = steps
        return self._min

    def session(self, length: int, device="cpu") -> "AutomatonSession":
        return AutomatonSession(self, length, device)


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
        self.B = self.tb.suffix_sets(length)
        self._prefix: list[int] = []
        self._prefix_state = constraint.dfa.start
        self._memo: dict = {}  # results for the last canvas seen (forced() then propose() share them)

    # -- helpers ---------------------------------------------------------------------------------------
    def _prefix_walk(self, canvas_cpu: np.ndarray, f: int) -> int:
        """DFA state after the committed prefix ``canvas[:f]``, cached incrementally."""
        d = self.constraint.dfa
        pre = self._prefix
        k = 0
        while k < min(len(pre), f) and pre[k] == canvas_cpu[k]:
            k += 1
        if k < len(pre):  # the prefix was re-masked or changed: walk again from the start
            self._prefix, self._prefix_state, k = [], d.start, 0
        q = self._prefix_state
        for t in range(k, f):
            tok = int(canvas_cpu[t])
            q = int(d.next[q, d.class_of[tok]]) if 0 <= tok < len(d.class_of) else d.dead
            self._prefix.append(tok)
        self._prefix_state = q
        if q == d.dead:
            raise ConstraintViolation("the committed prefix of the canvas is not a valid prefix of the output")
        return q

    def _layout(self, canvas: torch.Tensor):
        c = canvas.detach().to("cpu").numpy()
        masked = c == MASK
        T = len(c)
        if T != self.length:
            raise ValueError(f"canvas has {T} positions, session was opened for {self.length}")
        f = int(np.argmax(masked)) if masked.any() else T
        committed_after = np.nonzero(~masked[f:])[0]
        last = f + int(committed_after[-1]) + 1 if len(committed_after) else f
        return c, masked, f, last

    def _classes(self, c: np.ndarray) -> torch.Tensor:
        cls = np.full(len(c), -1, dtype=np.int64)
        com = c != MASK
        cls[com] = self.constraint.dfa.class_of[c[com]]
        return torch.as_tensor(cls, device=self.device)

    def _forward(self, cls: torch.Tensor, masked: np.ndarray, f: int, q0: int, upto: int) -> torch.Tensor:
        """alpha[f..upto] as a float tensor [upto - f + 1, Q] (1.0 = reachable)."""
        tb, Q, C = self.tb, self.tb.Q, self.tb.C
        dead = self.constraint.dfa.dead
        rows = [torch.zeros(Q, device=self.device)]
        rows[0][q0] = 1.0
        cl = cls.tolist()
        for t in range(f, upto):
            a = rows[-1]
            if masked[t]:
                nxt = tb.step_masked_fwd(a)
            else:
                nxt = torch.zeros_like(a).scatter_reduce_(0, tb.next[:, cl[t]], a, "amax")
            nxt[dead] = 0.0
            rows.append(nxt)
        return torch.stack(rows)

    def _backward(self, cls: torch.Tensor, masked: np.ndarray, f: int, last: int) -> torch.Tensor:
        """beta[f..T] as bool [T - f + 1, Q]; positions from ``last`` on are all masked (use B)."""
        T = self.length
        beta = torch.empty(T - f + 1, self.tb.Q, dtype=torch.bool, device=self.device)
        beta[last - f:] = self.B[: T - last + 1].flip(0)
        cl = cls.tolist()
        for t in range(last - 1, f - 1, -1):
            nb = beta[t + 1 - f]
            beta[t - f] = self.tb.step_masked_back(nb) if masked[t] else nb.index_select(0, self.tb.next[:, cl[t]])
        return beta

    def _allowed_classes(self, alpha: torch.Tensor, beta: torch.Tensor, rows: np.ndarray, f: int):
        """Bool [len(rows), C]: classes allowed at canvas positions ``rows`` (all >= f)."""
        Q, C = self.tb.Q, self.tb.C
        out = torch.zeros(len(rows), C, dtype=torch.bool, device=self.device)
        step = max(1, _GATHER_BUDGET // max(1, Q * C))
        r = torch.as_tensor(rows - f, device=self.device)
        for s in range(0, len(rows), step):
            idx = r[s: s + step]
            nb = beta[idx + 1]  # [P, Q]
            ok = nb.index_select(1, self.tb.next_flat).view(len(idx), Q, C)
            ok &= alpha[idx].bool()[:, :, None]
            out[s: s + step] = ok.any(dim=1)
        return out

    def _reach(self, canvas: torch.Tensor):
        c, masked, f, last = self._layout(canvas)
        key = c.tobytes()
        if self._memo.get("key") != key:
            self._memo = {"key": key}
        q0 = self._prefix_walk(c, f)
        cls = self._classes(c)
        return c, masked, f, last, q0, cls

    def _alpha(self, cls, masked, f, q0, upto):
        m = self._memo.get("alpha")
        if m is None or m.shape[0] < upto - f + 1:
            m = self._memo["alpha"] = self._forward(cls, masked, f, q0, upto)
        return m[: upto - f + 1]

    def _beta(self, cls, masked, f, last):
        m = self._memo.get("beta")
        if m is None:
            m = self._memo["beta"] = self._backward(cls, masked, f, last)
        return m

    def _allowed_rows(self, alpha, beta, rows: np.ndarray, f: int) -> torch.Tensor:
        key = ("ac", rows.tobytes())
        m = self._memo.get(key)
        if m is None:
            m = self._memo[key] = self._allowed_classes(alpha, beta, rows, f)
        return m

    # -- the session API ---------------------------------------------------------------------------------
    @_one_thread
    def allowed(self, canvas: torch.Tensor) -> torch.Tensor:
        c, masked, f, last, q0, cls = self._reach(canvas)
        T = self.length
        out = torch.zeros(T, self.constraint.vocab.size, dtype=torch.bool, device=self.device)
        if f == T:
            return out
        alpha = self._forward(cls, masked, f, q0, T)
        beta = self._backward(cls, masked, f, last)
        rows = np.arange(f, T)
        ac = self._allowed_classes(alpha, beta, rows, f)
        out[f:] = ac[:, self.tb.class_of]
        return out

    @_one_thread
    def forced(self, canvas: torch.Tensor, *, window: tuple[int, int] | None = None) -> torch.Tensor:
        """Masked positions (within ``window`` if given) that have exactly one allowed token."""
        c, masked, f, last, q0, cls = self._reach(canvas)
        T = self.length
        res = torch.full((T,), MASK, dtype=torch.long, device=self.device)
        w0, w1 = window if window is not None else (0, T)
        rows = np.nonzero(masked[:w1])[0]
        rows = rows[rows >= w0]
        if len(rows) == 0:
            return res
        end = int(rows[-1]) + 1
        alpha = self._alpha(cls, masked, f, q0, end)
        beta = self._beta(cls, masked, f, last)
        ac = self._allowed_rows(alpha, beta, rows, f)
        n_tokens = (ac.long() * self.tb.class_size[None, :]).sum(dim=1)
        one = n_tokens == 1
        if bool((n_tokens == 0).any()):
            raise ConstraintViolation("the canvas has a masked position with no allowed token (infeasible canvas)")
        r = torch.as_tensor(rows, device=self.device)
        res[r[one]] = self.tb.class_token[ac[one].float().argmax(dim=1)]
        return res

    @_one_thread
    def propose(self, canvas: torch.Tensor, logprobs: torch.Tensor, *, window: tuple[int, int] | None = None,
                noise: torch.Tensor | None = None) -> Proposal:
        """Best valid completion under ``logprobs`` (+ ``noise`` for sampling) for positions in ``window``.

        Positions outside the window are kept feasible but not scored, so the proposal there is not
        meaningful and they are not eligible.
        """
        c, masked, f, last, q0, cls = self._reach(canvas)
        T, dev = self.length, self.device
        tokens = torch.as_tensor(c, device=dev).clone()
        conf = torch.zeros(T, device=dev)
        elig = torch.zeros(T, dtype=torch.bool, device=dev)
        if f == T:
            return Proposal(tokens, conf, elig)
        w0, w1 = window if window is not None else (0, T)
        w0, w1 = max(w0, f), min(w1, T)
        rows = np.nonzero(masked[w0:w1])[0] + w0
        if len(rows) == 0:
            return Proposal(tokens, conf, elig)
        tb = self.tb
        r = torch.as_tensor(rows, device=dev)
        lp = logprobs[r].float()
        sc = lp if noise is None else lp + noise[r].float()
        cls_idx = tb.class_of[None, :].expand(len(rows), -1)
        cls_score = torch.full((len(rows), tb.C), NEG, device=dev).scatter_reduce_(1, cls_idx, sc, "amax")
        # backward Viterbi over [f, end); beyond `end` everything is masked and unscored: feasibility only
        end = max(last, int(rows[-1]) + 1)
        score_at = {int(t): i for i, t in enumerate(rows)}
        V = torch.where(self.B[T - end], 0.0, NEG).to(dev)
        args = torch.empty(end - f, tb.Q, dtype=torch.long, device=dev)
        cl = cls.tolist()
        for t in range(end - 1, f - 1, -1):
            if not masked[t]:
                V = V.index_select(0, tb.next[:, cl[t]])
                args[t - f] = cl[t]
                continue
            cand = tb.gather(V)  # [Q, C]
            if t in score_at:
                cand = cand + cls_score[score_at[t]][None, :]
            V, args[t - f] = cand.max(dim=1)
        if not torch.isfinite(V[q0]):
            raise ConstraintViolation("no valid completion of the canvas exists (infeasible canvas)")
        # forward decode on the CPU (scalar walk)
        a = args.to("cpu").numpy()
        nxt = self.constraint.dfa.next
        q, chosen = q0, np.empty(len(rows), dtype=np.int64)
        j = 0
        for t in range(f, end):
            k = int(a[t - f, q])
            if j < len(rows) and rows[j] == t:
                chosen[j] = k
                j += 1
            q = int(nxt[q, k])
        ch = torch.as_tensor(chosen, device=dev)
        in_class = tb.class_of[None, :] == ch[:, None]
        tok = sc.masked_fill(~in_class, NEG).argmax(dim=1)
        # confidence: probability of the token renormalised over the tokens allowed at its position
        alpha = self._alpha(cls, masked, f, q0, end)
        beta = self._beta(cls, masked, f, last)
        ac = self._allowed_rows(alpha, beta, rows, f)
        allowed_tok = ac.gather(1, cls_idx)
        lse = torch.logsumexp(lp.masked_fill(~allowed_tok, NEG), dim=1)
        p = torch.exp(lp.gather(1, tok[:, None])[:, 0] - lse)
        tokens[r] = tok
        conf[r] = torch.nan_to_num(p, nan=0.0)
        elig[r] = True
        return Proposal(tokens, conf, elig)
