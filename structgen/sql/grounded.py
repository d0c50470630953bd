"""Grounded SQL: the string literals of a query are values the question states or the database holds.

A small model's SQL goes wrong first in its string literals: ``c.id = ' '``, ``c.name = 'un'``, a name
with the next clause stuck on (``'Ren Takahashi place BY n LIMIT 1 '``) or one that swallows the rest of
the canvas (``WHERE ' AS c ON o.customer_id = c.id WHERE c.name = '``). ``generate(question, sg.Sql(db),
ground=True)`` (``Sql.grounded``) replaces the grammar's ``STRING`` terminal by the literals
``stated_literals`` allows, so every string in the query is, by construction, one of:

* a **part of the question** made of whole words (at most ``MAX_PART_WORDS`` words, within one clause:
  no ``, ; : ? ! ( ) "`` inside): ``'Ren Takahashi'``, ``'Spain'``, ``'2025'``;
* a **LIKE pattern** of a part of at most two words: ``'J%'``, ``'%Iron%'``, ``'%son'``;
* a text in **double quotes** in the question, whole: ``'Board Game: Island Traders'``;
* a **value the database holds that the question names** (in any case, as whole words): ``'A Short History
  of Nearly Everything'`` (six words), ``'Spain'`` for "spain";
* a value of the question's **request notes** (``structgen.request_notes``): ``'2025-06-06'`` for "June
  6th, 2025";
* a **value the database holds** in a TEXT column of at most ``MAX_COLUMN_VALUES`` distinct values
  (``DbSchema``'s low-cardinality columns: a category, a status, a country), which a question names in
  other forms ("book" for ``'books'``, "Spanish customers"), or one a ``CHECK (column IN (...))`` allows;
* a **date format or modifier** of SQLite's date functions: ``'%Y'``, ``'%m'``, ``'%Y-%m'``, ``'now'``,
  ``'start of month'``, and ``'-N days'`` (months, years) for each whole number N the question states.

Numbers are left to the grammar (``LIMIT 1`` for "the latest" is stated by no word). The grounded spec's
constraint (hence its ``key``) and its strict fallback read the narrowed terminal; its syntax validator reads
the generic grammar, so ``StatedLiteralsValidator`` checks the literals of any text the spec validates (a
string it reports is a span the repair redoes). Where a literal goes is checked by ``literal_fit``, and the
joins by ``fk_joins``; ``Sql.grounded`` puts the three together.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Iterable

from ..errors import SpecError
from ..stated_numbers import stated_numbers
from .schema import DbSchema, check_in_list, connect_readonly

__all__ = ["stated_literals", "column_values", "check_values", "named_values", "sql_literals", "string_terminal",
           "StatedLiteralsValidator", "MAX_PART_WORDS", "MAX_COLUMN_VALUES"]

#: the most words of a question part a literal may be
MAX_PART_WORDS = 5
#: a TEXT column with at most this many distinct values lends them all as literals
MAX_COLUMN_VALUES = 20
#: the longest literal (the grammar's own bound on a string, in characters between the quotes)
MAX_LITERAL_CHARS = 80
#: the most database values read for grounding (per schema, once)
MAX_SCANNED_VALUES = 20_000

_WORD = re.compile(r"\w+")
_CLAUSE_BREAK = re.compile(r"[,;:?!()\"\n]")
DATE_FORMATS = ("%Y", "%m", "%d", "%Y-%m", "%Y-%m-%d", "%H", "%H:%M", "%w", "%j", "%W")
DATE_MODIFIERS = ("now", "start of month", "start of year", "start of day", "localtime", "utc")
_UNITS = ("days", "months", "years")


_LITERAL = re.compile(r"'((?:[^']|'')*)'")


def sql_literals(text: str) -> list[tuple[tuple[int, int], str]]:
    """Each string literal of ``text`` (SQL's quoting, ``''`` inside): its span and its value."""
    return [(m.span(), m.group(1).replace("''", "'")) for m in _LITERAL.finditer(text)]


def _parts(text: str) -> list[str]:
    """The parts of ``text`` made of 1..MAX_PART_WORDS whole words that cross no clause break."""
    words = list(_WORD.finditer(text))
    out = []
    for i, first in enumerate(words):
        for last in words[i:i + MAX_PART_WORDS]:
            part = text[first.start():last.end()]
            if _CLAUSE_BREAK.search(part):
                break
            out.append(part)
    return out


@functools.lru_cache(maxsize=16)
def _text_columns(schema: DbSchema) -> dict[tuple[str, str], tuple[str, ...]]:
    """``{(table, column): distinct text values}`` per TEXT column (at most ``MAX_SCANNED_VALUES`` in all; the
    rest of a larger column is not read), read once per schema through a read-only connection, in table and
    column order."""
    conn = connect_readonly(schema.path)
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    left = MAX_SCANNED_VALUES
    try:
        for t in schema.tables:
            for c in t.columns:
                if left <= 0 or (c.type and "CHAR" not in c.type.upper() and "TEXT" not in c.type.upper()):
                    continue
                name, table = c.name.replace('"', '""'), t.name.replace('"', '""')
                rows = conn.execute(f'SELECT DISTINCT "{name}" FROM "{table}" WHERE typeof("{name}") = \'text\' '
                                    f'LIMIT {left}').fetchall()
                left -= len(rows)
                out[(t.name, c.name)] = tuple(v for (v,) in rows if 0 < len(v) <= MAX_LITERAL_CHARS and "\n" not in v)
    finally:
        conn.close()
    return out


def check_values(schema: DbSchema) -> dict[tuple[str, str], tuple[str, ...]]:
    """``{(table, column): values}`` that a ``CHECK (column IN ('a', ...))`` of its table allows (held or not)."""
    out = {}
    for t in schema.tables:
        for c in t.columns:
            listed = check_in_list(t.create_sql, c.name)
            if listed is not None:
                out[(t.name, c.name)] = tuple(value for _, value in sql_literals(listed))
    return out


def column_values(schema: DbSchema) -> tuple[str, ...]:
    """The values of the database's low-cardinality TEXT columns (at most ``MAX_COLUMN_VALUES`` distinct
    values each) and those its ``CHECK (column IN (...))`` constraints allow, in table and column order."""
    held = [v for col in _text_columns(schema).values() if len(col) <= MAX_COLUMN_VALUES for v in col]
    return tuple(dict.fromkeys(held + [v for vs in check_values(schema).values() for v in vs]))


def named_values(question: str, schema: DbSchema) -> tuple[str, ...]:
    """The database's text values that ``question`` names: each found in it as whole words, in any case."""
    low = question.lower()
    return tuple(dict.fromkeys(
        v for col in _text_columns(schema).values() for v in col
        if v.lower() in low and re.search(rf"(?<!\w){re.escape(v)}(?!\w)", question, re.IGNORECASE)))


def stated_literals(question: str, schema: DbSchema | None = None) -> tuple[str, ...]:
    """The string values a grounded query may write for ``question`` (unquoted, in a stable order): see
    the module docstring. ``schema`` adds its database's low-cardinality values."""
    from ..grounding import noted

    parts = _parts(question)
    short = [p for p in parts if len(_WORD.findall(p)) <= 2]
    likes = [f"{p}%" for p in short] + [f"%{p}%" for p in short] + [f"%{p}" for p in short]
    counts = [int(n) for n in stated_numbers(question) if float(n).is_integer() and 0 < n < 10_000]
    modifiers = [f"{sign}{n} {unit}" for n in dict.fromkeys(counts) for unit in _UNITS for sign in "-+"]
    quoted = re.findall(r'"([^"\n]+)"', question)
    held = (*named_values(question, schema), *column_values(schema)) if schema is not None else ()
    values: Iterable[str] = (*parts, *quoted, *noted(question), *held, *likes, *DATE_FORMATS, *DATE_MODIFIERS,
                             *modifiers)
    return tuple(dict.fromkeys(v for v in values if 0 < len(v) <= MAX_LITERAL_CHARS and "\x00" not in v))


def string_terminal(literals: Iterable[str]) -> str:
    """The Lark body of a ``STRING`` terminal that is exactly these literals, each quoted as SQL writes it
    (``'O''Brien'``)."""
    quoted = ["'" + v.replace("'", "''") + "'" for v in dict.fromkeys(literals)]
    if not quoted:
        raise SpecError("a grounded STRING terminal needs at least one literal")
    return " | ".join(json.dumps(q, ensure_ascii=False) for q in quoted)


class StatedLiteralsValidator:
    """Every string literal of a query is one of ``literals`` (``stated_literals``'s): an issue per other one,
    its span the literal. Reads the canonical form (a ``'`` opens and closes every string; ``''`` inside)."""

    name = "sql-stated-literals"

    def __init__(self, literals: Iterable[str]):
        self.allowed = frozenset(literals)

    def __repr__(self) -> str:
        return f"StatedLiteralsValidator({len(self.allowed)} literals)"

    def __call__(self, text: str) -> list:
        from structgen.validators.base import Issue

        return [Issue(f"the string {text[a:b]} is not stated by the question, its notes or the database; "
                      "a grounded query writes only those values", (a, b), "", self.name)
                for (a, b), value in sql_literals(text) if value not in self.allowed]
