"""Grounded SQL (``structgen.sql.grounded``, ``Sql.grounded``, ``generate(..., ground=True)`` on an ``Sql``):
every string literal of a released query is a part of the question, a value of its request notes, a value
of a low-cardinality column of the real shop database, or a date format; random logits drive the real
grammar engine and every release is checked again with SQLite and the allowed set."""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schema_strategies import grounded_decoding, grounded_runs

import structgen as sg
from structgen.sql.grounded import (MAX_COLUMN_VALUES, StatedLiteralsValidator, column_values, stated_literals,
                                    string_terminal)
from structgen.validators import run_validators, validators_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")

QUESTION = "Which customers from Spain ordered after June 6, 2025? List Ren O'Neil's last 3 orders."
LITERAL = re.compile(r"'((?:[^']|'')*)'")


@pytest.fixture(scope="module")
def spec(shop_db):
    return sg.Sql(shop_db)


@pytest.fixture(scope="module")
def grounded(spec):
    return spec.grounded(QUESTION)


def test_parts_are_whole_words_within_a_clause(spec):
    lits = stated_literals(QUESTION, spec.schema)
    for part in ("Spain", "customers from Spain", "Ren O'Neil", "June 6", "2025", "3 orders"):
        assert part in lits, part
    # no part crosses a comma or a question mark, none starts or ends inside a word
    for bad in ("June 6, 2025", "2025? List", "pain", "Spai", "Ren O'Neil's last 3 orders."):
        assert bad not in lits, bad


def test_like_patterns_notes_formats_and_modifiers(spec):
    lits = stated_literals(QUESTION, spec.schema)
    assert {"Spain%", "%Spain%", "%Spain", "R%"} - set(lits) == {"R%"}  # a pattern is of a stated word only
    assert "2025-06-06" in lits  # the request note of "June 6, 2025"
    assert {"%Y", "%m", "now", "start of month", "-3 days", "+3 months"} <= set(lits)
    assert "-6 days" not in lits  # the digits of a date are no number the question states
    assert not any("\n" in v or len(v) > 80 for v in lits)


def test_low_cardinality_columns_lend_their_values(spec, shop_db):
    held = column_values(spec.schema)
    conn = sqlite3.connect(f"{shop_db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        categories = {r[0] for r in conn.execute("SELECT DISTINCT category FROM products")}
        statuses = {r[0] for r in conn.execute("SELECT DISTINCT status FROM orders")}
        names = {r[0] for r in conn.execute("SELECT name FROM customers")}
    finally:
        conn.close()
    assert categories | statuses <= set(held)
    assert len(names) > MAX_COLUMN_VALUES and not names & set(held)  # a name is the question's to state
    assert categories <= set(stated_literals("How many orders?", spec.schema))


def test_string_terminal_quotes_as_sql_does():
    body = string_terminal(["O'Neil", "Spain", "Spain"])
    assert body == '"\'O\'\'Neil\'" | "\'Spain\'"'
    with pytest.raises(sg.StructgenError):
        string_terminal([])


def test_grounded_spec_is_its_own_constraint_with_a_grounded_fallback(spec, grounded):
    assert grounded.grounded_in == QUESTION and spec.grounded_in is None
    assert grounded.key != spec.key and grounded.key != spec.grounded("Other question?").key
    assert grounded.key == spec.grounded(QUESTION).key
    assert "grounded" in repr(grounded)
    strict = grounded.fallback
    assert strict.strict and strict.grounded_in == QUESTION
    line = next(x for x in strict.text.splitlines() if x.startswith("STRING:"))
    assert line == next(x for x in grounded.text.splitlines() if x.startswith("STRING:"))
    assert "'Spain'" in line and "/'" not in line
    with pytest.raises(sg.ConfigError, match="must be text"):
        spec.grounded(42)


def test_constraint_accepts_stated_literals_only(grounded, vocab):
    from structgen.constraints import compile as compile_spec

    c = compile_spec(grounded, vocab)
    ok = ["SELECT name FROM customers WHERE country = 'Spain'",
          "SELECT id FROM orders WHERE order_date > '2025-06-06'",
          "SELECT name FROM customers WHERE name = 'Ren O''Neil'",
          "SELECT COUNT(*) FROM orders WHERE strftime('%Y', order_date) = '2025'",
          "SELECT name FROM products WHERE category = 'books' AND name LIKE '%Spain%'"]
    bad = ["SELECT name FROM customers WHERE country = 'Atlantis'",
           "SELECT name FROM customers WHERE country = 'Spai'",
           "SELECT name FROM customers WHERE country = ' '",
           "SELECT name FROM customers WHERE country = 'Spain' AND name = ''"]
    assert [q for q in ok if not c.accepts(vocab.encode(q))] == []
    assert [q for q in bad if c.accepts(vocab.encode(q))] == []


def test_validator_reports_each_unstated_literal_with_its_span(grounded):
    checks = validators_for(grounded)
    assert any(isinstance(getattr(v, "fn", v), StatedLiteralsValidator) for v in checks)
    text = "SELECT name FROM customers WHERE country = 'Atlantis' OR name = 'Ren O''Neil'"
    issues = run_validators(checks, text)
    assert [text[slice(*i.span)] for i in issues if i.validator == "sql-stated-literals"] == ["'Atlantis'"]
    assert run_validators(checks, "SELECT name FROM customers WHERE country = 'Spain'") == []


def test_generate_ground_true_grounds_an_sql_spec(spec, tok4k, monkeypatch):
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=3))
    seen = []
    real = gen.compile

    def spy(s, engine=None):
        seen.append(s)
        return real(s, engine)

    monkeypatch.setattr(gen, "compile", spy)
    gen.generate("Orders from Spain?", spec, 48, strict=False, ground=True, seed=1)
    gen.generate("Orders from Spain?", spec, 48, strict=False, ground="Customers in Portugal", seed=1)
    assert [s.grounded_in for s in seen[:1]] == ["Orders from Spain?"]
    assert any(getattr(s, "grounded_in", None) == "Customers in Portugal" for s in seen)


