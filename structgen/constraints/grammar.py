"""The grammar engine: any spec compiled to an llguidance grammar, exact at the canvas frontier.

This module owns ``GrammarConstraint`` (engine ``"grammar"``) and its per-generation ``GrammarSession``.
It serves every spec kind: Lark grammars, JSON schemas (recursive ones included), regexes and choices.

**Compilation** (once per constraint, cached by ``constraints.compile``):

* ``Grammar``: the Lark text is given to llguidance as is. llguidance's Lark dialect lacks a few things
  real Lark has (rule/terminal priorities, templates, ``%declare``, ``%override``/``%extend``, start rules
  not named ``start``, imports other than ``common``); when llguidance rejects the text, the grammar is
  loaded by Lark itself (which expands templates, imports and overrides) and re-emitted as plain BNF in
  llguidance's dialect (priorities dropped: they choose among parses, not what is in the language of
  Lark's Earley parser). What neither route can express (``%declare``'d terminals fed by a postlexer,
  look-around in terminal regexes) is a ``CompileError`` naming the construct.
* ``JsonSchema``: ``grammar_from_json_schema`` with whitespace fixed to match the automaton engine:
  ``whitespace_flexible=False``, ``item_separator=",[ ]?"``, ``key_separator=":[ ]?"`` — one optional
  space after ``,`` and ``:`` and nowhere else (no newlines, no runs of spaces, nothing around braces).
  When strict compilation fails only because of keywords llguidance does not implement (``not``,
  ``if``/``then``/``else``, ``uniqueItems``, ``contains``, ``dependentRequired``, ``oneOf`` that is not
  provably ``anyOf``, unknown ``format``...), the schema is compiled again with ``lenient=True`` so those
  keywords are ignored; ``self.lenient`` is set and ``self.warnings`` lists what was relaxed. The
  validators then catch what the grammar let through. Schemas that are invalid or unsatisfiable are a
  ``SpecError``; valid ones llguidance cannot compile even leniently are a ``CompileError``.
* ``Regex``: ``grammar_from_regex``; ``Choice``: its ``to_regex()``.

**Sessions** keep one ``LLMatcher`` (a cheap ``deep_copy`` of the constraint's root matcher) on the
committed prefix of the canvas up to the *frontier* (the first MASK) and re-sync it on every call, rolling
back when the sampler re-masked part of the prefix. See ``GrammarSession`` for the exact semantics.
"""

from __future__ import annotations

import bisect
import json
import re
from functools import cached_property
from typing import Sequence

import numpy as np
import torch

from ..errors import (CanvasTooSmallError, CompileError, ConfigError, ConstraintViolation, GenerationError,
                      GrammarSyntaxError, SpecError, StructgenError, UnsupportedSchemaError)
from ..spec import Choice, Grammar, JsonSchema, Regex, Spec
from .base import MASK, Constraint, ConstraintSession, Proposal
from .vocab import TokenVocab

__all__ = ["GrammarConstraint", "GrammarSession", "JSON_WHITESPACE", "ascii_classes", "lark_to_llguidance",
           "unpack_bitmasks"]

#: llguidance JSON compile options giving the automaton engine's whitespace: ``,[ ]?`` and ``:[ ]?``.
JSON_WHITESPACE: dict = {"whitespace_flexible": False, "item_separator": ",[ ]?", "key_separator": ":[ ]?"}

_UNSUPPORTED_HINTS = ("Unimplemented keys", "not supported", "Unknown format", "coerce_one_of")


def _llg():
    import llguidance

    return llguidance


# ----------------------------------------------------------------------------------------------------
# the constraint
# ----------------------------------------------------------------------------------------------------


