"""A token-level DFA as dense tables over token *classes*, built from outlines-core's ``Index``.

outlines-core turns a regex and a vocabulary into a token-level DFA (state → token → state). Tokens whose
whole column ``next[:, v]`` is equal behave alike, so the vocabulary is compressed into classes ``C``
(usually hundreds, not 100k). Two states are added: ``END`` (after the first EOS; only EOS loops there) and
``DEAD`` (absorbing, rejecting). EOS is its own class: accepting states go to ``END`` on it. Special tokens
(mask, pad, role markers) form a class that always goes to ``DEAD``.

Tables (numpy here; the automaton engine keeps torch copies on the model's device):
``next[Q, C]`` int64, ``class_of[V]`` int64, ``class_size[C]``, ``accept[Q]`` bool, ``start``.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from itertools import chain

import numpy as np

from .grounded_dfa import MARK, ground_transitions
from .json_regex import AutomatonUnsupported
from .vocab import TokenVocab

MAX_STATES = 20_000
MAX_CELLS = 40_000_000  # Q * C

_VOCAB_CACHE: "weakref.WeakKeyDictionary[TokenVocab, object]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


_LOOKUP_MAX = 4_000_000  # outlines-core numbers its states in steps of 128: 20,000 states reach 2.6 million


def _edges(trans: dict, raw_states: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every transition of ``trans`` (``{state: {token: state}}`` in outlines-core's state ids) as three flat
    arrays: its source state, its token and its target state, each state numbered by its place in the
    sorted ``raw_states`` (-1 for a target it does not hold). Read in C through ``np.fromiter`` (millions of
    transitions for a large vocabulary)."""
    lens = np.fromiter((len(tr) for tr in trans.values()), dtype=np.int64, count=len(trans))
    total = int(lens.sum())
    raw_src = np.fromiter(trans.keys(), dtype=np.int64, count=len(trans))
    toks = np.fromiter(chain.from_iterable(trans.values()), dtype=np.int64, count=total)  # each dict's tokens
    raw_nxt = np.fromiter(chain.from_iterable(tr.values() for tr in trans.values()), dtype=np.int64, count=total)
    order = np.asarray(raw_states, dtype=np.int64)
    if len(order) and 0 <= order[0] and order[-1] < _LOOKUP_MAX:  # ids of up to a few millions: a lookup table
        dense = np.full(int(order[-1]) + 1, -1, dtype=np.int32)
        dense[order] = np.arange(len(order), dtype=np.int32)
        known = (raw_nxt >= 0) & (raw_nxt < len(dense))
        nxt = np.where(known, dense[np.where(known, raw_nxt, 0)], -1).astype(np.int64)
        return np.repeat(dense[raw_src].astype(np.int64), lens), toks, nxt
    at = np.minimum(np.searchsorted(order, raw_nxt), len(order) - 1)
    nxt = np.where(order[at] == raw_nxt, at, -1)
    return np.repeat(np.searchsorted(order, raw_src), lens), toks, nxt


SENTINEL = "\U0010FFFD"  # a private-use character closing the regex (see TokenDFA.from_regex)


def outlines_vocabulary(vocab: TokenVocab):
    """outlines-core's Vocabulary for ``vocab``, cached: non-special tokens by their bytes, the sentinel as the
    extra id ``vocab.size``, the grounded bodies' marker as ``vocab.size + 1`` and, for every token with more
    than one quote, its bytes up to each quote (``prefix_ids``: where ``grounded_dfa`` reads which quote opens
    a grounded body; a prefix that is a token already is that token)."""
    return _outlines_vocabulary(vocab)[0]


def prefix_ids(vocab: TokenVocab) -> dict:
    """``(token, i)`` -> the id of the token's bytes up to its quote at ``i`` (see ``outlines_vocabulary``)."""
    return _outlines_vocabulary(vocab)[1]


def _outlines_vocabulary(vocab: TokenVocab):
    from outlines_core import Vocabulary

    with _LOCK:
        v = _VOCAB_CACHE.get(vocab)
        if v is None:
            by_bytes: dict[bytes, list[int]] = {}
            for i, b in enumerate(vocab.token_bytes):
                if b and not vocab.special[i]:
                    by_bytes.setdefault(b, []).append(i)
            by_bytes.setdefault(SENTINEL.encode(), []).append(vocab.size)
            by_bytes.setdefault(MARK.encode(), []).append(vocab.size + 1)  # grounded bodies (grounded_dfa)
            prefixes: dict[tuple[int, int], int] = {}
            next_id = vocab.size + 2
            for i, b in enumerate(vocab.token_bytes):
                if vocab.special[i] or b.count(b'"') < 2:
                    continue
                for q in (k for k, c in enumerate(b) if c == 0x22):
                    head = b[: q + 1]
                    if head not in by_bytes:
                        by_bytes[head] = [next_id]
                        next_id += 1
                    prefixes[(i, q)] = by_bytes[head][0]
            v = (Vocabulary(vocab.eos_id, by_bytes), prefixes)
            _VOCAB_CACHE[vocab] = v
        return v


