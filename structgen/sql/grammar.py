"""The SQLite SELECT grammar in canonical form: generic (``grammars/sqlite_select.lark``) and specialised to
one database (``specialise(schema)``, the grammar of ``sg.Sql``).

This module is the one source of both grammars and says here what they hold; it assembles them from the
rule templates of ``grammar_rules`` (terminals, one scope's query and expression rules) and the outermost
query's scopes of ``top_scopes``, and the names they use (keywords, quoting, table and output aliases) come
from ``names``. ``generic_grammar()`` is the text of ``grammars/sqlite_select.lark`` (regenerate the file
from it, as its header says; a test checks that it is current). Both compile on llguidance (the grammar
engine) and on Lark's Earley parser (the ``LarkValidator``): plain BNF, no templates, priorities, ``?``/``!``
markers, imports or look-around.

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
* The outermost query correlates with nothing, so its scopes are exact: one single-table scope per table and
  way of naming it (``FROM customers`` with ``customers.x``, or ``FROM customers AS c`` with ``c.x``;
  unqualified columns in both); one joined scope per set of two or more tables and way of naming them
  (``k{bits}``: each ``t AS a``; ``b{bits}``: each by its bare name) in which only those names qualify
  columns and the FROM declares each table exactly once, in any order (one rule per set declared so far);
  and one self-join scope per table (``s{i}``: ``t AS a JOIN t AS a2 ON ...``, both aliases). An alias no
  FROM declares, or one declared twice, cannot be written there, nor a ``LEFT JOIN`` whose ``ON`` names a
  table declared after it (SQLite refuses it; its ON is the expression of the scope of the tables declared
  so far, and the join keywords are two terminals, ``INNER_JOIN`` and ``LEFT_JOIN``). The canonical form's
  narrowings at the top level: a join names all its tables one way, a self-join joins nothing else, and the
  second alias appears only in a self-join (all are free in subqueries). A top-level FROM that starts with a
  subquery, or whose first join is one, keeps the permissive joined scope (``d``): it is chosen by its
  start, so a query cannot wander into it by adding a join at the end. The price is the scopes parsed in
  parallel until ``FROM`` (35 at the top level; the grammar engine's work per token on random logits is
  about what it was with the 9 permissive ones, 41 ms against 39, because the endgame's widening search now
  rests after a failure). The scopes number 2 x (2^n - n - 1) + n for n tables, so they are built for at
  most ``EXACT_JOIN_MAX_TABLES`` (4); a larger schema keeps every top-level join permissive. What a CFG
  cannot see is left to the validators: whether a qualified reference's table is in scope in nested queries
  and in ``d``, an alias declared twice in a subquery's FROM, a subquery of several columns used as a value,
  a ``LEFT JOIN``'s ``ON`` naming a table declared after it in a subquery or in ``d``, whether an output
  alias used in ORDER BY was declared, types. (Trained models write the first three and the ORDER BY alias:
  training log, run 10.)
* Output aliases after ``AS`` (and bare in ORDER BY) are ``[a-z][a-z0-9_]{0,29}`` minus SQLite's keywords
  and minus the schema's table names, column names and aliases (so a bare name in ORDER BY is never
  a column in disguise); the terminal is an explicit regex of that difference (no look-around).
* Names that are not plain identifiers, or that are keywords, are double-quoted.

**Strict** (``specialise(schema, strict=True)``, ``sg.Sql(db, strict=True)``, the generator's fallback when
repair runs out): only the outermost query's exact scopes (one table; a join of up to
``EXACT_JOIN_MAX_TABLES`` tables, each declared once; a self-join), and subqueries of one table and one
result column that name only their own table (``u{i}``: no correlation, so no scope a CFG cannot see); no
subquery in FROM; ORDER BY and GROUP BY terms are a column, a function call or (ORDER BY of a grouped query)
an aggregate — never an output alias or a bare integer, which SQLite reads as a result column's index and
range-checks. Every sentence of it runs (``tests/test_sql_strict.py`` runs random derivations, and many ways
of joining three tables), barring an arithmetic overflow that only the data decide (an integer ``SUM`` past
2^63; the validators run the query and catch it).
"""

from __future__ import annotations

from .grammar_rules import CLASS_TERMINALS, CLAUSE_RULES, TERMINALS, Scope, alts, lit, render, scope_rules
from .names import (ALIAS_MAX_LEN, KEYWORDS, PLAIN_IDENT, QUOTED_IDENT, alias_regex, derived_aliases,
                    quote_ident, table_aliases)
from .schema import DbSchema
from .top_scopes import joined_scopes, out_alias_terminal, self_join_scopes, single_table_scopes

__all__ = ["KEYWORDS", "generic_grammar", "specialise", "table_aliases", "derived_aliases", "quote_ident",
           "alias_regex", "ALIAS_MAX_LEN", "EXACT_JOIN_MAX_TABLES"]

#: the most tables for which the outermost query's joins are exact: the scopes number 2 x (2^n - n - 1) + n
#: and the FROM rules about 2 x 3^n, all parsed in parallel until FROM (35 scopes for the shop's 4 tables)
EXACT_JOIN_MAX_TABLES = 4

