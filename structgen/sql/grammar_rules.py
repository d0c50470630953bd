"""The rule templates every SQL grammar is built from (``structgen.sql.grammar`` assembles them; its module
docstring says what the language holds and why): the bounded terminals, the operator and function-name
classes, one scope's query and expression rules, and the rendering of rules as Lark text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

# terminals shared by both grammars (regexes in llguidance's and Python's common syntax), bounded: an
# unbounded one is a trap a diffusion model can fill the canvas with (random logits do: the 4k test
# vocabulary has hundreds of digit tokens)
TERMINALS = {
    "NUMBER": r"/(?:0|[1-9][0-9]{0,11})(?:\.[0-9]{1,6})?/",
    "INT": r"/0|[1-9][0-9]{0,8}/",
    "STRING": r"/'(?:[^'\x00-\x1f]|''){0,80}'/",
}


def lit(s: str) -> str:
    """A Lark string literal for ``s``."""
    return json.dumps(s, ensure_ascii=False)


def alts(items: Iterable[str]) -> str:
    """Lark alternatives of ``items``, each once, in order."""
    return " | ".join(dict.fromkeys(items))


@dataclass(frozen=True)
class Scope:
    """One scope: rule suffix, the alternatives of a column reference (written into its primaries; the
    strict grammar's ``col_{name}`` rule too) and the body of its FROM clause, and whether a bare output
    alias may stand as an ORDER BY term. ``named_terms``: ORDER BY and GROUP BY terms are a
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
CLASS_TERMINALS = {
    "CMP_OP": '" = " | " != " | " <> "',
    "REL_OP": '" < " | " <= " | " > " | " >= "',
    "NUM_OP": '" + " | " - " | " * " | " / " | " % " | " || "',
    "IS_NULL": '" IS NULL" | " IS NOT NULL"',
    "IN_OP": '" IN (" | " NOT IN ("',
    "LIKE_OP": '" LIKE " | " NOT LIKE "',
    "BETWEEN_OP": '" BETWEEN " | " NOT BETWEEN "',
    # two terminals, not one: a top-level LEFT JOIN's ON may see fewer tables than an inner join's
    "INNER_JOIN": '" JOIN " | " INNER JOIN "',
    "LEFT_JOIN": '" LEFT JOIN "',
    "ORDER_DIR": '" ASC" | " DESC"',
    "FN_1": '"ABS(" | "LOWER(" | "UPPER(" | "LENGTH(" | "TRIM("',
    "FN_2": '"IFNULL(" | "NULLIF(" | "INSTR("',
    "FN_3": '"REPLACE(" | "IIF("',
    "FN_MANY": '"COALESCE(" | "strftime("',
    "FN_DATE": '"date(" | "datetime(" | "julianday("',
    "AGG_FN": '"COUNT(" | "SUM(" | "AVG(" | "MIN(" | "MAX(" | "TOTAL("',
    "CAST_TYPE": '"INTEGER" | "REAL" | "TEXT" | "NUMERIC"',
}


def expr_rules(s: str, agg: bool, col: str) -> list[tuple[str, str]]:
    """The expression rules of scope ``s`` at one aggregate level (``_a``: aggregates allowed; ``_n``:
    none, and the level of aggregate arguments), loosest first; ``col``: the alternatives of a column
    reference, written into the primaries. A chain of binary operators of any precedence is one rule
    (``OR`` and ``AND``; ``+ - * / % ||``), and a predicate's first operand and a primary's column are
    written in place rather than named: the grammar decides what is valid, not how it groups, and each
    rule is an Earley item per scope that every token before ``FROM`` carries (module docstring)."""
    x = f"{s}_{'a' if agg else 'n'}"
    e = f"expr_{x}"
    rel = f"sum_{x} (REL_OP sum_{x})?"  # rel_x's body, also written in place as a predicate's first operand
    return [
        (e, f'not_{x} ((" OR " | " AND ") not_{x})*'),
        (f"not_{x}", f'"NOT " not_{x} | pred_{x}'),
        (f"pred_{x}", f"{rel} tail_{x}?"),
        (f"tail_{x}", " | ".join([
            f"CMP_OP rel_{x}", "IS_NULL", f'IN_OP (query | list_{x}) ")"', f"LIKE_OP rel_{x}",
            f'BETWEEN_OP rel_{x} " AND " rel_{x}',
        ])),
        (f"list_{x}", f'{e} (", " {e})*'),
        (f"rel_{x}", rel),
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


def agg_rule(s: str) -> tuple[str, str]:
    n = f"expr_{s}_n"
    return (f"agg_{s}", " | ".join([
        '"COUNT(*)"',
        f'AGG_FN "DISTINCT "? {n} ")"',
        f'"GROUP_CONCAT(" ("DISTINCT " {n} | {n} (", " {n})?) ")"',
    ]))


def scope_rules(sc: Scope) -> list[tuple[str, str]]:
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
        agg_rule(s),
    ]
    rules += expr_rules(s, True, sc.col)
    rules += expr_rules(s, False, sc.col)
    return rules


#: the rules every grammar shares: the clauses of every scope and the join keywords (the grammars' last
#: rules before the per-table ones)
CLAUSE_RULES = [("limit", '(" LIMIT " INT (" OFFSET " INT)?)?'), ("distinct", '"DISTINCT "?'),
                ("join_kw", "INNER_JOIN | LEFT_JOIN")]


def render(header: str, rules: list[tuple[str, str]], terminals: dict[str, str]) -> str:
    """The Lark text of ``rules`` and ``terminals`` (name, body) under ``header`` as comment lines."""
    lines = [f"// {line}".rstrip() for line in header.strip("\n").split("\n")]
    lines.append("")
    for name, body in rules:
        lines.append(f"{name}: {body}")
    lines.append("")
    for name, body in terminals.items():
        lines.append(f"{name}: {body}")
    return "\n".join(lines) + "\n"
