"""The grammar engine: any spec compiled to an llguidance grammar, exact at the canvas frontier.

This module owns ``GrammarConstraint`` (engine ``"grammar"``); its per-generation ``GrammarSession`` is in
``grammar_session`` (with ``grammar_view`` and ``grammar_search``), the Lark rewriting in ``lark_compat``.
It serves every spec kind: Lark grammars, JSON schemas (recursive ones included), regexes and choices.

**Compilation** (once per constraint, cached by ``constraints.compile``):

* ``Grammar``: the Lark text is given to llguidance as is. llguidance's Lark dialect lacks a few things
  real Lark has (rule/terminal priorities, templates, ``%declare``, ``%override``/``%extend``, start rules
  not named ``start``, imports other than ``common``); when llguidance rejects the text, the grammar is
  loaded by Lark itself (which expands templates, imports and overrides) and re-emitted as plain BNF in
  llguidance's dialect (priorities dropped: they choose among parses, not what is in the language of
  Lark's Earley parser). What neither route can express (``%declare``'d terminals fed by a postlexer,
  look-around in terminal regexes) is a ``CompileError`` naming the construct.
* ``JsonSchema``: ``grammar_from_json_schema`` in the one JSON layout the automaton engine writes too:
  ``whitespace_flexible=False``, ``item_separator=", "``, ``key_separator=": "`` — one space after each
  ``,`` and ``:`` and nowhere else (``json.dumps`` with its default separators).
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

from functools import cached_property
from typing import Sequence

import numpy as np
import torch

from ..errors import CompileError, SpecError, UnsupportedSchemaError
from ..spec import Choice, Grammar, JsonSchema, Regex, Spec
from .base import Constraint
from .grammar_session import GrammarSession
from .grammar_tokens import _vocab_index
from .grammar_view import unpack_bitmasks
from .lark_compat import _UNICODE_CLASS, ascii_classes, lark_to_llguidance
from .vocab import TokenVocab

__all__ = ["GrammarConstraint", "GrammarSession", "JSON_WHITESPACE", "ascii_classes", "lark_to_llguidance",
           "unpack_bitmasks"]

#: llguidance JSON compile options: the one JSON layout (one space after ``,`` and ``:``, nothing else), the
#: same as the automaton engine's (``json_regex.canonical_layout``)
JSON_WHITESPACE: dict = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

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
        path = self.shortest_output()
        return None if path is None else len(path)

    def shortest_output(self) -> tuple[int, ...] | None:
        """The tokens of that output (the last resort of a salvaged spec: ``repair.finish_prefix``)."""
        return self._shortest_output

    #: the canvases ``shortest_output`` searches, least first (a tight one finds what a wide one misses, and
    #: the depth-first search's recursion stays bounded)
    _SHORTEST_ROOMS = (8, 16, 32, 64, 128)

    @cached_property
    def _shortest_output(self) -> tuple[int, ...] | None:
        for room in self._SHORTEST_ROOMS:
            path = GrammarSession(self, room, "cpu")._finish_path(room, [4096])
            if path is not None:
                return tuple(path)
        return None

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
