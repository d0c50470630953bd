"""The grammar engine (llguidance): compilation of every spec kind, whole-sequence checks, and sessions
driven by random logprobs over a canvas — every finished canvas must be a valid output."""

from __future__ import annotations

import json
import random
import re

import jsonschema
import lark
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structgen.constraints.base import MASK
from structgen.constraints.grammar import GrammarConstraint, lark_to_llguidance
from structgen.constraints.vocab import TokenVocab
from structgen.errors import (CanvasTooSmallError, CompileError, ConstraintViolation, DeadEnd, GrammarSyntaxError,
                              SpecError, StructgenError)
from structgen.spec import Choice, Grammar, JsonSchema, Regex

ARITH = r"""
?start: sum
?sum: product | sum "+" product -> add | sum "-" product -> sub
?product: atom | product "*" atom -> mul | product "/" atom -> div
?atom: NUMBER -> number | "-" atom -> neg | NAME -> var | "(" sum ")"
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
"""

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "role": {"enum": ["admin", "user", "guest"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
        "active": {"type": "boolean"},
    },
    "required": ["name", "age", "role"],
    "additionalProperties": False,
}

TREE = {  # recursive: the automaton engine cannot hold it
    "$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"], "additionalProperties": False}},
    "$ref": "#/$defs/node",
}

EMAIL = r"[a-z]{1,8}@(example|test)\.(com|org)"

SQL = r"""
start: select
select: "SELECT"i cols "FROM"i NAME where? limit?
cols: "*" | NAME ("," NAME)*
where: "WHERE"i cond (("AND"i | "OR"i) cond)*
cond: NAME OP value
OP: "=" | "<" | ">" | "<=" | ">=" | "!="
value: NUMBER | STRING
limit: "LIMIT"i INT
STRING: /'[^']*'/
%import common.CNAME -> NAME
%import common.NUMBER
%import common.INT
%import common.WS
%ignore WS
"""


def build(spec, tok):
    """The grammar-engine constraint through the public compile(), or directly if the automaton module
    (imported lazily by compile) is not there yet."""
    try:
        from structgen.constraints import compile as sg_compile

        return sg_compile(spec, tok, engine="grammar")
    except ImportError:
        return GrammarConstraint(spec, TokenVocab.of(tok))


@pytest.fixture(scope="module")
def arith(tok4k):
    return build(Grammar(ARITH), tok4k)


# -- whole-sequence checks -----------------------------------------------------------------------------


def test_lark_accepts_real_encodings(arith, vocab):
    assert arith.engine == "grammar"
    for text in ["1+2", "a * (b - 3)", "-(x1 / 2.5) + 7", "((1))"]:
        assert arith.accepts(vocab.encode(text)), text
        assert arith.accepts(vocab.encode(text) + [vocab.eos_id] * 3), text
    for text in ["1 +", "(1", "x y", "1)", "+"]:
        assert not arith.accepts(vocab.encode(text)), text
    assert arith.accepts_prefix(vocab.encode("(1 +"))
    assert not arith.accepts_prefix(vocab.encode("(1 +)"))
    ids = vocab.encode("1+2")
    assert not arith.accepts(ids[:1] + [vocab.eos_id] + ids[1:])  # EOS only at the end
    assert not arith.accepts([vocab.mask_id])  # special tokens are never part of an output


def test_json_schema_accepts_and_whitespace(tok4k, vocab):
    c = build(JsonSchema(PERSON), tok4k)
    assert not c.lenient
    good = [
        '{"name": "Ann", "age": 31, "role": "admin"}',
        '{"name": "Bo", "age": 7, "role": "user", "tags": ["a", "b"], "active": true}',
    ]
    for text in good:
        jsonschema.validate(json.loads(text), PERSON)
        assert c.accepts(vocab.encode(text)), text
    bad = [
        '{"name": "Ann", "age": 31}',  # missing required
        '{"name": "Ann", "age": 31, "role": "root"}',  # not in enum
        '{"name": "Ann", "age": 31, "role": "admin", "x": 1}',  # additionalProperties false
        '{"name":"Ann","age":31,"role":"admin"}',  # no space after the separators: not the one layout
        '{"name": "Ann","age": 31, "role": "admin"}',  # one space missing
        '{ "name": "Ann", "age": 31, "role": "admin"}',  # space after "{"
        '{"name" : "Ann", "age": 31, "role": "admin"}',  # space before ":"
        '{"name":  "Ann", "age": 31, "role": "admin"}',  # two spaces
        '{"name":\n"Ann", "age": 31, "role": "admin"}',  # newline
        ' {"name": "Ann", "age": 31, "role": "admin"}',  # leading space
    ]
    for text in bad:
        assert not c.accepts(vocab.encode(text)), text


