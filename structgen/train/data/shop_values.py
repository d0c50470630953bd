"""The shop database of the SQL family, and the values its question templates draw from it.

Owns the path of the example shop database (built by ``examples/shop/build.py`` when missing), the one
``sg.Sql`` spec every SQL example shares, the facts read from the database (countries, cities, categories,
statuses, years, products, customers...) and the slot samplers that fill a template's ``{slot}`` fields
(``draw_slot``: a date range with its dates as people write them, a price band, a HAVING threshold...), and
``has_rows``: whether a gold query returns rows. ``text_to_sql`` builds its templates on these.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.util
import random
import sqlite3
from pathlib import Path
from typing import Any

from structgen.errors import StructgenError

from . import sql_composed_more
from .base import example_file

__all__ = ["CAT_WORD", "PRICES", "shop_database", "sql_spec", "facts", "draw_slot", "draw_values", "has_rows"]

CAT_WORD = {"books": "book", "electronics": "electronics", "garden": "garden", "kitchen": "kitchen",
             "toys": "toy"}
PRICES = (5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300)


@functools.lru_cache(maxsize=1)
def shop_database() -> Path:
    """The path of the example shop database, built by ``examples/shop/build.py`` when missing."""
    spec = importlib.util.spec_from_file_location("_structgen_shop_build",
                                                  example_file("shop/build.py", "the SQL data"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return Path(mod.ensure())


@functools.lru_cache(maxsize=1)
def sql_spec():
    """``sg.Sql(shop database)``: one instance shared by every example."""
    from structgen.sql import Sql

    return Sql(shop_database())


@functools.lru_cache(maxsize=1)
def facts() -> dict[str, list]:
    """Values the templates draw from, read from the database itself."""
    from structgen.sql import connect_readonly

    conn = connect_readonly(shop_database())
    try:
        col = lambda q: [r[0] for r in conn.execute(q)]
        found = {
            "country": col("SELECT DISTINCT country FROM customers ORDER BY 1"),
            "city": col("SELECT DISTINCT city FROM customers ORDER BY 1"),
            "category": col("SELECT DISTINCT category FROM products ORDER BY 1"),
            "status": col("SELECT DISTINCT status FROM orders ORDER BY 1"),
            "year": col("SELECT DISTINCT strftime('%Y', order_date) FROM orders ORDER BY 1"),
            "signup_year": col("SELECT DISTINCT strftime('%Y', signup_date) FROM customers ORDER BY 1"),
            "product": col("SELECT name FROM products ORDER BY id"),
            "customer": col("SELECT DISTINCT c.name FROM customers c JOIN orders o ON o.customer_id = c.id "
                            "ORDER BY 1"),
            "order": col("SELECT id FROM orders ORDER BY id"),
            "letter": col("SELECT DISTINCT substr(name, 1, 1) FROM customers ORDER BY 1"),
            "dates": col("SELECT min(order_date) || '/' || max(order_date) FROM orders")[0].split("/"),
        }
    except sqlite3.Error as e:
        raise StructgenError(f"cannot read the shop database {shop_database()} ({e}); rebuild it with "
                             "python examples/shop/build.py --force") from None
    finally:
        conn.close()
    words = {w for p in found["product"] for w in p.replace(",", " ").replace(":", " ").split()}
    found["word"] = sorted(w for w in words if w.isalpha() and len(w) >= 4)
    return found


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def date_text(rng: random.Random, d: dt.date) -> str:
    """A date as people write it (English month names whatever the locale)."""
    month = MONTHS[d.month - 1]
    return rng.choice((d.isoformat(), f"{month} {d.day}, {d.year}", f"{d.day} {month} {d.year}"))


def draw_slot(name: str, rng: random.Random, f: dict, out: dict[str, Any]) -> None:
    """Draw the value(s) of slot ``name`` into ``out``."""
    if name == "country2":
        out[name] = rng.choice([c for c in f["country"] if c != out.get("country")])
    elif name == "category":
        out["category"] = rng.choice(f["category"])
        out["cat"] = CAT_WORD.get(out["category"], out["category"])
    elif name == "price":
        out["price"] = str(rng.choice(PRICES))
    elif name == "price_range":
        lo, hi = sorted(rng.sample(PRICES, 2))
        out.update(lo=str(lo), hi=str(hi))
    elif name == "date_range":
        first, last = (dt.date.fromisoformat(d) for d in f["dates"])
        d1 = first + dt.timedelta(days=rng.randrange((last - first).days - 30))
        d2 = min(last, d1 + dt.timedelta(days=rng.randint(14, 200)))
        out.update(d1=d1.isoformat(), d2=d2.isoformat(), d1_text=date_text(rng, d1), d2_text=date_text(rng, d2))
    elif name == "n":
        out["n"] = str(rng.choice((3, 5, 10)))
    elif name in sql_composed_more.SLOT_DRAWS:
        drawn: dict[str, Any] = {}
        draw_slot(sql_composed_more.SLOT_DRAWS[name], rng, f, drawn)
        out[name] = drawn[sql_composed_more.SLOT_DRAWS[name]]
    elif name in ("k", "k_country"):
        out["k"] = str(rng.randint(7, 9) if name == "k_country" else rng.randint(2, 6))
    else:
        out[name] = str(rng.choice(f[name]))


def draw_values(rng: random.Random, facts: dict, slots: tuple[str, ...]) -> dict[str, Any]:
    """A value for each of ``slots`` (``draw_slot``)."""
    vals: dict[str, Any] = {}
    for name in slots:
        draw_slot(name, rng, facts, vals)
    return vals


@functools.lru_cache(maxsize=4096)
def has_rows(sql: str) -> bool:
    """Whether ``sql`` returns at least one row with a value that is not NULL or 0."""
    from structgen.sql import run_query

    rows = run_query(shop_database(), sql, max_rows=1, timeout_s=5).rows
    return bool(rows) and any(v not in (None, 0, 0.0) for v in rows[0])
