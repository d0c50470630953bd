"""Tests of the SQL validators (``structgen.validators.sql``) on the example shop database: valid queries of
every shape pass both validators; each kind of mistake is reported with the span of the offending
identifier; write statements, several statements and syntax errors are issues; nothing ever raises."""

from __future__ import annotations

import shutil
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("sqlglot")

from structgen.errors import SpecError  # noqa: E402
from structgen.sql.schema import DbSchema  # noqa: E402

try:  # installed: validators/ is packaged as structgen.validators
    from structgen.validators.base import Issue
    from structgen.validators.sql import SqlColumnsValidator, SqliteExplainValidator, sql_tokens, sql_validators
except ImportError:  # a source checkout before packaging
    from validators.base import Issue
    from validators.sql import SqlColumnsValidator, SqliteExplainValidator, sql_tokens, sql_validators


@pytest.fixture(scope="module")
def schema(shop_db) -> DbSchema:
    return DbSchema.read(shop_db)


@pytest.fixture(scope="module")
def cols(schema):
    return SqlColumnsValidator(schema)


@pytest.fixture(scope="module")
def strict(schema):
    """The resolver alone: nothing is confirmed with SQLite, so its own mistakes show."""
    return SqlColumnsValidator(schema, confirm=False)


@pytest.fixture(scope="module")
def explain(shop_db):
    return SqliteExplainValidator(shop_db)


def marked(sql: str) -> tuple[str, tuple[int, int]]:
    """``SELECT ⟦x⟧ FROM t`` -> (``SELECT x FROM t``, the span of ``x``)."""
    start = sql.index("⟦")
    end = sql.index("⟧") - 1
    return sql.replace("⟦", "").replace("⟧", ""), (start, end)


def cut(text: str, span) -> str:
    return text[span[0] : span[1]]


