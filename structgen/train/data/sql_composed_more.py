"""Text-to-SQL, composed, version 2: the constructs version 1 (``sql_composed``) never assembles.

Version 1 composes lists, aggregates, groups and a best-of over five sources; every question that needs
``HAVING``, an anti-join (``NOT IN (subquery)``), a share (``AVG(CASE WHEN ... THEN 1.0 ELSE 0 END)``),
a difference of aggregates (``MAX(x) - MIN(x)``), a first or last date, a per-month grouping or a
per-customer / per-product key (select the name, group by the id) appears at most in one fixed template
of ``text_to_sql.TRAIN``, a sentence the model learns whole. Here those constructs are parts, combined
with version 1's filters and with each other:

* ``having`` — ``SELECT key FROM src [WHERE ...] GROUP BY key HAVING AGG > v``;
* ``anti``   — ``SELECT name FROM products|customers WHERE id NOT IN (SELECT ... WHERE cond)``;
* ``agg``, ``group``, ``best`` — version 1's shapes over the sources below, whose aggregates include
  shares, spreads and first/last dates, and whose keys include months, customers and products.

Same contract as version 1: queries in ``sg.Sql(shop)``'s canonical form, questions phrased from the parts
(none is a held-out sentence), and ``text_to_sql`` re-draws a query whose skeleton is a held-out template's.
Used when a run asks for it (``TrainConfig.sql_shapes = 2``; ``structgen train --sql-shapes 2``), so the
default data, and the shipped model's recipe, stay what they were.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from . import sql_composed
from .sql_composed import _C_O, _LIST, _P_OI, Part, _where

__all__ = ["SOURCES", "SHAPES", "shapes_of", "compose", "SLOT_DRAWS"]


class Key(NamedTuple):
    select: str  # what the query shows ("c.name")
    group: str  # what it groups by ("c.id")
    phrases: str  # "customer"
    plural: str  # "customers"
    alias: str = ""  # the column alias of an expression key in ``group`` ("mon")


class Agg(NamedTuple):
    sql: str  # may hold {slot} fields
    alias: str
    the: str  # "the share of orders that are {share_status}"
    most: str  # "the highest share of {share_status} orders" (``best``)
    above: str  # "more than {k} orders" (``having``: the threshold phrase), "" when it has none
    threshold: str  # the slot of ``having``'s threshold ("k", "price"), "" when it has none
    slots: tuple[str, ...] = ()
    column: str = ""  # the column a share's condition reads: no filter of the query is on it
    desc: bool = True  # ``best`` orders by it descending (False: "the earliest order" is the smallest date)


class Source(NamedTuple):
    name: str
    sql: str
    noun: str
    filters: tuple[Part, ...]
    keys: tuple[Key, ...]
    aggs: tuple[Agg, ...]


def _count(noun: str) -> Agg:
    return Agg("COUNT(*)", "n", f"the number of {noun}", f"the most {noun}", f"more than {{k}} {noun}", "k")


def _share(cond: str, what: str, noun: str, slot: str) -> Agg:
    return Agg(f"AVG(CASE WHEN {cond} THEN 1.0 ELSE 0 END)", "share",
               f"[the share|the proportion] of {noun} {what}", f"the highest share of {noun} {what}", "", "", (slot,),
               cond.split(" ")[0])


def _dates(col: str, noun: str) -> tuple[Agg, Agg]:
    return (Agg(f"MIN({col})", "first_date", f"the date of the [first|earliest] {noun}",
                f"the earliest {noun}", "", "", desc=False),
            Agg(f"MAX({col})", "last_date", f"the date of the [last|latest|most recent] {noun}",
                f"the latest {noun}", "", ""))


_SPREAD = Agg("MAX(price) - MIN(price)", "spread", "[the price range|the difference between the highest and the "
              "lowest price]", "the widest price range", "", "")

SOURCES: tuple[Source, ...] = (
    Source("products", "products", "[products|items]",
           (Part("category = '{category}'", "in the {category} category|from the {cat} range", ("category",)),
            Part("price > {price}", "[priced above|costing more than] {price}", ("price",)),
            Part("price < {price}", "[priced below|costing less than|cheaper than] {price}", ("price",))),
           (Key("category", "category", "category", "categories"),),
           (_count("products"), _SPREAD,
            Agg("AVG(price)", "avg_price", "the average price", "the highest average price",
                "an average price above {price}", "price"),
            Agg("MIN(price)", "min_price", "the lowest price", "the highest starting price",
                "a lowest price above {price}", "price"),
            _share("price > {share_price}", "that cost more than {share_price}", "products", "share_price"))),
    Source("customers", "customers", "[customers|clients]",
           (Part("country = '{country}'", "[from|based in|living in] {country}", ("country",)),
            Part("strftime('%Y', signup_date) = '{signup_year}'", "[who signed up|who joined] in {signup_year}",
                 ("signup_year",))),
           (Key("country", "country", "country", "countries"), Key("city", "city", "city", "cities")),
           (_count("customers"),
            Agg("MIN(signup_date)", "first_signup", "the [earliest|first] sign-up date", "the earliest sign-up",
                "", "", desc=False),
            Agg("MAX(signup_date)", "last_signup", "the [latest|most recent] sign-up date", "the latest sign-up",
                "", ""))),
    Source("orders", "orders", "orders",
           (Part("status = '{status}'", "[that are|with status] {status}", ("status",)),
            Part("strftime('%Y', order_date) = '{year}'", "[placed in|from] {year}", ("year",)),
            Part("order_date > '{d1}'", "[placed after|made after] {d1_text}", ("date_range",))),
           (Key("status", "status", "status", "statuses"),
            Key("strftime('%m', order_date)", "strftime('%m', order_date)", "month", "months", "mon"),
            Key("customer_id", "customer_id", "customer id", "customer ids")),
           (_count("orders"), *_dates("order_date", "order"),
            _share("status = '{share_status}'", "that are {share_status}", "orders", "share_status"))),
    Source("customer_orders", _C_O, "orders",
           (Part("c.country = '{country}'", "[from customers in|by customers from] {country}", ("country",)),
            Part("c.name = '{customer}'", "[placed by|of|from] {customer}", ("customer",)),
            Part("o.status = '{status}'", "[that are|with status] {status}", ("status",)),
            Part("strftime('%Y', o.order_date) = '{year}'", "[placed in|made in] {year}", ("year",))),
           (Key("c.name", "c.id", "customer", "customers"), Key("c.country", "c.country", "country", "countries"),
            Key("strftime('%m', o.order_date)", "strftime('%m', o.order_date)", "month", "months", "mon")),
           (_count("orders"), *_dates("o.order_date", "order"),
            _share("o.status = '{share_status}'", "that are {share_status}", "orders", "share_status"))),
    Source("product_sales", _P_OI, "[products sold|order lines]",
           (Part("p.category = '{category}'", "in the {category} category|of {cat} products", ("category",)),
            Part("p.price > {price}", "[priced above|costing more than] {price}", ("price",))),
           (Key("p.name", "p.id", "product", "products"), Key("p.category", "p.category", "category", "categories")),
           (Agg("SUM(oi.quantity)", "units", "the [total units|number of units] sold", "the most units sold",
                "more than {k} units sold", "k"),
            Agg("SUM(oi.quantity * p.price)", "revenue", "the total revenue", "the highest revenue",
                "a revenue above {price}", "price"),
            Agg("COUNT(*)", "n", "the number of order lines", "the most order lines", "more than {k} order lines",
                "k"))),
    Source("order_lines", "order_items", "order lines",
           (Part("quantity > {k}", "[with a quantity above|of more than] {k} units", ("k",)),),
           (Key("order_id", "order_id", "order", "orders"), Key("product_id", "product_id", "product id",
                                                                "product ids")),
           (Agg("COUNT(*)", "n", "the number of lines", "the most lines", "more than {k} lines", "k"),
            Agg("SUM(quantity)", "units", "the total quantity", "the largest total quantity",
                "a total quantity above {k}", "k"))),
)


def _key_select(key: Key) -> str:
    return f"{key.select} AS {key.alias}" if key.alias else key.select


def _where_for(rng: random.Random, src: Source, agg: Agg, avoid: str = "", k_max: int = 2):
    """``_where`` of version 1, drawn again while a filter is on the column a share's condition reads (the
    share of delivered orders among the delivered ones is 1)."""
    for _ in range(8):
        where, mods, slots = _where(rng, src, avoid, k_max)
        if not agg.column or f" {agg.column} " not in f"{where.replace('(', ' ')} ":
            return where, mods, slots
    return "", "", ()


def _agg(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    agg = rng.choice(src.aggs)
    where, mods, slots = _where_for(rng, src, agg)
    q = f"[What is|Tell me|Give me|Compute] {agg.the} [of|for|over|among] [the|all] {src.noun}{mods}[?|.|]"
    return f"SELECT {agg.sql} FROM {src.sql}{where}", q, slots + agg.slots


def _group(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    key, agg = rng.choice(src.keys), rng.choice(src.aggs)
    where, mods, slots = _where_for(rng, src, agg, avoid=key.select, k_max=1)
    sql = f"SELECT {_key_select(key)}, {agg.sql} AS {agg.alias} FROM {src.sql}{where} GROUP BY {key.group}"
    per = f"[per|for each|by|broken down by] {key.phrases}"
    q = rng.choice((f"{agg.the[0].upper()}{agg.the[1:]} {per}[ of| for|] [the|all] {src.noun}{mods}",
                    f"[Show|List] {agg.the} {per}, [counting|over] {src.noun}{mods}"))
    return sql, q + "[.|?|]", slots + agg.slots


def _best(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    key, agg = rng.choice(src.keys), rng.choice(src.aggs)
    where, mods, slots = _where_for(rng, src, agg, avoid=key.select, k_max=1)
    sql = (f"SELECT {key.select} FROM {src.sql}{where} GROUP BY {key.group} ORDER BY {agg.sql}"
           f"{' DESC' if agg.desc else ''} LIMIT 1")
    q = rng.choice((f"[Which|What] {key.phrases} has {agg.most}", f"Name the {key.phrases} with {agg.most}"))
    only = f"[, counting only| among| considering only] {src.noun}{mods}" if mods else ""
    return sql, f"{q}{only}[?|.|]", slots + agg.slots


def _having(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    key = rng.choice(src.keys)
    agg = rng.choice([a for a in src.aggs if a.threshold])
    where, mods, slots = _where_for(rng, src, agg, avoid=key.select, k_max=1)
    slot = "h" + agg.threshold  # its own value: a filter on the same slot draws another one
    above = agg.above.replace(f"{{{agg.threshold}}}", f"{{{slot}}}")
    sql = f"SELECT {key.select} FROM {src.sql}{where} GROUP BY {key.group} HAVING {agg.sql} > {{{slot}}}"
    only = f"[, counting only| among| considering only] {src.noun}{mods}" if mods else ""
    q = rng.choice((f"[Which|What] {key.plural} [have|account for] {above}{only}",
                    f"{_LIST} the {key.plural} with {above}{only}"))
    return sql, q + "[?|.|]", slots + (slot,)


_OI_O = "order_items AS oi JOIN orders AS o ON o.id = oi.order_id"
_OI_O_C = f"{_OI_O} JOIN customers AS c ON c.id = o.customer_id"
#: anti-joins: (outer table, inner query with its condition, phrases of "never ... {cond}", slots)
_ANTI: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("products", f"SELECT oi.product_id FROM {_OI_O} WHERE strftime('%Y', o.order_date) = '{{year}}'",
     "[were not sold|had no orders|sold nothing] in {year}", ("year",)),
    ("products", f"SELECT oi.product_id FROM {_OI_O} WHERE o.status = '{{status}}'",
     "[never appear in|are in no] {status} orders", ("status",)),
    ("products", f"SELECT oi.product_id FROM {_OI_O_C} WHERE c.city = '{{city}}'",
     "[no customer from|nobody living in] {city} [has bought|ever ordered]", ("city",)),
    ("products", "SELECT product_id FROM order_items WHERE quantity > {k}",
     "[were never|have never been] ordered more than {k} at a time", ("k",)),
    ("customers", "SELECT customer_id FROM orders WHERE strftime('%Y', order_date) = '{year}'",
     "[placed no orders|did not order|never ordered] in {year}", ("year",)),
    ("customers", "SELECT customer_id FROM orders WHERE status = '{status}'",
     "[have no {status} orders|never had an order that was {status}]", ("status",)),
)
_ANTI_NOUN = {"products": "[products|items]", "customers": "[customers|clients]"}
_ANTI_FILTER = {"products": Part("category = '{category}'", "{cat}", ("category",)),
                "customers": Part("country = '{country}'", "from {country}", ("country",))}


def _anti(rng: random.Random, src: Source) -> tuple[str, str, tuple[str, ...]]:
    table, inner, never, slots = rng.choice([a for a in _ANTI if a[0] == src.name])
    sql = f"SELECT name FROM {table} WHERE id NOT IN ({inner})"
    noun = _ANTI_NOUN[table]
    if rng.random() < 0.3:
        f = _ANTI_FILTER[table]
        sql += f" AND {f.sql}"
        slots += f.slots
        noun = f"{f.phrases} {noun}" if table == "products" else f"{noun} {f.phrases}"
    q = rng.choice((f"[Which|What] {noun} {never}", f"{_LIST} the {noun} that {never}"))
    return sql, q + "[?|.|]", slots


SHAPES: dict[str, Callable[[random.Random, Source], tuple[str, str, tuple[str, ...]]]] = {
    "agg": _agg, "group": _group, "best": _best, "having": _having, "anti": _anti}


def shapes_of(src: Source) -> tuple[str, ...]:
    """The shapes composed over ``src`` (the anti-join only over products and customers)."""
    return tuple(s for s in SHAPES if s != "anti" or src.name in _ANTI_NOUN)


def compose(rng: random.Random, source: Source, shape: str) -> tuple[str, str, tuple[str, ...]]:
    """(SQL with ``{slot}`` fields, question pattern, the slots to draw) of one composed query."""
    return sql_composed.compose(rng, source, shape, SHAPES)


#: slots version 2 adds to ``shop_values.draw_slot``, drawn as the slot they map to: the value a share's condition
#: compares with, and a ``HAVING`` threshold
SLOT_DRAWS: dict[str, str] = {"share_price": "price", "share_status": "status", "hk": "k", "hprice": "price"}