class GrammarConstraint(Constraint):
    """A spec compiled to an llguidance grammar for one ``TokenVocab``. Immutable; shared by sessions.

    Attributes: ``grammar`` (the llguidance grammar string), ``lenient`` (a JSON schema compiled with
    unsupported keywords ignored), ``warnings`` (what llguidance relaxed or ignored), ``lark_rewritten``
    (a Lark grammar was re-emitted from Lark's own loader because llguidance's dialect rejected it).
    """

    engine = "grammar"

    def __init__(self, spec: Spec, vocab: TokenVocab):
        super().__init__(spec, vocab)
        self.lenient = False
        self.lark_rewritten = False
        self.warnings: list[str] = []
        if isinstance(spec, JsonSchema):
            self.grammar = self._compile_json(spec)
        elif isinstance(spec, Grammar):
            self.grammar = self._compile_lark(spec)
        elif isinstance(spec, (Regex, Choice)):
            pattern = ascii_classes(spec.pattern) if isinstance(spec, Regex) else spec.to_regex()
            grammar = _llg().LLMatcher.grammar_from_regex(pattern)
            err, msgs = self._try(grammar)
            if err:
                raise SpecError(f"{spec!r} cannot be compiled by the grammar engine: {_first(msgs)}; "
                                "use Rust/Python-compatible regex syntax without look-around or back-references")
            self.grammar = grammar
            self.warnings = list(msgs)
        else:
            raise SpecError(f"the grammar engine cannot compile {spec!r}; pass a JsonSchema, Regex, Grammar or Choice")
        # tokens the engine may propose: llguidance's mask minus special ids (mask, pad, roles), plus EOS
        ok = ~np.asarray(vocab.special, dtype=bool)
        ok[vocab.eos_id] = True
        self._ok_np = ok
        self._ok_dev: dict[str, torch.Tensor] = {}

    # -- compilation ---------------------------------------------------------------------------------

    def _try(self, grammar: str) -> tuple[bool, list[str]]:
        """Build the root matcher for ``grammar``: (failed, [the error] or the warnings)."""
        m = _llg().LLMatcher(self.vocab.ll, grammar, log_level=0)
        if m.is_error():
            return True, [m.get_error() or "unknown llguidance error"]
        self._root = m
        return False, [str(w) for w in m.get_grammar_warnings()]

    def _compile_json(self, spec: JsonSchema) -> str:
        M = _llg().LLMatcher
        try:
            strict = M.grammar_from_json_schema(spec.schema, overrides=dict(JSON_WHITESPACE))
        except ValueError as e:  # only when the schema is not a JSON object
            raise SpecError(f"{spec!r} is not a JSON object llguidance can read: {e}") from None
        err, msgs = self._try(strict)
        if not err:
            self.warnings = msgs
            return strict
        message = _first(msgs)
        if any(h in message for h in _UNSUPPORTED_HINTS):
            lenient = M.grammar_from_json_schema(spec.schema, overrides={**JSON_WHITESPACE, "lenient": True})
            err2, msgs2 = self._try(lenient)
            if not err2:
                self.lenient = True
                self.warnings = [message] + [m for m in msgs2 if m != message]
                return lenient
            message = f"{message}; with unsupported keywords ignored: {_first(msgs2)}"
        raise _json_error(spec, message)

    def _compile_lark(self, spec: Grammar) -> str:
        M = _llg().LLMatcher
        native_err = None
        if spec.start == "start" and not _UNICODE_CLASS.search(spec.text):
            native = M.grammar_from_lark(spec.text)
            err, msgs = self._try(native)
            if not err:
                self.warnings = msgs
                return native
            native_err = _first(msgs)
        # llguidance's dialect rejected it (or the start rule is not `start`): let Lark expand it
        try:
            text = lark_to_llguidance(spec.text, spec.start, import_paths=[str(spec.path.parent)] if spec.path else ())
        except CompileError as e:
            if native_err:
                raise CompileError(f"{spec!r}: llguidance rejects the grammar ({_oneline(native_err)}) and "
                                   f"it cannot be rewritten for it: {e}") from None
            raise
        rewritten = M.grammar_from_lark(text)
        err, msgs = self._try(rewritten)
        if err:
            why = f"llguidance rejects the grammar: {_oneline(native_err)}; " if native_err else ""
            raise CompileError(
                f"{spec!r} cannot be compiled by the grammar engine: {why}after expansion by Lark: "
                f"{_oneline(_first(msgs))}. Terminal regexes must avoid look-around and back-references "
                "(Rust regex syntax); every terminal needs a pattern"
            )
        self.lark_rewritten = True
        self.warnings = ([f"grammar rewritten for llguidance ({_oneline(native_err)})"] if native_err else []) + msgs
        return rewritten

    # -- whole-sequence checks -----------------------------------------------------------------------

    def _split_eos(self, token_ids: Sequence[int]) -> tuple[list[int], bool, bool]:
        """(output tokens, saw EOS, well-formed): tokens up to the first EOS; after it only EOS."""
        ids = [int(t) for t in token_ids]
        eos = self.vocab.eos_id
        if eos in ids:
            k = ids.index(eos)
            return ids[:k], True, all(t == eos for t in ids[k:])
        return ids, False, True

    def accepts(self, token_ids: Sequence[int]) -> bool:
        out, _, ok = self._split_eos(token_ids)
        if not ok or any(not (0 <= t < self.vocab.size) or not self._ok_np[t] for t in out):
            return False
        m = self._root.deep_copy()
        return m.try_consume_tokens(out) == len(out) and m.is_accepting()

    def accepts_prefix(self, token_ids: Sequence[int]) -> bool:
        out, saw_eos, ok = self._split_eos(token_ids)
        if not ok or any(not (0 <= t < self.vocab.size) or not self._ok_np[t] for t in out):
            return False
        m = self._root.deep_copy()
        if m.try_consume_tokens(out) != len(out):
            return False
        return m.is_accepting() if saw_eos else not m.is_error()

    def min_tokens(self) -> int:
        """A lower bound (never above the truth) on the tokens of the shortest valid output.

        0 when the empty output is valid. Otherwise every output starts with the bytes F the grammar
        forces at the start (``compute_ff_bytes``); the bound is the fewest vocabulary tokens that can
        spell F (a shortest path over F's byte positions, the last token allowed to run past F), plus one
        when F alone is not a complete output. Exact for outputs that are entirely forced (choices of one
        option, fixed regexes); for the rest it counts the forced head plus one token.
        """
        return self._min_tokens

    @cached_property
    def _min_tokens(self) -> int:
        m = self._root.deep_copy()
        if m.is_accepting():
            return 0
        forced = bytes(m.compute_ff_bytes())
        if not forced:
            return 1
        index = _vocab_index(self.vocab)
        n = len(forced)
        dp, _ = index.cover(forced)
        ids = self.vocab.ll.tokenize_bytes(forced)
        complete = m.try_consume_tokens(ids) != len(ids) or m.is_accepting()
        best = dp[n] + (0 if complete else 1)
        for i in range(n):  # a last token that starts inside F and runs past its end
            if dp[i] + 1 < best and n - i < index.maxlen and index.extends(forced[i:]):
                best = dp[i] + 1
        return int(best)

    def shortest_known(self) -> int | None:
        """Length in tokens of the shortest output the endgame search finds from the start: an upper
        bound on the true minimum (``min_tokens() <= minimum <= shortest_known()``), None when the search
        finds none. A canvas smaller than this may still work; one much smaller will likely not."""
        return self._shortest_known

    @cached_property
    def _shortest_known(self) -> int | None:
        path = GrammarSession(self, 1 << 20, "cpu")._finish_path(1 << 20, [4096])
        return None if path is None else len(path)

    # -- sessions ------------------------------------------------------------------------------------

    def session(self, length: int, device: torch.device | str = "cpu", *, max_run: int = 64,
                endgame: int = 32, search_budget: int = 256) -> "GrammarSession":
        """A session over ``length`` positions; see ``GrammarSession`` for ``max_run``/``endgame``."""
        return GrammarSession(self, length, device, max_run=max_run, endgame=endgame,
                              search_budget=search_budget)

    def ok_mask(self, device: torch.device) -> torch.Tensor:
        """BoolTensor[V] on ``device``: ids the engine may ever propose (not special, or EOS)."""
        key = str(device)
        t = self._ok_dev.get(key)
        if t is None:
            t = torch.from_numpy(self._ok_np.copy()).to(device)
            self._ok_dev[key] = t
        return t