QUESTIONS = ["How many customers are from Germany?", "Which products in books cost more than 20?",
             "Orders placed by Ren Takahashi after March 3rd, 2025", "Customers whose name starts with J"]


@pytest.mark.timeout(600)
@grounded_runs(5)  # each example is ~15 s of endgame search over random tokens (STRUCTGEN_SLOW=1 runs 20)
@given(question=st.sampled_from(QUESTIONS), decoding=grounded_decoding())
def test_random_logits_release_only_stated_literals(spec, release_grounded, shop_db, question, decoding):
    r = release_grounded(question, spec, 56, **decoding)
    if r is None:
        return  # not released: nothing to check
    allowed = set(stated_literals(question, spec.schema))
    literals = [m.group(1).replace("''", "'") for m in LITERAL.finditer(r.text)]
    assert set(literals) <= allowed, (question, r.text)
    conn = sqlite3.connect(f"{shop_db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        conn.execute("EXPLAIN " + r.text).fetchall()
    finally:
        conn.close()


# -- a literal fits the column it is compared with (structgen.sql.literal_fit) -----------------------------

def _misfits(check, text):
    return [text[slice(*i.span)] for i in check(text)]


def test_literal_fit_flags_comparisons_that_cannot_match(spec, grounded):
    from structgen.sql.literal_fit import LiteralFitValidator

    check = LiteralFitValidator(spec.schema)
    assert any(isinstance(getattr(v, "fn", v), LiteralFitValidator) for v in validators_for(grounded))
    q = "SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE c.id = '4 orders'"
    assert _misfits(check, q) == ["c.id = '4 orders'"]  # an INTEGER column, text that is no number
    assert _misfits(check, "SELECT name FROM products WHERE category = 'toy'") == ["category = 'toy'"]
    issue, = check("SELECT c.name FROM customers AS c WHERE c.country IN ('Japan', 'Narnia')")
    assert "'Narnia' cannot match c.country" in issue.message and "'Japan'" in issue.message.split("holds")[1]
    assert _misfits(check, "SELECT id FROM orders WHERE orders.status != 'lost'") == ["orders.status != 'lost'"]
    for ok in ("SELECT id FROM orders WHERE id = '5'",  # SQLite's affinity reads '5' as 5
               "SELECT name FROM products WHERE category = 'toys'",
               "SELECT COUNT(*) FROM orders WHERE strftime('%Y', order_date) = '2025'",
               "SELECT name FROM customers WHERE name = 'Nobody Here'",  # a high-cardinality column: any text
               "SELECT sub.x FROM (SELECT id AS x FROM orders) AS sub WHERE sub.x = 'a'"):  # a subquery's column
        assert check(ok) == [], ok


def test_literal_fit_takes_check_values_as_held(tmp_path):
    from structgen.sql.literal_fit import LiteralFitValidator

    db = tmp_path / "t.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE tickets (id INTEGER PRIMARY KEY, state TEXT CHECK (state IN ('open', 'closed', "
                 "'won''t fix')))")
    conn.executemany("INSERT INTO tickets (state) VALUES (?)", [("open",), ("closed",)])
    conn.commit()
    conn.close()
    check = LiteralFitValidator(sg.Sql(db).schema)
    assert check("SELECT id FROM tickets WHERE state = 'won''t fix'") == []  # allowed by the CHECK, held by no row
    assert _misfits(check, "SELECT id FROM tickets WHERE state = 'stale'") == ["state = 'stale'"]
    assert "won't fix" in stated_literals("Which tickets?", sg.Sql(db).schema)


