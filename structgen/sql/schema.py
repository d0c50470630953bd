"""The schema of a SQLite database, read once through a read-only connection.

``DbSchema.read(path)`` gives the tables, their columns and the ``CREATE`` statements exactly as stored in
``sqlite_master``. Everything that needs the schema (the specialised SELECT grammar, the prompt, sqlglot
resolution) takes it from here; the database file is never opened for writing.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SpecError


def connect_readonly(database: str | Path, *, timeout_s: float = 5.0) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``): no statement through it can change the file."""
    path = Path(database)
    if not path.is_file():
        raise SpecError(f"database {path} not found; pass the path of an existing SQLite file")
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_s, check_same_thread=False)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise SpecError(f"{path} is not a readable SQLite database ({e})") from None
    return conn


def check_in_list(create_sql: str, column: str) -> str | None:
    """The text inside ``CHECK (column IN (...))`` of a ``CREATE TABLE`` statement, as written (``'a','b'``);
    None when the column has no such check."""
    m = re.search(rf'CHECK\s*\(\s*"?{re.escape(column)}"?\s+IN\s*\(([^)]*)\)', create_sql, re.I)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Column:
    """One column: its table, name and declared type (as written in ``CREATE TABLE``)."""

    table: str
    name: str
    type: str = ""


@dataclass(frozen=True)
class Table:
    """One table: its name, its columns in order and its ``CREATE`` statement."""

    name: str
    columns: tuple[Column, ...]
    create_sql: str

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class DbSchema:
    """The tables of one SQLite database (views and SQLite's internal tables left out)."""

    path: Path
    tables: tuple[Table, ...]
    digest: str = field(default="")
    #: (table, column, referenced table, referenced column) for every single-column foreign key
    foreign_keys: tuple[tuple[str, str, str, str], ...] = field(default=())

    @classmethod
    def read(cls, database: str | Path) -> "DbSchema":
        conn = connect_readonly(database)
        try:
            rows = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "ORDER BY rowid").fetchall()
            tables, fks = [], []
            for name, sql in rows:
                cols = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
                tables.append(Table(name, tuple(Column(name, c[1], c[2] or "") for c in cols), sql))
                keys = conn.execute(f'PRAGMA foreign_key_list("{name}")').fetchall()  # id, seq, table, from, to
                multi = {k[0] for k in keys if k[1] > 0}
                fks += [(name, k[3], k[2], k[4]) for k in keys if k[0] not in multi and k[4] is not None]
        finally:
            conn.close()
        if not tables:
            raise SpecError(f"database {database} has no tables; SQL generation needs at least one")
        h = hashlib.sha256("\n".join(t.create_sql for t in tables).encode()).hexdigest()[:24]
        names = {t.name.lower(): t for t in tables}
        resolved = []
        for table, col, ref, ref_col in fks:  # only keys whose columns exist (names as the tables spell them)
            target = names.get(ref.lower())
            ref_col = next((c for c in target.column_names if c.lower() == ref_col.lower()), None) if target else None
            if ref_col is not None and col in names[table.lower()].column_names:
                resolved.append((table, col, target.name, ref_col))
        return cls(Path(database).resolve(), tuple(tables), h, tuple(resolved))

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name.lower() == name.lower():
                return t
        raise KeyError(name)

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def create_statements(self) -> str:
        """The ``CREATE TABLE`` statements, one per table, each ending in ``;``."""
        return "\n".join(t.create_sql.strip().rstrip(";") + ";" for t in self.tables)

    def as_sqlglot(self) -> dict[str, dict[str, str]]:
        """``{table: {column: type}}``, the mapping sqlglot's optimizer takes as a schema."""
        return {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in self.tables}
