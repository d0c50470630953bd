"""Alert rules generated through ``alerts_spec`` from random logits (narrowed to the catalog and not): whatever
is reported valid passes every check again; the narrowed grammar lists each value and action once; the CLI and
the example files and script."""

from __future__ import annotations

import json
import re
import runpy
import sys
from collections import Counter

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import structgen as sg
from structgen.cli import app
from structgen.validators import LarkValidator
from structgen.validators.alerts import AlertRulesValidator, alerts_spec, parse_rule

from test_alerts import CATALOG, EXAMPLES, GRAMMAR

pytestmark = pytest.mark.usefixtures("one_torch_thread")


POLICIES = [dict(threshold=0.9, tokens_per_step=None), dict(threshold=0.5, tokens_per_step=None),
            dict(threshold=None, tokens_per_step=1), dict(threshold=None, tokens_per_step=3)]
BLOCKS = [4, 8, 16, 32]


def _recheck(r: sg.Result, spec, c, alerts_catalog) -> None:
    """A result reported valid, checked again independently of the generator."""
    where = repr(r.text)
    assert r.valid and r.errors == [], where
    assert c.accepts(r.tokens) and c.accepts(r.tokens[: r.n_output_tokens]), where
    assert lark.Lark(GRAMMAR, parser="earley").parse(r.text), where  # the shipped grammar, not the narrowed one
    assert LarkValidator(spec.text)(r.text) == [], where
    assert AlertRulesValidator(alerts_catalog)(r.text) == [], where
    assert parse_rule(r.text).canonical()


def _run(tok4k, spec, seed: int, block: int, policy: dict, max_tokens: int, **kw):
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed), block_length=block, **policy, **kw)
    try:
        return gen.generate("page ops when cpu is above 90% for 5 minutes", spec, max_tokens=max_tokens,
                            strict=False)
    except sg.CanvasTooSmallError:  # the grammar engine ran out of canvas after model calls ("stuck")
        return None


def test_random_logits_narrowed_mostly_valid(tok4k, alerts_narrow, alerts_catalog):
    """Seeds x block lengths x both commit policies through the narrowed spec: no result reported valid
    fails the independent checks, and nearly all results are valid (measured: 32 of 32, with repairs; 90%
    before the narrowed grammar listed each value and action at most once)."""
    spec, c = alerts_narrow
    tally: Counter = Counter()
    for seed in range(32):
        block, policy = BLOCKS[seed % 4], POLICIES[(seed // 4) % 4]
        r = _run(tok4k, spec, seed, block, policy, [64, 80, 96][seed % 3])
        if r is None:
            tally["stuck"] += 1
        elif r.valid:
            _recheck(r, spec, c, alerts_catalog)
            tally["valid"] += 1
        else:
            assert r.errors and AlertRulesValidator(alerts_catalog)(r.text), r.text  # the grammar held the syntax
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
def test_random_logits_never_release_invalid_rules(tok4k, alerts_narrow, alerts_catalog, seed, block, policy, narrowed):
    """Hypothesis over seeds, blocks and policies, with and without narrowing: whatever is reported valid
    passes every check again. (Without narrowing almost nothing is valid: random names are not in the
    catalog; one repair round keeps the run short.)"""
    spec = alerts_narrow[0] if narrowed else alerts_spec(alerts_catalog, narrow=False)
    c = alerts_narrow[1] if narrowed else sg.compile(spec, tok4k)
    r = _run(tok4k, spec, seed, block, policy, 80, max_repair_rounds=3 if narrowed else 1)
    if r is not None and r.valid:
        _recheck(r, spec, c, alerts_catalog)
    elif r is not None:
        assert c.accepts(r.tokens) and LarkValidator(GRAMMAR)(r.text) == []


def test_random_logits_unnarrowed_grammar_is_always_well_formed(tok4k, alerts_constraint, alerts_catalog):
    """The plain grammar (no catalog): every result parses; with the catalog's validator almost none are
    semantically valid (random names), which is what narrowing is for."""
    spec = sg.Grammar("alerts.lark")
    outcomes = Counter()
    for seed in range(6):
        r = _run(tok4k, spec, 500 + seed, BLOCKS[seed % 4], POLICIES[seed % 4], 96)
        if r is None:
            outcomes["stuck"] += 1
            continue
        assert r.valid and alerts_constraint.accepts(r.tokens), r.text
        parse_rule(r.text)
        outcomes["catalog-valid" if not AlertRulesValidator(alerts_catalog)(r.text) else "catalog-invalid"] += 1
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


def test_example_rule_files_validate(alerts_catalog):
    files = sorted((EXAMPLES / "rules").glob("*.alert"))
    assert len(files) >= 5
    for path in files:
        text = path.read_text().strip()
        assert AlertRulesValidator(alerts_catalog)(text) == [], path.name
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


def test_narrowed_grammar_lists_each_value_and_each_action_once(alerts_narrow, alerts_catalog, tok4k):
    """Duplicate list values and repeated actions are out of the narrowed language (one rule per set of
    names already used), every order of distinct names is in it; past ``DISTINCT_MAX`` names the grammar
    lists them freely and the validator reports a repeat."""
    from itertools import permutations

    from structgen.validators.alerts.catalog import DISTINCT_MAX

    _, c = alerts_narrow
    enc = c.vocab.encode
    hosts = alerts_catalog.labels["host"]
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
