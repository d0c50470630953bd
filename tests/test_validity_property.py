"""The validity property: random logits driven through real constraints never release an invalid result.

Every *released* result (``Generator.generate(..., strict=True)`` returned, so ``valid`` is True) must

* parse with ``json.loads`` (JSON specs) and equal ``result.value``;
* validate with ``jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER)``;
* be accepted, token by token, by the compiled constraint: ``constraint.accepts(result.tokens)``;
* decode to ``result.text``, with nothing but EOS after the output.

Drivers: ``RandomLogits`` over the 4k test tokenizer, many seeds, several block lengths, both commit
policies (Fast-dLLM ``threshold`` and fixed ``tokens_per_step``), greedy and sampled, through

* a deterministic sample of ../shared/data/maskbench (``MASKBENCH_SAMPLE``, 41 files: in sha1 order per
  subset, skipping those whose compile alone took over a second here, since compile cost is the benchmarks'
  job), with the engine chosen automatically (automaton, grammar, or grammar with keywords llguidance
  ignores: "grammar-lenient");
* random schemas from ``tests/schema_strategies.py`` (hypothesis) with ``engine="auto"``, and the same kind
  of schemas through both engines forced;
* fixed schemas through both engines forced, a recursive schema (grammar engine), Regexes and a Choice
  through both engines, and a Lark grammar of arithmetic expressions (results parsed again with lark).

A ``GenerationError`` (the validators kept failing after the repair rounds) is allowed, since random logits
can keep violating keywords a constraint does not encode (``uniqueItems``, ``multipleOf``, ``not``,
formats...), but it is counted: for random schemas that use only keywords the automaton holds exactly
(``schema_strategies.inexact_keywords`` is empty) there must be none; over the maskbench files compiled
exactly it must be rare. A grammar-engine run that cannot finish inside the canvas (``CanvasTooSmallError``
after model calls, "stuck") is counted too; the automaton must never end that way. ``test_zz_report`` prints
the counts and bounds the rates.

Bugs these properties found are pinned by strict xfails at the end of the file (the fixes belong in
structgen/constraints/): the grammar engine running past the canvas (nested objects, ``format: email``), the
automaton's inexact ``date-time`` regex, and property names outlines-core does not escape.

Hypothesis runs derandomized (the same examples every run, as CI needs). ``STRUCTGEN_SLOW=1`` multiplies the
examples by 10 and adds the first 200 maskbench files in sha1 order; ``STRUCTGEN_PROPERTY_RANDOM=1`` explores
new examples.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import structgen as sg

from schema_strategies import features, inexact_keywords, json_schemas, sampler_settings

SLOW = os.environ.get("STRUCTGEN_SLOW") == "1"
RANDOM = os.environ.get("STRUCTGEN_PROPERTY_RANDOM") == "1"
SCALE = 10 if SLOW else 1
CANVAS_BUDGET = 192  # the largest canvas a case may use; schemas needing more are skipped


def hyp(n: int):
    """Hypothesis settings: ``n`` examples (x10 with STRUCTGEN_SLOW), derandomized unless asked not to."""
    return settings(max_examples=n * SCALE, deadline=None, derandomize=not RANDOM, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


# ------------------------------------------------------------------------------------------- bookkeeping
#: (group, engine, outcome) -> count; outcome is "released", "generation_error" or "stuck"
TALLY: Counter = Counter()
#: (group, engine, outcome) -> notes on the GenerationErrors and stuck runs, for the report
FAILURES: dict = {}
SLOWEST: list = []  # (seconds, description)


class Stuck(Exception):
    """The grammar engine could not finish inside the canvas (CanvasTooSmallError after model calls)."""


def canvas_for(constraint, wanted: int) -> int:
    """A canvas of ``wanted`` positions, or more when the shortest output needs it (capped at the budget)."""
    return min(CANVAS_BUDGET, max(wanted, constraint.min_tokens() + 16))


def generate_checked(gen: sg.Generator, spec, max_tokens: int, *, group: str, schema: dict | None = None,
                     engine: str = "auto", **kw):
    """Run one generation and check every released result. Returns the Result, or the exception counted
    (``GenerationError``; ``Stuck`` for a grammar-engine canvas overrun)."""
    constraint = gen.compile(spec, engine)
    label = engine_label(constraint)
    t0 = time.perf_counter()
    try:
        r = gen.generate("Fill in the answer.", spec, max_tokens, engine=engine, **kw)
    except sg.GenerationError as e:
        _count(group, label, "generation_error", f"{spec!r} {kw}: {str(e)[:200]}")
        return e
    except sg.CanvasTooSmallError as e:
        # min_tokens() <= max_tokens was checked before the call, so this came after model calls
        assert constraint.min_tokens() <= max_tokens
        assert constraint.engine == "grammar", f"the automaton is exact on length, yet: {e}"
        _count(group, label, "stuck", f"{spec!r} {kw}: {str(e)[:200]}")
        return Stuck(str(e))
    finally:
        dt = time.perf_counter() - t0
        SLOWEST.append((round(dt, 2), f"{group} {label} {spec!r} T={max_tokens} {kw}"))
        SLOWEST.sort(reverse=True)
        del SLOWEST[5:]
    check_released(r, spec, constraint, gen, schema)
    _count(group, label, "released")
    return r


def engine_label(constraint) -> str:
    """"automaton", "grammar", or "grammar-lenient" (llguidance ignored keywords it does not implement,
    so only the validators enforce them: GenerationErrors are expected there)."""
    if constraint.engine == "grammar" and getattr(constraint, "lenient", False):
        return "grammar-lenient"
    return constraint.engine


def _count(group: str, engine: str, outcome: str, note: str | None = None) -> None:
    TALLY[(group, engine, outcome)] += 1
    if note is not None:
        FAILURES.setdefault((group, engine, outcome), []).append(note)


def check_released(r: sg.Result, spec, constraint, gen: sg.Generator, schema: dict | None) -> None:
    """The validity property for one released result."""
    where = f"{spec!r} engine={r.engine}: {r.text!r}"
    assert r.valid and r.errors == [], where
    assert r.engine == constraint.engine, where
    vocab = gen.vocab
    assert r.text == vocab.decode(r.tokens), where
    assert all(t == vocab.eos_id for t in r.tokens[r.n_output_tokens:]), f"non-EOS after the output: {where}"
    assert constraint.accepts(r.tokens), f"the constraint rejects a released result: {where}"
    assert constraint.accepts(r.tokens[: r.n_output_tokens]), where
    if schema is not None:
        value = json.loads(r.text)
        assert value == r.value or (value != value), where  # NaN never equals itself
        errors = list(Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
                      .iter_errors(value))
        assert not errors, f"released result fails jsonschema ({errors[0].message}): {where}"


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """One intra-op thread for this module: the tensors are small, and on a shared 2-core machine torch's
    thread pool makes each random-logits step several times slower (the results do not change)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def gen(tok4k):
    return sg.Generator(sg.models.RandomLogits(tok4k, seed=0))


