"""The SQLite SELECT grammar (generic and specialised to a database) and the ``sg.Sql`` spec.

The corpus is ``tests/data/shop_valid.sql`` (one canonical query per line) and ``tests/data/shop_invalid.sql``
(one per line, each after a ``-- category:`` tag) over the example shop database.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from pathlib import Path

import lark
import pytest

import structgen as sg
from structgen.sql import DbSchema, connect_readonly, generic_grammar, specialise
from structgen.sql.grammar import ALIAS_MAX_LEN, KEYWORDS, alias_regex, quote_ident, table_aliases
from structgen.validators import LarkValidator, validators_for

DATA = Path(__file__).resolve().parent / "data"
VALID = [line for line in (DATA / "shop_valid.sql").read_text(encoding="utf-8").split("\n") if line]
INVALID = [re.fullmatch(r"-- ([a-z_]+): (.*)", line, re.S).groups()
           for line in (DATA / "shop_invalid.sql").read_text(encoding="utf-8").split("\n") if line]

# what must reject each category of invalid query: the constraint itself, or the constraint or the validators
BY_CONSTRAINT = {"unknown_column", "unknown_table", "wrong_table_column", "ambiguous_column", "syntax",
                 "misplaced_aggregate", "write_statement", "lowercase", "whitespace"}
BY_EITHER = {"undeclared_alias"}
# categories the generic grammar (identifiers unchecked) rejects too
GENERIC_REJECTS = {"syntax", "misplaced_aggregate", "write_statement", "lowercase", "whitespace"}


@pytest.fixture(scope="module")
def spec(shop_db):
    return sg.Sql(shop_db)


@pytest.fixture(scope="module")
def constraint(spec, tok4k):
    return sg.compile(spec, tok4k)


@pytest.fixture(scope="module")
def generic(tok4k):
    g = sg.Grammar("sqlite_select.lark")
    return g, sg.compile(g, tok4k)


def _issues(checks, text):
    return [i for v in checks for i in v(text)]


# -- the corpus --------------------------------------------------------------------------------------------


def test_corpus_is_large_and_covers_every_category():
    assert len(VALID) >= 90 and len(set(VALID)) == len(VALID)
    assert len(INVALID) >= 45
    assert {c for c, _ in INVALID} == BY_CONSTRAINT | BY_EITHER


def test_valid_queries_are_accepted_token_by_token(constraint, vocab):
    assert constraint.engine == "grammar"
    rejected = [q for q in VALID if not constraint.accepts(vocab.encode(q) + [vocab.eos_id] * 2)]
    assert not rejected


def test_valid_queries_parse_and_pass_every_validator(spec):
    checks = validators_for(spec)  # the Lark parse of the specialised grammar, then the SQL validators
    assert isinstance(checks[0], LarkValidator) and len(checks) == 1 + len(spec.validators)
    failing = {q: _issues(checks, q) for q in VALID}
    assert not {q: i for q, i in failing.items() if i}


def test_valid_queries_run_on_the_database(shop_db):
    conn = connect_readonly(shop_db)
    try:
        errors = {}
        for q in VALID:
            try:
                conn.execute(q).fetchall()
            except sqlite3.Error as e:
                errors[q] = str(e)
    finally:
        conn.close()
    assert not errors


def test_generic_grammar_accepts_the_corpus(generic, vocab):
    g, c = generic
    parser = LarkValidator(g.text)
    assert not [q for q in VALID if not c.accepts(vocab.encode(q)) or parser(q)]


def test_invalid_queries_are_rejected(spec, constraint, vocab):
    lark_check = LarkValidator(spec.text)
    checks = validators_for(spec)
    wrong = []
    for category, q in INVALID:
        by_constraint = not constraint.accepts(vocab.encode(q))
        assert by_constraint == bool(lark_check(q)), q  # the two readings of the grammar agree
        if category in BY_CONSTRAINT and not by_constraint:
            wrong.append((category, q, "accepted by the constraint"))
        elif category in BY_EITHER and not by_constraint and not _issues(checks, q):
            wrong.append((category, q, "accepted by the constraint and the validators"))
    assert not wrong


def test_generic_grammar_rejects_what_is_not_a_canonical_select(generic, vocab):
    g, c = generic
    parser = LarkValidator(g.text)
    accepted = [q for cat, q in INVALID if cat in GENERIC_REJECTS and (c.accepts(vocab.encode(q)) or not parser(q))]
    assert not accepted


def test_generic_grammar_file_is_generated_from_the_module():
    path = Path(sg.Grammar("sqlite_select.lark").path)
    assert path.read_text(encoding="utf-8") == generic_grammar(), (
        "grammars/sqlite_select.lark is stale: regenerate it as its header says")


def _derivations(text: str, n: int, seed: int, max_depth: int = 8) -> list[str]:
    """``n`` random sentences derived from the Lark grammar ``text`` (regex terminals from a sample pool,
    past ``max_depth`` the shallowest expansion), to compare what llguidance accepts with what Lark derives."""
    from structgen.sql.grammar_rules import CLASS_TERMINALS

    pool = {"IDENT": ["a", "Dname", "Wx", "NULLx", "DISTINCTx", "ASx", "ORx", "c2", '"x y"', "date", "sub"],
            "OUT_ALIAS": ["n", "total", "x1", "selected", "namex", "d", "w", "asx"],
            "NUMBER": ["0", "12.5", "7"], "STRING": ["'a'", "''", "'it''s'"], "INT": ["3", "0"]}
    parser = lark.Lark(text, parser="earley")
    rules: dict[str, list] = {}
    for r in parser.rules:
        rules.setdefault(r.origin.name, []).append(r.expansion)
    terminals = {t.name: t.pattern for t in parser.terminals}
    height = dict.fromkeys(rules, 10**9)

    def h(expansion) -> int:
        return 1 + max([0] + [0 if s.is_term else height[s.name] for s in expansion])

    changed = True
    while changed:
        changed = False
        for name, expansions in rules.items():
            best = min(h(e) for e in expansions)
            if best < height[name]:
                height[name], changed = best, True
    rng = random.Random(seed)

    def term(name: str) -> str:
        if name in pool:
            return rng.choice(pool[name])
        if name in CLASS_TERMINALS:
            return json.loads(rng.choice(CLASS_TERMINALS[name].split(" | ")))
        assert terminals[name].type == "str", name
        return terminals[name].value

    def derive(name: str, depth: int) -> str:
        options = rules[name]
        if depth >= max_depth:
            low = min(h(e) for e in options)
            options = [e for e in options if h(e) == low]
        return "".join(term(s.name) if s.is_term else derive(s.name, depth + 1) for s in rng.choice(options))

    return [derive("start", 0) for _ in range(n)]


def test_llguidance_accepts_what_lark_derives(spec, constraint, generic, vocab):
    # the grammar is read by two engines: llguidance's lexer looks one byte ahead, Lark's Earley parser does
    # not; random derivations (names chosen to start like keywords) must be accepted by both
    for text, c in ((generic[0].text, generic[1]), (spec.text, constraint)):
        rejected = [q for q in _derivations(text, 120, seed=5) if not c.accepts(vocab.encode(q))]
        assert not rejected, rejected[:3]


# -- the canonical form ------------------------------------------------------------------------------------


def test_only_a_select_can_start_and_nothing_follows_it(constraint, vocab):
    assert constraint.accepts_prefix(vocab.encode("SELECT"))
    for head in ("INSERT", "UPDATE", "DELETE", "DROP", "ATTACH", "PRAGMA", "WITH", "EXPLAIN", "VALUES", "REPLACE",
                 "select", " SELECT", "(SELECT"):
        assert not constraint.accepts_prefix(vocab.encode(head)), head
    q = "SELECT name FROM customers"
    for tail in (";", " ", "\n", " -- x", "; SELECT 1", " UNION SELECT name FROM products"):
        assert not constraint.accepts(vocab.encode(q + tail)), tail
    assert constraint.accepts(vocab.encode(q))


def _spaces_outside_strings(q: str) -> list[int]:
    out, in_string = [], False
    for i, ch in enumerate(q):
        if ch == "'":
            in_string = not in_string
        elif ch == " " and not in_string:
            out.append(i)
    return out


def test_exactly_one_space_where_a_separator_is_needed(constraint, vocab):
    rng = random.Random(7)
    for q in rng.sample(VALID, 25):
        i = rng.choice(_spaces_outside_strings(q))
        for bad in (q[:i] + "  " + q[i + 1:], q[:i] + "\n" + q[i + 1:], q[:i] + q[i + 1:], q + " ", " " + q):
            assert not constraint.accepts(vocab.encode(bad)), bad


def test_qualified_columns_must_belong_to_the_table_named(constraint, vocab, spec):
    schema = spec.schema
    aliases = table_aliases(schema)
    assert aliases == {"customers": ("c", "c2"), "products": ("p", "p2"), "orders": ("o", "o2"),
                       "order_items": ("oi", "oi2")}
    every_column = sorted({c for t in schema.tables for c in t.column_names})
    for t in schema.tables:
        a = aliases[t.name][0]
        for col in every_column:
            q = f"SELECT {a}.{col} FROM {t.name} AS {a}"
            assert constraint.accepts(vocab.encode(q)) == (col in t.column_names), q
            q = f"SELECT {col} FROM {t.name}"  # single-table scope: the table's own columns, unqualified
            assert constraint.accepts(vocab.encode(q)) == (col in t.column_names), q


def test_the_outermost_single_table_query_names_only_what_its_from_declares(constraint, vocab, spec):
    """A top-level single-table query correlates with nothing: a qualified column names its table as FROM
    does (``customers.x`` without an alias, ``c.x`` with ``AS c``); subqueries may still reach outward."""
    enc = vocab.encode
    for q in ("SELECT c.country FROM customers AS c", "SELECT customers.country FROM customers",
              "SELECT name, c.country FROM customers AS c WHERE c.id > 3 ORDER BY c.name",
              "SELECT c.* FROM customers AS c", "SELECT customers.* FROM customers",
              "SELECT name FROM customers WHERE EXISTS (SELECT 1 FROM orders AS o WHERE o.customer_id = customers.id)",
              "SELECT c.name FROM customers AS c WHERE EXISTS (SELECT 1 FROM orders AS o WHERE o.customer_id = c.id)",
              "SELECT p.name FROM products AS p WHERE p.price > (SELECT AVG(p2.price) FROM products AS p2)"):
        assert constraint.accepts(enc(q)), q
    for q in ("SELECT c.country FROM customers", "SELECT customers.country FROM customers AS c",
              "SELECT COUNT(oi.quantity) FROM customers", "SELECT name FROM customers WHERE c.name = 'Spain'",
              "SELECT o.* FROM customers AS c", "SELECT name FROM customers AS c ORDER BY o.id"):
        assert not constraint.accepts(enc(q)), q
        assert _issues(validators_for(spec), q), q  # what the grammar now excludes, SQLite rejects too
    # the canonical form's one narrowing here: the second alias (for self-joins) only inside subqueries
    assert not constraint.accepts(enc("SELECT c2.name FROM customers AS c2"))
    assert not constraint.accepts_prefix(enc("SELECT c.country FROM customers WHERE"))


def test_the_outermost_join_declares_every_alias_it_uses_exactly_once(constraint, vocab, spec):
    """A top-level join whose tables are all declared ``t AS a`` (or all by bare name) uses only the names
    its FROM declares, each declared once, in any order (one scope per set of tables and way of naming
    them) or a self-join; a FROM that starts with a subquery keeps the permissive scope."""
    enc = vocab.encode
    join = "FROM customers AS c JOIN orders AS o ON o.customer_id = c.id"
    for q in (f"SELECT c.name, o.id {join}", f"SELECT c.name {join}",
              "SELECT o.id FROM orders AS o JOIN customers AS c ON c.id = o.customer_id WHERE c.country = 'Spain'",
              f"SELECT c.name, SUM(oi.quantity * p.price) AS total {join} JOIN order_items AS oi ON oi.order_id = o.id "
              "JOIN products AS p ON p.id = oi.product_id GROUP BY c.name ORDER BY total DESC",
              "SELECT c.name FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id WHERE o.id IS NULL",
              "SELECT c.name, c2.name FROM customers AS c JOIN customers AS c2 ON c2.city = c.city",
              "SELECT customers.name FROM customers JOIN orders ON orders.customer_id = customers.id"):
        assert constraint.accepts(enc(q)), q
    bare = "FROM customers JOIN orders ON orders.customer_id = customers.id"
    for q in (f"SELECT products.name {bare}", f"SELECT customers.name {bare} JOIN customers ON 1",
              "SELECT COUNT(oi.quantity) FROM customers AS c INNER JOIN customers AS c2 ON c.id = c2.id"):
        assert not constraint.accepts(enc(q)), q
        assert _issues(validators_for(spec), q), q
    # the canonical form's narrowing: a top-level join names all its tables one way (all aliased or all bare)
    for q in ("SELECT c.name FROM customers AS c JOIN orders ON orders.customer_id = c.id",
              "SELECT c.country FROM customers AS c JOIN products AS p ON p.id = c.id JOIN orders ON 0",
              "SELECT c.name FROM customers AS c JOIN customers AS c2 ON c2.id = c.id JOIN orders AS o ON 1"):
        assert not constraint.accepts(enc(q)), q
    for q in ("SELECT c.country, SUM(oi.quantity) AS n FROM customers AS c "
              "JOIN products AS p ON o.customer_id = c.id",
              "SELECT COUNT(oi.quantity) FROM customers AS c INNER JOIN customers AS c ON o.customer_id = c.id",
              f"SELECT c.name {join} WHERE p.price > 3", f"SELECT p.name {join}",
              f"SELECT c.name {join} JOIN orders AS o ON o.id = c.id", f"SELECT c.name {join} ORDER BY oi.quantity"):
        assert not constraint.accepts(enc(q)), q
        assert _issues(validators_for(spec), q), q  # what the grammar now excludes, SQLite rejects too
    assert not constraint.accepts_prefix(enc(f"SELECT c.name {join} WHERE p."))
    assert not constraint.accepts_prefix(
        enc("SELECT oi.quantity FROM customers AS c JOIN orders AS o ON o.id = c.id WHERE"))


def test_a_schema_past_the_exact_join_limit_keeps_top_level_joins_permissive(tmp_path, tok4k, vocab):
    """One scope per set of tables is 2 x (2^n - n - 1) + n scopes: past ``EXACT_JOIN_MAX_TABLES`` tables
    the outermost joins stay permissive (the validators check them), and the grammar stays small."""
    from structgen.sql.grammar import EXACT_JOIN_MAX_TABLES

    n = EXACT_JOIN_MAX_TABLES + 1
    path = tmp_path / "wide.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("".join(f"CREATE TABLE t{i} (id INTEGER, v{i} TEXT);" for i in range(n)))
    conn.close()
    spec = sg.Sql(path, explain=False, second_opinion=False)
    assert "query_k" not in spec.text and "query_j" in spec.text.split("top:")[1].split("\n")[0]
    c = sg.compile(spec, tok4k)
    aliases = table_aliases(spec.schema)
    a0, a1 = aliases["t0"][0], aliases["t1"][0]
    join = f"SELECT {a0}.v0 FROM t0 AS {a0} JOIN t1 AS {a1} ON {a1}.id = {a0}.id"
    assert c.accepts(vocab.encode(join))
    assert c.accepts(vocab.encode(join.replace(f"SELECT {a0}.v0", f"SELECT {aliases['t2'][0]}.v2")))  # permissive
    assert not c.accepts(vocab.encode(f"SELECT {a1}.v1 FROM t0 AS {a0}"))  # single-table scopes stay exact


def test_joined_queries_use_qualified_columns_only(constraint, vocab):
    ok = "SELECT c.name, o.id FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE o.status = 'pending'"
    assert constraint.accepts(vocab.encode(ok))
    for bad in (ok.replace("c.name", "name"), ok.replace("WHERE o.status", "WHERE status"),
                ok.replace("ON o.customer_id", "ON customer_id")):
        assert not constraint.accepts(vocab.encode(bad)), bad
    # a subquery chooses its own scope: single-table inside a join, correlated through qualified names
    inner = ("SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id "
             "WHERE o.id IN (SELECT order_id FROM order_items WHERE quantity > c.id)")
    assert constraint.accepts(vocab.encode(inner))


def test_output_aliases_are_bounded_and_never_keywords_or_schema_names(constraint, vocab, spec):
    q = "SELECT COUNT(*) AS {} FROM orders"
    assert constraint.accepts(vocab.encode(q.format("n_orders")))
    assert constraint.accepts(vocab.encode(q.format("x" * ALIAS_MAX_LEN)))
    for bad in ("x" * (ALIAS_MAX_LEN + 1), "order", "select", "name", "status", "oi", "sub", "Total", "_n", "9a"):
        assert not constraint.accepts(vocab.encode(q.format(bad))), bad


def test_alias_regex_is_the_bounded_identifiers_minus_the_excluded_words():
    excluded = {"ab", "abc", "b", "x_1", "zz"}
    rx = re.compile(alias_regex(excluded, max_len=5))
    rng = random.Random(3)
    alphabet = "abcxz_1"
    words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))) for _ in range(3000)} | excluded
    words |= {w + "c" for w in excluded} | {w[:-1] for w in excluded}
    for w in words:
        expected = bool(re.fullmatch(r"[a-z][a-z0-9_]{0,4}", w)) and w not in excluded
        assert bool(rx.fullmatch(w)) == expected, w
    full = re.compile(alias_regex(KEYWORDS))
    assert not any(full.fullmatch(k.lower()) for k in KEYWORDS)
    assert full.fullmatch("orders_count") and full.fullmatch("n") and full.fullmatch("selected")


def test_quoting():
    assert quote_ident("customers") == "customers" and quote_ident("signUp") == "signUp"
    assert quote_ident("order") == '"order"' and quote_ident("Group") == '"Group"'
    assert quote_ident("ID") == '"ID"' and quote_ident("unit price") == '"unit price"'
    assert quote_ident('say "hi"') == '"say ""hi"""'
    with pytest.raises(sg.SpecError, match="control character"):
        quote_ident("a\nb")