# ----------------------------------------------------------------------------------------------------
# the session
# ----------------------------------------------------------------------------------------------------


class GrammarSession(ConstraintSession):
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
      before the canvas end even in the fewest tokens raise ``CanvasTooSmallError``.
    * ``propose(canvas, logprobs)``: a run from the frontier (``prefix_only=True``). At each masked
      position, the argmax of the logprobs restricted to the grammar's mask after the run so far (EOS
      only where the output is complete and nothing but EOS is committed later), with its probability
      renormalised over the allowed tokens as confidence; up to the next committed position, the end of
      the canvas, or ``max_run`` tokens. After an EOS the rest of the masked stretch is EOS (confidence 1).
    * Finishing in time (the *endgame*, the last ``endgame`` positions before the canvas end or an EOS
      tail): the model's token is kept only if a short search (``_finish_path``: probe tokens, closing
      punctuation first, forced bytes in the fewest tokens, ``search_budget`` nodes) finds a completion
      in the positions left after it; otherwise the first token of a completion that fits is taken. Holes
      before a non-EOS segment are steered the same way (``_hole_path``: exactly the hole's length, the
      model's likeliest tokens first). The search is a heuristic; what it guarantees is checked exactly:
      the last position before a segment or the canvas end takes only tokens after which the segment
      follows (the output is complete), found at the frontier by scanning the allowed tokens in model
      order. If none exists the output cannot be finished in this canvas: ``CanvasTooSmallError`` at the
      canvas end, ``GenerationError`` (re-mask through the end of the output) before a segment.
    * ``allowed(canvas)``: exact rows at committed positions (the committed token), at the frontier (the
      grammar's mask, filtered by that exact check when a boundary follows it) and at forced positions;
      all other rows are all False (the engine cannot tell them yet).
    """

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

    # -- the endgame: finishing before the canvas ends -----------------------------------------------

    def _finish_path(self, k: int, budget: list[int]) -> list[int] | None:
        """Some completion of the matcher's output in at most ``k`` tokens, or None if none was found
        within ``budget`` search nodes (``_finish_dfs``). A path found is a real completion (not always
        the shortest); None proves nothing. The matcher is left unchanged."""
        return self._finish_dfs(k, budget, frozenset(), 0)

    def _finish_dfs(self, k: int, budget: list[int], seen: frozenset, closing: int,
                    raw: bytes | None = None) -> list[int] | None:
        """Depth-first search for a completion in at most ``k`` tokens over probe tokens, following
        forced bytes (``_finish_forced``).

        At each node the allowed probes (``_probe_ids``: closing bytes, punctuation tokens, one token
        per printable byte) are looked at in order: one that completes the output ends the search; one
        whose grammar mask is in ``seen`` (the masks met since the last forced bytes: more string
        content, another digit, ``,a,a``) is no progress and dropped, with the rest of its letters or
        digits, unless it holds a closing bracket (closing a level can leave the mask as it was;
        ``closing`` counts such steps in a row, at most 4, since a bracket can also be content). The
        others are expanded (at most 4) most constrained first: forced bytes, then the fewest tokens
        allowed after them (a closed object allows ``,`` and ``}``; an opened key, any character).
        ``budget`` counts the grammar masks computed; the search stops when it is spent. ``raw`` is
        this node's mask when the parent computed it."""
        m = self._m
        if m.is_accepting():
            return []
        if k <= 0 or budget[0] <= 0:
            return None
        if raw is None:
            forced = bytes(m.compute_ff_bytes())
            if forced:
                return self._finish_forced(forced, k, budget)
            raw = m.compute_bitmask()
            budget[0] -= 1
        seen = seen | {raw}
        bm = np.frombuffer(raw, dtype=np.uint8)
        probes = self._probes
        ok = ((bm[probes >> 3] >> (probes & 7)) & 1).astype(bool)
        children: list[tuple[int, int, int, bytes | None, bool]] = []
        idle: set[int] = set()  # byte classes (digit, lower, upper) found to be no progress here
        for order, t in enumerate(probes[ok].tolist()):
            cls = self._byte_class[t]
            if cls in idle or m.try_consume_tokens([t]) != 1:
                continue
            try:
                if m.is_accepting():
                    return [t]
                if k == 1:
                    continue  # one token left: it must complete the output
                if m.compute_ff_bytes():
                    children.append((-1, order, t, None, False))
                    continue
                if budget[0] <= 0 or len(children) >= 16:
                    break
                budget[0] -= 1
                child = m.compute_bitmask()
                exempt = bool(self._closes[t]) and closing < 4
                if child in seen and not exempt:
                    if cls:
                        idle.add(cls)  # another letter of an identifier is no progress either
                    continue
                children.append((int.from_bytes(child, "little").bit_count(), order, t, child, exempt))
            finally:
                m.rollback(1)
        children.sort()
        for _, _, t, child, exempt in children[:4]:
            m.try_consume_tokens([t])
            try:
                sub = self._finish_dfs(k - 1, budget, seen, closing + 1 if exempt else 0, child)
            finally:
                m.rollback(1)
            if sub is not None:
                return [t] + sub
            if budget[0] <= 0:
                break
        return None

    def _finish_forced(self, forced: bytes, k: int, budget: list[int]) -> list[int] | None:
        """``_finish_dfs`` at a state where the grammar forces ``forced``: spell them in the fewest
        tokens, or in the fewest up to a token that runs past them (``":`` forced, ``":"`` taken)."""
        m = self._m
        budget[0] -= 1
        for head, tails in self._index.spellings(forced):
            if len(head) + (tails is not None) > k:
                continue
            n = m.try_consume_tokens(head)
            try:
                if n < len(head):
                    continue
                if tails is None:
                    sub = self._finish_dfs(k - n, budget, frozenset(), 0)
                    if sub is not None:
                        return head + sub
                    continue
                tried = 0
                for t in tails:
                    if m.try_consume_tokens([t]) != 1:
                        continue
                    try:
                        sub = self._finish_dfs(k - n - 1, budget, frozenset(), 0)
                    finally:
                        m.rollback(1)
                    if sub is not None:
                        return head + [t] + sub
                    tried += 1
                    if tried >= 4 or budget[0] <= 0:
                        break
            finally:
                if n:
                    m.rollback(n)
            if budget[0] <= 0:
                break
        return None

    def _forced_fewest(self) -> list[int]:
        """The bytes the grammar forces now, spelled in as few tokens as possible (llguidance's
        fast-forward tokens use the tokenizer's canonical split, which can take more)."""
        m = self._m
        data = bytes(m.compute_ff_bytes())
        if not data:
            return []
        ids = self._index.fewest_tokens(data)
        return ids if ids is not None else m.compute_ff_tokens()

    def _path_after(self, tok: int, k: int, budget: int) -> list[int] | None:
        """A completion of at most ``k`` more tokens after ``tok`` (found by ``_finish_path``), or None."""
        if tok == self.eos:
            return []
        m = self._m
        if m.try_consume_tokens([tok]) != 1:
            return None
        try:
            return self._finish_path(k, [budget])
        finally:
            m.rollback(1)

    def _steer(self, tok: int, r: int, plan: list[int] | None, pos: int) -> tuple[int, list[int] | None]:
        """Choose the token at ``pos``, ``r`` positions before the output's deadline, so that the output
        can still be finished.

        ``plan`` is a completion from the current state found at the previous position (or None). The
        model's choice ``tok`` is kept when it follows the plan or a completion in ``r - 1`` tokens is
        found after it; otherwise the plan's first token (EOS when the output is already complete) is
        taken, searching for a plan when there is none. When no completion is found at all the model's
        choice stands, and the searches rest for the next 8 positions (they would fail again) unless the
        deadline is within 8. Returns (token, a completion after it or None); at most two searches.
        """
        if plan is not None and len(plan) > r:
            plan = None
        if plan and plan[0] == tok:
            return tok, plan[1:]
        if plan is None and pos < self._search_rest_until and r > 8:
            return tok, None
        after = self._path_after(tok, r - 1, self.search_budget)
        if after is not None:
            return tok, after
        if plan is None:
            plan = self._finish_path(r, [self.search_budget])
        if plan is None:
            self._search_rest_until = pos + 8
            return tok, None
        if not plan:
            return self.eos, []
        return plan[0], plan[1:]

    def _goal(self, seg: list[int], need_end: bool) -> bool:
        """Whether the committed segment can follow the matcher's current state."""
        m = self._m
        n = m.try_consume_tokens(seg) if seg else 0
        ok = n == len(seg) and (not need_end or m.is_accepting())
        if n:
            m.rollback(n)
        return ok

    def _hole_path(self, k: int, seg: list[int], need_end: bool, tops: list[list[int]],
                   budget: list[int]) -> list[int] | None:
        """Exactly ``k`` tokens after which the committed segment can follow, or None if none was found.

        A depth-first search within ``budget`` nodes; at each position it tries the model's likeliest
        allowed tokens there (``tops``, one list per position) and then the probe tokens."""
        if k == 0:
            return [] if self._goal(seg, need_end) else None
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        m = self._m
        bm = self._bitmask()
        probes = self._probes
        ok = ((bm[probes >> 3] >> (probes & 7)) & 1).astype(bool)
        likely = [t for t in tops[0] if self._allowed_np(bm, t) and t != self.eos][:4] if tops else []
        for t in dict.fromkeys(likely + probes[ok][:8].tolist()):
            if m.try_consume_tokens([t]) != 1:
                continue
            try:
                sub = self._hole_path(k - 1, seg, need_end, tops[1:], budget)
            finally:
                m.rollback(1)
            if sub is not None:
                return [t] + sub
            if budget[0] <= 0:
                break
        return None

    def _steer_hole(self, tok: int, r: int, plan: list[int] | None, seg: list[int], need_end: bool,
                    tops: list[list[int]], pos: int) -> tuple[int, list[int] | None]:
        """Choose the token ``r`` positions before a committed segment (a hole the sampler re-masked) so
        that the hole can still be filled to let the segment follow: the model's choice when a filling
        of the rest is found after it, else the first token of a filling found from here (``plan``, a
        filling from the current state found at the previous position, is reused when the model
        follows it). When no filling is found the model's choice stands and the searches rest for the
        next 8 positions, as in ``_steer``."""
        if plan is not None and len(plan) != r:
            plan = None
        if plan and plan[0] == tok:
            return tok, plan[1:]
        if plan is None and pos < self._search_rest_until and r > 2:
            return tok, None
        if tok != self.eos and self._m.try_consume_tokens([tok]) == 1:
            try:
                after = self._hole_path(r - 1, seg, need_end, tops[1:], [self.search_budget])
            finally:
                self._m.rollback(1)
            if after is not None:
                return tok, after
        if plan is None:
            plan = self._hole_path(r, seg, need_end, tops, [self.search_budget])
        if plan:
            return plan[0], plan[1:]
        self._search_rest_until = pos + 8
        return tok, None

    def _argmax(self, bm: np.ndarray, scores: torch.Tensor, eos_ok: bool) -> int | None:
        """The highest-scoring allowed token of this bitmask (None when nothing is allowed)."""
        row = self._rows([bm], scores.device, eos_ok)[0]
        top, arg = scores.masked_fill(~row, float("-inf")).max(dim=0)
        if bool(torch.isfinite(top)):
            return int(arg)
        nz = row.nonzero().flatten()
        return int(nz[0]) if nz.numel() else None

    def _stuck(self, v: "_View", j: int) -> StructgenError:
        T = self.length
        text = self.c.vocab.decode(v.ids[: v.f])
        if j >= T:
            return CanvasTooSmallError(T + 1, T, what=f"output continuing {_short(text)!r}")
        return GenerationError(
            f"no token at position {v.f} lets the tokens committed from position {j} follow "
            f"{_short(text)!r}; re-mask from position {v.f} through the end of the output", text=text)

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
                        raise CanvasTooSmallError(need, T, what="output after the committed prefix")
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
                noise: torch.Tensor | None = None) -> Proposal:
        """The constrained greedy run from the frontier (see the class docstring).

        ``window`` [start, end) clips the run (the sampler's current block; rows outside it are not read);
        ``noise`` [T, V] (sampling noise, repair penalties) is added to the scores that choose the tokens,
        for the rows read only; confidences come from ``logprobs`` alone."""
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
        top_vals, raw_t = sc.max(dim=-1)
        raw = raw_t.tolist()
        m = self._m
        chosen: list[int] = []
        bms: list[np.ndarray] = []
        eos_flags: list[bool] = []
        plan: list[int] | None = None  # a completion (or hole filling) found at the previous position
        zone = self.endgame  # steer this many positions before the deadline
        if deadline and self.endgame and j - v.f > self.endgame:
            # a long output may need more than the endgame to finish: widen it to twice a completion
            # found from here (or to everything when none is found), and start from that completion
            plan = self._finish_path(j - v.f, [4 * self.search_budget])
            zone = j - v.f if plan is None else max(self.endgame, 2 * len(plan) + 8)
        tops: list[list[int]] | None = None
        tops_from = v.f
        consumed = 0
        try:
            for i, pos in enumerate(range(v.f, end)):
                bm = self._bitmask()
                eos_ok = v.eos_ok_after(pos)
                tok = raw[i]
                if not self._allowed_np(bm, tok) or (tok == eos and not eos_ok):
                    tok = self._argmax(bm, sc[i], eos_ok)
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
                    row = self._rows([bm], dev, eos_ok)[0]
                    found = self._fitting_candidates(row, sc[i], seg, need_end, first_only=True)
                    if not found:
                        raise self._stuck(v, j)
                    tok = found[0]
                chosen.append(tok)
                bms.append(bm)
                eos_flags.append(eos_ok)
                if tok == eos:
                    break
                if not m.consume_token(tok):  # pragma: no cover - the mask said it was allowed
                    raise ConstraintViolation(f"llguidance refused token {tok} it allowed: {m.get_error()}")
                consumed += 1
        finally:
            if consumed:
                m.rollback(consumed)
        R = len(chosen)
        if R:
            rows = self._rows(bms, dev, True)
            if not all(eos_flags):
                rows[torch.tensor([not f for f in eos_flags], device=dev), eos] = False
            sel = torch.tensor(chosen, dtype=torch.long, device=dev)
            tokens[v.f:v.f + R] = sel
            top = top_vals[:R] if noise is None else lp[:R].max(dim=-1).values
            conf[v.f:v.f + R] = self._confidence(lp[:R], top, rows, sel)
            elig[v.f:v.f + R] = True
            tail = min(j, stop)
            if chosen[-1] == eos and v.f + R < tail:
                tokens[v.f + R:tail] = eos
                conf[v.f + R:tail] = 1.0
                elig[v.f + R:tail] = True
        return Proposal(tokens, conf, elig, prefix_only=True)

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