def reseeded(gen: sg.Generator, seed: int) -> sg.Generator:
    gen.model.reseed(seed)
    return gen


# ------------------------------------------------------------------------------------------- maskbench
#: Deterministic sample: files in sha1(name) order within each subset, 2-4 per subset (more for the big
#: ones), skipping files whose compile alone took over a second on the development machine.
MASKBENCH_SAMPLE = [
    "BFCL_multiple_28.json",
    "BFCL_multiple_162.json",
    "BFCL_parallel_129.json",
    "BFCL_parallel_199.json",
    "BFCL_simple_6.json",
    "BFCL_simple_217.json",
    "Github_easy---o58600.json",
    "Github_easy---o12087.json",
    "Github_easy---o33784.json",
    "Github_hard---o63369.json",
    "Github_hard---o74446.json",
    "Github_hard---o9922.json",
    "Github_hard---o6360.json",
    "Github_medium---o89688.json",
    "Github_medium---o15330.json",
    "Github_medium---o21486.json",
    "Glaiveai2K---create_invoice_29d1f29d.json",
    "Glaiveai2K---calculate_area_51809201.json",
    "Glaiveai2K---schedule_meeting_c300e0b7.json",
    "Handwritten---oneofpr4.json",
    "Handwritten---allany17.json",
    "Handwritten---oneofanyofitc8.json",
    "Handwritten---allany14.json",
    "JME_85.json",
    "JME_89.json",
    "JME_19.json",
    "JsonSchemaStore---v0.json",
    "JsonSchemaStore---stripe-app.schema.json",
    "JsonSchemaStore---mtaext.json",
    "Kubernetes---kb_508_Normalized.json",
    "Kubernetes---kb_701_Normalized.json",
    "Kubernetes---kb_668_Normalized.json",
    "MCPspec---ClientRequest.json",
    "MCPspec---CompleteRequest.json",
    "Snowplow---sp_216_Normalized.json",
    "Snowplow---sp_284_Normalized.json",
    "Snowplow---sp_153_Normalized.json",
    "Synthesized---draft2019_09_nonvalid_allOf_id9_subschema1_not_2.json",
    "Synthesized---draft2019_09_nonvalid_multipleOf_id5_subschema1_not_2.json",
    "WashingtonPost---wp_92_Normalized.json",
    "WashingtonPost---wp_70_Normalized.json",
]


