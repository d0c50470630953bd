"""The automaton engine against brute force: allowed masks, forced tokens and proposals are exact."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch

import structgen as sg
from structgen.constraints.base import MASK
from structgen.constraints.placeholders import int_range_regex
from structgen.constraints.vocab import TokenVocab


@pytest.fixture(scope="module")
def small_tok():
    """A byte-level BPE whose merges make a few multi-character tokens over 'a', 'b', 'c'."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    from structgen.tokenizers import SPECIAL_TOKENS, _wrap

    bm = bytes_to_unicode()
    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for b in range(256):
        vocab.setdefault(bm[b], len(vocab))
    merges = [("a", "b"), ("b", "c"), ("ab", "c"), ("a", "a")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    return _wrap(tok)


def _brute_allowed(regex: str, canvas: list[int], vocab: TokenVocab, alphabet: list[int]):
    """Allowed tokens per position by enumerating every canvas over ``alphabet`` + EOS."""
    T = len(canvas)
    cands = alphabet + [vocab.eos_id]
    allowed = [set() for _ in range(T)]
    pat = re.compile(regex)
    for seq in itertools.product(cands, repeat=T):
        if any(c != MASK and c != s for c, s in zip(canvas, seq)):
            continue
        if vocab.eos_id in seq:
            k = seq.index(vocab.eos_id)
            if any(s != vocab.eos_id for s in seq[k:]):
                continue
        if pat.fullmatch(vocab.decode(seq)):
            for t, s in enumerate(seq):
                allowed[t].add(s)
    return allowed


@pytest.mark.parametrize("regex", [r"[ab]{2,3}c", r"(ab|a)*c?", r"a(b|c)a?"])
def test_allowed_masks_match_brute_force(small_tok, regex):
    vocab = TokenVocab.of(small_tok)
    c = sg.compile(sg.Regex(regex), vocab)
    assert c.engine == "automaton"
    enc = {s: small_tok.convert_tokens_to_ids(s) for s in ["a", "b", "c", "ab", "bc", "abc", "aa"]}
    alphabet = sorted(enc.values())
    rng = np.random.default_rng(0)
    T = 4
    sess = c.session(T)
    for trial in range(12):
        canvas = [MASK] * T
        # commit a random consistent subset of one brute-force completion
        full = _brute_allowed(regex, canvas, vocab, alphabet)
        if trial:
            t = int(rng.integers(T))
            if full[t]:
                canvas[t] = int(rng.choice(sorted(full[t])))
        want = _brute_allowed(regex, canvas, vocab, alphabet)
        got = sess.allowed(torch.tensor(canvas))
        for t in range(T):
            if canvas[t] != MASK:
                continue
            got_t = set(torch.nonzero(got[t])[:, 0].tolist())
            assert got_t == want[t], (regex, canvas, t)


def test_forced_tokens_fill_an_exact_canvas(tok4k):
    c = sg.compile(sg.Choice(["hello world"]), tok4k)
    n = c.min_tokens()
    sess = c.session(n)
    fz = sess.forced(torch.full((n,), MASK))
    assert (fz != MASK).all()
    assert c.vocab.decode(fz.tolist()) == "hello world"


def test_min_tokens_and_canvas_too_small(tok4k):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    c = sg.compile(sg.JsonSchema(schema), tok4k)
    need = c.min_tokens()
    assert need == len(tok4k.encode('{"a":0}', add_special_tokens=False)) or need <= 7
    with pytest.raises(sg.CanvasTooSmallError) as e:
        c.session(need - 1)
    assert str(need) in str(e.value)


def test_proposals_are_complete_valid_canvases(tok4k):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                               "n": {"type": "integer", "minimum": 3, "maximum": 77}},
              "required": ["name", "n"], "additionalProperties": False}
    c = sg.compile(sg.JsonSchema(schema), tok4k)
    T = 40
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        sess = c.session(T)
        canvas = torch.full((T,), MASK)
        while (canvas == MASK).any():
            lp = torch.log_softmax(torch.randn(T, c.vocab.size, generator=g) * 4, -1)
            p = sess.propose(canvas, lp)
            full = canvas.clone()
            full[p.eligible] = p.tokens[p.eligible]
            assert c.accepts(full.tolist())  # every proposal is one valid completion
            k = torch.nonzero(p.eligible)[:, 0]
            pick = k[torch.randperm(len(k), generator=g)[: max(1, len(k) // 3)]]
            canvas[pick] = p.tokens[pick]
        import json

        v = json.loads(c.vocab.decode(canvas.tolist()))
        assert 3 <= v["n"] <= 77 and len(v["name"]) <= 8


def test_accepts_and_prefix(tok4k):
    c = sg.compile(sg.Regex(r"[0-9]{2}-[a-z]+"), tok4k)
    ids = tok4k.encode("12-abc", add_special_tokens=False)
    assert c.accepts(ids) and c.accepts(ids + [c.vocab.eos_id] * 3)
    assert not c.accepts(ids[:-1] + tok4k.encode("!", add_special_tokens=False))
    assert c.accepts_prefix(tok4k.encode("12-", add_special_tokens=False))
    assert not c.accepts_prefix(tok4k.encode("1x", add_special_tokens=False))
    assert not c.accepts(ids + [c.vocab.eos_id] + ids)  # nothing but EOS after EOS


@pytest.mark.parametrize("text, ok", [
    ('{"email": "kenji.ruiz@example.org"}', True),
    ('{"email": "ops+alerts@[10.0.0.1]"}', True),
    ('{"email": ""x"@acme.test"}', False),  # outlines-core's quoted local part, unescaped: not JSON
    ('{"email": "\\"x\\"@acme.test"}', False),  # escaped it is JSON, but this format stays dot-atom
    ('{"email": "no-at-sign"}', False),
])
def test_email_format_is_json_as_written(tok4k, text, ok):
    """A model once wrote ``"email": ""Horvat..."@acme.test"``: the email format's language must be JSON."""
    import json

    c = sg.compile(sg.JsonSchema({"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                                  "required": ["email"]}), tok4k)
    assert c.accepts(tok4k.encode(text, add_special_tokens=False)) == ok
    if ok:
        json.loads(text)


def test_int_range_regex_exact():
    rng = np.random.default_rng(0)
    for lo, hi in [(0, 130), (1, 14), (-5, 5), (-100, -3), (None, 10), (7, None), (None, None), (123, 98765)]:
        rx = re.compile(int_range_regex(lo, hi))
        for n in list(range(-1100, 1100)) + rng.integers(-10**7, 10**7, 500).tolist():
            want = (lo is None or n >= lo) and (hi is None or n <= hi)
            assert bool(rx.fullmatch(str(n))) == want, (lo, hi, n)
        assert not rx.fullmatch("01") and not rx.fullmatch("+1")


def test_integer_bounds_are_held_by_the_automaton(tok4k):
    c = sg.compile(sg.JsonSchema({"type": "integer", "minimum": 10, "maximum": 20}), tok4k)
    assert c.engine == "automaton"
    for n in range(0, 40):
        assert c.accepts(tok4k.encode(str(n), add_special_tokens=False)) == (10 <= n <= 20)


def test_compile_is_cached_and_engine_can_be_forced(tok4k):
    s = sg.JsonSchema({"type": "object", "properties": {"x": {"type": "boolean"}}})
    assert sg.compile(s, tok4k) is sg.compile(sg.JsonSchema(dict(s.schema)), tok4k)
    assert sg.compile(s, tok4k, engine="grammar").engine == "grammar"
    with pytest.raises(sg.StructgenError):
        sg.compile(sg.Grammar("start: \"a\"+\n"), tok4k, engine="automaton")


def test_recursive_schema_goes_to_the_grammar_engine(tok4k):
    tree = {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"]}}, "$ref": "#/$defs/node"}
    c = sg.compile(sg.JsonSchema(tree), tok4k)
    assert c.engine == "grammar"
    assert c.accepts(tok4k.encode('{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}', add_special_tokens=False))


def test_token_dfa_reads_outlines_transitions_into_flat_arrays(vocab):
    """``token_dfa._edges`` numbers outlines-core's state ids (steps of 128, or any ids) by their sorted place,
    and a transition into a state outlines-core does not list is an error, not a silent state 0."""
    from structgen.constraints.json_regex import AutomatonUnsupported
    from structgen.constraints.token_dfa import TokenDFA, _edges

    trans = {128: {5: 256, 6: 384}, 256: {7: 128}, 384: {}}
    for states in ([128, 256, 384], [128, 256, 384, 10**8]):  # a lookup table, then a search
        src, toks, nxt = _edges(trans, states)
        assert src.tolist() == [0, 0, 1] and toks.tolist() == [5, 6, 7] and nxt.tolist() == [1, 2, 0]
    assert _edges({128: {5: 999}}, [128])[2].tolist() == [-1]
    with pytest.raises(AutomatonUnsupported, match="does not list"):
        TokenDFA.from_transitions({128: {5: 999}}, 128, [128], vocab)
