"""The alert-rule DSL end to end: ``grammars/alerts.lark`` on both engines (llguidance and Lark's Earley
parser), the semantic validator and its spans, the AST and canonical form, the catalog's errors, random-logits
generation through ``alerts_spec`` (narrowed and not), the CLI, and the example script."""

from __future__ import annotations

import json
import random
import re
import runpy
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import structgen as sg
from structgen.cli import app
from structgen.validators import Issue, LarkValidator, UserValidator, validators_for
from structgen.validators.alerts import (GRAMMAR_PATH, AlertCatalog, AlertRule, AlertRulesValidator, And,
                                         Comparison, Duration, LabelMatch, Metric, Not, Notify, Or, Page,
                                         Threshold, alerts_spec, parse_rule, tidy_durations)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "alerts"
CATALOG = EXAMPLES / "catalog.json"
GRAMMAR = GRAMMAR_PATH.read_text()
BRIEF = 'when avg(cpu.usage) > 90 for 5m and host in ["web-1", "web-2"] then notify "#ops" severity high'

# Syntactically and semantically valid against examples/alerts/catalog.json. The second field says whether
# the grammar narrowed to that catalog holds it too (it offers thresholds in the metric's own unit with at
# most two decimals, durations in whole units: 1-59s, 1-59m, 1-23h, days).
VALID = [
    (BRIEF, True),
    ('when cpu.usage > 90 then page "ops"', True),
    ('when avg(cpu.usage[10m]) > 90% and host in ["web-1", "web-2"] for 5m then notify "#ops" severity high', True),
    ('when p99(http.latency[5m]) >= 250ms then notify "#alerts" severity critical, page "web"', True),
    ('when p95(http.latency) > 1.5s for 10m then page "web"', False),  # seconds converted to the metric's ms
    ('when count(http.requests.5xx[1m]) > 10 then notify "#alerts" severity medium', True),
    ('when sum(http.requests.5xx[1h]) >= 500 and env == "prod" then page "web"', True),
    ('when mem.free < 512MB or disk.free < 10GB then notify "#ops" severity high', True),
    ('when mem.free < 0.5GB then notify "#ops" severity low', False),  # GB converted to the metric's MB
    ('when not host == "db-1" and cpu.usage > 95 then page "ops"', True),
    ('when not (cpu.usage < 50 or mem.used < 50) then notify "#ops" severity medium', True),
    ('when (cpu.usage > 80 and mem.used > 80) or queue.depth > 10000 for 15m then page "ops", '
     'notify "#ops" severity high', True),
    ('when region != "eu-west" and max(cpu.usage[30s]) == 100 then notify "#ops" severity low', True),
    ('when host not in ["web-3", "db-1"] and min(mem.used[2h]) > 75.25 then notify "#ops" severity medium', True),
    ('when queue.depth > 5000 for 1d then page "dba"', True),
    ('when http.requests.5xx > 0 then notify "#alerts" severity low', True),
    ('when avg(queue.depth[1d]) >= 100000 then page "ops"', True),
    ('when cpu.usage > 90 for 5m or mem.used > 90 then page "ops"', True),
    ('when cpu.usage > 90 for 30s and not env == "staging" then notify "#ops" severity critical', True),
    ('when not not cpu.usage > 90 then page "ops"', True),
    ('when ((cpu.usage > 90)) then page "ops"', True),
    ('when env in ["prod"] and region in ["eu-west", "us-east"] and host != "web-3" then '
     'notify "#db" severity high', True),
    ('when p99(http.latency) < 1000 and p95(http.latency) > 500 then notify "#alerts" severity medium, '
     'notify "#ops" severity low', True),
    ('when disk.free <= 1.25GB for 2h then page "dba", page "ops"', True),
    ('when mem.used >= 99.999 then page "ops"', False),  # three decimals
    ('when sum(mem.free) > 0 then page "ops"', True),
    ('when cpu.usage != 50 then page "ops"', True),
    ('when count(cpu.usage[5m]) < 3 for 90s then notify "#ops" severity high', False),  # 90s is not tidy
    ('when avg(cpu.usage[1d]) > 50 and (host == "web-1" or host == "web-2") then page "web"', True),
]