#: Compiles that ran past 30 s (and up to 4 GB) on the development machine: left out of the slow run too.
COMPILE_TOO_SLOW = {
    "Github_hard---o14390.json", "Github_hard---o21394.json", "Github_hard---o82339.json",
    "Github_medium---o9944.json", "Github_medium---o82351.json", "Github_easy---o9842.json",
    "Snowplow---sp_381_Normalized.json", "Snowplow---sp_82_Normalized.json",
}


def maskbench_cases() -> list[str]:
    """The sample; with STRUCTGEN_SLOW=1, the first 200 files in sha1 order as well."""
    if not SLOW:
        return MASKBENCH_SAMPLE
    root = Path(os.environ.get("STRUCTGEN_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    folder = root / "data" / "maskbench"
    if not folder.exists():
        return MASKBENCH_SAMPLE
    names = sorted((p.name for p in folder.iterdir() if p.name != "README.md"),
                   key=lambda n: hashlib.sha1(n.encode()).hexdigest())
    extra = [n for n in names[:200] if n not in COMPILE_TOO_SLOW and n not in MASKBENCH_SAMPLE]
    return MASKBENCH_SAMPLE + extra


MASKBENCH_RUNS = [  # per file: both commit policies, several block lengths, greedy and sampled
    dict(block_length=16, threshold=0.9, tokens_per_step=None),
    dict(block_length=8, threshold=None, tokens_per_step=2),
    dict(block_length=64, threshold=0.5, tokens_per_step=None, temperature=1.0),
]


@pytest.mark.parametrize("name", maskbench_cases())
def test_maskbench_released_results_validate(gen, data_dir, name):
    path = data_dir / "maskbench" / name
    schema = json.loads(path.read_text())["schema"]
    try:
        spec = sg.JsonSchema(schema)
        constraint = gen.compile(spec)
    except sg.StructgenError as e:
        pytest.skip(f"does not compile: {type(e).__name__}: {str(e)[:120]}")
    if constraint.min_tokens() > CANVAS_BUDGET:
        pytest.skip(f"shortest output needs {constraint.min_tokens()} tokens > {CANVAS_BUDGET}")
    T = canvas_for(constraint, 64)
    base = int(hashlib.sha1(name.encode()).hexdigest()[:6], 16)
    for i, kw in enumerate(MASKBENCH_RUNS):
        seed = base + i
        generate_checked(reseeded(gen, seed), spec, T, group="maskbench", schema=schema, seed=seed, **kw)


# ------------------------------------------------------------------------------------- random schemas
def _compile_or_fail(gen, spec, engine="auto"):
    try:
        return gen.compile(spec, engine)
    except sg.StructgenError as e:  # every generated schema is supported: a compile error is a bug
        pytest.fail(f"{spec!r} does not compile with engine={engine}: {type(e).__name__}: {e}")


@hyp(200)
@given(schema=json_schemas(max_depth=3), kw=sampler_settings(), seed=st.integers(0, 2**20),
       size=st.sampled_from([48, 64, 96, 128]))
def test_generated_schemas_release_only_valid_output(gen, schema, kw, seed, size):
    spec = sg.JsonSchema(schema)
    constraint = _compile_or_fail(gen, spec)
    assume(constraint.min_tokens() <= CANVAS_BUDGET)
    out = generate_checked(reseeded(gen, seed), spec, canvas_for(constraint, size), group="generated",
                           schema=schema, **kw)
    if not inexact_keywords(schema):
        assert not isinstance(out, sg.GenerationError), (
            f"GenerationError on a schema the automaton holds exactly ({sorted(features(schema))}): {out}")


@hyp(60)
@given(schema=json_schemas(max_depth=2), kw=sampler_settings(), seed=st.integers(0, 2**20))
def test_generated_schemas_through_both_engines(gen, schema, kw, seed):
    """The same schema, the automaton and the grammar engine forced, the same seed and settings."""
    spec = sg.JsonSchema(schema)
    a = _compile_or_fail(gen, spec, "automaton")
    g = _compile_or_fail(gen, spec, "grammar")
    assert a.engine == "automaton" and g.engine == "grammar"
    assume(max(a.min_tokens(), g.min_tokens()) <= CANVAS_BUDGET)
    T = canvas_for(a, 64)
    exact = not inexact_keywords(schema)
    for engine in ("automaton", "grammar"):
        out = generate_checked(reseeded(gen, seed), spec, T, group="both-engines", schema=schema,
                               engine=engine, **kw)
        if isinstance(out, sg.Result):
            assert out.engine == engine
        elif exact and isinstance(out, sg.GenerationError):
            pytest.fail(f"GenerationError with engine={engine} on an exactly held schema: {out}")


# --------------------------------------------------------------------- fixed schemas, both engines forced
FIXED_SCHEMAS = {
    "person": {"type": "object", "additionalProperties": False, "required": ["name", "age", "id"],
               "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},
                              "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 131},
                              "id": {"type": "string", "format": "uuid"},
                              "born": {"type": "string", "format": "date"},
                              "tags": {"type": "array", "items": {"enum": ["a\"b", "c\\d", "é", 7, None]},
                                       "maxItems": 3}}},
    "event": {"type": "object", "required": ["kind", "at"],
              "properties": {"kind": {"const": "meeting"},
                             "at": {"anyOf": [{"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"},
                                              {"type": "integer", "minimum": -5, "maximum": 5}]},
                             "ok": {"type": "boolean"}, "none": {"type": "null"},
                             "price": {"type": "number", "minimum": 0}}},
    "matrix": {"type": "array", "minItems": 1, "maxItems": 3,
               "items": {"type": "array", "items": {"type": "integer", "exclusiveMinimum": -10,
                                                    "exclusiveMaximum": 10}, "minItems": 2, "maxItems": 2}},
}
# recursive: the automaton cannot hold it, auto picks the grammar engine
TREE = {"type": "object", "required": ["v"], "additionalProperties": False,
        "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 99},
                       "kids": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}}}