# -- awkward names -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def awkward_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sql") / "awkward.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript('''
        CREATE TABLE "order" (id INTEGER PRIMARY KEY, "unit price" REAL, "Group" TEXT, note TEXT, Weight REAL);
        CREATE TABLE "Line Items" ("order" INTEGER REFERENCES "order"(id), qty INTEGER, "ID" INTEGER,
                                   "say ""hi""" TEXT);
        INSERT INTO "order" VALUES (1, 2.5, 'a', 'x', 1.0), (2, 4.0, 'b', NULL, 2.0);
        INSERT INTO "Line Items" VALUES (1, 3, 7, 'q'), (2, 1, 8, 'r');
    ''')
    conn.commit()
    conn.close()
    return path


def test_awkward_names_are_quoted_and_their_queries_run(awkward_db, tok4k, vocab):
    spec = sg.Sql(awkward_db, explain=False, second_opinion=False)
    c = sg.compile(spec, tok4k)
    assert table_aliases(spec.schema) == {"order": ("o", "o2"), "Line Items": ("li", "li2")}
    good = [
        'SELECT "unit price" FROM "order"',
        'SELECT o."unit price", li.qty FROM "order" AS o JOIN "Line Items" AS li ON li."order" = o.id',
        'SELECT "Group", COUNT(*) AS n FROM "order" GROUP BY "Group" ORDER BY n DESC',
        'SELECT "ID", "say ""hi""" FROM "Line Items" WHERE "order" IN (SELECT id FROM "order")',
        'SELECT note FROM "order" WHERE note IS NOT NULL',
        # a bare name that starts like a keyword lexeme ("DISTINCT ", "WHEN ") is lexed as a name
        'SELECT DISTINCT Weight FROM "order"',
        "SELECT CASE Weight WHEN 1 THEN 'light' ELSE 'heavy' END AS kind FROM \"order\"",
    ]
    conn = connect_readonly(awkward_db)
    try:
        for q in good:
            assert c.accepts(vocab.encode(q)), q
            assert not LarkValidator(spec.text)(q), q
            conn.execute(q).fetchall()
    finally:
        conn.close()
    for bad in ('SELECT unit price FROM "order"', "SELECT id FROM order", 'SELECT Group FROM "order"',
                'SELECT "note" FROM "order"', "SELECT ID FROM \"Line Items\"", 'SELECT weight FROM "order"'):
        assert not c.accepts(vocab.encode(bad)), bad


# -- the spec ----------------------------------------------------------------------------------------------


def test_sql_spec_attributes_key_and_repr(spec, shop_db, awkward_db):
    assert isinstance(spec, sg.Grammar) and "Sql" in sg.__all__
    assert spec.database == Path(shop_db).resolve()
    assert isinstance(spec.schema, DbSchema) and spec.schema.table_names == ("customers", "products", "orders",
                                                                                "order_items")
    assert spec.text == specialise(spec.schema)
    assert str(spec.database) in repr(spec) and repr(spec).startswith("Sql(")
    with pytest.raises(AttributeError):
        spec.database = Path("elsewhere.sqlite")
    other = sg.Sql(awkward_db)
    assert other.key != spec.key and sg.Sql(shop_db).key == spec.key


def test_sql_spec_validators(shop_db):
    def mine(text):
        return []

    names = [type(v).__name__ for v in sg.Sql(shop_db, validators=[mine]).validators]
    assert names[0] == "SqlColumnsValidator" and "SqliteExplainValidator" in names and names[-1] == "function"
    plain = [type(v).__name__ for v in sg.Sql(shop_db, explain=False, second_opinion=False).validators]
    assert plain == ["SqlColumnsValidator"]


def test_bad_database_path_is_a_spec_error(tmp_path):
    with pytest.raises(sg.SpecError, match="not found"):
        sg.Sql(tmp_path / "missing.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database at all, just text " * 40)
    with pytest.raises(sg.SpecError):
        sg.Sql(junk)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    with pytest.raises(sg.SpecError, match="no tables"):
        sg.Sql(empty)


def test_render_prompt_carries_the_schema(spec):
    text = spec.render_prompt("How many orders were cancelled?")
    for t in spec.schema.tables:  # one compact line per table: alias, columns with types
        line = next(x for x in text.splitlines() if x.startswith(f"{t.name} AS "))
        assert all(f"{c.name} {c.type}" in line for c in t.columns)
    # foreign keys and CHECK (col IN (...)) values are carried over
    assert "customer_id INTEGER -> customers.id" in text and "product_id INTEGER -> products.id" in text
    assert "status TEXT 'pending'|'shipped'|'delivered'|'cancelled'" in text
    assert "How many orders were cancelled?" in text and "customers AS c (" in text
    assert text.endswith("### SQL\n") and text.index("orders AS o") < text.index("How many orders")
    chat = spec.render_prompt([{"role": "user", "content": "How many orders?"}])
    assert chat[0]["role"] == "system" and "orders AS o (" in chat[0]["content"]
    assert chat[1] == {"role": "user", "content": "How many orders?"}
    sys_first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Count orders."}]
    merged = spec.render_prompt(sys_first)
    assert len(merged) == 2 and merged[0]["content"].startswith("Be brief.") and "### SQLite schema" in merged[0]["content"]
    assert sys_first[0]["content"] == "Be brief."  # the caller's messages are not modified
    with pytest.raises(sg.SpecError):
        spec.render_prompt(42)


# -- generation --------------------------------------------------------------------------------------------


def test_random_logits_generate_parseable_sql(spec, tok4k):
    lark_check = LarkValidator(spec.text)
    for seed in range(4):
        gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed))
        r = gen.generate("How many customers are there?", spec, max_tokens=48, strict=False)
        assert r.engine == "grammar" and r.text.startswith("SELECT ")
        assert not lark_check(r.text), (seed, r.text)


def test_the_grammar_step_benchmark_walks_each_gold_query_and_cuts_it_at_from(bench_script, tok4k, vocab):
    import llguidance

    from structgen.train.data import examples

    bench = bench_script("sql_grammar_steps")
    texts = bench.grammar_texts()
    assert set(texts) == {"default", "strict", "foreign keys"} and texts["default"] == specialise(
        DbSchema.read(bench.SHOP))
    golds = [ex.gold for ex in examples("sql", "heldout", 8, seed=1234)]
    grammar = llguidance.LLMatcher.grammar_from_lark(texts["default"])
    queries, cuts = bench.accepted(llguidance, vocab, tok4k, grammar, golds)
    assert len(queries) == len(golds)  # the default grammar holds every gold query
    for q, ids, k in zip(golds, queries, cuts):
        head = q[:q.index(" FROM ") + len(" FROM ")]
        assert tok4k.decode(ids[:k]).startswith(head) and not tok4k.decode(ids[:k - 1]).startswith(head)
    before, after = bench.walk(llguidance, vocab, grammar, queries, cuts)
    assert before > 0 and after > 0
    assert bench.accepted(llguidance, vocab, tok4k, grammar, ["SELECT nope FROM customers"]) == ([], [])