VALID = [
    "SELECT name, city FROM customers WHERE country = 'Kenya' ORDER BY name",
    "SELECT * FROM products",
    "SELECT DISTINCT country FROM customers",
    "SELECT c.name, count(*) AS n FROM customers AS c JOIN orders o ON o.customer_id = c.id "
    "WHERE c.country = 'Kenya' GROUP BY c.name ORDER BY n DESC",
    "SELECT c.country, round(sum(oi.quantity * p.price), 2) AS revenue FROM customers c "
    "JOIN orders o ON o.customer_id = c.id JOIN order_items oi ON oi.order_id = o.id "
    "JOIN products p ON p.id = oi.product_id WHERE o.status != 'cancelled' "
    "GROUP BY c.country ORDER BY revenue DESC LIMIT 3",
    "SELECT customers.name, orders.status FROM customers INNER JOIN orders ON customers.id = orders.customer_id",
    "SELECT c.*, o.order_date FROM customers c JOIN orders o ON c.id = o.customer_id",
    "SELECT * FROM customers c LEFT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL",
    "SELECT a.name, b.name FROM customers a JOIN customers b ON a.city = b.city AND a.id < b.id",
    "SELECT order_id FROM order_items a JOIN order_items b USING (order_id)",
    "SELECT order_id, quantity FROM order_items NATURAL JOIN (SELECT order_id FROM order_items WHERE quantity > 2)",
    "SELECT name FROM (customers c JOIN orders o ON o.customer_id = c.id)",
    # subqueries in FROM, WHERE, SELECT; correlated references
    "SELECT * FROM (SELECT category, max(price) AS mp FROM products GROUP BY category) t WHERE t.mp > 100",
    "SELECT status, avg(n) FROM (SELECT o.status, count(*) AS n FROM orders o "
    "JOIN order_items i ON i.order_id = o.id GROUP BY o.id) GROUP BY status",
    "SELECT x.name FROM (SELECT c.* FROM customers c JOIN orders o ON o.customer_id = c.id) x",
    "SELECT name FROM products WHERE price > (SELECT avg(price) FROM products)",
    "SELECT name FROM customers WHERE id NOT IN (SELECT customer_id FROM orders WHERE status = 'cancelled')",
    "SELECT name FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)",
    "SELECT c.name, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) AS n FROM customers c ORDER BY n DESC",
    "SELECT name, (SELECT max(order_date) FROM orders WHERE customer_id = customers.id) AS last FROM customers",
    "SELECT c.name FROM customers c WHERE EXISTS (SELECT 1 FROM (SELECT customer_id FROM orders "
    "WHERE customer_id = c.id) x)",
    "SELECT o.id FROM orders o WHERE o.id IN (SELECT order_id FROM order_items oi WHERE oi.product_id IN "
    "(SELECT id FROM products WHERE category = o.status))",
    "SELECT category FROM products GROUP BY category HAVING max(price) > "
    "(SELECT avg(price) FROM products p2 WHERE p2.category = products.category)",
    # output aliases where SQLite resolves them
    "SELECT price * 2 AS p2 FROM products WHERE p2 > 10",
    "SELECT price * 2 AS p2 FROM products GROUP BY p2 HAVING p2 > 10",
    "SELECT p.price AS pp FROM products p JOIN order_items oi ON pp > 1",
    "SELECT name AS nm FROM customers c WHERE EXISTS (SELECT 1 FROM orders WHERE nm = 'x')",
    "SELECT c.id AS id FROM customers c JOIN orders o ON o.customer_id = c.id ORDER BY id",
    "SELECT sum(quantity) AS q FROM order_items ORDER BY q + 1",
    "SELECT name AS country FROM customers WHERE country = 'Kenya'",
    "SELECT name COLLATE NOCASE AS n FROM customers ORDER BY n COLLATE NOCASE",
    "SELECT CASE WHEN price > 100 THEN 'high' ELSE 'low' END AS band, count(*) FROM products GROUP BY band",
    "SELECT strftime('%Y', order_date) AS y, count(*) FROM orders GROUP BY y ORDER BY y",
    "SELECT o.status, count(*) FROM orders o GROUP BY 1 ORDER BY 2 DESC",
    # CTEs, compound selects, windows
    "WITH spend AS (SELECT o.customer_id, sum(oi.quantity * p.price) AS total FROM orders o "
    "JOIN order_items oi ON oi.order_id = o.id JOIN products p ON p.id = oi.product_id GROUP BY o.customer_id), "
    "ranked AS (SELECT customer_id, total, rank() OVER (ORDER BY total DESC) AS rk FROM spend) "
    "SELECT c.name, r.total FROM ranked r JOIN customers c ON c.id = r.customer_id WHERE r.rk <= 5",
    "WITH RECURSIVE cnt(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM cnt WHERE x < 10) SELECT x FROM cnt",
    "WITH RECURSIVE cnt AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM cnt WHERE n < 10) SELECT n FROM cnt",
    "SELECT name FROM customers WHERE country = 'Kenya' UNION SELECT name FROM products "
    "WHERE category = 'toys' ORDER BY name",
    "SELECT name FROM customers UNION ALL SELECT name FROM products ORDER BY 1 LIMIT 5",
    "SELECT t.a FROM (SELECT 1 AS a UNION SELECT 2) t",
    "SELECT name FROM customers INTERSECT SELECT name FROM customers WHERE city = 'Nairobi'",
    "SELECT category, name, price, rank() OVER (PARTITION BY category ORDER BY price DESC) AS r FROM products",
    "SELECT sum(price) OVER w AS running FROM products WINDOW w AS (ORDER BY id)",
    # functions, literals, quoting, case, rowid, the schema table, table-valued functions
    "SELECT upper(substr(name, 1, 1)) || lower(substr(name, 2)) AS n FROM customers",
    "SELECT iif(price > 10, 'x', 'y'), typeof(price), coalesce(NULL, name) FROM products",
    "SELECT * FROM orders WHERE order_date >= date('2026-11-30', '-30 days')",
    "SELECT name FROM customers WHERE name LIKE 'A%' ESCAPE '!' AND signup_date BETWEEN '2024-01-01' AND '2024-12-31'",
    "SELECT count(DISTINCT customer_id) FROM orders",
    'SELECT [name], `city`, "country" FROM "customers"',
    "SELECT NAME FROM CUSTOMERS C WHERE C.COUNTRY = 'Kenya'",
    "SELECT name FROM customers WHERE rowid = 1",
    "SELECT c.rowid, oid FROM customers c",
    "SELECT main.customers.name FROM customers",
    "SELECT name FROM sqlite_master WHERE type = 'table'",
    "SELECT value FROM json_each('[1, 2]')",
    "SELECT name FROM customers ORDER BY signup_date LIMIT 5 OFFSET 10",
    "SELECT 1",
    "SELECT name FROM customers;",
    "-- the customers\nSELECT name /* and only the name */ FROM customers",
]