POLICIES = [
    dict(block_length=4, threshold=None, tokens_per_step=1),
    dict(block_length=16, threshold=None, tokens_per_step=3),
    dict(block_length=32, threshold=0.9, tokens_per_step=None),
    dict(block_length=96, threshold=0.3, tokens_per_step=None, temperature=1.0),
]


@pytest.mark.parametrize("engine", ["automaton", "grammar"])
@pytest.mark.parametrize("name", sorted(FIXED_SCHEMAS))
def test_fixed_schemas_with_each_engine_forced(gen, name, engine):
    schema = FIXED_SCHEMAS[name]
    spec = sg.JsonSchema(schema)
    c = _compile_or_fail(gen, spec, engine)
    assert c.engine == engine
    T = canvas_for(c, 80)
    for i, kw in enumerate(POLICIES):
        seed = 1000 * i + len(name)
        out = generate_checked(reseeded(gen, seed), spec, T, group="fixed", schema=schema, engine=engine,
                               seed=seed, **kw)
        if isinstance(out, sg.Result):
            assert out.engine == engine


def test_recursive_schema_goes_to_the_grammar_engine(gen):
    spec = sg.JsonSchema(TREE)
    assert gen.compile(spec).engine == "grammar"
    for i, kw in enumerate(POLICIES):
        out = generate_checked(reseeded(gen, 77 + i), spec, 64, group="fixed", schema=TREE, **kw)
        assert not isinstance(out, sg.GenerationError), out


