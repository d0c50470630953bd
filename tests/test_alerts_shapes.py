"""Grounded alert rules, part 3 (``validators.alerts.stated_thresholds``, ``validators.alerts.condition_grammar``):
a number is compared in the unit written after it and with the operator written before it, a description
of one metric and one number compares it once, and "either A or B" writes the two metrics as alternatives.
Each rule is held by the real compiled grammar and reported by the validator; random logits through the
grounded grammar release only rules that pass it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schema_strategies import grounded_decoding, grounded_runs

from structgen.constraints import compile as compile_spec
from structgen.validators import run_validators, validators_for
from structgen.validators.alerts import AlertRulesValidator, alerts_spec, parse_rule
from structgen.validators.alerts.grounded import _DURATION, ground_catalog
from structgen.validators.alerts.stated_thresholds import stated_comparators, threshold_text, thresholds_by_unit

pytestmark = pytest.mark.usefixtures("one_torch_thread")

EITHER = ("Raise a high alert in #db when either the p95 response time is higher than 500 ms or the rate of "
          "HTTP 5xx exceeds 10, but only in production")


@pytest.fixture(scope="module")
def spec(alerts_catalog):
    return alerts_spec(alerts_catalog)


def _holds(g, vocab, ok: str, bad: str, why: str):
    """``ok`` is in grounded spec ``g``'s compiled language and passes its validators; ``bad`` is not, and a
    validator says ``why``. Returns the constraint."""
    c = compile_spec(g, vocab)
    assert c.accepts(vocab.encode(ok) + [vocab.eos_id]) and run_validators(validators_for(g), ok) == [], ok
    assert not c.accepts(vocab.encode(bad) + [vocab.eos_id]), bad
    assert any(why in i.message for i in run_validators(validators_for(g), bad)), bad
    return c


def _read(text: str):
    t = threshold_text(text, _DURATION)
    return thresholds_by_unit(t), stated_comparators(t)


def test_numbers_are_read_with_their_unit_and_comparison():
    D = Decimal
    assert _read(EITHER) == ({"ms": (D(500),), None: (D(10),)}, (">",))  # "5xx" states no 5
    assert _read("the lowest free memory over the last 30 seconds drops below 250 MB") == ({"MB": (D(250),)}, ("<",))
    assert _read("anything over 75% cpu on web-1 for two minutes") == ({"%": (D(75),)}, (">",))
    assert _read("queue depth at least 20,000 or disk at most 5 GB") == (
        {None: (D(20000),), "GB": (D(5),)}, (">=", "<="))
    assert _read("cpu > 90% for 5m -> #ops high") == ({"%": (D(90),)}, (">",))
    assert _read("queue above 20k") == ({None: (D(20000),)}, (">",))
    # a number with no comparison before it: any operator
    assert _read("CPU 90% on web-1") == ({"%": (D(90),)}, None)
    assert _read("page ops about web-1") == ({}, None)


def test_ground_catalog_reads_thresholds_by_unit(alerts_catalog):
    g = ground_catalog(alerts_catalog, EITHER)
    assert g.thresholds_for("ms") == (Decimal(500),) and g.thresholds_for(None) == (Decimal(10),)
    assert g.thresholds_for("%") == (Decimal(10),)  # no % written: the numbers written without a unit
    assert g.comparators == (">",) and g.either and not g.single_comparison
    g = ground_catalog(alerts_catalog, "page ops when free memory is under 1 GB")  # no MB written: any stated
    assert g.thresholds_for("MB") == (Decimal(1),)


def test_thresholds_go_to_the_metric_of_their_unit(spec, vocab):
    g = spec.grounded(EITHER)
    c = compile_spec(g, vocab)
    ok = 'when env == "prod" and (p95(http.latency) > 500ms or http.requests.5xx > 10) then notify "#db" severity high'
    assert c.accepts(vocab.encode(ok) + [vocab.eos_id])
    assert run_validators(validators_for(g), ok) == []
    swapped = ok.replace("500ms", "10ms").replace("5xx > 10", "5xx > 500")
    assert not c.accepts(vocab.encode(swapped) + [vocab.eos_id])
    assert any("no number the description states" in i.message for i in run_validators(validators_for(g), swapped))


def test_the_comparison_is_the_one_the_description_writes(spec, vocab):
    g = spec.grounded("Page dba when the average free memory drops below 100MB, unless the host is web-1")
    c = compile_spec(g, vocab)
    rule = 'when avg(mem.free) {} 100MB and host != "web-1" then page "dba"'
    assert c.accepts(vocab.encode(rule.format("<")) + [vocab.eos_id])
    for op in (">", ">=", "<=", "=="):
        assert not c.accepts(vocab.encode(rule.format(op)) + [vocab.eos_id]), op
    assert any("compares with <" in i.message for i in run_validators(validators_for(g), rule.format(">")))
    # no comparison words before the number: any operator
    g = spec.grounded("notify #ops (low): CPU 90% on web-1")
    assert g.catalog.comparators is None


def test_one_metric_and_one_number_compare_once(spec, vocab):
    g = spec.grounded("Can you set up an alert that notifies #db (severity: critical) whenever the lowest "
                      "available memory over the last 30 seconds drops below 250 MB?")
    assert g.catalog.single_comparison
    _holds(g, vocab, 'when min(mem.free[30s]) < 250MB then notify "#db" severity critical',
           'when mem.free < 250MB and min(mem.free[30s]) < 250MB then notify "#db" severity critical',
           "compare it once")
    # two numbers of one metric ("between"): no such rule
    assert not spec.grounded("page ops when cpu is above 50% or below 5%").catalog.single_comparison


def test_either_writes_the_two_metrics_as_alternatives(spec, vocab):
    g = spec.grounded(EITHER)
    c = compile_spec(g, vocab)
    act = ' then notify "#db" severity high'
    for ok in ('when env == "prod" and (http.requests.5xx > 10 or p95(http.latency) > 500ms)' + act,
               'when (p95(http.latency) > 500ms or http.requests.5xx > 10) and env == "prod"' + act):
        assert c.accepts(vocab.encode(ok) + [vocab.eos_id]), ok
        assert run_validators(validators_for(g), ok) == [], ok
    for bad in ('when http.requests.5xx > 10 and env == "prod" and p95(http.latency) > 500ms' + act,
                'when http.requests.5xx > 10 or env == "prod" and p95(http.latency) > 500ms' + act,
                'when env == "prod" and (p95(http.latency) > 500ms or p95(http.latency) > 500ms) then notify "#db" '
                'severity high'):
        assert not c.accepts(vocab.encode(bad) + [vocab.eos_id]), bad
        assert any("as alternatives" in i.message for i in run_validators(validators_for(g), bad)), bad


def test_each_named_label_key_is_tested_once(spec, vocab):
    g = spec.grounded(EITHER)
    assert g.catalog.labels_once
    c = compile_spec(g, vocab)
    unscoped = 'when http.requests.5xx > 10 or p95(http.latency) > 500ms then notify "#db" severity high'
    assert not c.accepts(vocab.encode(unscoped) + [vocab.eos_id])
    assert any("'env'; test it too" in i.message for i in run_validators(validators_for(g), unscoped))
    g = spec.grounded("Anything over 95 percent RAM usage on db-1 and web-3 for two minutes is a critical "
                      "problem for #alerts")
    c = compile_spec(g, vocab)
    ok = 'when host in ["db-1", "web-3"] and mem.used > 95% for 2m then notify "#alerts" severity critical'
    twice = ok.replace("mem.used > 95%", 'mem.used > 95% and host == "db-1"')
    assert c.accepts(vocab.encode(ok) + [vocab.eos_id]) and run_validators(validators_for(g), ok) == []
    assert not c.accepts(vocab.encode(ok.replace(" for 2m", "")) + [vocab.eos_id])  # "for two minutes": a hold
    assert not c.accepts(vocab.encode(twice) + [vocab.eos_id])
    assert any("test it once" in i.message for i in run_validators(validators_for(g), twice))
    # the hold time right after the comparison, the label tests after it
    held_first = 'when mem.used > 95% for 2m and host in ["db-1", "web-3"] then notify "#alerts" severity critical'
    assert c.accepts(vocab.encode(held_first) + [vocab.eos_id])
    # values of one key named both as they are and negated: no such rule
    assert not spec.grounded("page ops when cpu is above 90% on web-1 but not on web-2").catalog.labels_once


def test_a_stated_window_that_is_no_hold_time_is_written(spec, vocab):
    g = spec.grounded("metric: the maximum 5xx error rate over 15 minutes\ncondition: is above 50 for 3 minutes\n"
                      "scope: on web-2\naction: notify #alerts (severity: medium)")
    assert g.catalog.window_required
    ok = 'when max(http.requests.5xx[15m]) > 50 and host == "web-2" for 3m then notify "#alerts" severity medium'
    _holds(g, vocab, ok, ok.replace("[15m]", ""), "states a window")
    # the same duration as window and hold ("over an hour ... for an hour"): not required
    assert not spec.grounded("page ops when the mean queue backlog over the last 60 minutes is above 10000 for "
                             "60 minutes").catalog.window_required


def test_an_aggregation_goes_with_the_metric_named_after_it(spec, alerts_catalog, vocab):
    from structgen.validators.alerts.grounded import metric_aggregations

    pairs = metric_aggregations(alerts_catalog, EITHER)
    assert pairs["http.latency"] == ("p95",) and pairs["http.requests.5xx"] == ()
    # "free memory" is mem.free (the longer phrase), not disk.free
    free = metric_aggregations(alerts_catalog, "page ops when the average free memory is below 100 MB")
    assert free["mem.free"] == ("avg",)
    # an aggregation before no metric goes with every one: "more than 50 errors within 10 min" is a sum
    assert "sum" in metric_aggregations(alerts_catalog, "page ops if there are more than 50 server errors within "
                                                        "10 min")["http.requests.5xx"]
    g = spec.grounded(EITHER)
    c = compile_spec(g, vocab)
    moved = ('when env == "prod" and (http.latency > 500ms or p95(http.requests.5xx) > 10) then notify "#db" '
             'severity high')
    assert not c.accepts(vocab.encode(moved) + [vocab.eos_id])
    assert any("of another metric" in i.message for i in run_validators(validators_for(g), moved))


def test_pages_names_a_team_and_a_window_is_no_hold_time(spec, alerts_catalog, vocab):
    g = ground_catalog(alerts_catalog, "can you set up an alert that pages ops whenever the mean 5xx error rate is "
                                       "above 20?")
    assert g.teams == ("ops",) and g.channels == () and g.every_action
    g = spec.grounded("metric: the maximum memory usage over half an hour\ncondition: rises above 90% for 60 minutes\n"
                      "scope: on web-2\naction: page the web on-call")
    assert g.catalog.windows() == ["30m"] and g.catalog.hold_times() == ["1h"]
    c = compile_spec(g, vocab)
    ok = 'when host == "web-2" and max(mem.used[30m]) > 90% for 1h then page "web"'
    assert c.accepts(vocab.encode(ok) + [vocab.eos_id]) and run_validators(validators_for(g), ok) == []
    wrong = ok.replace("[30m]", "[1h]")
    assert not c.accepts(vocab.encode(wrong) + [vocab.eos_id])
    assert any("it is the hold time" in i.message for i in run_validators(validators_for(g), wrong))


DESCRIPTIONS = [EITHER, "Page dba when the average free memory drops below 100MB, unless the host is web-1 or web-3",
                "anything over 75% cpu for web-1 or web-2 for two minutes is a high problem for #db"]


@pytest.mark.timeout(600)
@grounded_runs()
@given(description=st.sampled_from(DESCRIPTIONS), decoding=grounded_decoding())
def test_random_logits_release_only_rules_of_the_stated_shape(spec, alerts_catalog, release_grounded, description,
                                                              decoding):
    r = release_grounded(description, spec, 64, **decoding)
    if r is None:
        return  # not released: nothing to check
    parse_rule(r.text)
    assert AlertRulesValidator(ground_catalog(alerts_catalog, description))(r.text) == [], (description, r.text)