# ----------------------------------------------------------------------------------------------------
# Lark → llguidance
# ----------------------------------------------------------------------------------------------------


def lark_to_llguidance(text: str, start: str = "start", import_paths: Sequence[str] = ()) -> str:
    """Load a Lark grammar with Lark itself and re-emit it as plain BNF in llguidance's Lark dialect.

    Templates, imports (``common`` and any other), ``%override``/``%extend``, aliases and ``?``/``!``
    rule markers are resolved by Lark; rules become ``r_*`` rules, terminals ``T_*`` terminals whose
    patterns are Lark's compiled regexes (strings stay string literals), ``%ignore`` is kept and
    priorities are dropped. Raises ``CompileError`` for terminals without a pattern (``%declare``).
    """
    import lark

    try:
        parser = lark.Lark(text, start=start, parser="earley", import_paths=list(import_paths))
    except lark.exceptions.LarkError as e:
        raise GrammarSyntaxError(f"Lark grammar is invalid: {str(e).strip()}") from None
    rule_names: dict[str, str] = {}
    term_names: dict[str, str] = {}

    def rname(name: str) -> str:
        if name not in rule_names:
            base = "r_" + re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_")
            rule_names[name] = f"{base}_{len(rule_names)}"
        return rule_names[name]

    def tname(name: str) -> str:
        if name not in term_names:
            base = "T_" + re.sub(r"[^A-Z0-9_]", "_", name.upper()).strip("_")
            term_names[name] = f"{base}_{len(term_names)}"
        return term_names[name]

    defined = {t.name: t for t in parser.terminals}
    alts: dict[str, list[str]] = {}
    order: list[str] = []
    for rule in parser.rules:
        o = rule.origin.name
        if o not in alts:
            alts[o] = []
            order.append(o)
        syms = []
        for s in rule.expansion:
            if s.is_term:
                if s.name not in defined:
                    raise CompileError(
                        f"terminal {s.name} has no pattern (declared with %declare, i.e. produced by a "
                        "postlexer such as an indenter); the grammar engine needs every terminal defined by "
                        "a string or regex"
                    )
                syms.append(tname(s.name))
            else:
                syms.append(rname(s.name))
        alts[o].append(" ".join(syms))
    if start not in alts:
        raise CompileError(f"the start rule {start!r} has no productions")
    for name in parser.ignore_tokens:
        if name in defined:
            tname(name)
    lines = [f"start: {rname(start)}"]
    for o in order:
        a = sorted(set(alts[o]), key=lambda s: (s != "", alts[o].index(s)))
        lines.append(f"{rname(o)}: " + " | ".join(a))
    for name, tn in list(term_names.items()):
        lines.append(f"{tn}: {_emit_pattern(defined[name].pattern)}")
    for name in parser.ignore_tokens:
        if name in defined:
            lines.append(f"%ignore {tname(name)}")
    return "\n".join(lines) + "\n"