# ----------------------------------------------------------------------------- Regex, Choice, Lark
REGEXES = [
    r"[a-z]{3}-[0-9]{2}",
    r"(\+|-)?[0-9]{1,4}(\.[0-9]{1,2})?",
    r"[A-Z][a-z]{1,6}( [A-Z][a-z]{1,6}){0,2}",
    r"(0x[0-9a-f]{2,4}|[01]{3,8})",
]


@pytest.mark.parametrize("engine", ["automaton", "grammar"])
@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_results_fullmatch(gen, pattern, engine):
    import re

    spec = sg.Regex(pattern)
    c = _compile_or_fail(gen, spec, engine)
    for i, kw in enumerate(POLICIES[:3]):
        out = generate_checked(reseeded(gen, 31 * i + len(pattern)), spec, canvas_for(c, 24), group="regex",
                               engine=engine, **kw)
        assert isinstance(out, sg.Result), f"{pattern!r} {engine} {kw}: {out}"
        assert re.fullmatch(pattern, out.text), out.text


CHOICES = ["a", "ab", "abc", "b c", "naïve", "日本", "{\"json\": true}", "yes", "no"]


@pytest.mark.parametrize("engine", ["automaton", "grammar"])
def test_choice_results_are_options(gen, engine):
    spec = sg.Choice(CHOICES)
    c = _compile_or_fail(gen, spec, engine)
    seen = set()
    for i in range(12):
        kw = POLICIES[i % len(POLICIES)]
        out = generate_checked(reseeded(gen, 500 + i), spec, canvas_for(c, 16), group="choice", engine=engine,
                               seed=i, **{**kw, "temperature": 1.0})
        assert isinstance(out, sg.Result), out
        assert out.text in CHOICES
        seen.add(out.text)
    assert len(seen) >= 3, f"random logits should reach several options, saw {seen}"


ARITH = r"""
start: expr
?expr: expr "+" term | expr "-" term | term
?term: term "*" factor | term "/" factor | factor
?factor: NUMBER | "(" expr ")" | "-" factor
NUMBER: /[0-9]{1,3}(\.[0-9]{1,2})?/
"""


def test_lark_arithmetic_results_parse(gen):
    import lark

    parser = lark.Lark(ARITH, start="start", parser="earley")
    spec = sg.Grammar(ARITH)
    c = _compile_or_fail(gen, spec)
    assert c.engine == "grammar"
    with pytest.raises(sg.CompileError):
        gen.compile(spec, "automaton")
    texts = []
    for i in range(10):
        kw = POLICIES[i % len(POLICIES)]
        out = generate_checked(reseeded(gen, 900 + i), spec, [24, 48, 64][i % 3], group="lark", seed=i, **kw)
        assert isinstance(out, sg.Result), out
        parser.parse(out.text)  # raises on anything the grammar does not derive
        texts.append(out.text)
    assert any(op in t for t in texts for op in "+-*/("), texts


# ------------------------------------------------------------------------------- known engine bugs
# Minimal reproductions of bugs these properties found. Each is an xfail (strict: it turns into a failure
# once fixed, so the mark gets removed); the fixes belong in structgen/constraints/, not in this file.
NESTED = {"type": "object", "required": ["a", "b"],
          "properties": {"a": {"type": "string"},
                         "b": {"type": "object", "required": ["c", "d", "e"],
                               "properties": {k: {"type": "string"} for k in "cde"}}}}


