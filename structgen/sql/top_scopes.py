"""The outermost query's scopes of a specialised SQL grammar (``structgen.sql.grammar`` assembles them): one
table (``rI_0``, ``rI_1``), a join of a set of tables each declared once with its FROM rules (``kBITS``,
``bBITS``), a self-join (``sI``), and the terminal of output aliases."""

from __future__ import annotations

from typing import Callable, Iterable

from .grammar_rules import Scope, lit
from .names import KEYWORDS, alias_regex, quote_ident
from .schema import DbSchema


def joined_scopes(schema: DbSchema, aliases: dict, des_rules: list[tuple[str, str]],
                  on: Callable | None = None) -> list[Scope]:
    """The outermost query's exact joined scopes, one per set ``A`` of two or more tables and way of naming
    them: every table declared ``t AS a`` (scope ``k{bits}``, columns qualified by those aliases) or every
    table by its bare name (scope ``b{bits}``, columns qualified by those names). Only the names of ``A``
    qualify columns, and the FROM declares each table of ``A`` exactly once, in any order: one rule per
    set of tables declared so far (``f{scope}_{done}``), so a name can be neither missing nor declared
    twice. ``on(qualifiers, i, done)``: the ON condition that joins table ``i`` to the tables in bitmask
    ``done`` (None: it cannot join them; ``fk_joins.foreign_key_on``), by default any expression of the
    scope, except that a ``LEFT JOIN``'s names only the tables declared up to it (the expression of the
    scope of those tables), since SQLite refuses one that names a later table; a set of tables that cannot
    all be joined that way gets no scope. Appends the FROM rules to ``des_rules``; returns the scopes."""
    tables = schema.tables
    styles = {"k": [(f'{lit(quote_ident(t.name))} " AS " {lit(aliases[t.name][0])}', aliases[t.name][0])
                    for t in tables],
              "b": [(lit(quote_ident(t.name)), quote_ident(t.name)) for t in tables]}
    scopes = []
    for style, named in styles.items():
        for bits in range(1, 1 << len(tables)):
            members = [i for i in range(len(tables)) if bits >> i & 1]
            if len(members) < 2:
                continue
            s = f"{style}{bits}"
            cond = (lambda i, done: f"expr_{s}_n") if on is None else \
                (lambda i, done: on([q for _, q in named], i, done))
            joins: dict[int, list[tuple[int, str]]] = {}  # done -> (table, its ON) that lead to a full FROM
            for done in sorted((d for d in range(1, bits) if d & bits == d), key=lambda d: -bin(d).count("1")):
                joins[done] = [(i, c) for i in members if not done >> i & 1
                               and (done | 1 << i == bits or joins.get(done | 1 << i))
                               and (c := cond(i, done)) is not None]
            for done, ways in sorted(joins.items()):
                if ways:
                    des_rules.append((f"f{s}_{done}", " | ".join(
                        _join_alternatives(style, bits, done, i, named[i][0], c, on is None) for i, c in ways)))
            starts = [i for i in members if joins.get(1 << i)]
            if not starts:
                continue
            col = " | ".join(f'{lit(named[i][1])} "." cols_{i}' for i in members)
            star = "(" + " | ".join(lit(named[i][1]) for i in members) + ') ".*"'
            from_ = " | ".join(f"{named[i][0]} f{s}_{1 << i}" for i in starts)
            scopes.append(Scope(s, col, from_, order_alias=True, star=star))
    return scopes


def _join_alternatives(style: str, bits: int, done: int, i: int, table: str, on: str,
                       left_sees_declared: bool) -> str:
    """The joins of table ``i`` (declared as ``table``) to the tables in ``done``, in scope ``{style}{bits}``,
    with ON condition ``on``; ``left_sees_declared``: a ``LEFT JOIN`` that is not the last join has the ON of
    the scope of the tables declared so far instead (its own expression rules; every set of two or more
    tables has a scope when the ON is free)."""
    declared = done | 1 << i
    rest = "" if declared == bits else f" f{style}{bits}_{declared}"  # the next join, until all are declared
    if not left_sees_declared or declared == bits:
        return f'join_kw {table} " ON " {on}{rest}'
    return (f'INNER_JOIN {table} " ON " {on}{rest} | '
            f'LEFT_JOIN {table} " ON " expr_{style}{declared}_n{rest}')


def single_table_scopes(i: int, tname: str, alias: str) -> list[Scope]:
    """The outermost query's two single-table scopes of table ``i`` (``rI_0``: ``FROM t``, ``rI_1``: ``FROM
    t AS a``). It correlates with nothing, so a qualified reference names the table the way FROM declares
    it (``customers.x`` with no alias, ``c.x`` with ``AS c``); unqualified columns in both."""
    return [Scope(f"r{i}_{k}", f'cols_{i} | {lit(d)} "." cols_{i}', from_, order_alias=True,
                  star=f'{lit(d)} ".*"')
            for k, (d, from_) in enumerate(((tname, lit(tname)), (alias, f'{lit(tname)} " AS " {lit(alias)}')))]


def out_alias_terminal(schema: DbSchema, aliases: dict, derived: Iterable[str] = ()) -> str:
    """``OUT_ALIAS``: the bounded lower-case names minus SQLite's keywords and the schema's table names,
    column names, table aliases and ``derived`` (subquery) aliases."""
    excluded = set(KEYWORDS) | set(schema.table_names) | {c for t in schema.tables for c in t.column_names}
    excluded |= {a for pair in aliases.values() for a in pair} | set(derived)
    return f"/{alias_regex(excluded)}/"


def self_join_scopes(schema: DbSchema, aliases: dict) -> list[Scope]:
    """One self-join scope per table (``s{i}``: ``t AS a JOIN t AS a2 ON ...``, columns qualified by both
    aliases, nothing else joined)."""
    scopes = []
    for i, t in enumerate(schema.tables):
        a1, a2 = (lit(a) for a in aliases[t.name])
        tname = lit(quote_ident(t.name))
        scopes.append(Scope(f"s{i}", f'({a1} | {a2}) "." cols_{i}',
                            f'{tname} " AS " {a1} join_kw {tname} " AS " {a2} " ON " expr_s{i}_n',
                            order_alias=True, star=f'({a1} | {a2}) ".*"'))
    return scopes