def _emit_pattern(p) -> str:
    from lark.lexer import PatternStr

    if isinstance(p, PatternStr):
        flags = "i" if "i" in p.flags else ""
        return json.dumps(p.value, ensure_ascii=False) + flags
    return "/" + _escape_regex(ascii_classes(p.to_regexp())) + "/"


_UNICODE_CLASS = re.compile(r"(?<!\\)(?:\\\\)*\\[dw]")
_CLASS_ASCII = {"d": "0-9", "w": "0-9A-Za-z_"}


def ascii_classes(rx: str) -> str:
    r"""Spell ``\d`` and ``\w`` as their ASCII classes (outside brackets and in non-negated ones).

    llguidance's regexes are Rust's, whose ``\d``/``\w`` follow a newer Unicode than Python's ``re``
    (and ``\w`` takes combining marks Python's does not): an output must also match where it is
    validated, so the engine generates the ASCII subset. In a negated class (``[^\w]``) they are left
    alone, as narrowing them there would widen the class. JSON Schema ``pattern`` is not touched:
    llguidance already reads it as ECMA-262, where these classes are ASCII."""
    out: list[str] = []
    i, in_class, negated = 0, False, False
    while i < len(rx):
        ch = rx[i]
        if ch == "\\" and i + 1 < len(rx):
            cls = _CLASS_ASCII.get(rx[i + 1])
            if cls is None or negated:
                out.append(rx[i:i + 2])
            else:
                out.append(cls if in_class else f"[{cls}]")
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class, negated = True, rx.startswith("^", i + 1)
        elif ch == "]" and in_class:
            in_class = negated = False
        out.append(ch)
        i += 1
    return "".join(out)


