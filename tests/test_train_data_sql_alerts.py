"""Training data families "sql" (text-to-SQL over the shop database) and "alert" (alert rules from a
description): templates, determinism, held-out separation, and that every target is valid output of its spec
(accepted token by token by the compiled constraint, passing the spec's validators; SQL runs and returns rows,
alert rules are in canonical form)."""

from __future__ import annotations

import re

import pytest
from structgen.validators import validators_for
from structgen.validators.alerts import AlertRulesValidator, parse_rule

import structgen as sg
from structgen.errors import StructgenError
from structgen.sql import run_query
from structgen.train.data import alert_rules, shop_values, text_to_sql

MODULES = {"sql": text_to_sql, "alert": alert_rules}
MIN_TEMPLATES = {"sql": (30, 10), "alert": (20, 6)}


def _issues(checks, text):
    return [i.message for v in checks for i in v(text)]


def _sample(mod, n_train=150, n_heldout=50, seed=11):
    return mod.examples("train", n_train, seed) + mod.examples("heldout", n_heldout, seed)


@pytest.mark.parametrize("family", MODULES)
def test_templates_are_many_unique_and_disjoint(family):
    mod = MODULES[family]
    train, heldout = mod.TRAIN_TEMPLATES, mod.HELDOUT_TEMPLATES
    assert len(train) >= MIN_TEMPLATES[family][0] and len(heldout) >= MIN_TEMPLATES[family][1]
    assert len(set(train)) == len(train) and len(set(heldout)) == len(heldout)
    assert not set(train) & set(heldout)


@pytest.mark.parametrize("family", MODULES)
def test_examples_are_deterministic_per_seed(family):
    mod = MODULES[family]
    key = lambda exs: [(e.template, e.prompt, e.target, e.gold) for e in exs]
    a, b = mod.examples("train", 60, seed=3), mod.examples("train", 60, seed=3)
    assert key(a) == key(b)
    assert key(mod.examples("train", 20, seed=3)) == key(a[:20])  # a shorter run is a prefix
    assert key(mod.examples("train", 60, seed=4)) != key(a)
    assert key(mod.examples("heldout", 30, seed=3)) == key(mod.examples("heldout", 30, seed=3))


@pytest.mark.parametrize("family", MODULES)
def test_every_template_appears_and_fields_follow_the_contract(family):
    mod = MODULES[family]
    for split, ids in (("train", mod.TRAIN_TEMPLATES), ("heldout", mod.HELDOUT_TEMPLATES)):
        exs = mod.examples(split, len(ids), seed=0)
        assert sorted(e.template for e in exs) == sorted(ids)  # one round of the cycle holds each once
        assert {e.template for e in mod.examples(split, 3 * len(ids) + 1, seed=5)} == set(ids)
        for e in exs:
            assert e.family == family and isinstance(e.prompt, str) and e.prompt.strip()
            assert e.target == e.gold and e.target.strip() == e.target
    assert len({id(e.spec) for e in mod.examples("train", 40, 1)}) == 1  # one cached spec instance
    assert mod.examples("train", 0, 0) == []
    with pytest.raises(StructgenError):
        mod.examples("test", 3, 0)


@pytest.mark.parametrize("family", MODULES)
def test_heldout_prompts_are_never_train_prompts(family):
    mod = MODULES[family]
    train = {e.prompt.lower() for seed in range(3) for e in mod.examples("train", 1000, seed)}
    heldout = [e.prompt for e in mod.examples("heldout", 600, seed=0)]
    assert not [p for p in heldout if p.lower() in train]


@pytest.fixture(scope="module")
def sql_constraint(tok4k):
    return sg.compile(text_to_sql.sql_spec(), tok4k)


def test_sql_spec_is_the_shop_database(shop_db):
    spec = text_to_sql.sql_spec()
    assert isinstance(spec, sg.Sql) and spec.database == shop_db.resolve()
    assert spec is text_to_sql.examples("heldout", 1, 0)[0].spec


def test_sql_targets_are_accepted_valid_and_return_rows(sql_constraint):
    spec, vocab = text_to_sql.sql_spec(), sql_constraint.vocab
    checks = validators_for(spec)
    targets = sorted({e.target for e in _sample(text_to_sql)})
    assert len(targets) >= 100
    rejected = [q for q in targets if not sql_constraint.accepts(vocab.encode(q) + [vocab.eos_id] * 2)]
    assert not rejected, rejected[:5]
    invalid = [(q, _issues(checks, q)) for q in targets if _issues(checks, q)]
    assert not invalid, invalid[:3]
    empty = [q for q in targets if not run_query(spec.database, q, max_rows=1, timeout_s=5).rows]
    assert not empty, empty[:5]