# Not in the language: the constraint rejects them, Lark does not parse them, the validator stays silent.
SYNTAX_ERRORS = [
    'when cpu.usage > 90  then page "ops"',  # two spaces
    'when cpu.usage > 90 then page "ops" ',  # trailing space
    ' when cpu.usage > 90 then page "ops"',  # leading space
    'when cpu.usage>90 then page "ops"',
    'WHEN cpu.usage > 90 then page "ops"',
    'when cpu.usage > 90 then',
    'when cpu.usage > 90 for 5m for 5m then page "ops"',
    'when cpu.usage > 90 for 5m and mem.used > 5 for 5m then page "ops"',  # one hold time per rule
    'when cpu.usage > 090 then page "ops"',
    'when host in [] then page "ops"',
    'when host in ["web-1","web-2"] then page "ops"',
    'when cpu.usage > 90 then page ""',
    'when cpu.usage > 90 then page "a  b"',
    'when cpu > 90 then page "ops"',  # a metric name has a dot; `cpu` is a label key
    'when avg(cpu.usage[5]) > 90 then page "ops"',
    'when cpu.usage > 90 for 5 minutes then page "ops"',
    'when cpu.usage > 90 then notify "#ops"',
    'when cpu.usage > 90 then notify "#ops" severity urgent',
    'when cpu.usage > 90 and then page "ops"',
    'when (cpu.usage > 90 then page "ops"',
    'when median(cpu.usage) > 90 then page "ops"',
    'when cpu.usage > 90\nthen page "ops"',
    'when cpu.usage > 90 then page "ops",page "dba"',
    'when host == web-1 then page "ops"',
    'when cpu.usage > 1e5 then page "ops"',
    'when cpu.usage > 90 then page "o\\"ps"',
]

# In the language, but wrong for the catalog: (text, the offending part the issue must span, which occurrence
# of it (0: first, -1: last), a word of the message, whether the narrowed grammar already excludes it).
SEMANTIC_ERRORS = [
    ('when cpu.usge > 90 then page "ops"', "cpu.usge", 0, "unknown metric", True),
    ('when cpu.usage > 90 then notify "#opz" severity high', "#opz", 0, "unknown channel", True),
    ('when cpu.usage > 90 then page "sre"', "sre", 0, "unknown team", True),
    ('when hots == "web-1" and cpu.usage > 90 then page "ops"', "hots", 0, "unknown label key", True),
    ('when host == "web-9" and cpu.usage > 90 then page "ops"', "web-9", 0, "unknown value", True),
    ('when host in ["web-1", "web-7"] then page "ops"', "web-7", 0, "unknown value", True),
    ('when region == "web-1" then page "ops"', "web-1", 0, "unknown value", True),  # a host, not a region
    ('when cpu.usage > 150 then page "ops"', "150", 0, "outside the range", True),
    ('when mem.free < -5 then page "ops"', "-5", 0, "outside the range", True),
    ('when cpu.usage > 100% then page "ops"', "cpu.usage > 100%", 0, "never be true", False),
    ('when http.requests.5xx < 0 then page "ops"', "http.requests.5xx < 0", 0, "never be true", False),
    ('when sum(cpu.usage) < 0 then page "ops"', "sum(cpu.usage) < 0", 0, "never be true", False),
    ('when cpu.usage >= 0 then page "ops"', "cpu.usage >= 0", 0, "always true", False),
    ('when avg(cpu.usage[0s]) > 90 then page "ops"', "0s", 0, "zero", True),
    ('when avg(cpu.usage[2d]) > 90 then page "ops"', "2d", 0, "longer than the limit", True),
    ('when cpu.usage > 90 for 0m then page "ops"', "0m", 0, "zero", True),
    ('when cpu.usage > 90 for 8d then page "ops"', "8d", 0, "longer than the limit", True),
    ('when cpu.usage > 90 then page "ops", page "ops"', 'page "ops"', -1, "paged twice", True),
    ('when cpu.usage > 90 then notify "#ops" severity low, notify "#ops" severity high',
     'notify "#ops" severity high', 0, "notified twice", True),
    ('when cpu.usage > 90ms then page "ops"', "90ms", 0, "in ms", True),
    ('when count(http.requests.5xx) > 5% then page "ops"', "5%", 0, "without a unit", True),
    ('when p99(http.latency) > 5GB then page "ops"', "5GB", 0, "in GB", True),
    ('when host in ["web-1", "web-1"] and cpu.usage > 90 then page "ops"', "web-1", -1, "listed twice", True),
]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def catalog():
    return AlertCatalog.load(CATALOG)


@pytest.fixture(scope="module")
def constraint(tok4k):
    return sg.compile(sg.Grammar("alerts.lark"), tok4k)


@pytest.fixture(scope="module")
def narrow(catalog, tok4k):
    spec = alerts_spec(catalog)
    return spec, sg.compile(spec, tok4k)


@pytest.fixture(scope="module")
def lark_parser():
    return lark.Lark(GRAMMAR, parser="earley", ambiguity="explicit")


def _parses(parser, text: str) -> bool:
    try:
        tree = parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    assert not list(tree.find_data("_ambig")), f"ambiguous parse: {text!r}"
    return True