def _escape_regex(rx: str) -> str:
    """Make a Python regex safe inside llguidance's ``/.../``: escape bare ``/`` and control characters."""
    out, esc = [], False
    for ch in rx:
        if esc:
            out.append(ch)
            esc = False
            continue
        if ch == "\\":
            out.append(ch)
            esc = True
        elif ch == "/":
            out.append("\\/")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


# ----------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------

class _VocabIndex:
    """The byte strings of a vocabulary's ordinary tokens: id by bytes, sorted list, longest length."""

    def __init__(self, vocab: TokenVocab):
        self.ids: dict[bytes, int] = {}
        for i, (b, sp) in enumerate(zip(vocab.token_bytes, vocab.special)):
            if b and not sp:
                self.ids.setdefault(b, i)
        self.ordered = sorted(self.ids)
        self.maxlen = max((len(b) for b in self.ids), default=1)
        self._spell: dict[bytes, list] = {}

    def cover(self, data: bytes) -> tuple[list[int], list[int]]:
        """Shortest tokenizations of every prefix of ``data``: (token counts, where the last token starts);
        a count of ``len(data) + 1`` means no tokenization."""
        n = len(data)
        inf = n + 1
        dp, back = [inf] * (n + 1), [-1] * (n + 1)
        dp[0] = 0
        for i in range(n):
            if dp[i] == inf:
                continue
            for L in range(1, min(self.maxlen, n - i) + 1):
                if dp[i] + 1 < dp[i + L] and data[i:i + L] in self.ids:
                    dp[i + L], back[i + L] = dp[i] + 1, i
        return dp, back

    def fewest_tokens(self, data: bytes) -> list[int] | None:
        """The token ids of a shortest tokenization of ``data`` (None when it has none)."""
        dp, back = self.cover(data)
        if dp[-1] > len(data):
            return None
        out, j = [], len(data)
        while j > 0:
            i = back[j]
            out.append(self.ids[data[i:j]])
            j = i
        return out[::-1]

    def extends(self, data: bytes) -> bool:
        """Whether some token is strictly longer than ``data`` and starts with it."""
        k = bisect.bisect_right(self.ordered, data)
        return k < len(self.ordered) and self.ordered[k].startswith(data)

    def longer(self, data: bytes, limit: int = 256) -> list[int]:
        """Ids of tokens strictly longer than ``data`` that start with it, those closing the most
        brackets first, then the longest (the first ``limit`` in byte order are looked at)."""
        k = bisect.bisect_right(self.ordered, data)
        out = []
        while k < len(self.ordered) and len(out) < limit and self.ordered[k].startswith(data):
            out.append(self.ordered[k])
            k += 1
        return [self.ids[b] for b in sorted(out, key=lambda b: (-sum(c in _CLOSING for c in b), -len(b)))]

    def spellings(self, forced: bytes) -> list[tuple[list[int], list[int] | None]]:
        """Ways to spell bytes the grammar forces, fewest tokens first: (head, tails) where ``head``
        spells a prefix ``forced[:i]`` in the fewest tokens and ``tails`` are the tokens that start with
        the rest and run past it (None: ``head`` spells all of ``forced``). Cached."""
        hit = self._spell.get(forced)
        if hit is not None:
            return hit
        dp, back = self.cover(forced)
        n = len(forced)
        opts: list[tuple[int, int]] = []
        if dp[n] <= n:
            opts.append((dp[n], n))
        for i in range(n):
            if dp[i] <= n and n - i < self.maxlen and self.extends(forced[i:]):
                opts.append((dp[i] + 1, i))
        opts.sort(key=lambda o: (o[0], o[1] == n, -o[1]))  # fewest tokens; at a tie, a token that runs on

        def head(i: int) -> list[int]:
            ids, j = [], i
            while j > 0:
                ids.append(self.ids[forced[back[j]:j]])
                j = back[j]
            return ids[::-1]

        hit = [(head(i), None if i == n else self.longer(forced[i:])) for _, i in opts[:3]]
        if len(self._spell) > 4096:
            self._spell.clear()
        self._spell[forced] = hit
        return hit


