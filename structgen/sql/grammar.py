"""The SQLite SELECT grammar in canonical form: generic (``grammars/sqlite_select.lark``) and specialised to
one database (``specialise(schema)``, the grammar of ``sg.Sql``).

This module is the one source of both grammars; the names they use (keywords, quoting, table and output
aliases) come from ``names``. ``generic_grammar()`` is the text of
``grammars/sqlite_select.lark`` (regenerate the file from it, as its header says; a test checks that it is
current). Both compile on llguidance (the grammar engine) and on Lark's Earley parser (the
``LarkValidator``): plain BNF, no templates, priorities, ``?``/``!`` markers, imports or look-around.

**Language.** One read-only statement: ``SELECT [DISTINCT] items FROM ... [WHERE] [GROUP BY [HAVING]]
[ORDER BY [ASC|DESC]] [LIMIT [OFFSET]]``, ``[INNER|LEFT] JOIN ... ON``, subqueries in FROM (with an alias),
in ``IN``/``EXISTS`` and as scalars; expressions of SQLite's operators (``OR``, ``AND``, ``NOT``,
``= != <> IS IN LIKE BETWEEN``, ``< <= > >=``, ``+ - * / % ||``, unary ``-``), ``CASE``
(searched and simple), ``CAST``, aggregates, scalar functions with their arities, string and number
literals, ``NULL``. Nothing else: no other statement, no ``;``, no comments, no compound ``SELECT``
(UNION...), no comma joins, no window functions. Aggregates cannot appear in WHERE, ON or GROUP BY, nor
inside another aggregate (each expression level exists in two copies: with and without aggregates).

**Canonical form.** Keywords are UPPERCASE. Whitespace is exactly one space where a separator is needed:
around keywords and binary operators, after ``,``; none inside parentheses, before ``,``, around ``.``,
between a function name and ``(``, or at either end. The grammar writes those spaces as explicit ``" "``
literals instead of ``%ignore``: llguidance reads ``%ignore " "`` as *any run* of spaces (two, three, or
none between ``SELECT`` and a name), which would let a diffusion model pad the canvas. Function names are
written one way only: ``COUNT SUM AVG MIN MAX TOTAL GROUP_CONCAT ROUND ABS LOWER UPPER LENGTH TRIM SUBSTR
REPLACE INSTR COALESCE IFNULL NULLIF IIF CAST`` upper case, ``strftime date datetime julianday`` lower case
(as SQLite's documentation writes them). Numbers have no sign, exponent or leading zero (``-`` is the
unary operator, written before a primary and never doubled: ``--`` starts a comment). ``!=`` and ``<>``
are both accepted. A table alias is written with ``AS``.

**Identifiers.** In the generic grammar an unquoted identifier must contain a lower-case letter
(``[A-Z_][A-Z0-9_]*`` may precede it), so it can never spell an upper-case keyword; any other name is
double-quoted (``"ID"``, ``"order"``, ``"unit price"``). A lower-case identifier that SQLite reads as a
keyword (``order``) is grammatical here and fails only in SQLite; the specialised grammar quotes it.
Every free-form terminal is bounded (names 64 characters, output aliases 30, numbers 12 digits and 6
decimals, strings 80 characters): an unbounded one is a state a diffusion model can fill the canvas with.

**Two engines, one text.** Lark's Earley parser predicts one item per alternative, and expands every
``x?`` inside a rule into two alternatives of the whole rule; so each optional clause is a nullable rule
of its own and every class of operators or function names is one terminal (``CMP_OP``, ``FN_1``...),
which keeps the specialised grammar's parse at tens of ms. The grammars decide what is valid, not how an
expression groups: a chain of ``OR``/``AND`` and one of ``+ - * / % ||`` are one rule each, not one per
precedence level, and functions of one arity share a terminal and an alternative (``FN_3``: ``REPLACE``,
``IIF``). Every rule and alternative is an Earley item in each of the scopes a query carries until
``FROM`` (below), and llguidance's work per token grows faster than their number: these two cut the
endgame search over random tokens by a third, with every mask and forced byte the same
(``benchmarks/endgame_search.py``). llguidance's lexer looks one byte ahead: no
terminal has an alternative that is a proper prefix of another the next lexeme could continue (hence
``"SELECT " distinct`` rather than a terminal ``"SELECT " | "SELECT DISTINCT "``, which would reject
``SELECT Dname``, and ``"CASE " (operand " ")? "WHEN "``). The tests derive random sentences from the Lark
rules and require llguidance to accept them.

**Specialisation** (``specialise``): identifiers are the database's own.

* Every table has two canonical aliases derived from its name (``customers`` -> ``c``, ``c2``;
  ``order_items`` -> ``oi``, ``oi2``; unique, never a keyword or a table name). A qualified reference
  ``X.col`` exists only for ``X`` naming or aliasing a table that has ``col`` (``c.price`` cannot be
  produced). Subqueries in FROM take the aliases ``sub``, ``sub2``, ``sub3``; their columns are output
  aliases or schema column names.
* Scopes: each query is either *single-table* (``FROM t [AS a]``, no join: columns of ``t`` unqualified,
  or any qualified reference, for correlation with an outer query) or *joined* (at least one join, or a
  subquery in FROM: qualified references only, no bare column names). Every expression rule exists once per
  scope (and per aggregate level); ``query`` is the union of the scopes' queries, so every subquery
  chooses its own scope.
* The outermost query correlates with nothing, so its scopes are exact: one single-table scope per table
  and way of naming it (``FROM customers`` with ``customers.x``, or ``FROM customers AS c`` with ``c.x``;
  unqualified columns in both); one joined scope per set of two or more tables and way of naming them
  (``k{bits}``: each ``t AS a``; ``b{bits}``: each by its bare name) in which only those names qualify
  columns and the FROM declares each table exactly once, in any order (one rule per set declared so
  far); and one self-join scope per table (``s{i}``: ``t AS a JOIN t AS a2 ON ...``, both aliases). An
  alias no FROM declares, or one declared twice, cannot be written there. The canonical form's
  narrowings at the top level: a join names all its tables one way, a self-join joins nothing else, and
  the second alias appears only in a self-join (all are free in subqueries). A top-level FROM that
  starts with a subquery, or whose first join is one, keeps the permissive joined scope (``d``): it is
  chosen by its start, so a query cannot wander into it by adding a join at the end. The price is the
  scopes parsed in parallel until ``FROM`` (35 at the top level; the grammar engine's work per token on
  random logits is about what it was with the 9 permissive ones, 41 ms against 39, because the
  endgame's widening search now rests after a failure). The scopes number 2 x (2^n - n - 1) + n for n
  tables, so they are built for at most ``EXACT_JOIN_MAX_TABLES`` (4); a larger schema keeps every
  top-level join permissive. What a CFG cannot see is left to the
  validators: whether a qualified reference's table is in scope in nested queries and in ``d``, an alias
  declared twice in a subquery's FROM, a subquery of several columns used as a value, a ``LEFT
  JOIN``'s ``ON`` naming a table declared after it, whether an output alias used in ORDER BY was
  declared, types. (Trained models write the first three and the ORDER BY alias: training log, run 10.)
* Output aliases after ``AS`` (and bare in ORDER BY) are ``[a-z][a-z0-9_]{0,29}`` minus SQLite's keywords
  and minus the schema's table names, column names and aliases (so a bare name in ORDER BY is never
  a column in disguise); the terminal is an explicit regex of that difference (no look-around).
* Names that are not plain identifiers, or that are keywords, are double-quoted.

**Strict** (``specialise(schema, strict=True)``, ``sg.Sql(db, strict=True)``, the generator's fallback when
repair runs out): only the outermost query's exact scopes (one table; a join of up to
``EXACT_JOIN_MAX_TABLES`` tables, each declared once, a ``LEFT JOIN``'s ``ON`` naming only the tables declared
up to it; a self-join), and subqueries of one table and one
result column that name only their own table (``u{i}``: no correlation, so no scope a CFG cannot see); no
subquery in FROM; ORDER BY and GROUP BY terms are a column, a function call or (ORDER BY of a grouped query)
an aggregate — never an output alias or a bare integer, which SQLite reads as a result column's index and
range-checks. Every sentence of it runs (``tests/test_sql_strict.py`` runs random derivations, and many
ways of joining three tables).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Iterable

from .names import (ALIAS_MAX_LEN, KEYWORDS, PLAIN_IDENT, QUOTED_IDENT, alias_regex, derived_aliases,
                    quote_ident, table_aliases)
from .schema import DbSchema

__all__ = ["KEYWORDS", "generic_grammar", "specialise", "table_aliases", "derived_aliases", "quote_ident",
           "alias_regex", "ALIAS_MAX_LEN", "EXACT_JOIN_MAX_TABLES"]

#: the most tables for which the outermost query's joins are exact: the scopes number 2 x (2^n - n - 1) + n
#: and the FROM rules about 2 x 3^n, all parsed in parallel until FROM (35 scopes for the shop's 4 tables)
EXACT_JOIN_MAX_TABLES = 4

# terminals shared by both grammars (regexes in llguidance's and Python's common syntax), bounded: an
# unbounded one is a trap a diffusion model can fill the canvas with (random logits do: the 4k test
# vocabulary has hundreds of digit tokens)
_TERMINALS = {
    "NUMBER": r"/(?:0|[1-9][0-9]{0,11})(?:\.[0-9]{1,6})?/",
    "INT": r"/0|[1-9][0-9]{0,8}/",
    "STRING": r"/'(?:[^'\x00-\x1f]|''){0,80}'/",
}


def _lit(s: str) -> str:
    """A Lark string literal for ``s``."""
    return json.dumps(s, ensure_ascii=False)


def _alts(items: Iterable[str]) -> str:
    return " | ".join(dict.fromkeys(items))


# ----------------------------------------------------------------------------------------------------
# rule templates
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """One scope: rule suffix, the body of its column reference rule and of its FROM clause, and whether
    a bare output alias may stand as an ORDER BY term. ``named_terms``: ORDER BY and GROUP BY terms are a
    column, an aggregate or a function call only (any expression may be a bare integer, which SQLite reads
    as a result column's index and range-checks); ``one_item``: the query has exactly one result column
    (a subquery used as a value). Both are the strict grammar's."""

    name: str
    col: str
    from_: str
    order_alias: bool
    star: str = "qstar"  # the rule for ``X.*`` items
    named_terms: bool = False
    one_item: bool = False


# operator and function-name classes are terminals (one lexeme each), not rule alternatives: Lark's Earley
# parser predicts one item per alternative, so alternatives of literals would multiply its work. No
# alternative is a proper prefix of another that the next lexeme could continue: llguidance's lexer looks
# one byte ahead, so a terminal "SELECT " | "SELECT DISTINCT " would reject "SELECT Dname".
_CLASS_TERMINALS = {
    "CMP_OP": '" = " | " != " | " <> "',
    "REL_OP": '" < " | " <= " | " > " | " >= "',
    "NUM_OP": '" + " | " - " | " * " | " / " | " % " | " || "',
    "IS_NULL": '" IS NULL" | " IS NOT NULL"',
    "IN_OP": '" IN (" | " NOT IN ("',
    "LIKE_OP": '" LIKE " | " NOT LIKE "',
    "BETWEEN_OP": '" BETWEEN " | " NOT BETWEEN "',
    "JOIN_KW": '" JOIN " | " INNER JOIN " | " LEFT JOIN "',
    "ORDER_DIR": '" ASC" | " DESC"',
    "FN_1": '"ABS(" | "LOWER(" | "UPPER(" | "LENGTH(" | "TRIM("',
    "FN_2": '"IFNULL(" | "NULLIF(" | "INSTR("',
    "FN_3": '"REPLACE(" | "IIF("',
    "FN_MANY": '"COALESCE(" | "strftime("',
    "FN_DATE": '"date(" | "datetime(" | "julianday("',
    "AGG_FN": '"COUNT(" | "SUM(" | "AVG(" | "MIN(" | "MAX(" | "TOTAL("',
    "CAST_TYPE": '"INTEGER" | "REAL" | "TEXT" | "NUMERIC"',
}


def _expr_rules(s: str, agg: bool, col: str) -> list[tuple[str, str]]:
    """The expression rules of scope ``s`` at one aggregate level (``_a``: aggregates allowed; ``_n``:
    none, and the level of aggregate arguments), loosest first; ``col``: the alternatives of a column
    reference, written into the primaries. A chain of binary operators of any precedence is one rule
    (``OR`` and ``AND``; ``+ - * / % ||``), and a predicate's first operand and a primary's column are
    written in place rather than named: the grammar decides what is valid, not how it groups, and each
    rule is an Earley item per scope that every token before ``FROM`` carries (module docstring)."""
    x = f"{s}_{'a' if agg else 'n'}"
    e = f"expr_{x}"
    return [
        (e, f'not_{x} ((" OR " | " AND ") not_{x})*'),
        (f"not_{x}", f'"NOT " not_{x} | pred_{x}'),
        (f"pred_{x}", f"sum_{x} (REL_OP sum_{x})? tail_{x}?"),
        (f"tail_{x}", " | ".join([
            f"CMP_OP rel_{x}", "IS_NULL", f'IN_OP (query | list_{x}) ")"', f"LIKE_OP rel_{x}",
            f'BETWEEN_OP rel_{x} " AND " rel_{x}',
        ])),
        (f"list_{x}", f'{e} (", " {e})*'),
        (f"rel_{x}", f"sum_{x} (REL_OP sum_{x})?"),
        (f"sum_{x}", f'"-"? prim_{x} (NUM_OP "-"? prim_{x})*'),
        (f"prim_{x}", " | ".join([
            "NUMBER", "STRING", '"NULL"', col, f"func_{x}", f"case_{x}",
            f'"(" {e} ")"', '"(" query ")"', '"EXISTS (" query ")"',
        ] + ([f"agg_{s}"] if agg else []))),
        (f"func_{x}", " | ".join([
            f'FN_1 {e} ")"',
            f'"ROUND(" {e} (", " {e})? ")"',
            f'FN_2 {e} ", " {e} ")"',
            f'"SUBSTR(" {e} ", " {e} (", " {e})? ")"',
            f'FN_3 {e} ", " {e} ", " {e} ")"',
            f'FN_MANY {e} (", " {e})+ ")"',
            f'FN_DATE {e} (", " {e})* ")"',
            f'"CAST(" {e} " AS " CAST_TYPE ")"',
        ])),
        # "CASE " and "WHEN " are separate lexemes and the operand ends with a bare " ": a lexeme " WHEN "
        # after an optional " " would make llguidance's one-byte-lookahead lexer reject an operand "Wx"
        (f"case_{x}", f'"CASE " ({e} " ")? "WHEN " {e} " THEN " {e} when_{x}* (" ELSE " {e})? " END"'),
        (f"when_{x}", f'" WHEN " {e} " THEN " {e}'),
    ]


def _agg_rule(s: str) -> tuple[str, str]:
    n = f"expr_{s}_n"
    return (f"agg_{s}", " | ".join([
        '"COUNT(*)"',
        f'AGG_FN "DISTINCT "? {n} ")"',
        f'"GROUP_CONCAT(" ("DISTINCT " {n} | {n} (", " {n})?) ")"',
    ]))


def _scope_rules(sc: _Scope) -> list[tuple[str, str]]:
    """The query and expression rules of one scope. Each optional clause is a rule of its own, so that
    Lark does not expand the query into one alternative per combination of clauses."""
    s = sc.name
    a, n = f"expr_{s}_a", f"expr_{s}_n"
    items = f"item_{s}" if sc.one_item else f'item_{s} (", " item_{s})*'
    item = f'{a} (" AS " OUT_ALIAS)?' if sc.one_item else f'"*" | {sc.star} | {a} (" AS " OUT_ALIAS)?'
    tail = f"group_{s}" if sc.named_terms else f"group_{s} order_{s}"
    rules = [
        (f"query_{s}", f'"SELECT " distinct items_{s} " FROM " from_{s} where_{s} {tail} limit'),
        (f"items_{s}", items),
        (f"item_{s}", item),
        (f"where_{s}", f'(" WHERE " {n})?'),
    ]
    if sc.named_terms:  # an aggregate orders only a grouped query (SQLite: "misuse of aggregate" otherwise)
        rules += [
            (f"group_{s}", f"grouped_{s} | order_n_{s}"),
            (f"grouped_{s}", f'" GROUP BY " gterm_{s} (", " gterm_{s})* having_{s} order_a_{s}'),
            (f"gterm_{s}", f"col_{s} | func_{s}_n"),
            (f"having_{s}", f'(" HAVING " {a})?'),
            (f"order_a_{s}", f'(" ORDER BY " oterm_a_{s} (", " oterm_a_{s})*)?'),
            (f"oterm_a_{s}", f"(col_{s} | agg_{s} | func_{s}_a) ORDER_DIR?"),
            (f"order_n_{s}", f'(" ORDER BY " oterm_n_{s} (", " oterm_n_{s})*)?'),
            (f"oterm_n_{s}", f"(col_{s} | func_{s}_n) ORDER_DIR?"),
            (f"col_{s}", sc.col),
        ]
    else:
        oterm = f"({a} | OUT_ALIAS)" if sc.order_alias else a
        rules += [
            (f"group_{s}", f'(" GROUP BY " {n} (", " {n})* (" HAVING " {a})?)?'),
            (f"order_{s}", f'(" ORDER BY " oterm_{s} (", " oterm_{s})*)?'),
            (f"oterm_{s}", f"{oterm} ORDER_DIR?"),
        ]
    rules += [
        (f"from_{s}", sc.from_),
        _agg_rule(s),
    ]
    rules += _expr_rules(s, True, sc.col)
    rules += _expr_rules(s, False, sc.col)
    return rules


#: the clauses every scope shares (the grammars' last rules before the per-table ones)
_CLAUSE_RULES = [("limit", '(" LIMIT " INT (" OFFSET " INT)?)?'), ("distinct", '"DISTINCT "?')]


def _render(header: str, rules: list[tuple[str, str]], terminals: dict[str, str]) -> str:
    lines = [f"// {line}".rstrip() for line in header.strip("\n").split("\n")]
    lines.append("")
    for name, body in rules:
        lines.append(f"{name}: {body}")
    lines.append("")
    for name, body in terminals.items():
        lines.append(f"{name}: {body}")
    return "\n".join(lines) + "\n"


_GENERIC_HEADER = """\
SQLite SELECT, canonical form: one read-only statement, keywords UPPERCASE, exactly one space where a
separator is needed. Generated by generic_grammar() in structgen/sql/grammar.py: edit there and regenerate
with `python -c "import structgen.sql.grammar as g; print(g.generic_grammar(), end='')" > THIS_FILE`.
The module docstring says what the language holds; sg.Sql(database) specialises the same rules."""


def generic_grammar() -> str:
    """The Lark text of the generic grammar (``grammars/sqlite_select.lark``): identifiers are ``IDENT``."""
    sc = _Scope("g", 'IDENT "." IDENT | IDENT', 'source (join)*', order_alias=False)
    rules: list[tuple[str, str]] = [("start", "query"), ("query", "query_g")]
    rules += _scope_rules(sc)
    rules += [
        ("source", '(IDENT | "(" query ")") " AS " IDENT | IDENT'),
        ("join", 'JOIN_KW source " ON " expr_g_n'),
        ("qstar", 'IDENT ".*"'),
        *_CLAUSE_RULES,
    ]
    terminals = {"IDENT": f"/{PLAIN_IDENT}|{QUOTED_IDENT}/", "OUT_ALIAS": "IDENT", **_TERMINALS, **_CLASS_TERMINALS}
    return _render(_GENERIC_HEADER, rules, terminals)


def _top_joined_scopes(schema: DbSchema, aliases: dict, des_rules: list[tuple[str, str]],
                       on: Callable | None = None, strict: bool = False) -> list[_Scope]:
    """The outermost query's exact joined scopes, one per set ``A`` of two or more tables and way of naming
    them: every table declared ``t AS a`` (scope ``k{bits}``, columns qualified by those aliases) or every
    table by its bare name (scope ``b{bits}``, columns qualified by those names). Only the names of ``A``
    qualify columns, and the FROM declares each table of ``A`` exactly once, in any order: one rule per
    set of tables declared so far (``f{scope}_{done}``), so a name can be neither missing nor declared
    twice. ``on(qualifiers, i, done)``: the ON condition that joins table ``i`` to the tables in bitmask
    ``done`` (None: it cannot join them; ``fk_joins.foreign_key_on``), by default any expression of the
    scope; a set of tables that cannot all be joined that way gets no scope. ``strict``: the keywords are
    the strict grammar's (``join_kw``; ``INNER_JOIN`` and ``LEFT_JOIN``, never ``JOIN_KW``), and a ``LEFT JOIN``'s
    default ON names only the tables declared up to it (the expression of the scope of those tables), since
    SQLite refuses one that names a later table. Appends the FROM rules to ``des_rules``; returns the
    scopes."""
    tables = schema.tables
    styles = {"k": [(f'{_lit(quote_ident(t.name))} " AS " {_lit(aliases[t.name][0])}', aliases[t.name][0])
                    for t in tables],
              "b": [(_lit(quote_ident(t.name)), quote_ident(t.name)) for t in tables]}
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
                        _join_alternatives(style, bits, done, i, named[i][0], c, strict and on is None)
                        if strict else f'JOIN_KW {named[i][0]} " ON " {c}{_rest(s, bits, done | 1 << i)}'
                        for i, c in ways)))
            starts = [i for i in members if joins.get(1 << i)]
            if not starts:
                continue
            col = " | ".join(f'{_lit(named[i][1])} "." cols_{i}' for i in members)
            star = "(" + " | ".join(_lit(named[i][1]) for i in members) + ') ".*"'
            from_ = " | ".join(f"{named[i][0]} f{s}_{1 << i}" for i in starts)
            scopes.append(_Scope(s, col, from_, order_alias=True, star=star))
    return scopes