# Found by these properties and fixed in the grammar engine (endgame search): random logits grew a
# string until it was too late to close the required members.
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grammar_engine_finishes_nested_object_inside_the_canvas(gen, seed):
    spec = sg.JsonSchema(NESTED)
    assert gen.compile(spec, "automaton").min_tokens() == 25
    r = reseeded(gen, seed).generate("x", spec, 32, engine="grammar")
    check_released(r, spec, gen.compile(spec, "grammar"), gen, NESTED)


# Found by these properties and fixed in the grammar engine: format email never finished.
@pytest.mark.parametrize("seed", [0, 1])
def test_grammar_engine_email_finishes(gen, seed):
    schema = {"type": "string", "format": "email"}
    r = reseeded(gen, seed).generate("x", sg.JsonSchema(schema), 24, engine="grammar")
    check_released(r, sg.JsonSchema(schema), gen.compile(sg.JsonSchema(schema), "grammar"), gen, schema)


# Found by these properties and fixed (structgen/constraints/placeholders.py): outlines-core's
# date-time regex allowed any year length and no UTC offset.
@pytest.mark.parametrize("seed", [0, 1])
def test_automaton_date_time_is_exact(gen, seed):
    schema = {"type": "string", "format": "date-time"}
    spec = sg.JsonSchema(schema)
    r = reseeded(gen, seed).generate("x", spec, 32, engine="automaton")
    check_released(r, spec, gen.compile(spec, "automaton"), gen, schema)


# Found by these properties and fixed (placeholders.py): outlines-core wrote property names into the
# regex without JSON escaping.
@pytest.mark.parametrize("name", ['quo"te', "back\\slash", "tab\tbed"])
def test_automaton_escapes_property_names(gen, name):
    schema = {"type": "object", "properties": {name: {"type": "null"}}, "required": [name]}
    spec = sg.JsonSchema(schema)
    r = reseeded(gen, 0).generate("x", spec, 16, engine="automaton")
    check_released(r, spec, gen.compile(spec, "automaton"), gen, schema)


# ------------------------------------------------------------------------------------------- report
def test_zz_report(capsys):
    """Print the counts of this run and bound the failure rates (runs last: the file's tests are ordered)."""
    if not TALLY:
        pytest.skip("no generation ran in this session")
    groups = sorted({(g, e) for g, e, _ in TALLY})
    lines = ["validity property: released / GenerationError / stuck (grammar engine past the canvas)"]
    for g, e in groups:
        rel, ge, st_ = (TALLY[(g, e, o)] for o in ("released", "generation_error", "stuck"))
        lines.append(f"  {g:13s} {e:15s} {rel:5d} {ge:5d} {st_:5d}")
        for o in ("generation_error", "stuck"):
            for note in FAILURES.get((g, e, o), [])[:3]:
                lines.append(f"      {o}: {note[:160]}")
    lines.append("  slowest generations: " + "; ".join(f"{s}s {d[:90]}" for s, d in SLOWEST[:3]))
    with capsys.disabled():
        print("\n" + "\n".join(lines))

    def n(group, engines, outcome):
        return sum(TALLY[(group, e, outcome)] for e in engines)

    exact = ("automaton", "grammar")  # lenient grammar compiles are reported, not bounded
    runs = sum(n("maskbench", exact, o) for o in ("released", "generation_error", "stuck"))
    if runs:
        ge = n("maskbench", exact, "generation_error")
        assert ge <= max(3, runs // 10), f"maskbench: {ge} GenerationErrors in {runs} runs"
        grammar_runs = sum(TALLY[("maskbench", e, o)] for e in ("grammar", "grammar-lenient")
                           for o in ("released", "generation_error", "stuck"))
        stuck = n("maskbench", ("grammar", "grammar-lenient"), "stuck")
        # known grammar-engine bug (see the xfails above): bounded loosely until it is fixed
        assert stuck <= max(3, grammar_runs // 3), f"maskbench: {stuck} of {grammar_runs} grammar runs stuck"