@pytest.mark.parametrize("sql", VALID)
def test_valid_queries_pass(sql, cols, strict, explain):
    assert strict(sql) == [], "the resolver itself rejects a valid query"
    assert cols(sql) == []
    assert explain(sql) == []


# (marked SQL, words the message must contain); the marked text is the span to redo
WRONG = [
    ("SELECT ⟦nme⟧ FROM customers", "no such column: nme"),
    ("SELECT name FROM ⟦customer⟧", "no such table: customer"),
    ("SELECT p.⟦country⟧ FROM products p", "no such column: p.country"),
    ("SELECT ⟦id⟧ FROM customers c JOIN orders o ON o.customer_id = c.id", "ambiguous column name: id"),
    ("SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY ⟦id⟧", "ambiguous"),
    ("SELECT ⟦product_id⟧ FROM order_items a JOIN order_items b USING (order_id)", "ambiguous"),
    ("SELECT ⟦x⟧.name FROM customers c", "no such table: x"),
    ("SELECT ⟦customers⟧.name FROM customers c", "aliased as c"),
    ("SELECT ⟦customers⟧.* FROM customers c", "no such table: customers"),
    ("SELECT name FROM customers ORDER BY ⟦total⟧", "no such column: total"),
    ("SELECT c.name FROM customers c ORDER BY ⟦o⟧.order_date", "no such table: o"),
    ("SELECT name FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id "
     "AND o.status = c.⟦status⟧) > 0", "no such column: c.status"),
    ("SELECT (SELECT ⟦nm⟧ FROM orders LIMIT 1), name AS nm FROM customers", "no such column: nm"),
    ("SELECT t.⟦nope⟧ FROM (SELECT category FROM products) t", "no such column: t.nope"),
    ("WITH spend AS (SELECT customer_id FROM orders) SELECT s.⟦total⟧ FROM spend s", "no such column: s.total"),
    ("SELECT x.⟦price⟧ FROM (SELECT * FROM customers) AS x", "price is a column of products"),
    ("SELECT ⟦*⟧", "needs a FROM clause"),
    ("SELECT name FROM customers ORDER BY ⟦2⟧", "out of range"),
    ("SELECT name FROM customers GROUP BY ⟦3⟧", "out of range"),
    ("SELECT name FROM customers UNION SELECT name FROM products ORDER BY ⟦price⟧", "compound SELECT"),
    ("SELECT c.name FROM customers c JOIN orders o USING (⟦zz⟧)", "USING (zz)"),
    ("SELECT name FROM customers LIMIT ⟦id⟧", "LIMIT takes a number"),
    ("SELECT name FROM customers WHERE ⟦status⟧ = 'pending'", "column of orders"),
    ("SELECT name FROM ⟦nosuch⟧.customers", "no such table: nosuch.customers"),
]


@pytest.mark.parametrize("marked_sql, words", WRONG)
def test_mistakes_are_reported_at_the_identifier(marked_sql, words, cols, strict, explain):
    sql, span = marked(marked_sql)
    for v in (strict, cols):
        issues = v(sql)
        assert len(issues) == 1, issues
        issue = issues[0]
        assert isinstance(issue, Issue) and issue.validator == "sql-columns"
        assert issue.span == span, (cut(sql, issue.span) if issue.span else None, cut(sql, span))
        assert words in issue.message
    # SQLite agrees the query is wrong; when its message names the identifier, the span covers it
    e = explain(sql)
    assert len(e) == 1 and e[0].validator == "sqlite-explain"
    if e[0].span is not None:
        assert e[0].span[0] <= span[0] and span[1] <= e[0].span[1], (cut(sql, e[0].span), cut(sql, span))