def _rest(s: str, bits: int, declared: int) -> str:
    """What follows a join that leaves the tables in ``declared`` declared: nothing once they are all of
    scope ``s``'s tables ``bits``, else the FROM rule of that set."""
    return "" if declared == bits else f" f{s}_{declared}"


def _join_alternatives(style: str, bits: int, done: int, i: int, table: str, on: str,
                       left_sees_declared: bool) -> str:
    """The strict grammar's joins of table ``i`` (declared as ``table``) to the tables in ``done``, in scope
    ``{style}{bits}``, with ON condition ``on``; ``left_sees_declared``: a ``LEFT JOIN`` that is not the
    last join has the ON of the scope of the tables declared so far instead (its own expression rules)."""
    s, declared = f"{style}{bits}", done | 1 << i
    rest = _rest(s, bits, declared)
    if not left_sees_declared or declared == bits:
        return f'join_kw {table} " ON " {on}{rest}'
    return (f'INNER_JOIN {table} " ON " {on}{rest} | '
            f'LEFT_JOIN {table} " ON " expr_{style}{declared}_n{rest}')


def _single_table_scopes(i: int, tname: str, alias: str) -> list[_Scope]:
    """The outermost query's two single-table scopes of table ``i`` (``rI_0``: ``FROM t``, ``rI_1``: ``FROM
    t AS a``). It correlates with nothing, so a qualified reference names the table the way FROM declares
    it (``customers.x`` with no alias, ``c.x`` with ``AS c``); unqualified columns in both."""
    return [_Scope(f"r{i}_{k}", f'cols_{i} | {_lit(d)} "." cols_{i}', from_, order_alias=True,
                   star=f'{_lit(d)} ".*"')
            for k, (d, from_) in enumerate(((tname, _lit(tname)), (alias, f'{_lit(tname)} " AS " {_lit(alias)}')))]


