"""SQL names: SQLite's keywords, the canonical identifier (``quote_ident``), the two canonical aliases
of each table (``table_aliases``), the aliases of subqueries in FROM (``derived_aliases``) and the regex of
bounded output aliases that no keyword or schema name can match (``alias_regex``). ``grammar`` builds the
SELECT grammars from them; the rules for what they produce are in its module docstring.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..errors import SpecError
from .schema import DbSchema

__all__ = ["KEYWORDS", "PLAIN_IDENT", "QUOTED_IDENT", "ALIAS_MAX_LEN", "quote_ident", "table_aliases",
           "derived_aliases", "alias_regex"]

#: SQLite's keywords (https://sqlite.org/lang_keywords.html, 3.40) and the names SQLite reads specially
#: (TRUE, FALSE, ROWID): never an unquoted name nor an output alias.
KEYWORDS = frozenset("""
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN BETWEEN BY
CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE
CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC DETACH DISTINCT DO DROP
EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST FOLLOWING FOR FOREIGN FROM
FULL GENERATED GLOB GROUP GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD
INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL
NULL NULLS OF OFFSET ON OR ORDER OTHERS OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE
RANGE RECURSIVE REFERENCES REGEXP REINDEX RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW
ROWS SAVEPOINT SELECT SET TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE
UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT TRUE FALSE ROWID
""".split())

#: An unquoted identifier of the canonical form: contains a lower-case letter (so never an upper-case keyword).
PLAIN_IDENT = r"(?:[A-Z_][A-Z0-9_]{0,30})?[a-z][A-Za-z0-9_]{0,62}"
QUOTED_IDENT = r'"(?:[^"\x00-\x1f]|""){1,64}"'
ALIAS_MAX_LEN = 30
_ALIAS_FIRST = "abcdefghijklmnopqrstuvwxyz"
_ALIAS_REST = _ALIAS_FIRST + "0123456789_"


def quote_ident(name: str) -> str:
    """``name`` as the canonical form writes it: bare when it is a plain identifier that is not a keyword,
    else double-quoted (inner ``"`` doubled)."""
    if re.fullmatch(PLAIN_IDENT, name) and name.upper() not in KEYWORDS:
        return name
    if re.search(r"[\x00-\x1f]", name):
        raise SpecError(f"the name {name!r} contains a control character, which the SQL grammar cannot write; "
                        "rename the table or column")
    return '"' + name.replace('"', '""') + '"'


# ----------------------------------------------------------------------------------------------------
# aliases
# ----------------------------------------------------------------------------------------------------


def _name_parts(name: str) -> list[str]:
    return [p.lower() for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", name)]


def table_aliases(schema: DbSchema) -> dict[str, tuple[str, str]]:
    """``{table: (alias, second alias)}``: initials of the name's words (``order_items`` -> ``oi``), made
    longer where two tables would share them; the second alias (for self-joins) adds ``2``. Aliases are
    lower-case plain identifiers, unique, never a keyword nor the name of a table."""
    taken = {t.lower() for t in schema.table_names}
    out: dict[str, tuple[str, str]] = {}
    for i, table in enumerate(schema.table_names):
        parts = _name_parts(table) or ["t"]
        if parts[0][0].isdigit():
            parts.insert(0, "t")
        rest = "".join(p[0] for p in parts[1:])
        candidates = [parts[0][:k] + rest for k in range(1, len(parts[0]) + 1)]
        candidates += [f"{candidates[0]}{n}" for n in range(3, 100)] + [f"t{i}_{n}" for n in range(100)]
        for cand in candidates:
            second = cand + "2"
            if (cand.upper() not in KEYWORDS and cand not in taken and second not in taken
                    and re.fullmatch(r"[a-z][a-z0-9_]*", cand)):
                break
        else:  # pragma: no cover - 200 candidates, fewer tables than that share a stem
            raise SpecError(f"cannot choose an alias for table {table!r}; rename it")
        taken |= {cand, second}
        out[table] = (cand, second)
    return out


def derived_aliases(schema: DbSchema, aliases: dict[str, tuple[str, str]] | None = None) -> tuple[str, ...]:
    """The aliases a subquery in FROM may take: ``sub``, ``sub2``, ``sub3`` (another stem if those clash)."""
    aliases = table_aliases(schema) if aliases is None else aliases
    taken = {t.lower() for t in schema.table_names} | {a for pair in aliases.values() for a in pair}
    for stem in ("sub", "dt", "sq", "derived", "subq"):
        names = (stem, stem + "2", stem + "3")
        if not taken & set(names):
            return names
    raise SpecError("cannot choose aliases for subqueries: the schema uses sub, dt, sq, derived and subq as names")


def alias_regex(excluded: Iterable[str], max_len: int = ALIAS_MAX_LEN) -> str:
    """A regex (no look-around) for ``[a-z][a-z0-9_]{0,max_len-1}`` minus the words in ``excluded``.

    The words form a trie; at every trie node the regex either leaves the trie (a character that starts no
    excluded word from here, then any tail within the length bound) or follows a child, and it may stop
    only at nodes that do not end an excluded word."""
    trie: dict = {}
    for w in {w.lower() for w in excluded}:
        if re.fullmatch(r"[a-z][a-z0-9_]*", w) and len(w) <= max_len:
            node = trie
            for ch in w:
                node = node.setdefault(ch, {})
            node[""] = {}

    def build(node: dict, depth: int) -> str | None:
        chars = _ALIAS_REST if depth else _ALIAS_FIRST
        alts = []
        if depth < max_len:
            children = sorted(k for k in node if k)
            free = [c for c in chars if c not in children]
            if free:
                left = max_len - depth - 1
                alts.append(_char_class(free) + (f"[a-z0-9_]{{0,{left}}}" if left else ""))
            for c in children:
                sub = build(node[c], depth + 1)
                if sub is not None:
                    alts.append(c + sub)
        may_stop = depth > 0 and "" not in node
        if not alts:
            return "" if may_stop else None
        body = "(?:" + "|".join(alts) + ")"
        return body + "?" if may_stop else body

    rx = build(trie, 0)
    if rx is None:  # pragma: no cover - the excluded words are finite, so some alias always remains
        raise SpecError("no output alias is left once keywords and schema names are excluded")
    return rx


def _char_class(chars: list[str]) -> str:
    """A compact character class for ``chars`` (runs of consecutive characters become ranges)."""
    codes = sorted(ord(c) for c in chars)
    parts, i = [], 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        a, b = chr(codes[i]), chr(codes[j])
        parts.append(a if i == j else (a + b if j == i + 1 else f"{a}-{b}"))
        i = j + 1
    return "[" + "".join(parts) + "]"