def test_regex_and_choice(tok4k, vocab):
    r = build(Regex(EMAIL), tok4k)
    assert r.accepts(vocab.encode("abc@example.com"))
    assert not r.accepts(vocab.encode("abc@example.net"))
    assert not r.accepts(vocab.encode("toolongname@test.org"))
    ch = build(Choice(["yes", "no", "maybe"]), tok4k)
    for o in ["yes", "no", "maybe"]:
        assert ch.accepts(vocab.encode(o))
    assert not ch.accepts(vocab.encode("yesno"))
    assert ch.accepts_prefix(vocab.encode("may"))


def test_min_tokens_is_a_lower_bound(tok4k, vocab):
    cases = [
        (Choice(["hello world"]), ["hello world"]),
        (Choice(["yes", "no"]), ["yes", "no"]),
        (Regex("x*"), [""]),
        (Regex(EMAIL), ["a@test.org"]),
        (JsonSchema(PERSON), ['{"name":"","age":0,"role":"user"}']),
        (Grammar(ARITH), ["1"]),
    ]
    for spec, outputs in cases:
        c = build(spec, tok4k)
        need = c.min_tokens()
        assert need <= min(len(vocab.encode(o)) for o in outputs), spec
    assert build(Regex("x*"), tok4k).min_tokens() == 0
    exact = build(Choice(["hello world"]), tok4k)
    assert exact.min_tokens() == len(vocab.encode("hello world"))  # entirely forced: exact
    assert build(JsonSchema(PERSON), tok4k).min_tokens() >= 2  # the forced head {"name": is counted
    with pytest.raises(CanvasTooSmallError, match="needs"):
        exact.session(exact.min_tokens() - 1)


# -- compilation errors and Lark dialect ---------------------------------------------------------------


def test_lark_syntax_error(tok4k):
    with pytest.raises(GrammarSyntaxError):
        build(Grammar('start: "a" (\n'), tok4k)


def test_lark_features_llguidance_lacks_are_rewritten(tok4k, vocab):
    # templates and priorities: Lark accepts them, llguidance's dialect does not; Lark expands them
    g = Grammar('start: _sep{item, ","}\n_sep{x, d}: x (d x)*\nitem.2: "a" | "b"\n')
    c = build(g, tok4k)
    assert c.lark_rewritten and c.warnings
    assert c.accepts(vocab.encode("a,b,a")) and not c.accepts(vocab.encode("a,"))
    # a start rule that is not called `start`
    e = build(Grammar('expr: "(" expr ")" | "x"\n', start="expr"), tok4k)
    assert e.accepts(vocab.encode("((x))")) and not e.accepts(vocab.encode("(x"))


def test_lark_rewrite_keeps_the_language(vocab):
    native = GrammarConstraint(Grammar(ARITH), vocab)
    assert not native.lark_rewritten
    rewritten = GrammarConstraint(Grammar(ARITH), vocab)
    from llguidance import LLMatcher

    rewritten.grammar = LLMatcher.grammar_from_lark(lark_to_llguidance(ARITH))
    rewritten._root = LLMatcher(vocab.ll, rewritten.grammar, log_level=0)
    for text in ["1+2", "a * (b - 3)", "-(x1 / 2.5) + 7", "1 +", "(1", "x y", "1e5*-x", "a\t+ b"]:
        assert native.accepts(vocab.encode(text)) == rewritten.accepts(vocab.encode(text)), text


def test_lark_constructs_the_engine_cannot_hold(tok4k):
    with pytest.raises(CompileError, match="_NL"):  # a terminal only a postlexer produces
        build(Grammar('start: "a" _NL?\n%declare _NL\n'), tok4k)
    with pytest.raises(CompileError, match="look-around"):
        build(Grammar('start: A\nA: /a(?=b)/ "b"\n'), tok4k)


def test_json_lenient_fallback(tok4k, vocab):
    schema = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 4}
    c = build(JsonSchema(schema), tok4k)
    assert c.lenient and any("uniqueItems" in w for w in c.warnings)
    assert c.accepts(vocab.encode("[1, 2]"))
    c2 = build(JsonSchema({"type": "object", "properties": {"a": {"type": "string"}},
                           "not": {"required": ["a"]}}), tok4k)
    assert c2.lenient and any("not" in w for w in c2.warnings)


