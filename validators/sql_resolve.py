"""Resolving a parsed SELECT against a database schema, the way SQLite does: the half of the SQL
validators that needs sqlglot.

- :class:`Resolver` walks one statement parsed by sqlglot (dialect ``sqlite``) and resolves every table
  and column: joins (``USING``/``NATURAL`` included), table aliases, derived tables, CTEs, subqueries in
  any clause, correlated references to outer queries, ``*``/``t.*``, output aliases (visible in
  ``WHERE``/``GROUP BY``/``HAVING``/``ORDER BY``/``ON`` after the sources, first in a bare ``ORDER BY``
  name), compound ``ORDER BY`` terms and column numbers. Each problem is an :class:`~.base.Issue` whose
  span is the offending identifier, confirmed by the schema's ``EXPLAIN`` (:mod:`.sql_schema_index`)
  before it is reported. It is one walker over one statement, so it stays one class.
- :func:`load_sqlglot` imports sqlglot, or says how to install it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from .base import Issue, Span, tail_span
from .sql_lex import Token, find_name
from .sql_schema_index import SchemaIndex

__all__ = ["load_sqlglot", "Resolver"]

_ROWID = frozenset({"rowid", "oid", "_rowid_"})
_MASTER = ("type", "name", "tbl_name", "rootpage", "sql")
_MASTER_NAMES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
_EPONYMOUS = frozenset({"json_each", "json_tree", "generate_series"})


@functools.lru_cache(maxsize=1)
def load_sqlglot() -> Any:
    try:
        import sqlglot
        from sqlglot import exp
    except ImportError:
        from structgen.errors import StructgenError

        raise StructgenError("checking SQL needs sqlglot: install the SQL extra, "
                             "pip install 'structgen[sql]'") from None
    return sqlglot, exp


@dataclass
class _Source:
    """One FROM item: the name it is referenced by, its columns (``None``: unknown, anything goes)."""

    ref: str  # lower-case alias or table name ('' for an unnamed subquery)
    label: str  # for messages
    columns: tuple[str, ...] | None
    shown: tuple[str, ...] = ()
    rowid: bool = False
    table: str = ""  # the table's own name when aliased
    hidden: set[str] = field(default_factory=set)  # merged away by USING / NATURAL (right side)

    def has(self, name: str) -> bool:
        if self.columns is None:
            return True
        return name in self.columns or (self.rowid and name in _ROWID)

    def describe(self) -> str:
        head = self.label if not self.table or self.table.lower() == self.ref else f"{self.label} ({self.table})"
        if self.columns is None:
            return head
        return f"{head}: {', '.join(self.shown or self.columns)}"


@dataclass
class _Frame:
    sources: list[_Source] = field(default_factory=list)
    aliases: set[str] = field(default_factory=set)


_Chain = tuple  # ((frame, aliases_visible), ...) innermost first

_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


def _ordinal(i: int) -> str:
    return _ORDINAL.get(i, f"{i}th")


def _arg(node: Any, name: str) -> Any:
    """An argument under its current sqlglot name or the older one (``from_``/``from``, ``with_``/``with``)."""
    v = node.args.get(name + "_")
    return v if v is not None else node.args.get(name)


class Resolver:
    """Walks one parsed statement, resolving every table and column the way SQLite does and collecting
    issues. A scope chain holds, innermost first, each enclosing query's FROM sources and output aliases
    with whether the aliases are visible from the clause being resolved (not from the SELECT list)."""

    def __init__(self, text: str, index: SchemaIndex, tokens: list[Token], validator: str):
        _, self.exp = load_sqlglot()
        self.validator = validator  # named in the issues
        self.text = text
        self.index = index
        self.tokens = tokens
        self.confirmable: list[Issue] = []  # SQLite would reject these too (confirmed before reporting)
        self.firm: list[Issue] = []  # reported even when SQLite accepts
        self.outputs: dict[int, tuple[list[str] | None, list]] = {}  # id(select) -> (names, projections)

    # ---- spans

    def span(self, node: Any) -> Span | None:
        if node is None:
            return None
        m = getattr(node, "meta", None) or {}
        s, e = m.get("start"), m.get("end")
        if isinstance(s, int) and isinstance(e, int) and 0 <= s <= e < len(self.text):
            return (s, e + 1)
        name = getattr(node, "name", None)
        if isinstance(name, str) and name:
            return find_name(self.text, name, self.tokens)
        return None

    def node_spans(self, node: Any) -> list[Span]:
        """The spans of ``node`` and the nodes under it that sqlglot placed in the text."""
        return [s for s in (self.span(n) for n in node.walk() if getattr(n, "meta", None)) if s]

    def expr_span(self, node: Any) -> Span | None:
        spans = self.node_spans(node)
        if not spans:
            return None
        return (min(s[0] for s in spans), max(s[1] for s in spans))

    def report(self, message: str, span: Span | None, *, firm: bool = False) -> None:
        (self.firm if firm else self.confirmable).append(Issue(message, span, "", self.validator))

    # ---- queries

    def query(self, node: Any, chain: _Chain, ctes: dict) -> list[str] | None:
        exp = self.exp
        if isinstance(node, exp.Subquery):
            return self.query(node.this, chain, ctes)
        if isinstance(node, exp.SetOperation):
            ctes = self.with_(node, chain, ctes)
            left = self.query(node.this, chain, ctes)
            self.query(node.expression, chain, ctes)
            self.compound_order(node, left)
            self.limit(node, chain, ctes)
            return left
        if isinstance(node, exp.Select):
            return self.select(node, chain, ctes)
        if isinstance(node, exp.Values):
            rows = node.expressions
            first = rows[0] if rows else None
            n = len(first.expressions) if isinstance(first, exp.Tuple) else 1
            self.expr(node, chain, ctes)
            return [f"column{i + 1}" for i in range(n)]
        self.expr(node, chain, ctes)
        return None

    def with_(self, node: Any, chain: _Chain, ctes: dict) -> dict:
        w = _arg(node, "with")
        if w is None:
            return ctes
        ctes = dict(ctes)
        for cte in w.expressions:
            alias = cte.args.get("alias")
            name = (cte.alias or "").lower()
            declared = [c.name.lower() for c in (alias.columns if alias is not None else [])] or None
            # SQLite lets a CTE refer to itself (RECURSIVE or not): its own columns are known only after
            ctes[name] = tuple(declared) if declared else None
            cols = self.query(cte.this, chain, ctes)
            ctes[name] = tuple(declared or cols) if (declared or cols is not None) else None
        return ctes

    def select(self, node: Any, chain: _Chain, ctes: dict) -> list[str] | None:
        exp = self.exp
        ctes = self.with_(node, chain, ctes)
        if not node.expressions:  # sqlglot reads `SELECT FROM t` as a SELECT of nothing
            start = next((t.start for t in self.tokens if t.start >= self._select_end(node)), len(self.text))
            self.report("the SELECT lists no result columns; write the columns (or *) after SELECT",
                        tail_span(self.text, start))
        frame = _Frame()
        ons: list[Any] = []
        from_ = _arg(node, "from")
        if from_ is not None:
            self.from_item(from_.this, frame, chain, ctes, ons)
        self.joins(node, frame, chain, ctes, ons)

        here: _Chain = ((frame, False),) + chain
        with_aliases: _Chain = ((frame, True),) + chain
        for e in node.expressions:
            if isinstance(e, exp.Alias):
                frame.aliases.add(e.alias.lower())

        names: list[str] | None = []
        for e in node.expressions:
            if isinstance(e, exp.Star):
                if not frame.sources:
                    self.report("SELECT * needs a FROM clause: there is no table to take the columns from",
                                self.span(e))
                names = self._star(frame.sources, names)
            elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
                src = self.qualifier_source(e, frame)
                names = self._star([src], names) if src else None
            else:
                self.expr(e, here, ctes)
                if names is not None:
                    names.append(self.output_name(e))
        self.outputs[id(node)] = (names, node.expressions)

        for on in ons:
            self.expr(on, with_aliases, ctes)
        self.expr(node.args.get("where"), with_aliases, ctes)
        group = node.args.get("group")
        if group is not None:
            for i, g in enumerate(group.expressions, start=1):
                if not self.position(g, i, "GROUP BY", names):
                    self.expr(g, with_aliases, ctes)
        self.expr(node.args.get("having"), with_aliases, ctes)
        for w in node.args.get("windows") or []:
            self.expr(w, with_aliases, ctes)
        order = node.args.get("order")
        if order is not None:
            for i, o in enumerate(order.expressions, start=1):
                term, bare = self.order_term(o)
                if self.position(bare, i, "ORDER BY", names):
                    continue
                if isinstance(bare, exp.Column) and not bare.table and bare.name.lower() in frame.aliases:
                    continue  # a bare ORDER BY name is an output alias first
                self.expr(term, with_aliases, ctes)
        self.limit(node, chain, ctes)
        return names

    def limit(self, node: Any, chain: _Chain, ctes: dict) -> None:
        """``LIMIT``/``OFFSET`` see no columns (SQLite resolves them before any FROM); subqueries may."""
        exp = self.exp
        for key in ("limit", "offset"):
            stack = [node.args.get(key)]
            while stack:
                n = stack.pop()
                if n is None:
                    continue
                if isinstance(n, (exp.Select, exp.SetOperation, exp.Subquery)):
                    self.query(n, chain, ctes)
                elif isinstance(n, exp.Column):
                    self.report(f"no such column: {n.sql(dialect='sqlite')}: {key.upper()} takes a number, not a "
                                "column", self.span(n.this))
                else:
                    stack.extend(n.iter_expressions())

    def _select_end(self, node: Any) -> int:
        """Where the SELECT keyword (and DISTINCT/ALL) of ``node`` ends: the first SELECT token after the
        start of its first identifier or literal, searching back from there."""
        starts = [s[0] for s in self.node_spans(node)]
        limit = min(starts) if starts else len(self.text)
        end = 0
        for t in self.tokens:
            if t.start >= limit:
                break
            if t.kind == "ident" and t.value.upper() in ("SELECT", "DISTINCT", "ALL"):
                end = t.end
        return end

    def _star(self, sources: list[_Source], names: list[str] | None) -> list[str] | None:
        if names is None or not sources:
            return names if sources else None
        out = list(names)
        for s in sources:
            if s.columns is None:
                return None
            out.extend(c for c in s.columns if c not in s.hidden)
        return out

    def output_name(self, e: Any) -> str:
        exp = self.exp
        if isinstance(e, exp.Alias):
            return e.alias.lower()
        if isinstance(e, exp.Column):
            return e.name.lower()
        return self._sql(e).lower()

    def _sql(self, e: Any) -> str:
        try:
            return e.sql(dialect="sqlite")
        except Exception:
            return repr(e)

    def position(self, term: Any, i: int, clause: str, names: list[str] | None) -> bool:
        """Whether ``term`` is a column number (checked against the result's width); False otherwise."""
        exp = self.exp
        if not (isinstance(term, exp.Literal) and not term.is_string and str(term.this).isdigit()):
            return False
        n = int(term.this)
        if names is not None and not 1 <= n <= len(names):
            self.report(f"{_ordinal(i)} {clause} term {n} is out of range: the result has {len(names)} "
                        f"column{'s' if len(names) != 1 else ''} (use 1 to {len(names)} or a column name)",
                        self.span(term))
        return True

    def compound_order(self, node: Any, names: list[str] | None) -> None:
        exp = self.exp
        order = node.args.get("order")
        if order is None:
            return
        arms = [n for n in self._arms(node)]
        arm_names = set()
        arm_sqls = set()
        for a in arms:
            an, projections = self.outputs.get(id(a), (None, []))
            if an is None:
                return  # a column list we cannot know: nothing to check against
            arm_names.update(an)
            arm_sqls.update(self._sql(e.this if isinstance(e, exp.Alias) else e).lower() for e in projections)
        for i, o in enumerate(order.expressions, start=1):
            _, bare = self.order_term(o)
            if self.position(bare, i, "ORDER BY", names):
                continue
            if isinstance(bare, exp.Column) and not bare.table and bare.name.lower() in arm_names:
                continue
            if self._sql(bare).lower() in arm_sqls:
                continue
            self.report(f"{_ordinal(i)} ORDER BY term {self._sql(bare)!r} of a compound SELECT does not match "
                        f"any result column; order by a result column's name or number "
                        f"({', '.join(sorted(arm_names)) or 'none'})", self.expr_span(bare))

    def order_term(self, o: Any) -> tuple[Any, Any]:
        """An ORDER BY term without its ASC/DESC (``term``), and without its COLLATE too (``bare``)."""
        term = o.this if isinstance(o, self.exp.Ordered) else o
        return term, term.this if isinstance(term, self.exp.Collate) else term

    def _arms(self, node: Any) -> Iterator[Any]:
        exp = self.exp
        if isinstance(node, exp.SetOperation):
            yield from self._arms(node.this)
            yield from self._arms(node.expression)
        elif isinstance(node, exp.Subquery):
            yield from self._arms(node.this)
        else:
            yield node

    # ---- FROM

    def from_item(self, item: Any, frame: _Frame, chain: _Chain, ctes: dict, ons: list) -> None:
        exp = self.exp
        if isinstance(item, exp.Table):
            if isinstance(item.this, exp.Identifier):
                frame.sources.append(self.table_source(item, ctes))
            else:  # a table-valued function: json_each(...), pragma_table_info(...)
                self.expr(item.this, ((frame, False),) + chain, ctes)
                alias = item.alias or self._sql(item.this).split("(")[0]
                frame.sources.append(_Source(alias.lower(), alias, None))
            self.joins(item, frame, chain, ctes, ons)
        elif isinstance(item, exp.Subquery) and isinstance(item.this, (exp.Select, exp.SetOperation,
                                                                         exp.Subquery, exp.Values)):
            cols = self.query(item.this, chain, ctes)  # a derived table sees the outer queries, not its siblings
            alias_node = item.args.get("alias")
            declared = [c.name.lower() for c in (alias_node.columns if alias_node is not None else [])]
            if declared:
                cols = declared
            alias = item.alias or ""
            frame.sources.append(_Source(alias.lower(), alias or "(subquery)",
                                         tuple(cols) if cols is not None else None))
            self.joins(item, frame, chain, ctes, ons)
        elif isinstance(item, exp.Subquery):  # a parenthesised join: (a JOIN b ON ...)
            self.from_item(item.this, frame, chain, ctes, ons)
            self.joins(item, frame, chain, ctes, ons)
        elif isinstance(item, exp.Values):
            cols = self.query(item, chain, ctes)
            alias = item.alias or ""
            frame.sources.append(_Source(alias.lower(), alias or "(values)", tuple(cols) if cols else None))
        else:
            self.expr(item, ((frame, False),) + chain, ctes)
            frame.sources.append(_Source("", "?", None))

    def joins(self, node: Any, frame: _Frame, chain: _Chain, ctes: dict, ons: list) -> None:
        for j in node.args.get("joins") or []:
            self.join(j, frame, chain, ctes, ons)

    def join(self, join: Any, frame: _Frame, chain: _Chain, ctes: dict, ons: list) -> None:
        before = list(frame.sources)
        self.from_item(join.this, frame, chain, ctes, ons)
        added = frame.sources[len(before):]
        for ident in join.args.get("using") or []:
            name = ident.name.lower()
            missing = [side for side, srcs in (("left", before), ("right", added))
                       if not any(s.has(name) for s in srcs)]
            if missing:
                where = " and ".join(missing)
                self.report(f"cannot join USING ({ident.name}): no table on the {where} side has a column "
                            f"{ident.name}", self.span(ident))
            for s in added:
                s.hidden.add(name)
        if str(join.args.get("method") or "").upper() == "NATURAL":
            for s in added:
                if s.columns is None:
                    continue
                for c in s.columns:
                    if any(b.has(c) and b.columns is not None for b in before):
                        s.hidden.add(c)
        if join.args.get("on") is not None:
            ons.append(join.args["on"])

    def table_source(self, item: Any, ctes: dict) -> _Source:
        name = item.name
        low = name.lower()
        db = (item.text("db") or "").lower()
        alias = item.alias or name
        if not db and low in ctes:
            cols = ctes[low]
            return _Source(alias.lower(), alias, cols, table=name if item.alias else "")
        t = self.index.tables.get(low)
        if t is not None and db in ("", "main"):
            return _Source(alias.lower(), alias, t.columns, t.shown, t.rowid, table=t.name if item.alias else "")
        if low in _MASTER_NAMES and db in ("", "main", "temp"):
            return _Source(alias.lower(), alias, _MASTER, _MASTER, True, table=name if item.alias else "")
        if low in _EPONYMOUS or low.startswith("pragma_"):  # table-valued functions named without arguments
            return _Source(alias.lower(), alias, None)
        if db and db not in ("main", "temp"):
            self.report(f"no such table: {db}.{name}: there is no attached database {db!r}; "
                        f"use one of the tables {self.index.table_list}", self.span(item.args.get("db")))
        else:
            known = self.index.table_list + (", " + ", ".join(sorted(ctes)) if ctes else "")
            self.report(f"no such table: {name}; the tables are: {known}", self.span(item.this))
        return _Source(alias.lower(), alias, None)

    # ---- expressions and columns

    def expr(self, node: Any, chain: _Chain, ctes: dict) -> None:
        if node is None:
            return
        exp = self.exp
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, (exp.Select, exp.SetOperation, exp.Subquery)):
                self.query(n, chain, ctes)
            elif isinstance(n, exp.Column):
                if not isinstance(n.this, exp.Star):
                    self.column(n, chain)
            elif isinstance(n, exp.In) and isinstance(n.args.get("field"), exp.Column):
                # `x IN table`: SQLite's shorthand for `x IN (SELECT * FROM table)`
                field_ = n.args["field"]
                low = field_.name.lower()
                if low not in ctes and low not in self.index.tables and low not in _MASTER_NAMES:
                    self.column(field_, chain)
                stack.extend(c for c in n.iter_expressions() if c is not field_)
            else:
                stack.extend(n.iter_expressions())

    def qualifier_source(self, col: Any, frame: _Frame) -> _Source | None:
        """The source that ``t`` in ``t.*`` names (this query's FROM only), reporting an unknown one."""
        q = col.table.lower()
        for s in frame.sources:
            if s.ref == q:
                return s
        self.report(self._unknown_qualifier(col, [frame]), self.span(col.args.get("table")))
        return None

    def _unknown_qualifier(self, col: Any, frames: Iterable[_Frame]) -> str:
        q = col.table
        srcs = [s for f in frames for s in f.sources]
        refs = [s.ref for s in srcs if s.ref]
        what = f"{q}.{col.name}" if not isinstance(col.this, self.exp.Star) else f"{q}.*"
        msg = f"no such table: {q} (in {what}): it is not a table or alias of this query"
        aliased = [s for s in srcs if s.table and s.table.lower() == q.lower()]
        if aliased:
            msg += f"; {aliased[0].table} is aliased as {aliased[0].label} here: write {aliased[0].label}." + (
                "*" if what.endswith("*") else col.name)
        elif refs:
            msg += f"; use one of: {', '.join(dict.fromkeys(refs))}"
        return msg

    def column(self, col: Any, chain: _Chain) -> None:
        name = col.name.lower()
        q = col.table.lower()
        ident = col.this
        if q:
            for frame, _ in chain:
                hits = [s for s in frame.sources if s.ref == q]
                if not hits:
                    continue
                src = hits[0]
                if len(hits) > 1:
                    self.report(f"ambiguous table name {col.table}: it names {len(hits)} tables in one FROM "
                                "clause; give each a different alias", self.span(col.args.get("table")))
                elif not src.has(name):
                    others = [t.name for t in self.index.tables.values() if name in t.columns]
                    hint = f" ({col.name} is a column of {', '.join(others)})" if others else ""
                    self.report(f"no such column: {col.table}.{col.name}; {src.describe()}{hint}", self.span(ident))
                return
            self.report(self._unknown_qualifier(col, [f for f, _ in chain]), self.span(col.args.get("table")))
            return
        for frame, aliases_visible in chain:
            found = [s for s in frame.sources
                     if s.columns is not None and name not in s.hidden
                     and (name in s.columns or (s.rowid and name in _ROWID and name not in s.columns))]
            if len(found) > 1 and name in _ROWID and not any(name in s.columns for s in found):
                return  # rowid of several tables: SQLite picks one; not worth a repair
            if len(found) > 1:
                refs = [s.label for s in found]
                self.report(f"ambiguous column name: {col.name}: it is a column of {' and '.join(refs)}; "
                            f"qualify it, e.g. {refs[0]}.{col.name}", self.span(ident))
                return
            if found:
                return
            if any(s.columns is None for s in frame.sources):
                return  # it may come from a source whose columns we cannot know
            if aliases_visible and name in frame.aliases:
                return
        span = self.span(ident)
        if ident is not None and ident.args.get("quoted") and span and self.text[span[0]] == '"':
            self.report(f"no such column: {ident.name}: a double-quoted name is an identifier in SQL; write "
                        f"'{ident.name}' in single quotes for a string", span, firm=True)
            return
        scope = [s.describe() for f, _ in chain for s in f.sources]
        used = {(s.table or s.ref).lower() for f, _ in chain for s in f.sources}
        others = [t.name for t in self.index.tables.values() if name in t.columns and t.name.lower() not in used]
        msg = f"no such column: {col.name}"
        if others:
            msg += f"; it is a column of {', '.join(others)}, which this query does not select from"
        if scope:
            shown = "; ".join(scope)
            msg += f" (in scope: {shown[:300]}{'...' if len(shown) > 300 else ''})"
        else:
            msg += " (the query has no FROM clause)"
        self.report(msg, span)