def test_gold_queries_fit_their_columns(spec):
    from structgen.sql.literal_fit import LiteralFitValidator
    from structgen.train.data import text_to_sql

    check = LiteralFitValidator(spec.schema)
    for split in ("train", "heldout"):
        assert [ex.target for ex in text_to_sql.examples(split, 150, seed=4) if check(ex.target)] == []


# -- joins along foreign keys (structgen.sql.fk_joins) -----------------------------------------------------

def test_grounded_joins_follow_foreign_keys(spec, grounded, vocab):
    from structgen.constraints import compile as compile_spec

    assert ("orders", "customer_id", "customers", "id") in spec.schema.foreign_keys
    c = compile_spec(grounded, vocab)
    ok = ["SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE c.country = 'Spain'",
          "SELECT c.name FROM customers AS c JOIN orders AS o ON c.id = o.customer_id",
          "SELECT p.name FROM products AS p JOIN order_items AS oi ON oi.product_id = p.id JOIN orders AS o "
          "ON o.id = oi.order_id JOIN customers AS c ON c.id = o.customer_id WHERE c.country = 'Spain'",
          "SELECT customers.name FROM orders JOIN customers ON customers.id = orders.customer_id",
          "SELECT c.name FROM customers AS c WHERE c.id IN (SELECT o.customer_id FROM orders AS o JOIN customers "
          "AS c2 ON o.id = c2.id)"]  # a subquery joins as it likes
    bad = ["SELECT c.name FROM customers AS c JOIN orders AS o ON o.order_date = c.id",
           "SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id AND o.id > 3",
           "SELECT c.name FROM customers AS c JOIN products AS p ON p.id = c.id",  # no key connects them
           "SELECT p.name FROM products AS p JOIN order_items AS oi ON oi.order_id = p.id"]
    assert [q for q in ok if not c.accepts(vocab.encode(q))] == []
    assert [q for q in bad if c.accepts(vocab.encode(q))] == []
    plain = compile_spec(spec, vocab)  # the plain spec joins on any condition
    assert all(plain.accepts(vocab.encode(q)) for q in bad)


def test_a_database_without_foreign_keys_keeps_free_joins_when_grounded(tmp_path, vocab):
    from structgen.constraints import compile as compile_spec

    db = tmp_path / "nofk.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT); "
                       "CREATE TABLE pets (id INTEGER PRIMARY KEY, owner INTEGER, name TEXT);")
    conn.close()
    g = sg.Sql(db).grounded("Which people own pets?")
    assert g.schema.foreign_keys == ()
    q = "SELECT p.name FROM people AS p JOIN pets AS pe ON pe.owner = p.id"
    assert compile_spec(g, vocab).accepts(vocab.encode(q))


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_queries_stay_in_the_grounded_language(spec, vocab, split):
    """Grounding never rules out the right answer: 25 gold queries per split are accepted by their grounded
    spec's compiled constraint (literals, joins) and pass its validators."""
    from structgen.constraints import compile as compile_spec
    from structgen.train.data import text_to_sql

    for ex in text_to_sql.examples(split, 25, seed=8):
        g = ex.spec.grounded(ex.prompt)
        assert compile_spec(g, vocab).accepts(vocab.encode(ex.target) + [vocab.eos_id]), (ex.prompt, ex.target)
        assert run_validators(validators_for(g), ex.target) == [], (ex.prompt, ex.target)