def _span_text(text: str, issue) -> str:
    assert issue.span is not None, issue
    return text[issue.span[0]:issue.span[1]]


# ---------------------------------------------------------------------------------------------- the grammar


def test_grammar_compiles_on_both_engines(constraint, narrow, tok4k):
    assert constraint.engine == "grammar" and not constraint.lark_rewritten  # llguidance reads it natively
    assert not LarkValidator(GRAMMAR)(BRIEF)
    spec, c = narrow
    assert c.engine == "grammar" and c.lark_rewritten  # %override goes through Lark's own loader
    assert not LarkValidator(spec.text)(BRIEF)
    assert c.min_tokens() >= 2


@pytest.mark.parametrize("text,in_narrow", VALID)
def test_valid_rules(text, in_narrow, constraint, narrow, catalog, lark_parser):
    vocab = constraint.vocab
    assert _parses(lark_parser, text)
    assert constraint.accepts(vocab.encode(text)), text
    assert constraint.accepts(vocab.encode(text) + [vocab.eos_id] * 3)
    assert AlertRulesValidator(catalog)(text) == []
    spec, c = narrow
    assert c.accepts(vocab.encode(text)) == in_narrow
    assert (LarkValidator(spec.text)(text) == []) == in_narrow
    canonical = parse_rule(text).canonical()  # the canonical form is in the language too
    assert constraint.accepts(vocab.encode(canonical)) and _parses(lark_parser, canonical)


def test_lists_are_large_enough():
    assert len(VALID) >= 25 and len(SYNTAX_ERRORS) + len(SEMANTIC_ERRORS) >= 20 and len(SYNTAX_ERRORS) >= 20


@pytest.mark.parametrize("text", SYNTAX_ERRORS)
def test_syntax_errors_are_rejected(text, constraint, narrow, catalog, lark_parser):
    vocab = constraint.vocab
    assert not constraint.accepts(vocab.encode(text)), text
    assert not _parses(lark_parser, text)
    assert not narrow[1].accepts(vocab.encode(text))
    issues = LarkValidator(GRAMMAR)(text)
    assert len(issues) == 1 and issues[0].span is not None
    assert AlertRulesValidator(catalog)(text) == []  # the syntax is the Lark validator's to report
    with pytest.raises(sg.SpecError, match="not an alert rule"):
        parse_rule(text)


def test_prefixes_stay_open(constraint):
    vocab = constraint.vocab
    for text in ['when avg(cpu.us', 'when host in ["web-1", ', 'when not not', 'when (a.b > 1 or']:
        assert constraint.accepts_prefix(vocab.encode(text)), text
    assert not constraint.accepts_prefix(vocab.encode("when  "))


@pytest.mark.parametrize("text,offending,occurrence,words,in_narrow", SEMANTIC_ERRORS)
def test_semantic_errors_name_the_offending_span(text, offending, occurrence, words, in_narrow, constraint,
                                                 narrow, catalog, lark_parser):
    vocab = constraint.vocab
    assert _parses(lark_parser, text) and constraint.accepts(vocab.encode(text))
    issues = AlertRulesValidator(catalog)(text)
    assert len(issues) == 1, issues
    (issue,) = issues
    assert issue.validator == "alerts" and words in issue.message, issue
    assert _span_text(text, issue) == offending
    where = [m.start() for m in re.finditer(re.escape(offending), text)][occurrence]
    assert issue.span == (where, where + len(offending))
    # the narrowed grammar already excludes what it can; the validator covers the rest
    assert narrow[1].accepts(vocab.encode(text)) == (not in_narrow)


def test_several_issues_in_one_rule(catalog):
    text = ('when avg(cpu.usge[0s]) > 90 and hots in ["web-9"] for 0s then '
            'notify "#opz" severity high, page "ops", page "ops"')
    issues = AlertRulesValidator(catalog)(text)
    assert sorted(_span_text(text, i) for i in issues) == sorted(
        ["0s", "cpu.usge", "hots", "0s", "#opz", 'page "ops"'])
    assert any("did you mean 'cpu.usage'" in i.message for i in issues)
    assert all(i.path for i in issues)