def test_json_schema_errors(tok4k):
    with pytest.raises(SpecError, match="Unsatisfiable"):
        build(JsonSchema({"type": "integer", "minimum": 5, "maximum": 3}), tok4k)
    with pytest.raises(SpecError):
        build(JsonSchema({"$ref": "#/$defs/missing"}), tok4k)


# -- sessions ------------------------------------------------------------------------------------------


def _fill(canvas: torch.Tensor, forced: torch.Tensor) -> torch.Tensor:
    return torch.where(forced != MASK, forced, canvas)


def generate(c, T: int, seed: int, *, max_commit: int | None = None, canvas=None) -> torch.Tensor:
    """The sampler's loop in miniature: commit forced tokens, then a random-length prefix of the run."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    sess = c.session(T)
    canvas = torch.full((T,), MASK, dtype=torch.long) if canvas is None else canvas.clone()
    for _ in range(4 * T):
        canvas = _fill(canvas, sess.forced(canvas))
        if not (canvas == MASK).any():
            break
        logprobs = torch.randn(T, c.vocab.size, generator=g).log_softmax(-1)
        p = sess.propose(canvas, logprobs)
        assert p.prefix_only
        idx = p.eligible.nonzero().flatten()
        frontier = int((canvas == MASK).nonzero()[0])
        assert idx.numel() >= 1 and int(idx[0]) == frontier
        assert torch.equal(idx, torch.arange(frontier, frontier + idx.numel()))  # one contiguous run
        conf = p.confidence[idx]
        assert bool(((conf > 0) & (conf <= 1 + 1e-5)).all())
        k = rng.randint(1, idx.numel() if max_commit is None else min(max_commit, idx.numel()))
        canvas[idx[:k]] = p.tokens[idx[:k]]
    assert not (canvas == MASK).any()
    assert sess.feasible(canvas)
    return canvas


def _settings():
    return settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings()
@given(seed=st.integers(0, 2**31 - 1), T=st.sampled_from([12, 24, 48]))
def test_property_lark(arith, seed, T):
    canvas = generate(arith, T, seed)
    text = arith.vocab.decode(canvas.tolist())
    lark.Lark(ARITH).parse(text)
    assert arith.accepts(canvas.tolist())


@_settings()
@given(seed=st.integers(0, 2**31 - 1), T=st.sampled_from([40, 64]))
def test_property_json(tok4k, seed, T):
    c = build(JsonSchema(PERSON), tok4k)
    canvas = generate(c, T, seed)
    value = json.loads(c.vocab.decode(canvas.tolist()))
    jsonschema.validate(value, PERSON)
    assert c.accepts(canvas.tolist())


@_settings()
@given(seed=st.integers(0, 2**31 - 1))
def test_property_recursive_schema(tok4k, seed):
    c = build(JsonSchema(TREE), tok4k)
    canvas = generate(c, 32, seed)
    jsonschema.validate(json.loads(c.vocab.decode(canvas.tolist())), TREE)
    assert c.accepts(canvas.tolist())


@_settings()
@given(seed=st.integers(0, 2**31 - 1), T=st.sampled_from([8, 16, 32]))
def test_property_regex_and_choice(tok4k, seed, T):
    r = build(Regex(EMAIL), tok4k)
    canvas = generate(r, max(T, 20), seed)
    assert re.fullmatch(EMAIL, r.vocab.decode(canvas.tolist()))
    assert r.accepts(canvas.tolist())
    ch = build(Choice(["yes", "no", "maybe so"]), tok4k)
    canvas = generate(ch, T, seed)
    assert ch.vocab.decode(canvas.tolist()) in {"yes", "no", "maybe so"}


@_settings()
@given(seed=st.integers(0, 2**31 - 1), T=st.sampled_from([16, 40]))
def test_property_sql_like_grammar(tok4k, seed, T):
    # keywords are case-insensitive and identifiers never end by themselves: the endgame must close
    # the statement with " FROM x" before the canvas ends
    c = build(Grammar(SQL), tok4k)
    canvas = generate(c, T, seed)
    lark.Lark(SQL).parse(c.vocab.decode(canvas.tolist()))


def test_regex_digit_and_word_classes_are_ascii(tok4k, vocab):
    r = build(Regex(r"\d{2,4}-\w{1,3}"), tok4k)
    assert r.accepts(vocab.encode("12-a_Z")) and not r.accepts(vocab.encode("١٢-a"))
    for seed in range(4):
        text = vocab.decode(generate(r, 12, seed).tolist())
        assert re.fullmatch(r"[0-9]{2,4}-[0-9A-Za-z_]{1,3}", text), text


@pytest.mark.parametrize("seed", range(6))
def test_nested_output_finishes_before_the_canvas_ends(tok4k, seed):
    # random logprobs keep opening brackets; the endgame search must close them in time
    nested = Grammar('start: "(" start ")" | "x" | start start\n')
    c = build(nested, tok4k)
    canvas = generate(c, 16, seed, max_commit=2)
    lark.Lark(nested.text).parse(c.vocab.decode(canvas.tolist()))


def test_forced_tokens_and_eos_tail(tok4k, vocab):
    c = build(JsonSchema(PERSON), tok4k)
    T = 40
    s = c.session(T)
    canvas = torch.full((T,), MASK)
    f = s.forced(canvas)
    head = f[: int((f != MASK).sum())].tolist()
    assert head and (f[len(head):] == MASK).all()
    assert vocab.decode(head) and '{"name": '.startswith(vocab.decode(head))
    # a complete output: everything after it is forced EOS
    out = vocab.encode('{"name": "A", "age": 1, "role": "guest"}')
    canvas[: len(out)] = torch.tensor(out)
    f = s.forced(canvas)
    assert (f[len(out):] == vocab.eos_id).all() and (f[: len(out)] == MASK).all()
    # a committed EOS forces EOS on every later masked position
    ch = build(Choice(["yes", "no"]), tok4k)
    s2 = ch.session(6)
    cv = torch.tensor([*vocab.encode("no"), vocab.eos_id] + [MASK] * (6 - len(vocab.encode("no")) - 1))
    assert (s2.forced(cv)[len(vocab.encode("no")) + 1:] == vocab.eos_id).all()


def test_forced_runs_to_the_eos_tail_and_overflow_is_canvas_too_small(tok4k, vocab):
    c = build(Choice(["hello world"]), tok4k)
    n = len(vocab.encode("hello world"))
    f = c.session(n + 2).forced(torch.full((n + 2,), MASK))
    assert f[:n].tolist() == vocab.encode("hello world") and (f[n:] == vocab.eos_id).all()
    r = build(Regex("[ab] hello world"), tok4k)
    assert r.min_tokens() == 1  # only the head is counted; the forced rest shows up later
    s = r.session(3)
    cv = torch.tensor([vocab.encode("a")[0], MASK, MASK])
    with pytest.raises(DeadEnd, match="the canvas has 3"):  # after a committed token: a dead end
        s.forced(cv)


def test_propose_restricts_and_renormalises(arith, vocab):
    T = 10
    s = arith.session(T)
    canvas = torch.full((T,), MASK)
    plus = vocab.encode("+")[0]
    lp = torch.full((T, vocab.size), -20.0)
    lp[:, plus] = 0.0  # the model wants "+" everywhere: never allowed at the start
    one = vocab.encode("1")[0]
    lp[0, one] = -1.0
    p = s.propose(canvas, lp.log_softmax(-1))
    assert int(p.tokens[0]) == one
    allowed = s.allowed(canvas)
    assert allowed[0, one] and not allowed[0, plus] and not allowed[1:].any()
    # confidence is the probability renormalised over the allowed tokens
    row = lp[0].log_softmax(-1)
    expect = torch.exp(row[one] - torch.logsumexp(row[allowed[0]], 0))
    assert torch.isclose(p.confidence[0], expect, atol=1e-5)
    assert arith.accepts_prefix(p.tokens[p.eligible].tolist())


def test_run_stops_at_committed_tokens_and_checks_them(tok4k, vocab):
    c = build(JsonSchema(PERSON), tok4k)
    text = '{"name": "Ann", "age": 31, "role": "admin"}'
    ids = vocab.encode(text)
    T = len(ids) + 4
    full = torch.tensor(ids + [vocab.eos_id] * 4)
    assert c.session(T).feasible(full)
    # re-mask the name's content: the run fills the hole and must let the committed rest follow
    lo = text.index("Ann")
    offs = vocab.token_offsets(ids)
    hole = [i for i, (a, b) in enumerate(offs) if a >= lo and b <= lo + 3]
    assert hole
    holed = full.clone()
    holed[hole] = MASK
    for seed in range(5):
        done = generate(c, T, seed, canvas=holed)
        assert torch.equal(done[hole[-1] + 1:], full[hole[-1] + 1:])
        jsonschema.validate(json.loads(vocab.decode(done.tolist())), PERSON)


@pytest.mark.parametrize("seed", range(8))
def test_repairing_a_random_span_is_valid_or_a_clear_error(tok4k, vocab, seed):
    from structgen.errors import GenerationError

    c = build(JsonSchema(PERSON), tok4k)
    T = 40
    full = generate(c, T, seed)
    n = full.tolist().index(vocab.eos_id) if vocab.eos_id in full.tolist() else T
    rng = random.Random(seed)
    a = rng.randrange(0, n)
    holed = full.clone()
    holed[a: min(n, a + rng.randint(1, 5))] = MASK
    try:
        done = generate(c, T, seed + 100, canvas=holed)
    except GenerationError as e:  # a dead end: the generator backs off from e.position
        assert isinstance(e, DeadEnd) and e.position >= a and "cannot be finished" in str(e) or "follow" in str(e)
        return
    jsonschema.validate(json.loads(vocab.decode(done.tolist())), PERSON)


def test_sync_after_remask_and_violations(arith, vocab):
    T = 12
    s = arith.session(T)
    ids = vocab.encode("(1+2)*3")
    canvas = torch.full((T,), MASK)
    canvas[: len(ids)] = torch.tensor(ids)
    assert s.feasible(canvas)
    s.propose(canvas, torch.randn(T, vocab.size).log_softmax(-1))
    canvas[2:] = MASK  # the sampler re-masks a suffix: the matcher rolls back
    p = s.propose(canvas, torch.randn(T, vocab.size).log_softmax(-1))
    assert arith.accepts_prefix(p.tokens[: 2 + int(p.eligible.sum())].tolist())
    bad = torch.full((T,), MASK)
    bad[:2] = torch.tensor(vocab.encode("1)")[:2]) if len(vocab.encode("1)")) >= 2 else torch.tensor(
        [vocab.encode("1")[0], vocab.encode(")")[0]])
    assert not s.feasible(bad)
    with pytest.raises(ConstraintViolation, match="not allowed"):
        s.forced(bad)
    tail = torch.full((T,), MASK)
    tail[0], tail[1], tail[2] = vocab.encode("1")[0], vocab.eos_id, vocab.encode("1")[0]
    with pytest.raises(ConstraintViolation, match="after EOS"):
        s.propose(tail, torch.randn(T, vocab.size).log_softmax(-1))


def test_errors_are_structgen_errors(tok4k):
    c = build(Grammar(ARITH), tok4k)
    with pytest.raises(StructgenError):
        c.session(4).forced(torch.full((5,), MASK))
    with pytest.raises(StructgenError):
        c.session(4, max_run=0)


def test_bitmask_unpacking_agrees_on_both_paths(arith, vocab):
    import numpy as np

    from structgen.constraints.grammar import unpack_bitmasks

    m = arith._root.deep_copy()
    m.consume_tokens(vocab.encode("(1"))
    packed = np.stack([np.frombuffer(arith._root.compute_bitmask(), np.uint8),
                       np.frombuffer(m.compute_bitmask(), np.uint8)])
    a = unpack_bitmasks(packed, vocab.size, "cpu", on_device=False)
    b = unpack_bitmasks(packed, vocab.size, "cpu", on_device=True)
    assert a.shape == (2, vocab.size) and torch.equal(a, b)
    assert a[1, vocab.encode(")")[0]] and not a[0, vocab.encode(")")[0]]
    assert a[1, vocab.eos_id] == m.is_accepting()


def test_allowed_at_the_last_position_is_exact(arith, vocab):
    T = 3
    s = arith.session(T)
    canvas = torch.tensor([vocab.encode("(")[0], vocab.encode("1")[0], MASK])
    row = s.allowed(canvas)[2]
    assert row[vocab.encode(")")[0]] and not row[vocab.eos_id] and not row[vocab.encode("+")[0]]
    for t in row.nonzero().flatten().tolist():  # every token allowed there closes the output
        assert arith.accepts(canvas[:2].tolist() + [t])
    p = s.propose(canvas, torch.randn(T, vocab.size).log_softmax(-1).to(torch.bfloat16))
    assert arith.accepts(canvas[:2].tolist() + [int(p.tokens[2])])


def test_forced_tokens_are_not_written_into_a_segment_they_break(tok4k, vocab):
    c = build(Choice(["hello world"]), tok4k)
    ids = vocab.encode("hello world")
    T = len(ids) + 1
    canvas = torch.full((T,), MASK)
    canvas[len(ids) - 1] = vocab.encode("x")[0]  # committed where the forced text needs another token
    assert (c.session(T).forced(canvas) == MASK).all()
    canvas[len(ids) - 1] = ids[-1]  # the right token: the forced run fills the hole before it
    f = c.session(T).forced(canvas)
    assert f[: len(ids) - 1].tolist() == ids[:-1] and f[-1] == vocab.eos_id


def test_window_clips_the_run_and_noise_steers_the_choice(arith, vocab):
    T = 12
    s = arith.session(T)
    canvas = torch.full((T,), MASK)
    lp = torch.randn(T, vocab.size, generator=torch.Generator().manual_seed(3)).log_softmax(-1)
    p = s.propose(canvas, lp, window=(0, 4))
    assert p.eligible[:4].any() and not p.eligible[4:].any()
    one, two = vocab.encode("1")[0], vocab.encode("2")[0]
    noise = torch.zeros(T, vocab.size)
    noise[0, one] = 100.0
    assert int(s.propose(canvas, lp, noise=noise).tokens[0]) == one
    noise[0, two] = 200.0
    p = s.propose(canvas, lp, noise=noise)
    assert int(p.tokens[0]) == two
    allowed0 = s.allowed(canvas)[0]
    expect = torch.exp(lp[0, two] - torch.logsumexp(lp[0][allowed0], 0))  # confidence ignores the noise
    assert torch.isclose(p.confidence[0], expect, atol=1e-5)
    assert (s.forced(canvas, window=(0, 4)) == s.forced(canvas)).all()


NESTED = {"type": "object", "required": ["a", "b"],
          "properties": {"a": {"type": "string"},
                         "b": {"type": "object", "required": ["c", "d", "e"],
                               "properties": {k: {"type": "string"} for k in "cde"}}}}


@pytest.mark.parametrize("seed", range(4))
def test_required_members_and_formats_finish_in_a_tight_canvas(tok4k, seed):
    # the shortest output of NESTED is 25 tokens: strings must be closed early enough to fit the rest
    c = build(JsonSchema(NESTED), tok4k)
    assert c.min_tokens() <= 25 <= c.shortest_known()
    value = json.loads(c.vocab.decode(generate(c, 32, seed, max_commit=2).tolist()))
    jsonschema.validate(value, NESTED)
    email = {"type": "string", "format": "email"}
    e = build(JsonSchema(email), tok4k)
    text = e.vocab.decode(generate(e, 24, seed, max_commit=2).tolist())
    assert "@" in json.loads(text) and e.accepts(e.vocab.encode(text))


def test_the_run_stops_where_the_sampler_stops_committing(arith):
    """``propose(stop_below=, run_limit=)`` (the commit policy's ``run_hints``) ends the run at the first
    token below the threshold, or after k tokens: the policy commits exactly what it commits from the
    whole run, and the rest is never proposed (nor steered through the endgame searches)."""
    from structgen.sampler.policy import CommitPolicy

    T = 24
    g = torch.Generator().manual_seed(5)
    canvas = torch.full((T,), MASK, dtype=torch.long)
    shortened = 0
    for _ in range(6):
        lp = (3 * torch.randn(T, arith.vocab.size, generator=g)).log_softmax(-1)
        full = arith.session(T).propose(canvas, lp)
        for policy in (CommitPolicy(T, threshold=0.5), CommitPolicy(T, threshold=None, tokens_per_step=3)):
            cut = arith.session(T).propose(canvas, lp, **policy.run_hints())
            n = int(cut.eligible.sum())
            shortened += n < int(full.eligible.sum())
            picked = policy.choose(full)
            assert torch.equal(policy.choose(cut), picked)
            assert torch.equal(cut.tokens[picked], full.tokens[picked])
            assert torch.equal(cut.confidence[:n], full.confidence[:n])
            if policy.tokens_per_step is None:
                assert bool((cut.confidence[: n - 1] >= 0.5).all())
            else:
                assert n <= 3
    assert shortened >= 6