_GENERIC_HEADER = """\
SQLite SELECT, canonical form: one read-only statement, keywords UPPERCASE, exactly one space where a
separator is needed. Generated by generic_grammar() in structgen/sql/grammar.py: edit there and regenerate
with `python -c "import structgen.sql.grammar as g; print(g.generic_grammar(), end='')" > THIS_FILE`.
The module docstring says what the language holds; sg.Sql(database) specialises the same rules."""


def generic_grammar() -> str:
    """The Lark text of the generic grammar (``grammars/sqlite_select.lark``): identifiers are ``IDENT``."""
    sc = Scope("g", 'IDENT "." IDENT | IDENT', 'source (join)*', order_alias=False)
    rules: list[tuple[str, str]] = [("start", "query"), ("query", "query_g")]
    rules += scope_rules(sc)
    rules += [
        ("source", '(IDENT | "(" query ")") " AS " IDENT | IDENT'),
        ("join", 'join_kw source " ON " expr_g_n'),
        ("qstar", 'IDENT ".*"'),
        *CLAUSE_RULES,
    ]
    terminals = {"IDENT": f"/{PLAIN_IDENT}|{QUOTED_IDENT}/", "OUT_ALIAS": "IDENT", **TERMINALS, **CLASS_TERMINALS}
    return render(_GENERIC_HEADER, rules, terminals)


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
    scopes: list[Scope] = []
    tops: list[Scope] = []
    tref_alts, des_rules, qcol_alts, star_alts = [], [], [], []
    all_cols: list[str] = []
    for i, t in enumerate(schema.tables):
        tname = quote_ident(t.name)
        cols = [quote_ident(c) for c in t.column_names]
        all_cols += cols
        a1, a2 = aliases[t.name]
        des_rules += [
            (f"des_{i}", alts([lit(tname), lit(a1), lit(a2)])),
            (f"cols_{i}", alts(lit(c) for c in cols)),
        ]
        qcol_alts.append(f'des_{i} "." cols_{i}')
        star_alts.append(f"des_{i}")
        tref = f'{lit(tname)} (" AS " ({lit(a1)} | {lit(a2)}))?'
        tref_alts.append(tref)
        scopes.append(Scope(f"t{i}", f"cols_{i} | qcol", tref, order_alias=True))
        tops += single_table_scopes(i, tname, a1)
    exact_joins = len(schema.tables) <= EXACT_JOIN_MAX_TABLES
    if exact_joins:
        tops += joined_scopes(schema, aliases, des_rules, on) + self_join_scopes(schema, aliases)
    des_rules += [
        ("des_sub", alts(lit(d) for d in derived)),
        ("cols_sub", "OUT_ALIAS | " + alts(lit(c) for c in all_cols)),
    ]
    qcol_alts.append('des_sub "." cols_sub')
    star_alts.append("des_sub")
    scopes.append(Scope("j", "qcol", "tref (join)+ | derived (join)*", order_alias=True))
    if exact_joins:
        # the outermost query whose FROM starts with a subquery (or has one as its first join) keeps the
        # permissive joined scope; a FROM that starts otherwise is one of the exact scopes, so a query
        # cannot wander into this one by adding a join at the end
        tops.append(Scope("d", "qcol", "derived (join)* | tref jderived (join)*", order_alias=True))
        rules.append(("jderived", 'join_kw derived " ON " expr_j_n'))
        rules.append(("top", " | ".join(f"query_{sc.name}" for sc in tops)))
    else:  # too many tables for one scope per set of them: every top-level join is permissive
        rules.append(("top", " | ".join([f"query_{sc.name}" for sc in tops] + ["query_j"])))
    rules.append(("query", " | ".join(f"query_{sc.name}" for sc in scopes)))
    for sc in tops + scopes:
        rules += scope_rules(sc)
    rules += [
        ("tref", " | ".join(tref_alts)),
        ("derived", '"(" query ") AS " des_sub'),
        ("join", 'join_kw (tref | derived) " ON " expr_j_n'),
        ("qcol", " | ".join(qcol_alts)),
        ("qstar", f'({" | ".join(star_alts)}) ".*"'),
        *CLAUSE_RULES,
    ]
    rules += des_rules
    terminals = {"OUT_ALIAS": out_alias_terminal(schema, aliases, derived), **TERMINALS, **CLASS_TERMINALS}
    if string_terminal is not None:
        terminals["STRING"] = string_terminal
    header = (f"SQLite SELECT, canonical form, specialised to one schema (digest {schema.digest}).\n"
              "Generated by structgen.sql.grammar.specialise; scopes: "
              + ", ".join(f"t{i}={t.name}" for i, t in enumerate(schema.tables)) + ", j=joined; "
              "the outermost query's scopes: rI_0 (FROM the table), rI_1 (FROM it AS its alias), "
              + ("kBITS (a join of the tables in BITS, each AS its alias), bBITS (the same by bare names), sI (a "
                 "self-join) and d (a subquery in FROM)." if exact_joins else "j (every join)."))
    return render(header, rules, terminals)