def test_validator_takes_a_dict_or_a_path_and_checks_only_what_the_catalog_lists(catalog):
    assert AlertRulesValidator(str(CATALOG))(BRIEF) == []
    loose = AlertRulesValidator({"metrics": ["cpu.usage", "a.b"]})  # no units, ranges, labels, channels
    assert loose('when cpu.usage > 1000 and anything == "x" then notify "#any" severity low, page "who"') == []
    assert [i.message.split(" ")[0] for i in loose('when c.d > 1 then page "x"')] == ["unknown"]
    assert "did you mean" not in loose('when zz.zz > 1 then page "x"')[0].message


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validator_never_raises(catalog, data):
    """On any text: random text, or a valid rule with characters cut, inserted or replaced."""
    v = AlertRulesValidator(catalog)
    if data.draw(st.booleans()):
        text = data.draw(st.text(max_size=120))
    else:
        text = data.draw(st.sampled_from([t for t, _ in VALID] + [t for t, *_ in SEMANTIC_ERRORS]))
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(text)))
            j = data.draw(st.integers(i, min(len(text), i + 4)))
            text = text[:i] + data.draw(st.text(alphabet='ab1.5 "[](),=<>-%', max_size=3)) + text[j:]
    issues = v(text)
    assert isinstance(issues, list)
    for i in issues:
        assert isinstance(i, Issue) and (i.span is None or 0 <= i.span[0] < i.span[1] <= len(text)), (text, i)


def test_validator_survives_deep_nesting(catalog):
    v = AlertRulesValidator(catalog)
    assert v("(" * 400 + "when") == [] and v(None) == []
    deep = "when " + "not " * 300 + "(" * 100 + 'cpu.usage > 90' + ")" * 100 + ' then page "ops"'
    assert all(isinstance(i, Issue) for i in v(deep))


# ---------------------------------------------------------------------------------------------------- AST


def test_parse_rule_builds_the_ast():
    r = parse_rule(BRIEF)
    assert r.hold == Duration(5, "m") and r.hold.seconds == 300
    assert r.condition == And((Comparison(Metric("cpu.usage", "avg"), ">", Threshold(90)),
                               LabelMatch("host", "in", ("web-1", "web-2"))))
    assert r.actions == (Notify("#ops", "high"),)
    cmp, match = r.condition.operands
    assert BRIEF[slice(*cmp.span)] == "avg(cpu.usage) > 90"
    assert BRIEF[slice(*cmp.metric.name_span)] == "cpu.usage"
    assert BRIEF[slice(*r.hold.span)] == "5m"
    assert [BRIEF[slice(*s)] for s in match.value_spans] == ["web-1", "web-2"]
    assert BRIEF[slice(*r.actions[0].channel_span)] == "#ops"
    assert r.text == BRIEF and r.comparisons() == [cmp] and r.label_matches() == [match]

    w = parse_rule('when p99(http.latency[5m]) <= 2.50ms then page "web", notify "#ops" severity low')
    assert isinstance(w, AlertRule) and w.hold is None
    assert w.condition == Comparison(Metric("http.latency", "p99", Duration(5, "m")), "<=",
                                     Threshold(Decimal("2.5"), "ms"))
    assert w.actions == (Page("web"), Notify("#ops", "low"))
    assert w.text[slice(*w.actions[0].team_span)] == "web"
    assert w.text[slice(*w.condition.threshold.span)] == "2.50ms"


def test_precedence_and_the_leading_hold():
    a, b, c = (Comparison(Metric(n), ">", Threshold(1)) for n in ("a.a", "b.b", "c.c"))
    assert parse_rule('when a.a > 1 or b.b > 1 and c.c > 1 then page "x"').condition == Or((a, And((b, c))))
    assert parse_rule('when not a.a > 1 and b.b > 1 then page "x"').condition == And((Not(a), b))
    assert parse_rule('when not (a.a > 1 and b.b > 1) then page "x"').condition == Not(And((a, b)))
    held = parse_rule('when a.a > 1 for 5m and b.b > 1 or c.c > 1 then page "x"')
    assert held.condition == Or((And((a, b)), c)) and held.hold == Duration(5, "m")
    text = held.text
    assert text[slice(*held.condition.operands[0].span)] == "a.a > 1 for 5m and b.b > 1"
    assert parse_rule('when a.a > 1 for 5m or b.b > 1 then page "x"').condition == Or((a, b))


