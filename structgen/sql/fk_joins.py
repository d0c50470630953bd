"""Joins along foreign keys: the ON conditions a grounded query's outermost joins may have.

The small model joins on unrelated keys (``JOIN orders AS o ON o.order_date = c.id``, ``JOIN order_items AS oi
ON oi.product_id = c.id``): every such query runs and answers nothing the question asked. A grounded ``Sql``
(``Sql.grounded``: ``specialise(schema, fk_joins=True)``) writes each join of its outermost query as the
equality of a foreign key with the column it references, between the table joined and one declared before
it: ``JOIN orders AS o ON o.customer_id = c.id`` (either side first). A set of tables no chain of foreign keys
connects cannot be joined at the top level then; subqueries, subqueries in FROM and self-joins keep any ON.
The keys are ``DbSchema.foreign_keys`` (``PRAGMA foreign_key_list``, single-column keys); a database that
declares none (many SQLite files) keeps free joins when grounded.
"""

from __future__ import annotations

import json
from typing import Callable

from .names import quote_ident
from .schema import DbSchema

__all__ = ["foreign_key_on"]


def foreign_key_on(schema: DbSchema) -> Callable[[list[str], int, int], str | None]:
    """``on(qualifiers, i, done)``: the grammar of the ON conditions that join table ``i`` (its index in
    ``schema.tables``) to the tables in bitmask ``done`` along a foreign key, each side qualified by
    ``qualifiers`` (an alias or the table's name, per table); None when no key connects them."""
    index = {t.name: n for n, t in enumerate(schema.tables)}
    keys = [(index[a], quote_ident(ca), index[b], quote_ident(cb)) for a, ca, b, cb in schema.foreign_keys
            if a != b]

    def on(qualifiers: list[str], i: int, done: int) -> str | None:
        alts = []
        for a, ca, b, cb in keys:
            for x, cx, y, cy in ((a, ca, b, cb), (b, cb, a, ca)):
                if x == i and done >> y & 1:
                    mine, theirs = f"{qualifiers[x]}.{cx}", f"{qualifiers[y]}.{cy}"
                    alts += [json.dumps(f"{mine} = {theirs}"), json.dumps(f"{theirs} = {mine}")]
        return "(" + " | ".join(dict.fromkeys(alts)) + ")" if alts else None

    return on
