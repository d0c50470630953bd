"""Running one generated SQL query against a SQLite database, safely: the explicit step after generation.

:func:`run_query` opens the file read-only (``mode=ro``, ``query_only``), lets through only statements that
start with ``SELECT``, ``WITH`` or ``VALUES``, installs :class:`ReadOnlyAuthorizer` (SQLite asks it about
every table, column and function a statement touches; anything but reading is denied), fetches at most
``max_rows`` rows and interrupts the query through a progress handler once it runs past ``timeout_s``.
Every failure is a :class:`~structgen.errors.QueryError` naming SQLite's error and the SQL.
The validators (``structgen.validators.sql``) use the same authorizer and keyword check when they
``EXPLAIN`` a statement, so what validates is what may run.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, QueryError, QueryTimeoutError, StructgenError
from .schema import connect_readonly

__all__ = ["QueryResult", "ReadOnlyAuthorizer", "read_only_problem", "run_query"]

# Statements that can only read. Anything else (PRAGMA, VACUUM [INTO], ATTACH, DML, DDL) is refused before
# SQLite sees it: some of those are not covered by the authorizer at prepare time (VACUUM INTO writes a file).
READ_KEYWORDS = ("SELECT", "WITH", "VALUES")

_LEADING = re.compile(r"(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z))*", re.S)
_WORD = re.compile(r"[A-Za-z_]+")

_ACTION_NAMES = (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
    "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE",
    "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW",
    "INSERT", "PRAGMA", "READ", "SELECT", "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE",
    "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE",
)
ACTIONS: dict[int, str] = {
    getattr(sqlite3, f"SQLITE_{n}"): n.replace("_", " ") for n in _ACTION_NAMES if hasattr(sqlite3, f"SQLITE_{n}")
}
_ALLOWED = {getattr(sqlite3, f"SQLITE_{n}", -1) for n in ("SELECT", "READ", "RECURSIVE")}
_FUNCTION = getattr(sqlite3, "SQLITE_FUNCTION", 31)
_UPDATE = getattr(sqlite3, "SQLITE_UPDATE", 23)
# The first use of an eponymous virtual table (json_each, pragma_table_info) on a connection makes SQLite ask
# about UPDATE on sqlite_master's columns while it sets the table up; nothing is written (and the schema
# table cannot be modified through a read-only connection anyway).
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
_DENIED_FUNCTIONS = frozenset({"load_extension"})


def read_only_problem(sql: str) -> str | None:
    """Why ``sql`` cannot be a read-only query judging by its first keyword, or ``None`` when it can.

    Comments and whitespace before the first keyword are skipped. An empty text is a problem too.
    """
    i = _LEADING.match(sql).end()
    if i >= len(sql):
        return "the SQL holds no statement (it is empty or only comments); write one SELECT statement"
    m = _WORD.match(sql, i)
    word = m.group(0).upper() if m else sql[i : i + 10]
    if word in READ_KEYWORDS:
        return None
    return (f"the statement starts with {word!r}: only read-only queries (SELECT, WITH ... SELECT, VALUES) "
            "are allowed; rewrite it as a SELECT")


class ReadOnlyAuthorizer:
    """A ``Connection.set_authorizer`` callback that allows reading and nothing else.

    SQLite calls it while it prepares a statement, for every table and column read and every function
    called. Reads, ``SELECT``, recursive CTEs and functions are allowed (and the probe SQLite makes when it
    first sets up a table-valued function such as ``json_each``); every other action (writes, schema changes,
    ``PRAGMA``, ``ATTACH``, transactions, ``load_extension``) is denied, and the first denied action is kept
    in :attr:`denied` so that the error can say what the statement tried to do. Call :meth:`reset` before
    each statement when one instance serves several.
    """

    def __init__(self) -> None:
        self.denied: str | None = None

    def reset(self) -> None:
        self.denied = None

    def __call__(self, action: int, arg1: Any, arg2: Any, dbname: Any, source: Any) -> int:
        if action in _ALLOWED:
            return sqlite3.SQLITE_OK
        if action == _FUNCTION and str(arg2 or "").lower() not in _DENIED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if action == _UPDATE and str(arg1 or "").lower() in _SCHEMA_TABLES and source is None:
            return sqlite3.SQLITE_OK
        if self.denied is None:
            what = ACTIONS.get(action, f"action {action}")
            target = arg2 if action == _FUNCTION else arg1
            self.denied = f"{what} {target}" if target else what
        return sqlite3.SQLITE_DENY


@dataclass
class QueryResult:
    """The rows a query returned: ``columns`` (names as SQLite reports them), at most ``max_rows`` ``rows``,
    ``truncated`` when there were more, and ``elapsed_s`` (running and fetching)."""

    columns: list[str]
    rows: list[tuple] = field(default_factory=list)
    truncated: bool = False
    elapsed_s: float = 0.0

    def to_dicts(self) -> list[dict[str, Any]]:
        """The rows as ``{column: value}`` dicts (a later duplicate column name wins)."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_table(self, title: str | None = None) -> Any:
        """A ``rich.table.Table`` of the rows, for the CLI; NULL is shown dimmed, a truncation in the caption."""
        from rich.table import Table
        from rich.text import Text

        n = len(self.rows)
        caption = f"{n} row{'s' if n != 1 else ''} in {self.elapsed_s * 1000:.1f} ms"
        if self.truncated:
            caption += f" (stopped after the first {n}: more rows matched)"
        # at least as wide as its caption, which rich would otherwise wrap to a narrow table ("1 row in 0.1\n ms")
        table = Table(title=title, show_lines=False, caption=caption, min_width=len(caption) + 4)
        for name in self.columns:
            table.add_column(name, overflow="fold")
        for row in self.rows:
            table.add_row(*(Text("NULL", style="dim") if v is None else Text(_show(v)) for v in row))
        return table