EQUAL = [  # pairs that mean the same rule
    (BRIEF, 'when host in ["web-2", "web-1"] and avg(cpu.usage) > 90 for 5m then notify "#ops" severity high'),
    ('when (cpu.usage > 90) then page "ops"', 'when cpu.usage > 90 then page "ops"'),
    ('when ((a.a > 1 and b.b > 1) and c.c > 1) then page "x"', 'when c.c > 1 and (b.b > 1 and a.a > 1) then page "x"'),
    ('when a.a > 1 or (b.b > 1 or c.c > 1) then page "x"', 'when c.c > 1 or b.b > 1 or a.a > 1 then page "x"'),
    ('when not not a.a > 1 then page "x"', 'when a.a > 1 then page "x"'),
    ('when not host == "a" then page "x"', 'when host != "a" then page "x"'),
    ('when not host in ["a", "b"] then page "x"', 'when host not in ["b", "a"] then page "x"'),
    ('when host in ["a"] then page "x"', 'when host == "a" then page "x"'),
    ('when host in ["a", "a"] then page "x"', 'when host == "a" then page "x"'),
    ('when a.a > 1 and a.a > 1 then page "x"', 'when a.a > 1 then page "x"'),
    ('when a.a > 90.50 then page "x"', 'when a.a > 90.5 then page "x"'),
    ('when a.a > 1 for 60s then page "x"', 'when a.a > 1 for 1m then page "x"'),
    ('when a.a > 1 for 0s then page "x"', 'when a.a > 1 then page "x"'),
    ('when avg(a.a[3600s]) > 1 then page "x"', 'when avg(a.a[1h]) > 1 then page "x"'),
    ('when a.a > 1 then page "x", notify "#o" severity low', 'when a.a > 1 then notify "#o" severity low, page "x"'),
    ('when a.a > -0 then page "x"', 'when a.a > 0 then page "x"'),
]
DIFFERENT = [  # pairs that do not
    ('when a.a > 1 then page "x"', 'when a.a >= 1 then page "x"'),
    ('when a.a > 1 then page "x"', 'when a.a > 2 then page "x"'),
    ('when a.a > 1 then page "x"', 'when a.a > 1% then page "x"'),
    ('when a.a > 1 then page "x"', 'when avg(a.a) > 1 then page "x"'),
    ('when avg(a.a[5m]) > 1 then page "x"', 'when avg(a.a[10m]) > 1 then page "x"'),
    ('when a.a > 1 and b.b > 1 then page "x"', 'when a.a > 1 or b.b > 1 then page "x"'),
    ('when not (a.a > 1 and b.b > 1) then page "x"', 'when not a.a > 1 and b.b > 1 then page "x"'),
    ('when a.a > 1 and b.b > 1 or c.c > 1 then page "x"', 'when a.a > 1 and (b.b > 1 or c.c > 1) then page "x"'),
    ('when host in ["a", "b"] then page "x"', 'when host in ["a", "c"] then page "x"'),
    ('when host in ["a", "b"] then page "x"', 'when host not in ["a", "b"] then page "x"'),
    ('when a.a > 1 for 5m then page "x"', 'when a.a > 1 then page "x"'),
    ('when a.a > 1 then notify "#o" severity low', 'when a.a > 1 then notify "#o" severity high'),
    ('when a.a > 1 then page "x"', 'when a.a > 1 then page "x", page "y"'),
]


@pytest.mark.parametrize("left,right", EQUAL)
def test_canonical_equal(left, right, constraint):
    a, b = parse_rule(left), parse_rule(right)
    assert a == b and hash(a) == hash(b) and a.canonical() == b.canonical()
    c = parse_rule(a.canonical())
    assert c == a and c.canonical() == a.canonical()  # a fixed point
    assert constraint.accepts(constraint.vocab.encode(a.canonical()))


@pytest.mark.parametrize("left,right", DIFFERENT)
def test_canonical_different(left, right):
    a, b = parse_rule(left), parse_rule(right)
    assert a != b and a.canonical() != b.canonical()


def test_canonical_of_the_brief_example():
    assert parse_rule(BRIEF).canonical() == (
        'when avg(cpu.usage) > 90 and host in ["web-1", "web-2"] for 5m then notify "#ops" severity high')
    assert Duration(90, "s").canonical() == "90s" and Duration(48, "h").canonical() == "2d"
    assert Duration(0, "d").canonical() == "0s"
    with pytest.raises(sg.SpecError, match="not a duration"):
        Duration.parse("5 minutes")


METRICS = ["cpu.usage", "mem.used", "http.latency", "a.b"]


def _conditions(depth: int):
    cmp = st.builds(lambda m, agg, op, n, u: (f"{agg}({m})" if agg else m) + f" {op} {n}{u}",
                    st.sampled_from(METRICS), st.sampled_from([None, "avg", "p99", "count"]),
                    st.sampled_from([">", ">=", "<", "<=", "==", "!="]),
                    st.sampled_from(["0", "1", "90", "2.5", "-3", "100"]), st.sampled_from(["", "%", "ms"]))
    lab = st.builds(lambda k, vals, form: f"{k} {form} [" + ", ".join(f'"{v}"' for v in vals) + "]"
                    if form != "==" else f'{k} == "{vals[0]}"',
                    st.sampled_from(["host", "region"]), st.lists(st.sampled_from(["a", "b", "c"]), min_size=1,
                                                                  max_size=3),
                    st.sampled_from(["in", "not in", "=="]))
    atom = st.one_of(cmp, lab)
    if depth == 0:
        return atom
    sub = _conditions(depth - 1)
    return st.one_of(
        atom,
        st.builds(lambda x: f"not {x}", atom),
        st.builds(lambda x: f"({x})", sub),
        st.builds(lambda xs, op: f" {op} ".join(xs), st.lists(atom, min_size=2, max_size=3),
                  st.sampled_from(["and", "or"])),
        st.builds(lambda x, y: f"({x}) and ({y})", sub, sub),
    )


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(cond=_conditions(2), hold=st.sampled_from(["", " for 5m", " for 90s"]),
       acts=st.lists(st.sampled_from(['page "ops"', 'notify "#ops" severity low', 'page "web"']), min_size=1,
                     max_size=3))
