"""Tests of the example shop database (``examples/shop/build.py``): exact schema, sizes, coverage of
countries, categories and statuses, value bounds, foreign keys, determinism and the atomic write."""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "examples" / "shop" / "build.py"

SCHEMA = {
    "customers": "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL,\n"
    "  country TEXT NOT NULL, signup_date TEXT NOT NULL)",
    "products": "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,\n"
    "  price REAL NOT NULL)",
    "orders": "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),\n"
    "  order_date TEXT NOT NULL,\n"
    "  status TEXT NOT NULL CHECK (status IN ('pending','shipped','delivered','cancelled')))",
    "order_items": "CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id),\n"
    "  product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL CHECK (quantity > 0),\n"
    "  PRIMARY KEY (order_id, product_id))",
}
COUNTRIES = {"Germany", "France", "Japan", "Brazil", "Canada", "India", "Spain", "Kenya"}
CATEGORIES = {"books", "electronics", "toys", "garden", "kitchen"}
STATUSES = {"pending", "shipped", "delivered", "cancelled"}


@pytest.fixture(scope="module")
def build_mod():
    spec = importlib.util.spec_from_file_location("shop_build_under_test", BUILD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def db(shop_db):
    conn = sqlite3.connect(f"{shop_db.resolve().as_uri()}?mode=ro", uri=True)
    yield conn
    conn.close()


def q(conn, sql):
    return conn.execute(sql).fetchall()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_schema_text_is_exact(db):
    rows = q(db, "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
    assert dict(rows) == SCHEMA
    assert [r[0] for r in rows] == list(SCHEMA)
    # nothing else: no views, triggers or extra indexes beyond the composite key's automatic one
    others = q(db, "SELECT type, name FROM sqlite_master WHERE type != 'table'")
    assert others == [("index", "sqlite_autoindex_order_items_1")]


def test_customers(db):
    assert q(db, "SELECT count(*) FROM customers")[0][0] >= 60
    assert {r[0] for r in q(db, "SELECT DISTINCT country FROM customers")} == COUNTRIES
    names = [r[0] for r in q(db, "SELECT name FROM customers")]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[^\W\d_]+(?:[ '-][^\W\d_]+)+", n) for n in names), names
    # every country has several customers spread over more than one real city
    for country, n, cities in q(db, "SELECT country, count(*), count(DISTINCT city) FROM customers GROUP BY 1"):
        assert n >= 5 and cities >= 2, country
    for (d,) in q(db, "SELECT signup_date FROM customers"):
        assert dt.date.fromisoformat(d).isoformat() == d


def test_products(db):
    assert q(db, "SELECT count(*) FROM products")[0][0] >= 40
    assert {r[0] for r in q(db, "SELECT DISTINCT category FROM products")} == CATEGORIES
    names = [r[0] for r in q(db, "SELECT name FROM products")]
    assert len(set(names)) == len(names) and all(len(n) >= 4 for n in names)
    prices = [r[0] for r in q(db, "SELECT price FROM products")]
    assert all(isinstance(p, float) and 2 <= p <= 500 for p in prices)
    assert all(round(p, 2) == p for p in prices)
    assert min(prices) < 3 and max(prices) > 480


def test_orders(db):
    assert q(db, "SELECT count(*) FROM orders")[0][0] >= 300
    assert {r[0] for r in q(db, "SELECT DISTINCT status FROM orders")} == STATUSES
    lo, hi = dt.date(2024, 1, 1), dt.date(2026, 11, 30)
    for (d,) in q(db, "SELECT order_date FROM orders"):
        assert dt.date.fromisoformat(d).isoformat() == d and lo <= dt.date.fromisoformat(d) <= hi
    assert q(db, "SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id "
                 "WHERE o.order_date <= c.signup_date") == [(0,)]


def test_order_items(db):
    counts = [r[0] for r in q(db, "SELECT count(*) FROM order_items GROUP BY order_id")]
    assert len(counts) == q(db, "SELECT count(*) FROM orders")[0][0]  # every order has items
    assert min(counts) == 1 and max(counts) == 5
    assert q(db, "SELECT min(quantity) FROM order_items")[0][0] >= 1


def test_foreign_keys_hold(db):
    assert q(db, "PRAGMA foreign_key_check") == []
    assert q(db, "PRAGMA integrity_check") == [("ok",)]


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_two_builds_are_byte_identical(build_mod, tmp_path, shop_db):
    a = build_mod.build(tmp_path / "a.sqlite")
    b = build_mod.build(tmp_path / "b.sqlite")
    assert sha(a) == sha(b)
    # the default file holds the same content (its bytes may come from another SQLite version)
    assert dump(a) == dump(shop_db)
    c = build_mod.build(tmp_path / "c.sqlite", seed=7)
    assert sha(c) != sha(a) and dump(c) != dump(a)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite", "b.sqlite", "c.sqlite"]  # no temp left


def test_ensure_builds_only_when_missing(build_mod, tmp_path):
    p = tmp_path / "sub" / "shop.sqlite"
    assert build_mod.ensure(p) == p and p.is_file()
    p.write_bytes(b"not rebuilt")
    assert build_mod.ensure(p) == p and p.read_bytes() == b"not rebuilt"


def test_failed_build_leaves_the_old_file(build_mod, tmp_path, monkeypatch):
    p = build_mod.build(tmp_path / "shop.sqlite")
    before = sha(p)

    def boom(conn, seed):
        conn.execute("CREATE TABLE half (x)")
        raise RuntimeError("interrupted")

    monkeypatch.setattr(build_mod, "_fill", boom)
    with pytest.raises(RuntimeError):
        build_mod.build(p)
    assert sha(p) == before
    assert [x.name for x in tmp_path.iterdir()] == ["shop.sqlite"]


def test_cli(tmp_path):
    out = tmp_path / "cli.sqlite"
    run = lambda *a: subprocess.run([sys.executable, str(BUILD), "--out", str(out), *a],  # noqa: E731
                                    capture_output=True, text=True, check=True).stdout
    assert "built" in run()
    first = sha(out)
    assert "exists" in run()
    assert "built" in run("--force") and sha(out) == first