@pytest.mark.parametrize("marked_sql, name", [
    ("SELECT ⟦nme⟧ FROM customers", "nme"),
    ("SELECT ⟦p.country⟧ FROM products p", "p.country"),
    ("SELECT ⟦id⟧ FROM customers JOIN orders ON orders.customer_id = customers.id", "id"),
    ("SELECT name FROM ⟦customer⟧", "customer"),
    ("SELECT name FROM customers c WHERE c.id IN (SELECT ⟦c.status⟧ FROM orders)", "c.status"),
    ("SELECT 'nme', ⟦nme⟧ FROM customers -- nme", "nme"),  # strings and comments are skipped
    ("SELECT ⟦nosuchfn⟧(name) FROM customers", "nosuchfn"),
])
def test_explain_spans_name_the_identifier(marked_sql, name, explain):
    sql, span = marked(marked_sql)
    issues = explain(sql)
    assert len(issues) == 1
    assert issues[0].span == span, cut(sql, issues[0].span) if issues[0].span else None
    assert name in issues[0].message


def test_double_quoted_string_is_flagged(cols, explain):
    sql, span = marked('SELECT name FROM customers WHERE country = ⟦"Kenya"⟧')
    issues = cols(sql)
    assert [i.span for i in issues] == [span] and "single quotes" in issues[0].message
    assert explain(sql) == []  # SQLite's legacy fallback reads it as a string: only the resolver objects


WRITES = [
    "INSERT INTO customers VALUES (999, 'x', 'y', 'Kenya', '2024-01-01')",
    "UPDATE products SET price = 0",
    "DELETE FROM orders",
    "DROP TABLE customers",
    "CREATE TABLE t (a)",
    "ALTER TABLE customers ADD COLUMN z",
    "PRAGMA user_version = 5",
    "VACUUM",
    "VACUUM INTO '/tmp/structgen-never-written.sqlite'",
    "ATTACH DATABASE '/tmp/structgen-never-written.sqlite' AS other",
    "BEGIN",
    "REINDEX",
    "WITH x AS (SELECT 1) DELETE FROM customers",
]


@pytest.mark.parametrize("sql", WRITES)
def test_write_statements_are_issues(sql, cols, explain):
    for v in (cols, explain):
        issues = v(sql)
        assert len(issues) == 1, (v.name, issues)
        assert issues[0].span == (0, len(sql)), (v.name, issues[0])
        assert "SELECT" in issues[0].message
    assert not Path("/tmp/structgen-never-written.sqlite").exists()


@pytest.mark.parametrize("first, second", [
    ("SELECT name FROM customers; ", "DELETE FROM customers"),
    ("SELECT 1;", "SELECT 2"),
    ("SELECT name FROM customers;", ";"),
    ("SELECT name FROM customers; -- done\n", "DROP TABLE orders;"),
])
def test_two_statements_are_an_issue_from_the_second(first, second, cols, explain):
    sql = first + second
    for v in (cols, explain):
        issues = v(sql)
        assert len(issues) == 1, (v.name, issues)
        assert cut(sql, issues[0].span) == second
        assert "more than one statement" in issues[0].message


def test_the_first_of_two_statements_is_checked_too(cols):
    sql = "SELECT nme FROM customers; SELECT 2"
    spans = sorted(cut(sql, i.span) for i in cols(sql))
    assert spans == ["SELECT 2", "nme"]


