"""SQL validators: a generated query must be one read-only SELECT whose every table and column exists.

- :class:`SqlColumnsValidator` parses with sqlglot (dialect ``sqlite``) and resolves every table and column
  against a :class:`~structgen.sql.schema.DbSchema` the way SQLite does (:mod:`.sql_resolve`). Each
  problem is an :class:`~.base.Issue` whose span is the offending identifier. A resolution issue is
  confirmed with ``EXPLAIN`` on an in-memory copy of the schema before it is reported, so a gap in the
  resolver or in sqlglot's parser never rejects a query SQLite accepts. One deliberate exception: a
  double-quoted "string" that names no column (SQLite's legacy fallback reads it as a string literal).
- :class:`SqliteExplainValidator` runs ``EXPLAIN <sql>`` on a cached read-only connection to the real
  database with :class:`structgen.sql.run.ReadOnlyAuthorizer` installed: SQLite prepares the statement
  (every name is resolved) but runs nothing. SQLite's error names the identifier; the span is found in the
  text (:mod:`.sql_lex`).
- :func:`sql_validators` gives both, plus a tree-sitter syntax check as a second opinion.

Validators never raise: any failure becomes an issue.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Issue, tail_span
from .sql_lex import (
    Token, empty_issue, find_name, find_token, multi_issues, not_read_issue, parse_error_issue, precheck, split_point,
    sql_tokens, token_error_issue,
)
from .sql_resolve import Resolver, load_sqlglot
from .sql_schema_index import index_for

if TYPE_CHECKING:  # structgen.sql imports the spec, which imports these validators: import lazily at run time
    from structgen.sql.schema import DbSchema

__all__ = ["SqlColumnsValidator", "SqliteExplainValidator", "SqliteRunValidator", "sql_validators", "sql_tokens"]


class SqlColumnsValidator:
    """One read-only SELECT whose tables and columns all exist in ``schema``; issues name the identifier.

    ``confirm`` (default on) re-checks resolution issues and sqlglot parse failures with ``EXPLAIN`` on an
    in-memory copy of the schema and drops them when SQLite accepts the statement.
    """

    name = "sql-columns"

    def __init__(self, schema: "DbSchema", *, confirm: bool = True):
        self.schema = schema
        self.confirm = confirm
        load_sqlglot()  # imported now, not during the first check
        self._index = index_for(schema)

    def __repr__(self) -> str:
        return f"SqlColumnsValidator({str(self.schema.path)!r})"

    def __call__(self, text: str) -> list[Issue]:
        try:
            return self._check(text)
        except Exception as e:  # never crash generation: ask SQLite instead
            if self.confirm and self._index.explain_ok(text):
                return []
            return [Issue(f"the SQL could not be analysed ({type(e).__name__}: {str(e)[:200]}); "
                          "write a simpler SELECT", None, "", self.name)]

    def _check(self, text: str) -> list[Issue]:
        tokens, stop = precheck(text, self.name)
        if stop:
            return [stop]
        sqlglot, exp = load_sqlglot()
        head = tokens[0].value.upper() if tokens[0].kind == "ident" else tokens[0].text
        if head not in ("SELECT", "WITH"):
            return [not_read_issue(text, tokens, self.name, f"the statement starts with {head[:20]!r}, not SELECT")]
        split = split_point(tokens)
        # the first statement, without what follows its last token (an unterminated /* comment at the end
        # is a comment to SQLite but a tokenizer error to sqlglot); offsets stay those of ``text``
        first_text = text[:split] if split is not None else text[: tokens[-1].end]
        issues: list[Issue] = []
        try:
            parsed = [s for s in sqlglot.parse(first_text, dialect="sqlite") if s is not None]
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as e:
            if not (self.confirm and self._index.explain_ok(first_text)):
                issue = parse_error_issue(text, e, self.name) if isinstance(e, sqlglot.errors.ParseError) \
                    else token_error_issue(text, tokens, e, self.name)
                return [issue] + multi_issues(text, split, self.name)
            parsed = None  # sqlglot cannot parse what SQLite accepts: nothing to resolve
        if parsed is not None:
            if not parsed:
                return [empty_issue(self.name)]
            stmt = parsed[0]
            if not isinstance(stmt, (exp.Select, exp.SetOperation)):
                kind = stmt.key.upper() if getattr(stmt, "key", "") != "command" else tokens[0].text.upper()
                return [not_read_issue(text, tokens, self.name, f"the statement is {kind}, not a SELECT")]
            res = Resolver(text, self._index, tokens, self.name)
            res.query(stmt, (), {})
            issues = list(res.firm)
            if res.confirmable and not (self.confirm and self._index.explain_ok(first_text)):
                issues += res.confirmable
        issues += multi_issues(text, split, self.name)
        return sorted(_dedupe(issues), key=lambda i: (i.span or (-1, -1)))


def _dedupe(issues: list[Issue]) -> list[Issue]:
    seen, out = set(), []
    for i in issues:
        key = (i.message, i.span)
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out



@dataclass
class _Conn:
    conn: sqlite3.Connection
    lock: threading.Lock
    auth: Any
    signature: tuple
    tables: frozenset[str]  # lower-case names of the tables and views
    closed: bool = False


_CONNS: dict[str, _Conn] = {}
_CONNS_LOCK = threading.Lock()


def _signature(path: Path) -> tuple:
    st = path.stat()
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _connection(database: Path) -> _Conn:
    """One read-only connection per database file, with the read-only authorizer; reopened when the file
    was replaced or changed since (so a rebuilt database is seen)."""
    from structgen.errors import SpecError
    from structgen.sql.run import ReadOnlyAuthorizer
    from structgen.sql.schema import connect_readonly

    key = str(Path(database).resolve())
    try:
        sig = _signature(Path(key))
    except OSError:
        raise SpecError(f"database {database} not found; pass the path of an existing SQLite file") from None
    with _CONNS_LOCK:
        entry = _CONNS.get(key)
        if entry is not None and entry.signature == sig:
            return entry
        conn = connect_readonly(key)
        names = frozenset(r[0].lower() for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
        auth = ReadOnlyAuthorizer()
        conn.set_authorizer(auth)
        new = _Conn(conn, threading.Lock(), auth, sig, names)
        _CONNS[key] = new
    if entry is not None:
        with entry.lock:  # wait for a check still using the old connection
            entry.closed = True
            entry.conn.close()
    return new


_SQLITE_NAMED = (
    (re.compile(r"^no such column: (.+)$"), "name", "no such column: {0}; check the table's columns"),
    (re.compile(r"^ambiguous column name: (.+)$"), "name",
     "ambiguous column name: {0}; qualify it with its table or alias"),
    (re.compile(r"^no such table: (.+)$"), "name", "no such table: {0}"),
    (re.compile(r"^no such function: (.+)$"), "name", "no such function: {0}"),
    (re.compile(r"^wrong number of arguments to function (\w+)\(\)$"), "name",
     "wrong number of arguments to function {0}()"),
    (re.compile(r"^misuse of (?:aggregate|aggregate function|window function) (\w+)\(\)$"), "name", None),
    (re.compile(r"^misuse of aggregate: (\w+)\(\)$"), "name", None),
    (re.compile(r'^near "(.*)": syntax error$', re.S), "tail", "SQL syntax error near {0!r}"),
    (re.compile(r'^unrecognized token: "(.*)"$', re.S), "tail", "SQL syntax error: unrecognised token {0!r}"),
)


class SqliteExplainValidator:
    """SQLite itself prepares the statement (``EXPLAIN``, read-only, writes denied); its error is the issue.

    ``database`` is the SQLite file; the connection is opened at once (a missing file is a
    :class:`~structgen.errors.SpecError` before generation) and shared by every validator of that file.
    """

    name = "sqlite-explain"

    def __init__(self, database: str | Path):
        self.database = Path(database)
        _connection(self.database)

    def __repr__(self) -> str:
        return f"SqliteExplainValidator({str(self.database)!r})"

    def __call__(self, text: str) -> list[Issue]:
        try:
            return self._check(text)
        except Exception as e:  # the file vanished, or anything else: an issue, never a crash
            return [Issue(f"could not check the SQL with SQLite ({type(e).__name__}: {str(e)[:200]})",
                          None, "", self.name)]

    def _check(self, text: str) -> list[Issue]:
        from structgen.sql.run import read_only_problem

        tokens, stop = precheck(text, self.name)
        if stop:
            return [stop]
        problem = read_only_problem(text)
        if problem:
            return [not_read_issue(text, tokens, self.name, problem.split(":")[0])]
        split = split_point(tokens)
        issues = multi_issues(text, split, self.name)
        text_checked = text[:split] if split is not None else text
        error = denied = None
        for _ in range(3):  # a connection closed by another thread (the file was replaced): take the new one
            entry = _connection(self.database)
            with entry.lock:
                if entry.closed:
                    continue
                entry.auth.reset()
                try:
                    entry.conn.execute("EXPLAIN " + text_checked).close()
                except (sqlite3.Error, sqlite3.Warning) as e:
                    error, denied = e, entry.auth.denied
                break
        if error is not None:
            issues.insert(0, self._issue(text, tokens, error, denied, entry.tables))
        return issues

    def _issue(self, text: str, tokens: list[Token], e: Exception, denied: str | None,
               tables: frozenset[str]) -> Issue:
        msg = str(e).strip()
        if denied:
            return not_read_issue(text, tokens, self.name, f"the statement is not read-only (it needs {denied})")
        if msg == "incomplete input":
            return Issue("SQL syntax error: the statement ended early (incomplete input)",
                         tail_span(text, len(text)), "", self.name)
        for pattern, how, template in _SQLITE_NAMED:
            m = pattern.match(msg)
            if not m:
                continue
            what = m.group(1)
            shown = template.format(what) if template else msg
            if how == "name":
                # "no such table: t" for a table that exists: t was used as a qualifier (t.* or t.x)
                qualifier = msg.startswith("no such table") and what.lower() in tables
                span = find_name(text, what, tokens, qualifier=qualifier)
            else:
                start = find_token(text, what, tokens)
                span = tail_span(text, start) if start is not None else None
            return Issue(f"SQLite: {shown}", span, "", self.name)
        return Issue(f"SQLite rejected the statement: {msg}", None, "", self.name)


class SqliteRunValidator:
    """Runs the query's first rows (``max_rows``) on the real database, read-only, within ``timeout_s``:
    errors that only show when SQLite evaluates it (``ABS`` of the smallest integer: "integer overflow")
    become an issue for the whole text. A query still running at the limit is not an issue (nothing is
    known against it); the explicit ``run_query`` has its own limit."""

    name = "sqlite-run"

    def __init__(self, database: str | Path, *, max_rows: int = 100, timeout_s: float = 0.25):
        self.database = Path(database)
        self.max_rows, self.timeout_s = max_rows, timeout_s

    def __repr__(self) -> str:
        return f"SqliteRunValidator({str(self.database)!r})"

    def __call__(self, text: str) -> list[Issue]:
        from structgen.errors import QueryError, QueryTimeoutError
        from structgen.sql.run import run_query

        try:
            run_query(self.database, text, max_rows=self.max_rows, timeout_s=self.timeout_s)
        except QueryTimeoutError:
            return []
        except QueryError as e:
            return [Issue(f"SQLite failed running the query: {str(e).splitlines()[0]}", None, "", self.name)]
        except Exception as e:  # a validator never raises
            return [Issue(f"running the query failed: {type(e).__name__}: {e}", None, "", self.name)]
        return []


def sql_validators(schema: "DbSchema", *, explain: bool = True, second_opinion: bool = True) -> list:
    """The validators of generated SQL over ``schema``: column resolution, then (``explain``) SQLite's own
    ``EXPLAIN`` on the database file and a read-only run of the first rows, then (``second_opinion``) a
    tree-sitter SQL syntax check."""
    out: list = [SqlColumnsValidator(schema)]
    if explain:
        out += [SqliteExplainValidator(schema.path), SqliteRunValidator(schema.path)]
    if second_opinion:
        from structgen.validators.code import CodeSyntaxValidator

        out.append(CodeSyntaxValidator("sql"))
    return out
