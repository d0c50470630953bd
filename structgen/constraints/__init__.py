"""Compile a spec against a tokenizer into a constraint, choosing the engine, with a cache.

``compile(spec, tokenizer, engine="auto")``: regular specs (most JSON schemas, regexes, choices) go to
the *automaton* engine (a token-level DFA as tensors, exact and order-free); Lark grammars and what the
automaton cannot hold (recursive schemas, too many states, keywords outlines-core cannot express) go to
the *grammar* engine (llguidance, exact at the frontier). ``engine="automaton"|"grammar"`` forces one.
Compiled constraints are cached by (spec key, vocabulary key, engine).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..errors import CompileError, SpecError
from ..spec import Spec, as_spec
from .base import MASK, Constraint, ConstraintSession, Proposal
from .vocab import TokenVocab

__all__ = ["compile", "Constraint", "ConstraintSession", "Proposal", "MASK", "TokenVocab", "clear_cache"]

_CACHE: "OrderedDict[tuple, Constraint]" = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()
ENGINES = ("auto", "automaton", "grammar")


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


def compile(spec: Spec | dict | type, tokenizer, *, engine: str = "auto", vocab_size: int | None = None,
            ) -> Constraint:
    """Compile ``spec`` for ``tokenizer`` (a HF fast tokenizer or a ``TokenVocab``).

    ``vocab_size`` is the model's logits width when it is larger than the tokenizer.
    """
    if engine not in ENGINES:
        raise SpecError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    spec = as_spec(spec)
    vocab = TokenVocab.of(tokenizer, vocab_size)
    key = (spec.key, vocab.key, engine)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    c = _build(spec, vocab, engine)
    with _LOCK:
        _CACHE[key] = c
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return c


def _build(spec: Spec, vocab: TokenVocab, engine: str) -> Constraint:
    from .automaton import AutomatonConstraint, AutomatonUnsupported
    from .grammar import GrammarConstraint

    if engine != "grammar" and spec.kind != "grammar":
        try:
            return AutomatonConstraint.build(spec, vocab)
        except AutomatonUnsupported as e:
            if engine == "automaton":
                raise CompileError(f"the automaton engine cannot hold {spec!r}: {e}; use engine='grammar' "
                                   "or engine='auto'") from None
    elif engine == "automaton":
        raise CompileError("a Lark grammar needs the grammar engine; use engine='grammar' or 'auto'")
    return GrammarConstraint(spec, vocab)
