"""Tests of running a query (``structgen.sql.run``): rows and columns, the row limit, the time limit on a
runaway query, writes refused with the file unchanged, errors as ``QueryError``, the rich table."""

from __future__ import annotations

import hashlib
import io
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from structgen.errors import ConfigError, QueryError
from structgen.sql.run import QueryResult, ReadOnlyAuthorizer, read_only_problem, run_query


@pytest.fixture
def db(tmp_path, shop_db) -> Path:
    """A private copy of the shop database, so a failure here can never damage the shared one."""
    p = tmp_path / "shop.sqlite"
    shutil.copy(shop_db, p)
    return p


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def direct(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_rows_and_columns(shop_db):
    sql = "SELECT id, name, country AS land FROM customers ORDER BY id LIMIT 3"
    r = run_query(shop_db, sql)
    assert isinstance(r, QueryResult)
    assert r.columns == ["id", "name", "land"]
    assert r.rows == direct(shop_db, sql) and len(r.rows) == 3
    assert all(type(row) is tuple for row in r.rows)
    assert r.truncated is False and 0 <= r.elapsed_s < 5
    assert r.to_dicts()[0] == dict(zip(r.columns, r.rows[0]))


def test_aggregate_join(shop_db):
    sql = ("SELECT c.country, count(*) AS n FROM customers c JOIN orders o ON o.customer_id = c.id "
           "GROUP BY c.country ORDER BY n DESC")
    r = run_query(shop_db, sql)
    assert r.columns == ["country", "n"] and r.rows == direct(shop_db, sql)
    assert sum(n for _, n in r.rows) == direct(shop_db, "SELECT count(*) FROM orders")[0][0]


def test_truncation(shop_db):
    r = run_query(shop_db, "SELECT id FROM orders ORDER BY id", max_rows=10)
    assert r.rows == [(i,) for i in range(1, 11)] and r.truncated is True
    statuses = "SELECT DISTINCT status FROM orders"
    assert run_query(shop_db, statuses, max_rows=4).truncated is False  # exactly as many rows as allowed
    r3 = run_query(shop_db, statuses, max_rows=3)
    assert len(r3.rows) == 3 and r3.truncated is True
    r0 = run_query(shop_db, statuses, max_rows=0)
    assert r0.rows == [] and r0.truncated is True and r0.columns == ["status"]
    empty = run_query(shop_db, "SELECT name FROM customers WHERE 0")
    assert empty.rows == [] and empty.truncated is False and empty.columns == ["name"]


def test_a_runaway_query_is_stopped(shop_db):
    sql = "SELECT count(*) FROM order_items a, order_items b, order_items c"  # ~800 million rows
    t0 = time.perf_counter()
    with pytest.raises(QueryError, match="ran past its time limit of 0.3 s") as e:
        run_query(shop_db, sql, timeout_s=0.3)
    assert time.perf_counter() - t0 < 3
    assert sql in str(e.value)


def test_a_fast_query_under_a_small_limit_still_runs(shop_db):
    assert run_query(shop_db, "SELECT count(*) FROM orders", timeout_s=0.3).rows == [(320,)]


WRITES = [
    "INSERT INTO customers VALUES (999, 'x', 'y', 'Kenya', '2024-01-01')",
    "UPDATE products SET price = 0",
    "DELETE FROM orders",
    "DROP TABLE customers",
    "CREATE TABLE t (a)",
    "CREATE TEMP TABLE t (a)",
    "ALTER TABLE customers ADD COLUMN z",
    "PRAGMA user_version = 5",
    "PRAGMA journal_mode = WAL",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "BEGIN IMMEDIATE",
    "WITH x AS (SELECT 1) DELETE FROM customers",
    "WITH x AS (SELECT 1) UPDATE products SET price = 0",
    "SELECT 1; DELETE FROM customers",
    "SELECT load_extension('x')",
    "  -- a comment first\n DELETE FROM customers",
]


@pytest.mark.parametrize("sql", WRITES)
def test_writes_are_refused_and_the_file_is_unchanged(sql, db):
    before = sha(db)
    files = sorted(p.name for p in db.parent.iterdir())
    with pytest.raises(QueryError) as e:
        run_query(db, sql)
    assert sql.strip() in str(e.value)
    assert sha(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == files  # no journal, WAL or new file left behind


@pytest.mark.parametrize("template", ["VACUUM INTO '{}'", "ATTACH DATABASE '{}' AS other"])
def test_no_other_file_is_written(template, db, tmp_path):
    target = tmp_path / "other.sqlite"
    with pytest.raises(QueryError):
        run_query(db, template.format(target))
    assert not target.exists()


def test_with_delete_is_refused_by_the_authorizer(db):
    # WITH passes the keyword check; SQLite's authorizer names what the statement would do
    with pytest.raises(QueryError, match="not read-only: SQLite was asked to allow DELETE customers"):
        run_query(db, "WITH x AS (SELECT 1) DELETE FROM customers")


@pytest.mark.parametrize("sql, words", [
    ("SELECT nme FROM customers", "no such column: nme"),
    ("SELECT name FROM customer", "no such table: customer"),
    ("SELECT name FROM customers WHERE", "incomplete input"),
    ("SELECT name FROM customers WHERE id = 1)", 'near ")": syntax error'),
    ("SELECT 1; SELECT 2", "one statement at a time"),
    ("", "no statement"),
    ("-- only a comment", "no statement"),
    ("SELECT 'a\x00b'", "null character"),
])
def test_bad_sql_is_a_query_error_naming_the_error_and_the_sql(sql, words, shop_db):
    with pytest.raises(QueryError) as e:
        run_query(shop_db, sql)
    assert words in str(e.value)
    if sql.strip():
        assert sql.strip() in str(e.value)


def test_long_sql_is_shortened_in_the_message(shop_db):
    sql = "SELECT nme FROM customers WHERE " + " OR ".join(f"id = {i}" for i in range(200))
    with pytest.raises(QueryError) as e:
        run_query(shop_db, sql)
    assert len(str(e.value)) < 700 and f"({len(sql)} characters)" in str(e.value)


def test_missing_database(tmp_path):
    with pytest.raises(QueryError, match="not found"):
        run_query(tmp_path / "nope.sqlite", "SELECT 1")


@pytest.mark.parametrize("kw", [{"max_rows": -1}, {"max_rows": 1.5}, {"max_rows": True},
                                {"timeout_s": 0}, {"timeout_s": -1.0}, {"timeout_s": "5"}])
def test_bad_limits_are_config_errors(kw, shop_db):
    with pytest.raises(ConfigError):
        run_query(shop_db, "SELECT 1", **kw)


def test_table_valued_functions_run(shop_db):
    # the first json_each on a connection makes SQLite probe the schema table; the authorizer lets it pass
    assert run_query(shop_db, "SELECT value FROM json_each('[1, 2, 3]')").rows == [(1,), (2,), (3,)]


def test_to_table_renders_rows_nulls_and_truncation(shop_db):
    from rich.console import Console
    from rich.table import Table

    r = run_query(shop_db, "SELECT id, name, NULL AS note, price FROM products ORDER BY id", max_rows=2)
    table = r.to_table(title="products")
    assert isinstance(table, Table) and table.row_count == 2
    assert [c.header for c in table.columns] == ["id", "name", "note", "price"]
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(table)
    text = out.getvalue()
    first = direct(shop_db, "SELECT name, price FROM products ORDER BY id LIMIT 1")[0]
    assert first[0] in text and repr(first[1]) in text and "NULL" in text
    assert "2 rows" in text and "more rows matched" in text


def test_read_only_problem():
    assert read_only_problem("  /* c */ -- d\n select 1") is None
    assert read_only_problem("WITH x AS (SELECT 1) SELECT * FROM x") is None
    assert read_only_problem("VALUES (1)") is None
    assert "DELETE" in read_only_problem("delete from t")
    assert "no statement" in read_only_problem(" -- x")


def test_authorizer_records_what_was_denied():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a)")
    auth = ReadOnlyAuthorizer()
    conn.set_authorizer(auth)
    conn.execute("SELECT a FROM t").fetchall()
    assert auth.denied is None
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute("INSERT INTO t VALUES (1)")
    assert auth.denied == "INSERT t"
    auth.reset()
    assert auth.denied is None
