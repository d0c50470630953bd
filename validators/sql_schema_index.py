"""The schema index of the SQL columns validator: what resolving a query needs from a database schema,
built once per schema.

- :class:`SchemaIndex` holds the tables by lower-case name (views too, read from the file when it is
  there) and an in-memory SQLite copy of the schema whose ``EXPLAIN`` confirms an issue before
  :mod:`.sql_resolve` reports it (names resolve exactly as in the real file; no rows, no file access).
- :func:`index_for` returns the index of a schema, built on first use (the last 32 built are kept).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # structgen.sql imports the spec, which imports these validators: import lazily at run time
    from structgen.sql.schema import DbSchema

__all__ = ["IndexedTable", "SchemaIndex", "index_for"]

_WITHOUT_ROWID = re.compile(r"\)\s*(?:STRICT\s*,\s*)?WITHOUT\s+ROWID\b[^)]*$", re.I)


@dataclass(frozen=True)
class IndexedTable:
    """A table or view as resolution sees it: its name, its columns and whether it has a rowid."""

    name: str
    columns: tuple[str, ...]  # lower-case
    shown: tuple[str, ...]  # as declared
    rowid: bool


class SchemaIndex:
    """What the columns validator needs from a schema, built once per schema: tables by lower-case name
    (views too, read from the file when it is there) and an in-memory SQLite copy of the schema for
    ``EXPLAIN`` (names resolve exactly as in the real file; no rows, no file access)."""

    def __init__(self, schema: "DbSchema"):
        self.tables: dict[str, IndexedTable] = {}
        for t in schema.tables:
            rowid = not _WITHOUT_ROWID.search(t.create_sql or "")
            self.tables[t.name.lower()] = IndexedTable(
                t.name, tuple(c.name.lower() for c in t.columns), tuple(c.name for c in t.columns), rowid)
        self.table_list = ", ".join(t.name for t in schema.tables)
        self.lock = threading.Lock()
        self.shadow = sqlite3.connect(":memory:", check_same_thread=False)
        for t in schema.tables:
            try:
                self.shadow.execute(t.create_sql)
            except sqlite3.Error:  # a table SQLite itself cannot re-create (a virtual table): confirm nothing
                pass
        for name, sql, cols in _views(schema.path):
            try:
                self.shadow.execute(sql)
            except sqlite3.Error:
                pass
            self.tables.setdefault(name.lower(), IndexedTable(name, tuple(c.lower() for c in cols), tuple(cols), False))
        from structgen.sql.run import ReadOnlyAuthorizer

        self.shadow.set_authorizer(ReadOnlyAuthorizer())  # it only ever prepares reads

    def explain_ok(self, sql: str) -> bool:
        """Whether SQLite prepares ``sql`` against the schema without an error."""
        with self.lock:
            try:
                self.shadow.execute("EXPLAIN " + sql).close()
                return True
            except Exception:
                return False


def _views(path: Path | None) -> list[tuple[str, str, list[str]]]:
    """The database's views (name, CREATE VIEW, columns); ``DbSchema`` leaves them out. Empty when the file
    is not readable."""
    if path is None or not Path(path).is_file():
        return []
    try:
        from structgen.sql.schema import connect_readonly

        conn = connect_readonly(path)
    except Exception:
        return []
    try:
        out = []
        for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'").fetchall():
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{name.replace(chr(34), chr(34) * 2)}")')]
            out.append((name, sql, cols))
        return out
    except sqlite3.Error:
        return []
    finally:
        conn.close()


_INDEX: dict[tuple, SchemaIndex] = {}
_INDEX_LOCK = threading.Lock()


def index_for(schema: "DbSchema") -> SchemaIndex:
    """The index of ``schema`` (its path, digest and tables make the key), built once."""
    key = (str(schema.path), schema.digest, tuple((t.name, t.create_sql) for t in schema.tables))
    with _INDEX_LOCK:
        idx = _INDEX.get(key)
        if idx is None:
            idx = _INDEX[key] = SchemaIndex(schema)
            while len(_INDEX) > 32:
                _INDEX.pop(next(iter(_INDEX)))
        return idx