def _out_alias_terminal(schema: DbSchema, aliases: dict, derived: Iterable[str] = ()) -> str:
    """``OUT_ALIAS``: the bounded lower-case names minus SQLite's keywords and the schema's table names,
    column names, table aliases and ``derived`` (subquery) aliases."""
    excluded = set(KEYWORDS) | set(schema.table_names) | {c for t in schema.tables for c in t.column_names}
    excluded |= {a for pair in aliases.values() for a in pair} | set(derived)
    return f"/{alias_regex(excluded)}/"


def _self_join_scopes(schema: DbSchema, aliases: dict, join_kw: str = "JOIN_KW") -> list[_Scope]:
    """One self-join scope per table (``s{i}``: ``t AS a JOIN t AS a2 ON ...``, columns qualified by both
    aliases, nothing else joined); ``join_kw``: the symbol of the join keywords."""
    scopes = []
    for i, t in enumerate(schema.tables):
        a1, a2 = (_lit(a) for a in aliases[t.name])
        tname = _lit(quote_ident(t.name))
        scopes.append(_Scope(f"s{i}", f'({a1} | {a2}) "." cols_{i}',
                             f'{tname} " AS " {a1} {join_kw} {tname} " AS " {a2} " ON " expr_s{i}_n',
                             order_alias=True, star=f'({a1} | {a2}) ".*"'))
    return scopes