@dataclass
class TokenDFA:
    next: np.ndarray  # [Q, C] int64
    class_of: np.ndarray  # [V] int64
    class_size: np.ndarray  # [C] int64
    class_token: np.ndarray  # [C] a representative token per class
    accept: np.ndarray  # [Q] bool
    start: int
    end: int
    dead: int
    eos_class: int

    @property
    def n_states(self) -> int:
        return self.next.shape[0]

    @property
    def n_classes(self) -> int:
        return self.next.shape[1]

    def walk(self, token_ids) -> int:
        """State after ``token_ids`` from the start (``dead`` once rejected)."""
        q = self.start
        for t in token_ids:
            t = int(t)
            if not 0 <= t < len(self.class_of):
                return self.dead
            q = int(self.next[q, self.class_of[t]])
            if q == self.dead:
                return q
        return q

    @classmethod
    def from_regex(cls, regex: str, vocab: TokenVocab, *, ground: str | None = None) -> "TokenDFA":
        """Build the token DFA of ``regex`` over ``vocab``; with ``ground`` (the source text), the bodies
        the regex marks (``grounded_dfa.MARK``) may only hold parts of it made of whole words (``grounded_dfa``).

        outlines-core 0.2 drops token transitions that leave an accepting state when the token's first byte
        could end the match (``a(bc)?`` has no ``b`` after ``a``, so "1.5" tokenised 1|.|5 is rejected as a
        number). We index ``(?:regex)SENTINEL`` instead, with the sentinel held by one extra token: no
        state before it accepts, so every transition is kept, and the states of the regex that accept are
        exactly those whose sentinel transition reaches a final state. The sentinel column is dropped.
        """
        from outlines_core import Index

        try:
            index = Index(f"(?:{regex}){SENTINEL}", outlines_vocabulary(vocab))
        except Exception as e:
            raise AutomatonUnsupported(f"outlines-core could not build the token automaton: {e}") from None
        trans = index.get_transitions()
        n_raw = len(trans)
        if n_raw > MAX_STATES:
            raise AutomatonUnsupported(f"{n_raw} automaton states (more than {MAX_STATES})")
        finals = set(index.get_final_states())
        sentinel = vocab.size
        accepting = [s for s, tr in trans.items() if tr.get(sentinel) in finals]
        initial = index.get_initial_state()
        if MARK in regex:
            if ground is None:
                raise AutomatonUnsupported("the regex marks grounded strings but no source text was given")
            trans, initial, accepting = ground_transitions(trans, initial, accepting, ground, vocab, sentinel + 1,
                                                           prefix_ids(vocab))
            if len(trans) > MAX_STATES:
                raise AutomatonUnsupported(f"{len(trans)} automaton states with the grounded strings "
                                           f"(more than {MAX_STATES})")
        return cls.from_transitions(trans, initial, accepting, vocab)

    @classmethod
    def from_transitions(cls, trans: dict, initial: int, finals, vocab: TokenVocab) -> "TokenDFA":
        V, eos = vocab.size, vocab.eos_id
        raw_states = sorted(set(trans) | {initial} | set(finals))
        sid = {s: i for i, s in enumerate(raw_states)}
        n = len(raw_states)
        end, dead = n, n + 1
        Q = n + 2
        src, toks, nxt = _edges(trans, raw_states)
        if (nxt < 0).any():
            raise AutomatonUnsupported("outlines-core's transitions lead to a state it does not list")
        keep = (toks != eos) & (toks < V)
        src, toks, nxt = src[keep], toks[keep], nxt[keep]
        # 128-bit signature of each token's column, summed over its transitions (no loop over tokens or states)
        rng = np.random.default_rng(1234)
        r1 = rng.integers(1, 2**63 - 1, size=Q, dtype=np.uint64) | np.uint64(1)
        r2 = rng.integers(1, 2**63 - 1, size=Q, dtype=np.uint64) | np.uint64(1)
        h1 = np.zeros(V, dtype=np.uint64)
        h2 = np.zeros(V, dtype=np.uint64)
        with np.errstate(over="ignore"):
            val = nxt.astype(np.uint64) + np.uint64(1)
            np.add.at(h1, toks, val * r1[src])
            np.add.at(h2, toks, val * r2[src] ^ r1[(src + 7) % Q])
        special = vocab.special.copy()
        special[eos] = False
        # classes: EOS alone; all special tokens together (always dead); the rest by signature
        sig = np.stack([h1, h2], axis=1)
        sig[special] = np.array([np.iinfo(np.uint64).max, 1], dtype=np.uint64)
        sig[eos] = np.array([np.iinfo(np.uint64).max, 2], dtype=np.uint64)
        _, first, class_of = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        class_of = class_of.reshape(-1).astype(np.int64)
        C = len(first)
        if Q * C > MAX_CELLS:
            raise AutomatonUnsupported(f"{Q} states x {C} token classes is too large a table")
        class_size = np.bincount(class_of, minlength=C).astype(np.int64)
        nxt_tbl = np.full((Q, C), dead, dtype=np.int64)
        nxt_tbl[src, class_of[toks]] = nxt  # the tokens of one class share their column: any one writes it
        accept = np.zeros(Q, dtype=bool)
        for f in finals:
            accept[sid[f]] = True
        eos_class = int(class_of[eos])
        nxt_tbl[accept, eos_class] = end
        nxt_tbl[end, :] = dead
        nxt_tbl[end, eos_class] = end
        accept[end] = True
        # tokens of the special class never move anywhere
        spec_cls = np.unique(class_of[special]) if special.any() else np.array([], dtype=np.int64)
        nxt_tbl[:, spec_cls] = dead
        return cls(next=nxt_tbl, class_of=class_of, class_size=class_size, class_token=first.astype(np.int64),
                   accept=accept, start=sid[initial], end=end, dead=dead, eos_class=eos_class)