def test_generated_rules_agree_across_parsers_and_canonical_is_stable(constraint, lark_parser, cond, hold, acts):
    """Rules built from the grammar's pieces: llguidance and Lark both accept them, parse_rule reads them,
    the canonical form is a fixed point, and shuffling lists and operands keeps the rule equal."""
    text = f"when {cond}{hold} then {', '.join(acts)}"
    assert _parses(lark_parser, text)
    assert constraint.accepts(constraint.vocab.encode(text)), text
    rule = parse_rule(text)
    canonical = rule.canonical()
    assert parse_rule(canonical).canonical() == canonical
    assert constraint.accepts(constraint.vocab.encode(canonical)), canonical
    rng = random.Random(text)
    shuffled = re.sub(r"\[([^\]]*)\]", lambda m: "[" + ", ".join(rng.sample(m.group(1).split(", "),
                                                                              m.group(1).count(", ") + 1)) + "]",
                      text)
    head, _, tail = shuffled.partition(" then ")
    tail = ", ".join(rng.sample(acts, len(acts)))
    assert parse_rule(f"{head} then {tail}") == rule


# -------------------------------------------------------------------------------------------- the catalog


@pytest.mark.parametrize("data,words", [
    ([], "expected a JSON object"),
    ({"metrics": {"cpu.usage": {}}, "channel": ["#ops"]}, "unknown key(s) 'channel'"),
    ({}, "metrics must be a non-empty object"),
    ({"metrics": {}}, "metrics must be a non-empty object"),
    ({"metrics": {"CPU": {}}}, "metric name 'CPU' cannot be written"),
    ({"metrics": {"cpu": {}}}, "joined by dots"),
    ({"metrics": {"cpu.usage": {"min": 100, "max": 0}}}, "min 100 above max 0"),
    ({"metrics": {"cpu.usage": {"min": "0"}}}, "expected a finite number"),
    ({"metrics": {"cpu.usage": {"max": True}}}, "expected a finite number"),
    ({"metrics": {"cpu.usage": {"unit": ""}}}, "unit must be a non-empty string"),
    ({"metrics": {"cpu.usage": {"range": [0, 1]}}}, "unknown key(s) 'range'"),
    ({"metrics": {"cpu.usage": 5}}, "must be an object"),
    ({"metrics": ["cpu.usage"], "labels": {}}, "labels must be a non-empty object"),
    ({"metrics": ["cpu.usage"], "labels": {"not": None}}, "keyword of the rule language"),
    ({"metrics": ["cpu.usage"], "labels": {"Host": None}}, "label key 'Host'"),
    ({"metrics": ["cpu.usage"], "labels": {"host": "web-1"}}, "expected a non-empty list"),
    ({"metrics": ["cpu.usage"], "labels": {"host": ["web 1  x"]}}, "quoted names are printable ASCII"),
    ({"metrics": ["cpu.usage"], "channels": ['#o"ps']}, "cannot be written in an alert rule"),
    ({"metrics": ["cpu.usage"], "teams": []}, "leave it out"),
    ({"metrics": ["cpu.usage"], "limits": {"max_window": "5 minutes"}}, "limits.max_window"),
    ({"metrics": ["cpu.usage"], "limits": {"max_hold": 0}}, "longer than zero"),
    ({"metrics": ["cpu.usage"], "limits": {"max_age": "1d"}}, "unknown key(s) 'max_age'"),
])
def test_malformed_catalogs(data, words):
    with pytest.raises(sg.SpecError) as e:
        AlertCatalog.from_dict(data)
    assert words in str(e.value)


def test_catalog_files_and_types(tmp_path, catalog):
    assert catalog.metrics["cpu.usage"].unit == "%" and catalog.metrics["cpu.usage"].max == 100
    assert catalog.labels["host"][0] == "web-1" and catalog.max_window == 86400 and catalog.max_hold == 7 * 86400
    with pytest.raises(sg.SpecError, match="cannot read the alert catalog"):
        AlertCatalog.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"metrics": ')
    with pytest.raises(sg.SpecError, match="not valid JSON"):
        AlertCatalog.load(bad)
    with pytest.raises(sg.SpecError, match="must be an AlertCatalog"):
        AlertRulesValidator(42)
    assert tidy_durations(90) == [f"{n}s" for n in range(1, 60)] + ["1m"]
    assert tidy_durations(7 * 86400)[-1] == "7d" and len(tidy_durations(7 * 86400)) == 59 + 59 + 23 + 7