def test_sql_targets_cover_the_constructs():
    sqls = [e.target for e in text_to_sql.examples("train", len(text_to_sql.TRAIN_TEMPLATES), 0)]
    heldout = [e.target for e in text_to_sql.examples("heldout", len(text_to_sql.HELDOUT_TEMPLATES), 0)]
    for needle in ("COUNT(*)", "SUM(", "AVG(", "GROUP BY", "ORDER BY", "LIMIT", "HAVING", "LEFT JOIN",
                   "IN (SELECT", "EXISTS (SELECT", "> (SELECT AVG", "CASE WHEN", "strftime('%Y', ", "BETWEEN",
                   "LIKE '", "DISTINCT", "NOT IN ("):
        assert any(needle in q for q in sqls), needle
    assert any(q.count(" JOIN ") == 3 for q in sqls)  # four tables
    assert any(q.count(" JOIN ") == 1 for q in sqls)
    assert any("ORDER BY COUNT(*)" in q for q in heldout)


def test_sql_questions_carry_their_values():
    """Every string literal of the gold SQL is stated in the question (a category may be said as its
    adjective, "toy products"; a date at least by its year, "March 5, 2025")."""
    for e in text_to_sql.examples("train", 300, seed=2) + text_to_sql.examples("heldout", 100, seed=2):
        for lit in (v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", e.target)):
            if "%" in lit:  # LIKE patterns, strftime formats
                continue
            if re.fullmatch(r"\d{4}-\d\d-\d\d", lit):
                lit = lit[:4]
            assert lit in e.prompt or shop_values.CAT_WORD.get(lit, lit) in e.prompt, (lit, e.prompt, e.target)


@pytest.fixture(scope="module")
def alert_constraint(tok4k):
    return sg.compile(alert_rules.alert_spec(), tok4k)


def test_alert_targets_parse_are_canonical_valid_and_accepted(alert_constraint):
    spec, vocab = alert_rules.alert_spec(), alert_constraint.vocab
    checks = validators_for(spec)
    semantic = AlertRulesValidator(alert_rules.catalog())
    targets = sorted({e.target for e in _sample(alert_rules)})
    assert len(targets) >= 150
    not_canonical = [t for t in targets if parse_rule(t).canonical() != t]
    assert not not_canonical, not_canonical[:5]
    invalid = [(t, _issues(checks, t) + [i.message for i in semantic(t)]) for t in targets
               if _issues(checks, t) or semantic(t)]
    assert not invalid, invalid[:3]
    rejected = [t for t in targets if not alert_constraint.accepts(vocab.encode(t) + [vocab.eos_id])]
    assert not rejected, rejected[:5]


def test_alert_targets_cover_the_language():
    rules = [e.target for e in alert_rules.examples("train", 400, 0)]
    for needle in (" and ", " or ", " for ", "host in [", "host not in [", "!= ", "== ", "page \"",
                   "notify \"", ", page", "avg(", "p99(", "sum(", "[5m]", ">= ", "<= ", "%", "ms ", "GB"):
        assert any(needle in r for r in rules), needle
    assert any("(" in r.split(" and ", 1)[-1] and " or " in r for r in
               (e.target for e in alert_rules.examples("heldout", 60, 0)))  # "a and (b or c)"


def test_alert_descriptions_name_the_catalog_values():
    for e in alert_rules.examples("train", 300, seed=1):
        rule = parse_rule(e.target)
        text = e.prompt.lower()
        for a in rule.actions:
            assert (a.channel if hasattr(a, "channel") else a.team) in text, (e.prompt, e.target)
        for m in rule.label_matches():
            assert all(v in text for v in m.values), (e.prompt, e.target)


def test_targets_fit_a_short_canvas():
    """Gold outputs stay short in a 4k BPE trained on this data: 95% of SQL within 60 tokens (all within 80),
    rules within 48."""
    from structgen.tokenizers import train_bpe
    from structgen.train.data import corpus_texts

    tok = train_bpe(corpus_texts(2000, 0, families=("sql", "alert")), 4096)
    for mod, p95, most in ((text_to_sql, 60, 80), (alert_rules, 40, 48)):
        n = sorted(len(tok.encode(e.target)) for e in _sample(mod, 200, 100, seed=1))
        assert n[int(0.95 * len(n))] <= p95 and n[-1] <= most, (mod.FAMILY, n[len(n) // 2], n[-5:])


def test_composed_sql_covers_every_source_and_shape_and_never_a_heldout_query():
    """The composed templates assemble queries clause by clause (``sql_composed``); none has the skeleton
    (literals blanked) of a held-out template's query, so the held-out queries stay unseen, not only their
    sentences."""
    from structgen.train.data import sql_composed

    composed = [t for t in text_to_sql.TRAIN_TEMPLATES if t.startswith("composed.")]
    assert len(composed) == len(sql_composed.SOURCES) * len(sql_composed.SHAPES)
    heldout = {text_to_sql.skeleton(e.target) for e in text_to_sql.examples("heldout", 200, seed=1)}
    exs = [e for e in text_to_sql.examples("train", 1200, seed=4) if e.template.startswith("composed.")]
    assert {e.template for e in exs} == set(composed)
    assert not [e.target for e in exs if text_to_sql.skeleton(e.target) in heldout]
    assert len({text_to_sql.skeleton(e.target) for e in exs}) > 150  # many distinct query shapes
    for needle in (" GROUP BY ", " ORDER BY ", " LIMIT ", " WHERE ", " AND ", " JOIN ", "COUNT(DISTINCT "):
        assert any(needle in e.target for e in exs), needle


def test_composed_sql_version_2_adds_the_missing_constructs_and_leaves_version_1_as_it_was(sql_constraint):
    """``sql_shapes=2`` (``sql_composed_more``) adds composed templates for HAVING, anti-joins, shares,
    spreads, first/last dates, months and per-name keys; every query is accepted by the grammar, valid and
    returns rows, none has a held-out skeleton, and version 1's examples (the shipped model's data) are the
    same as before, example for example."""
    from structgen.errors import ConfigError
    from structgen.train.config import TrainConfig
    from structgen.train.data import examples as family_examples
    from structgen.train.data import sql_composed_more

    key = lambda exs: [(e.template, e.prompt, e.target) for e in exs]
    assert key(text_to_sql.examples("train", 300, seed=6)) == key(text_to_sql.examples("train", 300, 6, shapes=1))
    assert key(family_examples("sql", "train", 50, 6)) == key(text_to_sql.examples("train", 50, 6))
    assert key(text_to_sql.examples("heldout", 40, 6, shapes=2)) == key(text_to_sql.examples("heldout", 40, 6))

    more = [e for e in family_examples("sql", "train", 1500, 2, sql_shapes=2) if e.template.startswith("composed2.")]
    ids = {f"composed2.{s.name}.{shape}" for s in sql_composed_more.SOURCES for shape in sql_composed_more.shapes_of(s)}
    assert {e.template for e in more} == ids
    heldout = {text_to_sql.skeleton(e.target) for e in text_to_sql.examples("heldout", 200, seed=1)}
    assert not [e.target for e in more if text_to_sql.skeleton(e.target) in heldout]
    assert not {e.prompt.lower() for e in more} & {e.prompt.lower() for e in text_to_sql.examples("heldout", 200, 1)}
    for needle in (" HAVING COUNT(*) > ", " HAVING SUM(", " NOT IN (SELECT ", "AVG(CASE WHEN ", "MAX(price) - MIN(price)",
                   "MIN(order_date)", "MAX(o.order_date)", "strftime('%m', ", " GROUP BY c.id", " GROUP BY p.id",
                   "ORDER BY MIN(order_date) LIMIT 1"):
        assert any(needle in e.target for e in more), needle

    spec, vocab = text_to_sql.sql_spec(), sql_constraint.vocab
    checks = validators_for(spec)
    targets = sorted({e.target for e in more})[::3]
    assert len(targets) >= 100
    assert not [q for q in targets if not sql_constraint.accepts(vocab.encode(q) + [vocab.eos_id] * 2)]
    assert not [(q, _issues(checks, q)) for q in targets if _issues(checks, q)]
    assert not [q for q in targets if not run_query(spec.database, q, max_rows=1, timeout_s=5).rows]
    # a share's filter is never on the column its condition reads; a HAVING threshold is its own value
    assert not [q for q in targets if "CASE WHEN status" in q and "WHERE status" in q]

    with pytest.raises(ConfigError, match="sql shapes version"):
        text_to_sql.examples("train", 3, 0, shapes=3)
    with pytest.raises(ConfigError, match="sql_shapes"):
        TrainConfig(sql_shapes=3).validated()


def test_sql_skeleton_blanks_literals_only():
    assert (text_to_sql.skeleton("SELECT name FROM products WHERE price > 25.5 AND category = 'it''s' LIMIT 3")
            == "SELECT name FROM products WHERE price > 0 AND category = '?' LIMIT 0")