@pytest.mark.parametrize("marked_sql", [
    "SELECT name FROM customers ⟦WHERE⟧",
    "SELECT name FROM customers WHERE id = 1⟦)⟧",
    "SELECT name FROM customers WHERE name = ⟦'abc⟧",
    'SELECT ⟦"name FROM customers⟧',
    "SELECT name FROM customers GROUP ⟦name⟧",
    "SELECT name FROM customers WHERE id = 1 ⟦AND⟧",
    "SELECT name\nFROM customers\nWHERE id = ⟦=⟧ 1",
])
def test_syntax_errors_span_from_the_error_to_the_end(marked_sql, cols, strict, explain):
    sql, (start, _) = marked(marked_sql)
    for v in (cols, strict):
        issues = v(sql)
        assert len(issues) == 1, issues
        assert issues[0].span == (start, len(sql)), cut(sql, issues[0].span)
        assert "syntax" in issues[0].message
    e = explain(sql)
    assert len(e) == 1 and e[0].span is not None
    assert e[0].span[0] <= start and e[0].span[1] == len(sql)  # SQLite's error covers the same place


def test_syntax_error_message_gives_line_and_column(cols):
    sql = "SELECT name\nFROM customers\nWHERE id = = 1"
    (issue,) = cols(sql)
    assert "line 3, column 12" in issue.message


def test_sqlglot_gaps_are_confirmed_with_sqlite(cols, strict, explain):
    # valid SQLite that sqlglot cannot parse: the resolver alone flags it, the confirmed validator does not
    sql = "SELECT name FROM customers WHERE name LIKE 'a' ESCAPE 'x' COLLATE nocase"
    assert strict(sql) and "syntax" in strict(sql)[0].message
    assert cols(sql) == []
    assert explain(sql) == []
    # an unterminated block comment at the end is a comment to SQLite, a tokenizer error to sqlglot
    assert cols("SELECT name FROM customers /* to the end") == []


@pytest.mark.parametrize("sql", ["", "   \n", "-- nothing here", "/* nor here */"])
def test_empty_text_is_an_issue(sql, cols, explain):
    for v in (cols, explain):
        issues = v(sql)
        assert len(issues) == 1 and issues[0].span is None and "no SQL statement" in issues[0].message


def test_values_is_not_a_select(cols, explain):
    assert cols("VALUES (1, 2)") and "not SELECT" in cols("VALUES (1, 2)")[0].message
    assert explain("VALUES (1, 2)") == []  # read-only: SQLite and the runner accept it


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
def test_characters_sqlite_cannot_take_are_named(bad, cols, explain):
    sql = f"SELECT name FROM customers WHERE name = 'a{bad}b'"
    i = sql.index(bad)
    for v in (cols, explain):
        (issue,) = v(sql)
        assert issue.span == (i, i + 1)


def test_deep_nesting_does_not_raise(cols, explain):
    sql = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    for v in (cols, explain):
        issues = v(sql)
        assert len(issues) == 1 and issues[0].validator == v.name


def test_lexer_skips_strings_and_comments():
    toks = list(sql_tokens("SELECT 'a -- b', \"q\"\"x\" /* c */ FROM t -- end"))
    assert [t.kind for t in toks] == ["ident", "string", "op", "qident", "ident", "ident"]
    assert toks[3].value == 'q"x'


# ------------------------------------------------------------------------------------------ robustness

SQL_WORDS = ["SELECT", "FROM", "WHERE", "JOIN", "ON", "GROUP", "BY", "ORDER", "HAVING", "LIMIT", "UNION",
             "WITH", "AS", "AND", "OR", "NOT", "IN", "EXISTS", "USING", "NATURAL", "LEFT", "DISTINCT",
             "customers", "orders", "products", "order_items", "c", "o", "p", "id", "name", "price",
             "status", "country", "count(*)", "sum", "*", ",", ".", "(", ")", ";", "=", "<", "'x'", '"y"',
             "`z`", "[w]", "1", "2.5", "--", "/*", "*/", "'", '"', "?", ":a", "x'41'", "é", "\n"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=80),
                      st.lists(st.sampled_from(SQL_WORDS), max_size=25).map(" ".join),
                      st.lists(st.sampled_from(SQL_WORDS), max_size=25).map("".join)))
def test_validators_never_raise(cols, explain, text):
    for v in cols, explain:
        issues = v(text)
        assert isinstance(issues, list) and all(isinstance(i, Issue) for i in issues)
        for i in issues:
            assert i.span is None or 0 <= i.span[0] < i.span[1] <= len(text), (text, i)
            assert i.message and i.validator == v.name


# ------------------------------------------------------------------------------------------ connections


