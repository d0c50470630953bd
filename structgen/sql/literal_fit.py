"""Whether a string literal fits the column it is compared with: the grounded spec's semantic check.

Grounding (``structgen.sql.grounded``) lets a literal be any value the question or the database states, but
not *where* it goes, and the small model puts stated text in the wrong place: ``c.id = '4 orders'``,
``o.id = 'Japan'``, ``c.name = 'books'``, ``p.category = 'toy'`` (the column holds ``'toys'``). Each of these
runs and returns no rows. ``LiteralFitValidator`` reports a comparison ``column = 'text'`` (also ``!=``,
``<>``, ``[NOT] IN ('a', ...)``) when the literal cannot match the column:

* a **numeric column** (declared INTEGER, REAL, NUMERIC...) compared with text that is no number
  (``'4 orders'``; ``'5'`` fits, as SQLite's affinity reads it as 5);
* a **low-cardinality text column** (at most ``MAX_COLUMN_VALUES`` distinct values) compared with a value it
  does not hold and no ``CHECK (column IN (...))`` allows (``'toy'`` where it holds ``'toys'``).

The issue's span is the whole comparison, so repair redoes the column with the literal. Columns are found by
their qualifier (a table name or its canonical alias) or, unqualified, among every table that has that
name (the comparison fits when it fits one of them); a qualifier of a subquery (``sub``) or a column no
table has is left alone. Reads the canonical form the grammar writes.
"""

from __future__ import annotations

import re

from .grounded import MAX_COLUMN_VALUES, _text_columns, check_values, sql_literals
from .names import table_aliases
from .schema import DbSchema

__all__ = ["LiteralFitValidator"]

_STR = r"'(?:[^']|'')*'"
_COLUMN = r"(?<![.\w])(?:([A-Za-z_]\w*)\.)?([A-Za-z_]\w*)"
_COMPARISON = re.compile(rf"{_COLUMN} (?:=|!=|<>) ({_STR})")
_IN_LIST = re.compile(rf"{_COLUMN} (?:NOT )?IN \(({_STR}(?:, {_STR})*)\)")
_NUMERIC = re.compile(r"INT|REAL|FLOA|DOUB|NUM|DEC", re.IGNORECASE)
_NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")


class LiteralFitValidator:
    """Reports each comparison of a column with a string literal that cannot match it (module docstring)."""

    name = "sql-literal-fit"

    def __init__(self, schema: DbSchema):
        self.by_qualifier: dict[str, str] = {}
        self.types: dict[tuple[str, str], str] = {}
        aliases = table_aliases(schema)
        for t in schema.tables:
            self.by_qualifier[t.name.lower()] = t.name
            for alias in aliases[t.name]:
                self.by_qualifier[alias.lower()] = t.name
            for c in t.columns:
                self.types[(t.name, c.name.lower())] = c.type
        self.values = {(table, col.lower()): set(vs) for (table, col), vs in _text_columns(schema).items()
                       if len(vs) <= MAX_COLUMN_VALUES}
        for (table, col), vs in check_values(schema).items():  # what a CHECK allows, held or not yet
            self.values.setdefault((table, col.lower()), set()).update(vs)

    def __repr__(self) -> str:
        return f"LiteralFitValidator({len(self.types)} columns)"

    def _fits(self, table: str, column: str, literal: str) -> bool:
        declared = self.types[(table, column)]
        if declared and _NUMERIC.search(declared):
            return _NUMBER.fullmatch(literal) is not None
        held = self.values.get((table, column))
        return held is None or literal in held

    def _tables(self, qualifier: str | None, column: str) -> list[str]:
        if qualifier is not None:
            table = self.by_qualifier.get(qualifier.lower())
            return [table] if table is not None and (table, column) in self.types else []
        return [t for (t, c) in self.types if c == column]

    def __call__(self, text: str) -> list:
        from structgen.validators.base import Issue

        issues = []
        for pattern in (_COMPARISON, _IN_LIST):
            for m in pattern.finditer(text):
                qualifier, column = m.group(1), m.group(2).lower()
                tables = self._tables(qualifier, column)
                misfits = [m.group(3)[a:b] for (a, b), value in sql_literals(m.group(3))
                           if tables and not any(self._fits(t, column, value) for t in tables)]
                if not misfits:
                    continue
                name = f"{qualifier}.{m.group(2)}" if qualifier else m.group(2)
                issues.append(Issue(f"{', '.join(misfits)} cannot match {name} ({self._kind(tables[0], column)}); "
                                    "compare it with another column, or write another value",
                                    (m.start(), m.end()), "", self.name))
        return issues

    def _kind(self, table: str, column: str) -> str:
        declared = self.types[(table, column)]
        if declared and _NUMERIC.search(declared):
            return f"declared {declared}"
        return f"it holds {', '.join(repr(v) for v in sorted(self.values[(table, column)]))}"