def test_alerts_spec(catalog, tok4k):
    loose = alerts_spec(catalog, narrow=False)
    assert loose.text == GRAMMAR and loose.path == GRAMMAR_PATH
    checks = validators_for(loose)
    assert isinstance(checks[0], LarkValidator) and isinstance(checks[1], UserValidator)
    assert checks[1].name == "alerts"
    narrowed = alerts_spec(CATALOG)  # a path works too
    assert '%override METRIC: "cpu.usage"' in narrowed.text and "%override comparison:" in narrowed.text
    assert narrowed.key != loose.key
    # a catalog without labels, channels or teams narrows only what it lists
    c = sg.compile(alerts_spec({"metrics": {"a.b": {"min": 0, "max": 10}}}), tok4k)
    enc = c.vocab.encode
    assert c.accepts(enc('when a.b > 9.5 and anything == "x" then page "anyone"'))
    assert not c.accepts(enc('when a.b > 11 then page "x"'))
    assert not c.accepts(enc('when c.d > 1 then page "x"'))


# ------------------------------------------------------------------------------------ random-logits runs

POLICIES = [dict(threshold=0.9, tokens_per_step=None), dict(threshold=0.5, tokens_per_step=None),
            dict(threshold=None, tokens_per_step=1), dict(threshold=None, tokens_per_step=3)]
BLOCKS = [4, 8, 16, 32]


def _recheck(r: sg.Result, spec, c, catalog) -> None:
    """A result reported valid, checked again independently of the generator."""
    where = repr(r.text)
    assert r.valid and r.errors == [], where
    assert c.accepts(r.tokens) and c.accepts(r.tokens[: r.n_output_tokens]), where
    assert lark.Lark(GRAMMAR, parser="earley").parse(r.text), where  # the shipped grammar, not the narrowed one
    assert LarkValidator(spec.text)(r.text) == [], where
    assert AlertRulesValidator(catalog)(r.text) == [], where
    assert parse_rule(r.text).canonical()


def _run(tok4k, spec, seed: int, block: int, policy: dict, max_tokens: int, **kw):
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed), block_length=block, **policy, **kw)
    try:
        return gen.generate("page ops when cpu is above 90% for 5 minutes", spec, max_tokens=max_tokens,
                            strict=False)
    except sg.CanvasTooSmallError:  # the grammar engine ran out of canvas after model calls ("stuck")
        return None


def test_random_logits_narrowed_mostly_valid(tok4k, narrow, catalog):
    """Seeds x block lengths x both commit policies through the narrowed spec: no result reported valid
    fails the independent checks, and nearly all results are valid (measured: 32 of 32, with repairs; 90%
    before the narrowed grammar listed each value and action at most once)."""
    spec, c = narrow
    tally: Counter = Counter()
    for seed in range(32):
        block, policy = BLOCKS[seed % 4], POLICIES[(seed // 4) % 4]
        r = _run(tok4k, spec, seed, block, policy, [64, 80, 96][seed % 3])
        if r is None:
            tally["stuck"] += 1
        elif r.valid:
            _recheck(r, spec, c, catalog)
            tally["valid"] += 1
        else:
            assert r.errors and AlertRulesValidator(catalog)(r.text), r.text  # the grammar held the syntax
            assert c.accepts(r.tokens)
            tally["invalid"] += 1
    total = sum(tally.values())
    print(f"\nnarrowed alerts_spec, random logits: {dict(tally)}, valid share {tally['valid'] / total:.0%}")
    assert tally["valid"] >= 0.9 * total, tally
    assert tally["stuck"] <= 0.1 * total, tally


@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), block=st.sampled_from(BLOCKS), policy=st.sampled_from(POLICIES),
       narrowed=st.booleans())
def test_random_logits_never_release_invalid_rules(tok4k, narrow, catalog, seed, block, policy, narrowed):
    """Hypothesis over seeds, blocks and policies, with and without narrowing: whatever is reported valid
    passes every check again. (Without narrowing almost nothing is valid: random names are not in the
    catalog; one repair round keeps the run short.)"""
    spec = narrow[0] if narrowed else alerts_spec(catalog, narrow=False)
    c = narrow[1] if narrowed else sg.compile(spec, tok4k)
    r = _run(tok4k, spec, seed, block, policy, 80, max_repair_rounds=3 if narrowed else 1)
    if r is not None and r.valid:
        _recheck(r, spec, c, catalog)
    elif r is not None:
        assert c.accepts(r.tokens) and LarkValidator(GRAMMAR)(r.text) == []