def test_explain_is_thread_safe(explain):
    queries = [VALID[i % len(VALID)] for i in range(120)] + [marked(w)[0] for w, _ in WRONG]
    serial = [explain(q) for q in queries]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(explain, queries))
    assert parallel == serial


def test_a_replaced_database_is_seen(tmp_path):
    db = tmp_path / "t.sqlite"
    for cols_sql in ("CREATE TABLE a (x)", "CREATE TABLE a (y)"):
        tmp = tmp_path / "new.sqlite"
        conn = sqlite3.connect(tmp)
        conn.execute(cols_sql)
        conn.commit()
        conn.close()
        tmp.replace(db)
        v = SqliteExplainValidator(db)
        if "(x)" in cols_sql:
            assert v("SELECT x FROM a") == [] and v("SELECT y FROM a")
        else:
            assert v("SELECT y FROM a") == [] and v("SELECT x FROM a")


def test_views_are_tables_to_the_resolver(tmp_path, shop_db):
    db = tmp_path / "v.sqlite"
    shutil.copy(shop_db, db)
    conn = sqlite3.connect(db)
    conn.execute("CREATE VIEW big_orders AS SELECT o.id, o.status FROM orders o")
    conn.commit()
    conn.close()
    v = SqlColumnsValidator(DbSchema.read(db), confirm=False)
    assert v("SELECT b.status FROM big_orders b") == []
    sql, span = marked("SELECT b.⟦price⟧ FROM big_orders b")
    assert [i.span for i in v(sql)] == [span]


def test_missing_database_is_an_error_before_generation(tmp_path):
    with pytest.raises(SpecError, match="not found"):
        SqliteExplainValidator(tmp_path / "nope.sqlite")


def test_a_vanished_database_is_an_issue_not_a_crash(tmp_path, shop_db):
    db = tmp_path / "gone.sqlite"
    shutil.copy(shop_db, db)
    v = SqliteExplainValidator(db)
    db.unlink()
    (issue,) = v("SELECT 1")
    assert issue.span is None and "not found" in issue.message


def test_sql_validators(schema):
    vs = sql_validators(schema, second_opinion=False)
    assert [type(v).__name__ for v in vs] == ["SqlColumnsValidator", "SqliteExplainValidator", "SqliteRunValidator"]
    assert [type(v) for v in sql_validators(schema, explain=False, second_opinion=False)] == [SqlColumnsValidator]
    pytest.importorskip("tree_sitter_sql")
    vs = sql_validators(schema)
    assert [v.name for v in vs] == ["sql-columns", "sqlite-explain", "sqlite-run", "tree-sitter:sql"]


def test_per_call_time(cols, explain):
    sql = VALID[4]  # a four-table join with aggregation
    for v in (cols, explain):
        v(sql)
        n = 50
        t0 = time.perf_counter()
        for _ in range(n):
            v(sql)
        per_call = (time.perf_counter() - t0) / n
        assert per_call < 0.05, f"{v.name}: {per_call * 1000:.1f} ms per call"


def test_run_validator_reports_runtime_errors_and_not_slow_queries(shop_db):
    from structgen.validators.sql import SqliteExplainValidator, SqliteRunValidator, sql_validators

    run = SqliteRunValidator(shop_db)
    overflow = "SELECT ABS(-4294967296 * 2147483648) FROM customers"
    assert not SqliteExplainValidator(shop_db)(overflow)  # it compiles: only running it shows the error
    issues = run(overflow)
    assert len(issues) == 1 and "integer overflow" in issues[0].message and issues[0].span is None
    assert run("SELECT COUNT(*) FROM customers") == []
    slow = "SELECT COUNT(*) FROM order_items a, order_items b, order_items c, order_items d"
    assert SqliteRunValidator(shop_db, timeout_s=0.05)(slow) == []  # still running at the limit: no verdict
    assert any(isinstance(v, SqliteRunValidator) for v in sql_validators(DbSchema.read(shop_db)))
    assert not any(isinstance(v, SqliteRunValidator) for v in sql_validators(DbSchema.read(shop_db), explain=False))
