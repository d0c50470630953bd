"""Grounded alert rules (``validators.alerts.grounded``, ``AlertRulesGrammar.grounded``, ``generate(...,
ground=True)`` on ``alerts_spec``): the channels, teams and label values a rule writes are those its
description names; the gold rules of the task data always stay in the grounded language; random logits
through the real grammar engine release only rules within the grounded catalog."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schema_strategies import grounded_decoding, grounded_runs

import structgen as sg
from structgen.validators import run_validators, validators_for
from structgen.validators.alerts import AlertRulesValidator, alerts_spec, parse_rule
from structgen.validators.alerts.grounded import ground_catalog, stated_names
from structgen.validators.alerts.spec import AlertRulesGrammar

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DESCRIPTION = "Our web-3 box keeps running out of disk. Let #ops know with low severity once less than 5 GB is free."


@pytest.fixture(scope="module")
def spec(alerts_catalog):
    return alerts_spec(alerts_catalog)


def test_names_are_stated_as_whole_words():
    assert stated_names(["web-1", "web-3", "db-1"], DESCRIPTION) == ("web-3",)
    assert stated_names(["WEB-3"], "our web-3 box") == ("WEB-3",)  # any case
    assert stated_names(["#ops", "#db", "#alerts"], "tell the OPS channel about db-1", channel=True) == ("#ops",)
    assert stated_names(["ops", "web"], "notify #ops about web-2") == ()  # a channel or a host is no team
    assert stated_names(["prod"], "in production") == ()


def test_ground_catalog_narrows_what_the_description_names(alerts_catalog):
    g = ground_catalog(alerts_catalog, DESCRIPTION)
    assert g.labels == {"host": ("web-3",)}  # env and region: no value named, so not tested
    assert g.channels == ("#ops",) and g.teams == () and g.every_action  # notify #ops, page nobody
    assert list(g.metrics) == ["disk.free"]  # "disk", "free", and "5 GB" (free memory is in MB)
    assert g.aggregations == () and g.durations == () and g.severities == ("low",) and g.units
    assert g.max_hold == alerts_catalog.max_hold
    # nothing named: every list stays whole, no action is required
    g = ground_catalog(alerts_catalog, "tell someone when things look bad")
    assert g.channels == alerts_catalog.channels and g.teams == alerts_catalog.teams and not g.every_action
    assert g.metrics == alerts_catalog.metrics and g.labels == {} and g.severities is None


def test_actions_are_the_named_channels_and_teams(alerts_catalog):
    g = ground_catalog(alerts_catalog, "the dba team should be paged and #alerts notified (medium)")
    assert (g.channels, g.teams, g.every_action) == (("#alerts",), ("dba",), True)
    for text in ("page ops when cpu is high", "page the ops on-call", "the ops team should be paged"):
        g = ground_catalog(alerts_catalog, text)  # "ops" names the team here, not the channel #ops
        assert (g.channels, g.teams, g.every_action) == ((), ("ops",), True), text
    g = ground_catalog(alerts_catalog, "set up an alert that alerts #ops (low)")  # "alerts" is a verb here
    assert (g.channels, g.teams, g.every_action) == (("#ops",), (), True)
    g = ground_catalog(alerts_catalog, "tell ops about it")  # the team or the channel: either, not both
    assert (g.channels, g.teams, g.every_action) == (("#ops",), ("ops",), False)


def test_metrics_aggregations_durations_and_values_are_read_from_the_description(alerts_catalog):
    from structgen.validators.alerts.grounded import (stated_aggregations, stated_durations, stated_metrics,
                                                      stated_values)

    assert stated_metrics(alerts_catalog, "when the response time is over 2 s") == ("http.latency",)  # alias
    assert stated_metrics(alerts_catalog, "the CPU load on web-1") == ("cpu.usage",)
    assert stated_metrics(alerts_catalog, "queue.depth over 10") == ("queue.depth",)  # its name
    assert stated_aggregations("the p95 latency, or the average CPU") == ("avg", "p95")
    assert stated_aggregations("more than 50 errors within 10 min") == ("sum",)
    assert stated_aggregations("CPU above 90%") == ()
    assert stated_durations("for 5 min, over half an hour, a quarter of an hour, 60 minutes, 30s, 2h") == (
        300, 1800, 900, 3600, 30, 7200)
    assert stated_durations("web-1 and db-1, p95 and an alert") == ()  # "and" is no "an" + "d"
    assert stated_values(["prod", "staging"], "in production only") == ("prod",)
    assert stated_values(["web-1", "eu"], "on web-10 in Europe") == ()  # whole words below four letters


def test_grounded_rules_write_only_what_is_stated(spec, vocab):
    from structgen.constraints import compile as compile_spec

    text = "Post to #ops (high) when the average CPU over 5 minutes is above 90% in production"
    g = spec.grounded(text)
    c = compile_spec(g, vocab)
    ok = 'when avg(cpu.usage[5m]) > 90% and env == "prod" then notify "#ops" severity high'
    assert c.accepts(vocab.encode(ok) + [vocab.eos_id])
    assert run_validators(validators_for(g), ok) == []
    for bad in ('when avg(cpu.usage[5m]) > 90 and env == "prod" then notify "#ops" severity high',  # no unit
                'when max(cpu.usage[5m]) > 90% and env == "prod" then notify "#ops" severity high',  # not stated
                'when avg(cpu.usage[10m]) > 90% and env == "prod" then notify "#ops" severity high',
                'when avg(cpu.usage[5m]) > 90% and env == "prod" for 1m then notify "#ops" severity high',
                'when avg(mem.used[5m]) > 90% and env == "prod" then notify "#ops" severity high',
                'when avg(cpu.usage[5m]) > 90% and host == "web-1" then notify "#ops" severity high',
                'when avg(cpu.usage[5m]) > 90% and env == "prod" then notify "#ops" severity low',
                'when avg(cpu.usage[5m]) > 90% and env == "prod" then notify "#ops" severity high, page "ops"'):
        assert not c.accepts(vocab.encode(bad) + [vocab.eos_id]), bad
        assert run_validators(validators_for(g), bad), bad
    # both named: both actions, in either order
    g = spec.grounded("page dba and notify #db (low) when queue depth is over 100")
    c = compile_spec(g, vocab)
    assert c.accepts(vocab.encode('when queue.depth > 100 then page "dba", notify "#db" severity low') + [vocab.eos_id])
    assert not c.accepts(vocab.encode('when queue.depth > 100 then page "dba"') + [vocab.eos_id])
    assert run_validators(validators_for(g), 'when queue.depth > 100 then page "dba"')


def test_negation_units_and_hold_times_follow_the_description(spec, alerts_catalog, vocab):
    from decimal import Decimal

    from structgen.constraints import compile as compile_spec
    from structgen.validators.alerts.grounded import stated_holds, stated_units

    story = "Our web-3 box keeps running out of disk. Let #ops know (low) once less than 50 GB is free."
    g = ground_catalog(alerts_catalog, story)
    assert not g.negation and list(g.metrics) == ["disk.free"]  # "50 GB": not free memory, in MB
    assert stated_units("over 90 percent or 800 milliseconds, 5 GB") == ("%", "ms", "GB")
    assert stated_holds("over the last 10 minutes for 5 min, for at least an hour") == (300, 3600)
    c = compile_spec(spec.grounded(story), vocab)
    assert c.accepts(vocab.encode('when disk.free < 50GB and host == "web-3" then notify "#ops" severity low')
                     + [vocab.eos_id])
    for bad in ('when disk.free < 50GB and host != "web-3" then notify "#ops" severity low',
                'when disk.free < 50GB and host not in ["web-3"] then notify "#ops" severity low',
                'when not disk.free < 50GB then notify "#ops" severity low',
                'when mem.free < 50MB and host == "web-3" then notify "#ops" severity low'):
        assert not c.accepts(vocab.encode(bad) + [vocab.eos_id]), bad
        assert run_validators(validators_for(spec.grounded(story)), bad), bad
    assert ground_catalog(alerts_catalog, "CPU above 90% for 2 minutes").thresholds == (Decimal(90),)  # not 2
    unless = "Page ops when CPU is above 90%, unless the host is web-1"
    assert ground_catalog(alerts_catalog, unless).negation
    # "for 5 minutes": the rule holds for 5m, and must say so
    held = "Page ops when CPU is above 90% for 5 minutes"
    g = spec.grounded(held)
    c = compile_spec(g, vocab)
    assert c.accepts(vocab.encode('when cpu.usage > 90% for 5m then page "ops"') + [vocab.eos_id])
    assert not c.accepts(vocab.encode('when cpu.usage > 90% then page "ops"') + [vocab.eos_id])
    assert run_validators(validators_for(g), 'when cpu.usage > 90% then page "ops"')


def _holds(spec, vocab, description: str, ok: str, bad: str, why: str):
    """Grounded in ``description``, the compiled constraint and the validators pass ``ok`` and stop ``bad``
    (an issue saying ``why``); the constraint."""
    from structgen.constraints import compile as compile_spec

    g = spec.grounded(description)
    c = compile_spec(g, vocab)
    assert c.accepts(vocab.encode(ok) + [vocab.eos_id]) and run_validators(validators_for(g), ok) == []
    assert not c.accepts(vocab.encode(bad) + [vocab.eos_id])
    assert any(why in i.message for i in run_validators(validators_for(g), bad))
    return c


def test_a_list_of_a_key_holds_every_value_the_description_names(spec, vocab):
    c = _holds(spec, vocab, "Page ops when CPU is above 90% on web-1, web-2 or web-3",
               'when cpu.usage > 90% and host in ["web-3", "web-1", "web-2"] then page "ops"',
               'when cpu.usage > 90% and host in ["web-1", "web-3"] then page "ops"', "leaves out web-2")
    # one metric and one number: the key is tested once, in one list of every value it names
    for split in ('when cpu.usage > 90% and (host == "web-1" or host == "web-3") then page "ops"',
                  'when cpu.usage > 90% and host == "web-1" then page "ops"'):
        assert not c.accepts(vocab.encode(split) + [vocab.eos_id]), split
    assert any("test every one, in one list" in i.message
               for i in run_validators(validators_for(spec.grounded("Page ops when CPU is above 90% on web-1, web-2 "
                                                                    "or web-3")), split))


def test_a_rule_compares_the_metric_the_description_names(spec, vocab):
    from structgen.constraints import compile as compile_spec

    g = spec.grounded("Page ops when the latency is over 800 ms on web-1 or web-2 for 5 minutes")
    c = compile_spec(g, vocab)
    labels_only = 'when host in ["web-1", "web-2"] for 5m then page "ops"'
    assert not c.accepts(vocab.encode(labels_only) + [vocab.eos_id])
    assert any("compare it" in i.message for i in run_validators(validators_for(g), labels_only))
    for ok in ('when host in ["web-1", "web-2"] and http.latency > 800ms for 5m then page "ops"',
               'when http.latency > 800ms for 5m and host in ["web-1", "web-2"] then page "ops"'):
        assert c.accepts(vocab.encode(ok) + [vocab.eos_id]), ok
    # one metric and one number: one comparison, and'ed with the label tests, never or'ed with them
    assert g.catalog.single_comparison
    for bad in ('when (host == "web-1" or http.latency > 800ms) for 5m then page "ops"',
                'when http.latency > 800ms and http.latency > 800ms for 5m then page "ops"'):
        assert not c.accepts(vocab.encode(bad) + [vocab.eos_id]), bad
        assert any("compare it once" in i.message for i in run_validators(validators_for(g), bad)), bad
    # an aggregation named: the comparison is aggregated ("the number of waiting messages" names a metric)
    g = spec.grounded("Page ops when the p95 latency is over 800 ms")
    c = compile_spec(g, vocab)
    assert c.accepts(vocab.encode('when p95(http.latency) > 800ms then page "ops"') + [vocab.eos_id])
    assert not c.accepts(vocab.encode('when http.latency > 800ms then page "ops"') + [vocab.eos_id])
    g = spec.grounded("Page ops when the number of waiting messages is over 1000")
    assert g.catalog.aggregations == () and not g.catalog.aggregation_required
    # no metric named: labels alone may do
    g = spec.grounded("page ops about web-1")
    assert compile_spec(g, vocab).accepts(vocab.encode('when host == "web-1" then page "ops"') + [vocab.eos_id])


def test_values_named_in_a_negating_clause_are_tested_negated(spec, alerts_catalog, vocab):
    from structgen.validators.alerts.grounded import polarity

    text = "Post to #ops (low) when CPU goes above 75 percent, unless the host is db-1 or web-3."
    assert polarity(alerts_catalog.labels, text)["host"] == ((), ("web-3", "db-1"))
    assert polarity(alerts_catalog.labels, "on web-1 but only in prod")["env"] == (("prod",), ())
    _holds(spec, vocab, text, 'when cpu.usage > 75% and host not in ["db-1", "web-3"] then notify "#ops" severity low',
           'when cpu.usage > 75% and host in ["db-1", "web-3"] then notify "#ops" severity low', "as it is")


def test_contradicting_label_tests_are_reported(alerts_catalog):
    v = AlertRulesValidator(alerts_catalog)
    bad = 'when host not in ["web-1"] and disk.free < 5GB and host == "web-1" then page "ops"'
    (issue,) = v(bad)
    assert "never fire" in issue.message and bad[issue.span[0]:issue.span[1]] == 'host == "web-1"'
    for ok in ('when host in ["web-1", "web-2"] and host != "web-1" then page "ops"',
               'when host == "web-1" or host != "web-1" then page "ops"'):
        assert v(ok) == [], ok


def test_grounded_spec_keeps_its_catalog_and_gets_its_own_constraint(spec, alerts_catalog):
    assert isinstance(spec, AlertRulesGrammar) and spec.catalog is alerts_catalog and spec.grounded_in is None
    g = spec.grounded(DESCRIPTION)
    assert isinstance(g, AlertRulesGrammar) and g.grounded_in == DESCRIPTION and "grounded" in repr(g)
    assert g.key != spec.key and g.key == spec.grounded(DESCRIPTION).key
    assert alerts_spec(alerts_catalog, narrow=False).grounded(DESCRIPTION).key == g.key
    with pytest.raises(sg.ConfigError, match="must be text"):
        spec.grounded(None)


def test_thresholds_are_the_stated_numbers_in_range(spec, alerts_catalog, vocab):
    from decimal import Decimal

    from structgen.constraints import compile as compile_spec

    g = ground_catalog(alerts_catalog, DESCRIPTION)
    assert g.thresholds == (Decimal(5),)  # "5 GB" states 5; "web-3" states no number
    c = compile_spec(spec.grounded(DESCRIPTION), vocab)
    rule = 'when disk.free < {} and host == "web-3" then notify "#ops" severity low'
    assert c.accepts(vocab.encode(rule.format("5GB")))
    for other in ("50GB", "3GB", "5.5GB"):
        assert not c.accepts(vocab.encode(rule.format(other))), other
    # a metric whose range holds none of the stated numbers keeps its whole range
    text = spec.grounded("page ops when free memory is under 2000000 MB").text
    assert ground_catalog(alerts_catalog, "nothing stated here").thresholds is None
    assert any(line.startswith("NARROW_THRESHOLD") and "2000000" not in line and "[0-9]" in line
               for line in text.splitlines())


def test_constraint_and_validator_hold_the_stated_names(spec, vocab):
    from structgen.constraints import compile as compile_spec

    g = spec.grounded(DESCRIPTION)
    c = compile_spec(g, vocab)
    ok = 'when disk.free < 5GB and host == "web-3" then notify "#ops" severity low'
    for bad in ('when disk.free < 5GB and host == "web-1" then notify "#ops" severity low',
                'when disk.free < 5GB and host == "web-3" then notify "#alerts" severity low'):
        assert not c.accepts(vocab.encode(bad)), bad
        issues = run_validators(validators_for(g), bad)
        assert issues, bad
    assert c.accepts(vocab.encode(ok))
    assert run_validators(validators_for(g), ok) == []


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_rules_stay_in_the_grounded_language(split, vocab):
    """Grounding never rules out the right answer: every gold rule of 40 task examples is accepted by its
    grounded spec's compiled constraint and passes its validators."""
    from structgen.constraints import compile as compile_spec
    from structgen.train.data import alert_rules

    for ex in alert_rules.examples(split, 40, seed=11):
        g = ex.spec.grounded(ex.prompt)
        assert compile_spec(g, vocab).accepts(vocab.encode(ex.target) + [vocab.eos_id]), (ex.prompt, ex.target)
        assert run_validators(validators_for(g), ex.target) == [], (ex.prompt, ex.target)


DESCRIPTIONS = [DESCRIPTION, "page the web team when cpu on db-1 is above 90% for 5 minutes",
                "notify #alerts (high) if p99 latency in eu-west goes over 800 ms"]


@pytest.mark.timeout(600)
@grounded_runs()
@given(description=st.sampled_from(DESCRIPTIONS), decoding=grounded_decoding())
def test_random_logits_release_only_grounded_names(spec, alerts_catalog, release_grounded, description, decoding):
    r = release_grounded(description, spec, 64, **decoding)
    if r is None:
        return  # not released: nothing to check
    rule = parse_rule(r.text)  # it parses, and it is valid against the full catalog too
    assert AlertRulesValidator(alerts_catalog)(r.text) == [], r.text
    grounded = ground_catalog(alerts_catalog, description)
    assert AlertRulesValidator(grounded)(r.text) == [], (description, r.text)
    assert rule.canonical()
