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


def test_ground_catalog_narrows_what_the_description_names_and_keeps_the_rest(alerts_catalog):
    g = ground_catalog(alerts_catalog, DESCRIPTION)
    assert g.labels["host"] == ("web-3",) and g.channels == ("#ops",)
    assert g.teams == alerts_catalog.teams  # no team named: the list stays whole
    assert g.labels["env"] == alerts_catalog.labels["env"]
    assert g.metrics == alerts_catalog.metrics and g.max_hold == alerts_catalog.max_hold


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
