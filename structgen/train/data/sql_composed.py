"""Text-to-SQL, composed: questions and queries built clause by clause over the shop database.

The fixed templates of ``text_to_sql.TRAIN`` are one query shape each, and a model that fits them learns 39
sentences more than the clauses they are made of (run 6 wrote garbage for every held-out question shape).
Here a query is assembled from one *source* (a table, or one of the two canonical joins) and its parts —
a projection, 0-2 filters, a grouping key, an aggregate, an order, a limit — and its question from the
phrases of the same parts, so every clause is seen in many combinations and phrasings. Four shapes:

* ``list``  — ``SELECT cols FROM src [WHERE ...] [ORDER BY ... [LIMIT n]]``;
* ``agg``   — ``SELECT AGG FROM src [WHERE ...]``;
* ``group`` — ``SELECT key, AGG AS alias FROM src [WHERE ...] GROUP BY key [ORDER BY alias DESC]``;
* ``best``  — ``SELECT key FROM src [WHERE ...] GROUP BY key ORDER BY AGG DESC|(ASC) LIMIT 1``.

Queries are in the canonical form of ``sg.Sql(shop)`` (``structgen/sql/grammar.py``); the data tests check
that every one is accepted, valid and returns rows. No held-out question sentence is produced here: the
held-out templates of ``text_to_sql`` stay whole sentences of their own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["SHAPES", "SOURCES", "compose", "filled"]


class Part(NamedTuple):
    sql: str  # with {slot} fields (values already SQL-escaped when filled)
    phrases: str  # base.say's language: [a|b] alternatives, {slot} fields
    slots: tuple[str, ...] = ()


class Agg(NamedTuple):
    sql: str
    alias: str
    the: str  # "the average price"
    most: str  # "the highest average price" (for ``best``)
    least: str  # "the lowest average price"


class Source(NamedTuple):
    name: str
    sql: str
    noun: str  # "[products|items]"
    lists: tuple[Part, ...]  # projections of ``list`` (phrase: what is shown)
    filters: tuple[Part, ...]  # WHERE conditions (phrase: a post-modifier of the noun)
    keys: tuple[Part, ...]  # grouping keys (phrase: "category")
    aggs: tuple[Agg, ...]
    orders: tuple[Part, ...]  # ORDER BY terms of ``list`` (phrase: "most expensive first")


_COUNT = "COUNT(*)"
_C_O = "customers AS c JOIN orders AS o ON o.customer_id = c.id"
_P_OI = "products AS p JOIN order_items AS oi ON oi.product_id = p.id"


def _count(noun: str) -> Agg:
    return Agg(_COUNT, "n", f"the number of {noun}", f"the most {noun}", f"the fewest {noun}")


def _buyers(customer_id: str) -> Agg:
    return Agg(f"COUNT(DISTINCT {customer_id})", "buyers", "the number of different customers",
               "the most distinct customers", "the fewest distinct customers")


SOURCES: tuple[Source, ...] = (
    Source("products", "products", "[products|items]",
           (Part("name", "[the names of the|the|all]"), Part("name, price", "the names and prices of the"),
            Part("name, category", "the name and category of [the|all]")),
           (Part("category = '{category}'", "in the {category} category|from the {cat} range|in {category}",
                 ("category",)),
            Part("price > {price}", "[priced above|costing more than|over] {price}[| dollars]", ("price",)),
            Part("price < {price}", "[priced below|costing less than|under|cheaper than] {price}", ("price",)),
            Part("price BETWEEN {lo} AND {hi}", "[priced between|costing between] {lo} and {hi}",
                 ("price_range",))),
           (Part("category", "category"),),
           (_count("products"), Agg("AVG(price)", "avg_price", "the average price", "the highest average price",
                                    "the lowest average price"),
            Agg("MAX(price)", "max_price", "the highest price", "the most expensive product",
                "the lowest top price"),
            Agg("MIN(price)", "min_price", "the lowest price", "the highest starting price", "the cheapest product")),
           (Part("price DESC", "[most expensive first|sorted by price, highest first|by price descending]"),
            Part("price", "[cheapest first|sorted by price, lowest first|by ascending price]"),
            Part("name", "[sorted by name|in alphabetical order|alphabetically]"))),
    Source("customers", "customers", "[customers|clients]",
           (Part("name", "[the names of the|the|all]"), Part("name, city", "the names and cities of the"),
            Part("name, country", "the name and country of [the|all]")),
           (Part("country = '{country}'", "[from|in|based in|living in] {country}", ("country",)),
            Part("city = '{city}'", "[in|from|living in] {city}", ("city",)),
            Part("strftime('%Y', signup_date) = '{signup_year}'",
                 "[who signed up|who joined|registered] in {signup_year}", ("signup_year",)),
            Part("name LIKE '{letter}%'", "whose name [starts|begins] with {letter}", ("letter",))),
           (Part("country", "country"), Part("city", "city")),
           (_count("customers"),),
           (Part("name", "[sorted by name|in alphabetical order|alphabetically]"),
            Part("signup_date DESC", "[newest first|most recent sign-ups first|latest to join first]"),
            Part("signup_date", "[oldest first|in order of sign-up|earliest sign-ups first]"))),
    Source("orders", "orders", "orders",
           (Part("id", "the ids of the"), Part("id, order_date", "the ids and dates of the"),
            Part("id, status", "the id and status of [the|all]")),
           (Part("status = '{status}'", "[that are|with status|marked] {status}", ("status",)),
            Part("strftime('%Y', order_date) = '{year}'", "[placed in|from|made in] {year}", ("year",)),
            Part("order_date > '{d1}'", "[placed after|dated after|made after] {d1_text}", ("date_range",))),
           (Part("status", "status"), Part("strftime('%Y', order_date)", "year")),
           (_count("orders"), _buyers("customer_id")),
           (Part("order_date DESC", "[newest first|most recent first|latest first]"),
            Part("order_date", "[oldest first|in date order|earliest first]"))),
    Source("customer_orders", _C_O, "orders",
           (Part("o.id, c.name", "the id and customer name of the"),
            Part("o.id, o.order_date", "the ids and dates of the")),
           (Part("c.country = '{country}'", "[from customers in|placed from|by customers from] {country}",
                 ("country",)),
            Part("o.status = '{status}'", "[that are|with status] {status}", ("status",)),
            Part("strftime('%Y', o.order_date) = '{year}'", "[placed in|made in] {year}", ("year",))),
           (Part("c.country", "customer country"), Part("c.city", "customer city")),
           (_count("orders"), _buyers("c.id")),
           (Part("o.order_date DESC", "[newest first|most recent first]"),
            Part("o.order_date", "[oldest first|earliest first]"))),
    Source("product_sales", _P_OI, "[products sold|order lines]",
           (Part("oi.order_id, p.name", "the order ids and product names of the"),
            Part("p.name, oi.quantity", "the product name and quantity of the")),
           (Part("p.category = '{category}'", "in the {category} category|of {cat} products", ("category",)),
            Part("oi.quantity > {k}", "[with a quantity above|of more than] {k} units", ("k",)),
            Part("p.price > {price}", "[priced above|costing more than] {price}", ("price",))),
           (Part("p.category", "category"),),
           (Agg("SUM(oi.quantity)", "units", "the total units sold", "the most units sold",
                "the fewest units sold"),
            Agg("SUM(oi.quantity * p.price)", "revenue", "the total revenue", "the highest revenue",
                "the lowest revenue"),
            Agg("AVG(oi.quantity)", "avg_qty", "the average quantity per order line",
                "the highest average quantity", "the lowest average quantity")),
           (Part("oi.quantity DESC", "[largest quantities first|by quantity, highest first]"),
            Part("p.name", "[sorted by product name|alphabetically by product]"))),
)

_LIST = "[List|Show|Give me|Find|What are|Which are|Show me|Get]"


def _filters(rng: random.Random, src: Source, avoid: str = "", k_max: int = 2) -> list[Part]:
    """0-``k_max`` distinct filters of ``src`` (none on the column ``avoid``), at most one per column."""
    options = [f for f in src.filters if not (avoid and f.sql.startswith(avoid + " "))]
    k = rng.choice((0, 1, 1, 2)[: k_max + 2])
    chosen: list[Part] = []
    for f in rng.sample(options, len(options)):
        if len(chosen) < k and all(f.sql.split(" ")[0] != c.sql.split(" ")[0] for c in chosen):
            chosen.append(f)
    return chosen


def _where(rng: random.Random, src: Source, avoid: str = "", k_max: int = 2) -> tuple[str, str, tuple[str, ...]]:
    """Filters drawn by ``_filters``, as (`` WHERE a AND b``, ``" modifier and modifier"``, their slots)."""
    filters = _filters(rng, src, avoid, k_max)
    if not filters:
        return "", "", ()
    mods = [f"[{f.phrases}]" for f in filters]
    slots = tuple(s for f in filters for s in f.slots)
    return " WHERE " + " AND ".join(f.sql for f in filters), " " + " [and|,] ".join(mods), slots


def _list(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    proj = rng.choice(src.lists)
    where, mods, slots = _where(rng, src)
    sql, q = f"SELECT {proj.sql} FROM {src.sql}{where}", f"{_LIST} {proj.phrases} {src.noun}{mods}"
    if rng.random() < 0.6:
        order = rng.choice(src.orders)
        sql += f" ORDER BY {order.sql}"
        q += f", {order.phrases}"
        if rng.random() < 0.5:
            sql += " LIMIT {n}"
            q += "[, top {n}|, only the first {n}|, just {n} of them|; limit {n}]"
    return sql, q + "[.|?|]", slots + (("n",) if "{n}" in sql else ())


def _agg(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    agg = rng.choice(src.aggs)
    where, mods, slots = _where(rng, src)
    if agg.sql == _COUNT and rng.random() < 0.5:
        q = rng.choice((f"How many {src.noun}[ are there|]{mods}[?|]", f"[Count the|Number of] {src.noun}{mods}[.|]"))
    else:
        q = f"[What is|Tell me|Give me|Compute] {agg.the} [of|for|over] [the|all] {src.noun}{mods}[?|.|]"
    return f"SELECT {agg.sql} FROM {src.sql}{where}", q, slots


def _group(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    key, agg = rng.choice(src.keys), rng.choice(src.aggs)
    where, mods, slots = _where(rng, src, avoid=key.sql, k_max=1)
    sql = f"SELECT {key.sql}, {agg.sql} AS {agg.alias} FROM {src.sql}{where} GROUP BY {key.sql}"
    per = f"[per|for each|by|broken down by] {key.phrases}"
    q = rng.choice((f"{agg.the[0].upper()}{agg.the[1:]} {per} [of|for] {src.noun}{mods}",
                    f"[Show|Give me|List] {agg.the} of {src.noun}{mods}, {per}"))
    if rng.random() < 0.4:
        sql += f" ORDER BY {agg.alias} DESC"
        q += "[, largest first|, highest first|, sorted from high to low]"
    return sql, q + "[.|?|]", slots


def _best(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    key, agg = rng.choice(src.keys), rng.choice(src.aggs)
    where, mods, slots = _where(rng, src, avoid=key.sql, k_max=1)
    most = rng.random() < 0.75
    sql = (f"SELECT {key.sql} FROM {src.sql}{where} GROUP BY {key.sql} ORDER BY {agg.sql}"
           f"{' DESC' if most else ''} LIMIT 1")
    which = agg.most if most else agg.least
    q = rng.choice((f"[Which|What] {key.phrases} has {which}", f"The {key.phrases} with {which}"))
    only = f"[, counting only| among| considering only| looking only at] {src.noun}{mods}" if mods else ""
    return sql, f"{q}{only}[?|.|]", slots


SHAPES: dict[str, Callable[[random.Random, Source], tuple[str, str, tuple[str, ...]]]] = {
    "list": _list, "agg": _agg, "group": _group, "best": _best}


def compose(rng: random.Random, source: Any, shape: str, shapes: dict[str, Callable] | None = None
            ) -> tuple[str, str, tuple[str, ...]]:
    """(SQL with ``{slot}`` fields, question pattern, the slots to draw) of one composed query: ``shape`` of
    ``shapes`` (default: this module's ``SHAPES``; ``sql_composed_more`` passes its own)."""
    sql, question, slots = (SHAPES if shapes is None else shapes)[shape](rng, source)
    return sql, question.replace("  ", " "), tuple(dict.fromkeys(slots))


def filled(sql: str, vals: dict[str, Any]) -> str:
    """``sql`` with its slots filled, string values SQL-escaped."""
    return sql.format(**{k: str(v).replace("'", "''") for k, v in vals.items()})