def specialise(schema: DbSchema, *, strict: bool = False, string_terminal: str | None = None,
               fk_joins: bool = False) -> str:
    """The Lark text of the SELECT grammar specialised to ``schema`` (see the module docstring);
    ``strict=True``: the strict grammar, whose every sentence runs (the module docstring's last part);
    ``string_terminal``: the body of the ``STRING`` terminal instead of any quoted string; ``fk_joins``: the
    outermost query's joins only along the schema's foreign keys (both grounded SQL,
    ``structgen.sql.grounded``, ``structgen.sql.fk_joins``)."""
    on = None
    if fk_joins:
        from .fk_joins import foreign_key_on

        on = foreign_key_on(schema)
    if strict:
        from .strict_grammar import strict_grammar

        return strict_grammar(schema, string_terminal=string_terminal, on=on)
    aliases = table_aliases(schema)
    derived = derived_aliases(schema, aliases)
    rules: list[tuple[str, str]] = [("start", "top")]
    scopes: list[_Scope] = []
    tops: list[_Scope] = []
    tref_alts, des_rules, qcol_alts, star_alts = [], [], [], []
    all_cols: list[str] = []
    for i, t in enumerate(schema.tables):
        tname = quote_ident(t.name)
        cols = [quote_ident(c) for c in t.column_names]
        all_cols += cols
        a1, a2 = aliases[t.name]
        des_rules += [
            (f"des_{i}", _alts([_lit(tname), _lit(a1), _lit(a2)])),
            (f"cols_{i}", _alts(_lit(c) for c in cols)),
        ]
        qcol_alts.append(f'des_{i} "." cols_{i}')
        star_alts.append(f"des_{i}")
        tref = f'{_lit(tname)} (" AS " ({_lit(a1)} | {_lit(a2)}))?'
        tref_alts.append(tref)
        scopes.append(_Scope(f"t{i}", f"cols_{i} | qcol", tref, order_alias=True))
        tops += _single_table_scopes(i, tname, a1)
    exact_joins = len(schema.tables) <= EXACT_JOIN_MAX_TABLES
    if exact_joins:
        tops += _top_joined_scopes(schema, aliases, des_rules, on) + _self_join_scopes(schema, aliases)
    des_rules += [
        ("des_sub", _alts(_lit(d) for d in derived)),
        ("cols_sub", "OUT_ALIAS | " + _alts(_lit(c) for c in all_cols)),
    ]
    qcol_alts.append('des_sub "." cols_sub')
    star_alts.append("des_sub")
    scopes.append(_Scope("j", "qcol", "tref (join)+ | derived (join)*", order_alias=True))
    if exact_joins:
        # the outermost query whose FROM starts with a subquery (or has one as its first join) keeps the
        # permissive joined scope; a FROM that starts otherwise is one of the exact scopes, so a query
        # cannot wander into this one by adding a join at the end
        tops.append(_Scope("d", "qcol", "derived (join)* | tref jderived (join)*", order_alias=True))
        rules.append(("jderived", 'JOIN_KW derived " ON " expr_j_n'))
        rules.append(("top", " | ".join(f"query_{sc.name}" for sc in tops)))
    else:  # too many tables for one scope per set of them: every top-level join is permissive
        rules.append(("top", " | ".join([f"query_{sc.name}" for sc in tops] + ["query_j"])))
    rules.append(("query", " | ".join(f"query_{sc.name}" for sc in scopes)))
    for sc in tops + scopes:
        rules += _scope_rules(sc)
    rules += [
        ("tref", " | ".join(tref_alts)),
        ("derived", '"(" query ") AS " des_sub'),
        ("join", 'JOIN_KW (tref | derived) " ON " expr_j_n'),
        ("qcol", " | ".join(qcol_alts)),
        ("qstar", f'({" | ".join(star_alts)}) ".*"'),
        *_CLAUSE_RULES,
    ]
    rules += des_rules
    terminals = {"OUT_ALIAS": _out_alias_terminal(schema, aliases, derived), **_TERMINALS, **_CLASS_TERMINALS}
    if string_terminal is not None:
        terminals["STRING"] = string_terminal
    header = (f"SQLite SELECT, canonical form, specialised to one schema (digest {schema.digest}).\n"
              "Generated by structgen.sql.grammar.specialise; scopes: "
              + ", ".join(f"t{i}={t.name}" for i, t in enumerate(schema.tables)) + ", j=joined; "
              "the outermost query's scopes: rI_0 (FROM the table), rI_1 (FROM it AS its alias), "
              + ("kBITS (a join of the tables in BITS, each AS its alias), bBITS (the same by bare names), sI (a "
                 "self-join) and d (a subquery in FROM)." if exact_joins else "j (every join)."))
    return _render(header, rules, terminals)
