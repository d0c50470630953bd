"""The alert rules' AST (``parse_rule``): spans, precedence, the leading hold, and the canonical form that
decides whether two rules mean the same (``structgen eval``'s "semantically equal"), including rules built by
hypothesis from the grammar's pieces, which llguidance and Lark must both accept."""

from __future__ import annotations

import random
import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import structgen as sg
from structgen.validators.alerts import (AlertRule, And, Comparison, Duration, LabelMatch, Metric, Not, Notify, Or,
                                         Page, Threshold, parse_rule)

from test_alerts import BRIEF, _parses

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
def test_canonical_equal(left, right, alerts_constraint):
    a, b = parse_rule(left), parse_rule(right)
    assert a == b and hash(a) == hash(b) and a.canonical() == b.canonical()
    c = parse_rule(a.canonical())
    assert c == a and c.canonical() == a.canonical()  # a fixed point
    assert alerts_constraint.accepts(alerts_constraint.vocab.encode(a.canonical()))


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
def test_generated_rules_agree_across_parsers_and_canonical_is_stable(alerts_constraint, alerts_parser, cond, hold,
                                                                       acts):
    """Rules built from the grammar's pieces: llguidance and Lark both accept them, parse_rule reads them,
    the canonical form is a fixed point, and shuffling lists and operands keeps the rule equal."""
    text = f"when {cond}{hold} then {', '.join(acts)}"
    assert _parses(alerts_parser, text)
    assert alerts_constraint.accepts(alerts_constraint.vocab.encode(text)), text
    rule = parse_rule(text)
    canonical = rule.canonical()
    assert parse_rule(canonical).canonical() == canonical
    assert alerts_constraint.accepts(alerts_constraint.vocab.encode(canonical)), canonical
    rng = random.Random(text)
    shuffled = re.sub(r"\[([^\]]*)\]", lambda m: "[" + ", ".join(rng.sample(m.group(1).split(", "),
                                                                              m.group(1).count(", ") + 1)) + "]",
                      text)
    head, _, tail = shuffled.partition(" then ")
    tail = ", ".join(rng.sample(acts, len(acts)))
    assert parse_rule(f"{head} then {tail}") == rule


