"""The alert-rule DSL's grammar and checks: ``grammars/alerts.lark`` on both engines (llguidance and Lark's
Earley parser), the semantic validator and its spans, and the catalog's errors. Its AST and canonical form are
tested in test_alerts_ast.py, generation through ``alerts_spec``, the CLI and the example script in
test_alerts_generation.py; both use this module's rule tables (the fixtures are in conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import structgen as sg
from structgen.validators import Issue, LarkValidator, UserValidator, validators_for
from structgen.validators.alerts import (GRAMMAR_PATH, AlertCatalog, AlertRulesValidator, alerts_spec, parse_rule,
                                         tidy_durations)

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


def test_grammar_compiles_on_both_engines(alerts_constraint, alerts_narrow, tok4k):
    c = alerts_constraint
    assert c.engine == "grammar" and not c.lark_rewritten  # llguidance reads it natively
    assert not LarkValidator(GRAMMAR)(BRIEF)
    spec, c = alerts_narrow
    assert c.engine == "grammar" and c.lark_rewritten  # %override goes through Lark's own loader
    assert not LarkValidator(spec.text)(BRIEF)
    assert c.min_tokens() >= 2


@pytest.mark.parametrize("text,in_narrow", VALID)
def test_valid_rules(text, in_narrow, alerts_constraint, alerts_narrow, alerts_catalog, alerts_parser):
    vocab = alerts_constraint.vocab
    assert _parses(alerts_parser, text)
    assert alerts_constraint.accepts(vocab.encode(text)), text
    assert alerts_constraint.accepts(vocab.encode(text) + [vocab.eos_id] * 3)
    assert AlertRulesValidator(alerts_catalog)(text) == []
    spec, c = alerts_narrow
    assert c.accepts(vocab.encode(text)) == in_narrow
    assert (LarkValidator(spec.text)(text) == []) == in_narrow
    canonical = parse_rule(text).canonical()  # the canonical form is in the language too
    assert alerts_constraint.accepts(vocab.encode(canonical)) and _parses(alerts_parser, canonical)


def test_lists_are_large_enough():
    assert len(VALID) >= 25 and len(SYNTAX_ERRORS) + len(SEMANTIC_ERRORS) >= 20 and len(SYNTAX_ERRORS) >= 20


@pytest.mark.parametrize("text", SYNTAX_ERRORS)
def test_syntax_errors_are_rejected(text, alerts_constraint, alerts_narrow, alerts_catalog, alerts_parser):
    vocab = alerts_constraint.vocab
    assert not alerts_constraint.accepts(vocab.encode(text)), text
    assert not _parses(alerts_parser, text)
    assert not alerts_narrow[1].accepts(vocab.encode(text))
    issues = LarkValidator(GRAMMAR)(text)
    assert len(issues) == 1 and issues[0].span is not None
    assert AlertRulesValidator(alerts_catalog)(text) == []  # the syntax is the Lark validator's to report
    with pytest.raises(sg.SpecError, match="not an alert rule"):
        parse_rule(text)


def test_prefixes_stay_open(alerts_constraint):
    vocab = alerts_constraint.vocab
    for text in ['when avg(cpu.us', 'when host in ["web-1", ', 'when not not', 'when (a.b > 1 or']:
        assert alerts_constraint.accepts_prefix(vocab.encode(text)), text
    assert not alerts_constraint.accepts_prefix(vocab.encode("when  "))


@pytest.mark.parametrize("text,offending,occurrence,words,in_narrow", SEMANTIC_ERRORS)
def test_semantic_errors_name_the_offending_span(text, offending, occurrence, words, in_narrow, alerts_constraint,
                                                 alerts_narrow, alerts_catalog, alerts_parser):
    vocab = alerts_constraint.vocab
    assert _parses(alerts_parser, text) and alerts_constraint.accepts(vocab.encode(text))
    issues = AlertRulesValidator(alerts_catalog)(text)
    assert len(issues) == 1, issues
    (issue,) = issues
    assert issue.validator == "alerts" and words in issue.message, issue
    assert _span_text(text, issue) == offending
    where = [m.start() for m in re.finditer(re.escape(offending), text)][occurrence]
    assert issue.span == (where, where + len(offending))
    # the narrowed grammar already excludes what it can; the validator covers the rest
    assert alerts_narrow[1].accepts(vocab.encode(text)) == (not in_narrow)


def test_several_issues_in_one_rule(alerts_catalog):
    text = ('when avg(cpu.usge[0s]) > 90 and hots in ["web-9"] for 0s then '
            'notify "#opz" severity high, page "ops", page "ops"')
    issues = AlertRulesValidator(alerts_catalog)(text)
    assert sorted(_span_text(text, i) for i in issues) == sorted(
        ["0s", "cpu.usge", "hots", "0s", "#opz", 'page "ops"'])
    assert any("did you mean 'cpu.usage'" in i.message for i in issues)
    assert all(i.path for i in issues)


def test_validator_takes_a_dict_or_a_path_and_checks_only_what_the_catalog_lists(alerts_catalog):
    assert AlertRulesValidator(str(CATALOG))(BRIEF) == []
    loose = AlertRulesValidator({"metrics": ["cpu.usage", "a.b"]})  # no units, ranges, labels, channels
    assert loose('when cpu.usage > 1000 and anything == "x" then notify "#any" severity low, page "who"') == []
    assert [i.message.split(" ")[0] for i in loose('when c.d > 1 then page "x"')] == ["unknown"]
    assert "did you mean" not in loose('when zz.zz > 1 then page "x"')[0].message


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validator_never_raises(alerts_catalog, data):
    """On any text: random text, or a valid rule with characters cut, inserted or replaced."""
    v = AlertRulesValidator(alerts_catalog)
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


def test_validator_survives_deep_nesting(alerts_catalog):
    v = AlertRulesValidator(alerts_catalog)
    assert v("(" * 400 + "when") == [] and v(None) == []
    deep = "when " + "not " * 300 + "(" * 100 + 'cpu.usage > 90' + ")" * 100 + ' then page "ops"'
    assert all(isinstance(i, Issue) for i in v(deep))


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
    ({"metrics": {"cpu.usage": {"aliases": "CPU load"}}}, "aliases must be a list of the words"),
    ({"metrics": {"cpu.usage": {"aliases": ["CPU", " "]}}}, "aliases must be a list of the words"),
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


def test_catalog_files_and_types(tmp_path, alerts_catalog):
    assert alerts_catalog.metrics["cpu.usage"].unit == "%" and alerts_catalog.metrics["cpu.usage"].max == 100
    assert "CPU load" in alerts_catalog.metrics["cpu.usage"].aliases
    cat = alerts_catalog
    assert cat.labels["host"][0] == "web-1" and cat.max_window == 86400 and cat.max_hold == 7 * 86400
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


def test_alerts_spec(alerts_catalog, tok4k):
    loose = alerts_spec(alerts_catalog, narrow=False)
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