def test_random_logits_unnarrowed_grammar_is_always_well_formed(tok4k, constraint, catalog):
    """The plain grammar (no catalog): every result parses; with the catalog's validator almost none are
    semantically valid (random names), which is what narrowing is for."""
    spec = sg.Grammar("alerts.lark")
    outcomes = Counter()
    for seed in range(6):
        r = _run(tok4k, spec, 500 + seed, BLOCKS[seed % 4], POLICIES[seed % 4], 96)
        if r is None:
            outcomes["stuck"] += 1
            continue
        assert r.valid and constraint.accepts(r.tokens), r.text
        parse_rule(r.text)
        outcomes["catalog-valid" if not AlertRulesValidator(catalog)(r.text) else "catalog-invalid"] += 1
    print(f"\nplain alerts.lark, random logits: {dict(outcomes)}")
    assert outcomes["stuck"] <= 1 and outcomes["catalog-valid"] <= 1


# ------------------------------------------------------------------------------------------ CLI, examples


def test_cli_generates_an_alert_rule():
    r = CliRunner().invoke(app, ["generate", "--grammar", "grammars/alerts.lark",
                                 "page ops when cpu is above 90% for 5 minutes", "--model", "random"])
    assert r.exit_code == 0, r.output
    text = r.stdout.splitlines()[0]
    assert text.startswith("when ") and " then " in text
    parse_rule(text)
    assert "valid=True" in r.output


def test_example_rule_files_validate(catalog):
    files = sorted((EXAMPLES / "rules").glob("*.alert"))
    assert len(files) >= 5
    for path in files:
        text = path.read_text().strip()
        assert AlertRulesValidator(catalog)(text) == [], path.name
        assert parse_rule(text).canonical()


def test_example_script_runs(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["custom_dsl.py", "-n", "1"])
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(EXAMPLES / "custom_dsl.py"), run_name="__main__")
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "generated rules valid" in out and "high_cpu.alert: ok" in out
    assert len(re.findall(r"\[(valid|INVALID)\] when ", out)) + out.count("[no result]") == 4


def test_example_policy_validator_spans():
    mod = runpy.run_path(str(EXAMPLES / "custom_dsl.py"))
    check = mod["critical_pages_someone"]
    text = 'when cpu.usage > 90 then notify "#ops" severity critical'
    (issue,) = check(text)
    assert text[slice(*issue.span)] == 'notify "#ops" severity critical'
    assert check(text + ', page "ops"') == [] and check("not a rule") == []
    assert json.loads(CATALOG.read_text())["teams"]


def test_narrowed_grammar_lists_each_value_and_each_action_once(narrow, catalog, tok4k):
    """Duplicate list values and repeated actions are out of the narrowed language (one rule per set of
    names already used), every order of distinct names is in it; past ``DISTINCT_MAX`` names the grammar
    lists them freely and the validator reports a repeat."""
    from itertools import permutations

    from structgen.validators.alerts.catalog import DISTINCT_MAX

    _, c = narrow
    enc = c.vocab.encode
    hosts = catalog.labels["host"]
    for k in (1, 2, len(hosts)):
        for combo in permutations(hosts, k):
            items = ", ".join(f'"{h}"' for h in combo)
            assert c.accepts(enc(f'when host not in [{items}] then page "ops"')), combo
    assert not c.accepts(enc('when host in ["web-2", "db-1", "web-2"] then page "ops"'))
    assert c.accepts(enc('when cpu.usage > 90 then page "web", notify "#ops" severity low, page "ops", '
                         'notify "#db" severity high'))
    assert not c.accepts(enc('when cpu.usage > 90 then page "web", notify "#ops" severity low, page "web"'))
    assert not c.accepts(enc('when cpu.usage > 90 then notify "#ops" severity low, notify "#ops" severity high'))
    assert not c.accepts_prefix(enc('when cpu.usage > 90 then page "ops", page "ops'))
    many = [f"h{i}" for i in range(DISTINCT_MAX + 1)]
    big = {"metrics": {"a.b": {}}, "labels": {"host": many}, "channels": ["#x"], "teams": many}
    spec = alerts_spec(big)
    loose = sg.compile(spec, tok4k)
    text = 'when host in ["h1", "h1"] then page "h2", page "h2"'
    assert loose.accepts(loose.vocab.encode(text))
    assert [i.message for i in AlertRulesValidator(big)(text)] == [
        "'h1' is listed twice for label 'host'; list each value once", "team 'h2' is paged twice; page each team once"]