_INDEXES: dict[str, _VocabIndex] = {}


def _vocab_index(vocab: TokenVocab) -> _VocabIndex:
    hit = _INDEXES.get(vocab.key)
    if hit is None:
        hit = _INDEXES[vocab.key] = _VocabIndex(vocab)
    return hit


_PROBES: dict[str, np.ndarray] = {}
_CLOSING = set(b")]}>")
_PUNCT = set(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ")
# single-byte probes in order: the closing bytes (the first six), punctuation, then digits and letters
_PROBE_BYTES = (b"\")]}>'0a1x_;,.:-=+*/!?|&#@$%^~`<[{(\\ \n\t"
                + bytes(range(0x62, 0x7B)) + bytes(range(0x41, 0x5B)) + bytes(range(0x32, 0x3A)))


_CLOSES: dict[str, np.ndarray] = {}


def _closing_tokens(vocab: TokenVocab) -> np.ndarray:
    """bool[V]: tokens that hold a closing bracket (``)`` ``]`` ``}`` ``>``)."""
    hit = _CLOSES.get(vocab.key)
    if hit is None:
        hit = np.array([any(c in _CLOSING for c in b) for b in vocab.token_bytes], dtype=bool)
        _CLOSES[vocab.key] = hit
    return hit


def _byte_classes(vocab: TokenVocab) -> dict[int, int]:
    """Class of each single-byte probe token: 1 digit, 2 lowercase, 3 uppercase letter, 0 other."""
    out: dict[int, int] = {}
    for t in _probe_ids(vocab).tolist():
        b = vocab.token_bytes[t]
        c = b[0] if len(b) == 1 else -1
        out[t] = 1 if 48 <= c <= 57 else 2 if 97 <= c <= 122 else 3 if 65 <= c <= 90 else 0
    return out


def _probe_ids(vocab: TokenVocab) -> np.ndarray:
    """Token ids the endgame search tries, in order: the single closing bytes (``"`` ``)`` ``]`` ``}``
    ``>`` ``'``); 24 tokens made only of punctuation and spaces, those closing the most brackets first,
    then the longest (``"}]}``, then ``","``); the other single bytes (punctuation, digits, letters);
    40 more punctuation tokens; a few UTF-8 continuation bytes (to finish a character a token left
    half-written)."""
    hit = _PROBES.get(vocab.key)
    if hit is None:
        multi, singles, continuations = [], {}, []
        for i, (b, sp) in enumerate(zip(vocab.token_bytes, vocab.special)):
            if sp or not b:
                continue
            if 1 < len(b) <= 8 and all(c in _PUNCT for c in b):
                multi.append((-sum(c in _CLOSING for c in b), -len(b), i))
            elif len(b) == 1 and b[0] in _PROBE_BYTES and b[0] not in singles:
                singles[b[0]] = i
            elif len(b) == 1 and b[0] in (0x80, 0x90, 0xA0, 0xBF):
                continuations.append(i)
        multi = [i for *_, i in sorted(multi)[:64]]
        order = [singles[c] for c in _PROBE_BYTES[:6] if c in singles] + multi[:24]
        order += [singles[c] for c in _PROBE_BYTES[6:] if c in singles] + multi[24:] + continuations
        hit = np.asarray(list(dict.fromkeys(order)), dtype=np.int64)
        _PROBES[vocab.key] = hit
    return hit


def _json_error(spec: JsonSchema, message: str) -> Exception:
    msg = f"{spec!r} cannot be compiled: {_oneline(message)}"
    if "Unsatisfiable" in message or "does not exist" in message or "Pointer" in message:
        return SpecError(msg + "; fix the schema (no value can satisfy it as written, or a $ref is broken)")
    if "Resource" in message and "registry" in message:
        return UnsupportedSchemaError(msg + "; inline remote $refs into $defs")
    if "regex" in message.lower():
        return UnsupportedSchemaError(msg + "; rewrite the pattern without look-around or back-references")
    return CompileError(msg + "; simplify the schema or use engine='automaton' if it is regular")


def _first(msgs: list[str]) -> str:
    return msgs[0] if msgs else "unknown llguidance error"


def _oneline(s: str | None) -> str:
    s = (s or "").strip()
    head = s.split("\n<state>")[0]
    return " ".join(head.split())[:600]


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else "..." + s[-(n - 3):]