def _show(v: Any) -> str:
    if isinstance(v, bytes):
        return f"<{len(v)} bytes>"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _short(sql: str, limit: int = 400) -> str:
    s = sql.strip()
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} characters)"


def run_query(database: str | Path, sql: str, *, max_rows: int = 100, timeout_s: float = 5.0) -> QueryResult:
    """Run one read-only statement against the SQLite file ``database`` and return its first rows.

    ``max_rows`` rows at most are fetched (``truncated`` says whether there were more); a query still
    running after ``timeout_s`` seconds is interrupted. Raises :class:`QueryError` when the statement is
    not a read-only query, SQLite rejects it, or it runs past the limit.
    """
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 0:
        raise ConfigError(f"max_rows must be a non-negative integer, got {max_rows!r}")
    if not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool) or not timeout_s > 0:
        raise ConfigError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    if not isinstance(sql, str):
        raise QueryError(f"the SQL must be a string, got {type(sql).__name__}")
    problem = read_only_problem(sql)
    if problem:
        raise QueryError(f"{problem}.\n  SQL: {_short(sql)}")
    try:
        conn = connect_readonly(database, timeout_s=min(float(timeout_s), 5.0))
    except StructgenError as e:
        raise QueryError(f"cannot open the database to run the query: {e}") from None

    auth = ReadOnlyAuthorizer()
    timed_out = threading.Event()
    deadline = time.monotonic() + float(timeout_s)

    def progress() -> int:
        if time.monotonic() > deadline:
            timed_out.set()
            return 1  # non-zero: SQLite interrupts the statement
        return 0

    t0 = time.perf_counter()
    try:
        conn.set_authorizer(auth)
        conn.set_progress_handler(progress, 1000)
        cur = conn.execute(sql)
        if cur.description is None:
            raise QueryError(f"the statement returns no rows: run a SELECT.\n  SQL: {_short(sql)}")
        columns = [d[0] for d in cur.description]
        rows = cur.fetchmany(max_rows + 1)
    except QueryError:
        raise
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError, UnicodeError) as e:
        if timed_out.is_set():
            raise QueryTimeoutError(
                f"the query ran past its time limit of {timeout_s:g} s and was stopped; narrow it (a WHERE "
                f"clause, a join condition, a LIMIT) or pass a larger timeout_s.\n  SQL: {_short(sql)}"
            ) from None
        if auth.denied:
            raise QueryError(
                f"the statement is not read-only: SQLite was asked to allow {auth.denied}; only SELECT "
                f"queries can be run.\n  SQL: {_short(sql)}"
            ) from None
        raise QueryError(f"SQLite rejected the query ({type(e).__name__}: {e}); fix the SQL and run it "
                         f"again.\n  SQL: {_short(sql)}") from None
    finally:
        conn.close()
    elapsed = time.perf_counter() - t0
    truncated = len(rows) > max_rows
    return QueryResult(columns, [tuple(r) for r in rows[:max_rows]], truncated, elapsed)
