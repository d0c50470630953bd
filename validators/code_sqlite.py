"""SQLite on tree-sitter-sql: what :class:`~.code.CodeSyntaxValidator` adds for ``"sql"`` so that this
grammar, written for many dialects, serves as a second opinion on SQLite SELECT statements. It must not
reject valid SQLite, and it must not accept a reserved word where a name goes.

- :func:`sqlite_rewrite` (the ``"sql"`` entry's ``rewrite``): when the text as written is flagged, the SQLite
  constructs tree-sitter-sql wrongly flags are replaced by same-length text it parses (so every span still
  points into the original text), and the result is parsed instead. Each rewrite is listed, with an
  example, in :data:`SQLITE_REWRITES` (``==``, GLOB, ISNULL, COLLATE, ``LIMIT a, b``, parameters, a JOIN
  without ON, names such as ``interval`` or ``object_id`` that are keywords only in other dialects, ...);
  valid SQLite still flagged is listed in :data:`SQL_KNOWN_FALSE_POSITIVES`.
- :func:`_sql_extra` (the entry's ``extra``): tree-sitter-sql accepts a reserved word where a name goes
  (``SELECT FROM t`` parses as a column named ``FROM`` aliased ``t``), so an identifier spelled as a word
  SQLite reserves everywhere (:data:`SQLITE_RESERVED`) is an issue too.

The rewrites read the text through :func:`.sql_lex.sql_tokens`; :func:`_tokens` adapts its tokens to the
token boundaries the rewrites were written against (see there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Issue
from .sql_lex import Token, sql_tokens

if TYPE_CHECKING:
    from .code import _Offsets

__all__ = [
    "SQLITE_KEYWORDS",
    "SQLITE_RESERVED",
    "SQLITE_REWRITES",
    "SQL_KNOWN_FALSE_POSITIVES",
    "SqliteRewrite",
    "sqlite_rewrite",
]


# -- tokens -------------------------------------------------------------------------------------------------
@dataclass
class _Tok:
    kind: str  # word, param, number, string, qident, op, punct ("(),;"), other
    start: int
    end: int
    text: str
    up: str  # upper-cased text of a word, else the text
    depth: int  # bracket depth the token sits at (an opening bracket: the depth outside it)


_PUNCT = frozenset("(),;")
_WORD_START = re.compile(r"[^\W\d]")
_WORD_REST = re.compile(r"[\w$]*")


def _quoted_end(text: str, start: int) -> int:
    """Where a quoted string or name opening at ``start`` ends: after its closing quote (doubled quotes
    inside it are not one), else at the end of the text."""
    q, i, n = text[start], start + 1, len(text)
    while i < n:
        if text[i] == q:
            if i + 1 < n and text[i + 1] == q:
                i += 2
                continue
            return i + 1
        i += 1
    return n


def _pieces(text: str, t: Token) -> tuple[list[tuple[str, int, int]], int | None]:
    """The rewrites' tokens (kind, start, end) at the start of the :mod:`.sql_lex` token ``t``, and the
    offset to lex again from when they do not end where ``t`` does (``None``: they do)."""
    s, e, kind, c = t.start, t.end, t.kind, t.text[0]
    if kind == "ident" and t.text.isascii():
        return [("word", s, e)], None
    if kind == "number" or (kind == "qident" and c == "[") or (kind == "op" and not t.text.startswith("->")):
        return [("punct" if t.text in _PUNCT else kind, s, e)], None
    if c in "'\"`":  # a string or quoted name (or a bad token at its quote): unterminated, it runs to the end
        end = _quoted_end(text, s)
        return [("string" if c == "'" else "qident", s, end)], None if end == e else end
    if kind == "ident":  # a word is [^\W\d][\w$]*: other non-ASCII characters are tokens of their own
        if not _WORD_START.match(c):
            return [("other", s, s + 1)], None if e == s + 1 else s + 1
        end = _WORD_REST.match(text, s + 1).end()
        return [("word", s, end)], None if end == e else end
    if kind == "var" and c != "?":  # a name, not a number, after :, @ or $; $ may go on inside it
        if not _WORD_START.match(text, s + 1):
            return [("other", s, s + 1)], s + 1
        end = _WORD_REST.match(text, s + 2).end()
        return [("param", s, end)], None if end == e else end
    if kind == "blob":  # x'00': the word x, then a string (which a quote right after it continues)
        return [("word", s, s + 1)], s + 1
    if kind == "op":  # -> and ->> are - then > or >> (or >=)
        return [("op", s, s + 1)], s + 1
    return [("param" if kind == "var" else "other", s, e)], None  # ?NNN, or a bad character


def _tokens(text: str) -> list[_Tok]:
    """The significant tokens (no whitespace or comments), each with its bracket depth.

    They are :func:`.sql_lex.sql_tokens`' tokens, split or joined where the rewrites were written against
    other boundaries: an unterminated string or quoted name runs to the end of the text (the rewrites must
    not touch what follows it); a word is ``[^\\W\\d][\\w$]*``, so another non-ASCII character is a token
    of its own; a parameter is ``?NNN`` or :, @ or $ then such a word (``:1`` is ``:`` then ``1``);
    ``x'00'`` is a word then a string; ``->`` and ``->>`` are ``-`` then ``>`` or ``>>``. Where a piece
    ends before its token, lexing starts again there.
    """
    out: list[_Tok] = []
    depth, pos, n = 0, 0, len(text)
    while pos < n:
        again = None
        for t in sql_tokens(text, pos):
            pieces, again = _pieces(text, t)
            for kind, s, e in pieces:
                piece = text[s:e]
                if piece == ")":
                    depth = max(0, depth - 1)
                out.append(_Tok(kind, s, e, piece, piece.upper() if kind == "word" else piece, depth))
                if piece == "(":
                    depth += 1
            if again is not None:
                break
        if again is None:
            break
        pos = again
    return out


# -- SQLite's keywords ------------------------------------------------------------------------------------
# Words SQLite rejects as a bare name everywhere (as a column, an alias, a table, after "t."); checked by
# the tests against the sqlite3 module. NULL is not here: it is a value in a column's place.
SQLITE_RESERVED = frozenset("""
ADD ALL ALTER AND AS AUTOINCREMENT BETWEEN CASE CHECK COLLATE COMMIT CONSTRAINT CREATE DEFAULT DEFERRABLE
DELETE DISTINCT DROP ELSE ESCAPE EXCEPT EXISTS FOREIGN FROM GROUP HAVING IN INDEX INSERT INTERSECT INTO IS
ISNULL JOIN LIMIT NOT NOTHING NOTNULL ON OR ORDER PRIMARY REFERENCES RETURNING SELECT SET TABLE THEN TO
TRANSACTION UNION UNIQUE UPDATE USING VALUES WHEN WHERE
""".split())

# Every SQLite keyword (https://sqlite.org/lang_keywords.html); a word not in it is always a name in SQLite.
SQLITE_KEYWORDS = frozenset("""
ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN BETWEEN BY CASCADE
CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME
CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED DELETE DESC DETACH DISTINCT DO DROP EACH ELSE END ESCAPE
EXCEPT EXCLUDE EXCLUSIVE EXISTS EXPLAIN FAIL FILTER FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP
GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL JOIN
KEY LAST LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER
OTHERS OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP REINDEX
RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT SELECT SET TABLE TEMP TEMPORARY THEN
TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH
WITHOUT
""".split())

_TS_ONLY_KEYWORDS: dict[str, frozenset[str]] = {}


def _ts_only_keywords() -> frozenset[str]:
    """Words tree-sitter-sql reads as keywords (other dialects': ANY, ARRAY, INTERVAL, ONLY, SOME, ...) that
    are not SQLite keywords, so in SQLite they are always names; read from the grammar's node types."""
    hit = _TS_ONLY_KEYWORDS.get("sql")
    if hit is None:
        # imported here, not at the top: code.py imports this module
        from .code import _entry, _language

        lang = _language(_entry("sql"))
        words = set()
        for i in range(lang.node_kind_count):
            kind = lang.node_kind_for_id(i) or ""
            if kind.startswith("keyword_") and lang.node_kind_is_named(i):
                words.add(kind[len("keyword_"):].upper())
        hit = _TS_ONLY_KEYWORDS["sql"] = frozenset(w for w in words if re.fullmatch(r"[A-Z][A-Z0-9_]*", w)) - \
            SQLITE_KEYWORDS - {"TRUE", "FALSE"}
    return hit


# -- the rewrites ------------------------------------------------------------------------------------------
# A token after which an operator (not an operand) comes: the end of an operand.
_OPERAND_END_WORDS = frozenset({"NULL", "TRUE", "FALSE", "END", "CURRENT_DATE", "CURRENT_TIME",
                                "CURRENT_TIMESTAMP"})
# Non-reserved words after which an operand, not an operator, comes.
_OPERAND_START_WORDS = frozenset({"BY", "LIKE", "GLOB", "REGEXP", "MATCH", "CAST", "FILTER", "OVER"})
_JOIN_KIND = frozenset({"INNER", "LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "NATURAL"})
_JOIN_STOP = frozenset({"JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "WHERE", "GROUP",
                        "HAVING", "ORDER", "LIMIT", "WINDOW", "UNION", "INTERSECT", "EXCEPT", "RETURNING"})
_ARG_STOP = frozenset({"OFFSET", "UNION", "INTERSECT", "EXCEPT", "ORDER", "LIMIT"})


def _ends_operand(t: _Tok | None) -> bool:
    """Whether ``t`` can end an operand, so that what follows it is an operator (``x NOTNULL``)."""
    if t is None:
        return False
    if t.kind in ("string", "qident", "number", "param") or t.text == ")":
        return True
    if t.kind != "word":
        return False
    if t.up in _OPERAND_END_WORDS:
        return True
    return t.up not in SQLITE_RESERVED and t.up not in _OPERAND_START_WORDS


def _balanced(toks: list[_Tok]) -> bool:
    d = 0
    for t in toks:
        if t.text == "(":
            d += 1
        elif t.text == ")":
            d -= 1
            if d < 0:
                return False
    return d == 0


@dataclass(frozen=True)
class SqliteRewrite:
    """One SQLite construct that tree-sitter-sql flags although SQLite accepts it, and how it is hidden."""

    name: str
    construct: str
    replacement: str
    example: str


SQLITE_REWRITES: tuple[SqliteRewrite, ...] = (
    SqliteRewrite("double_equals", "== as equality", "= and a space",
                  "SELECT name FROM products WHERE price == 10"),
    SqliteRewrite("glob_regexp_match", "the GLOB, REGEXP and MATCH operators", "LIKE, padded",
                  "SELECT name FROM customers WHERE name GLOB 'A*'"),
    SqliteRewrite("null_tests", "postfix ISNULL, NOTNULL and NOT NULL", "blanks (the operand alone remains)",
                  "SELECT name FROM customers WHERE city NOTNULL"),
    SqliteRewrite("collate", "COLLATE <collation> after an expression", "blanks",
                  "SELECT name FROM customers ORDER BY name COLLATE NOCASE"),
    SqliteRewrite("exponent_case", "an upper-case exponent (1E5, 1.5E-2)", "a lower-case e",
                  "SELECT 1.5E-2 AS x"),
    SqliteRewrite("parameters", "numbered and named parameters (?1, :id, @id, $id)", "? and blanks",
                  "SELECT name FROM customers WHERE id = :id"),
    SqliteRewrite("limit_expressions", "LIMIT/OFFSET with an expression, not a plain number "
                  "(LIMIT ?, LIMIT 1 + 1, OFFSET (SELECT 1)), and LIMIT <offset>, <count>",
                  "1 and blanks (brackets inside must balance; the expression itself is not checked)",
                  "SELECT name FROM products LIMIT 5, 10"),
    SqliteRewrite("join_without_constraint", "[INNER|LEFT [OUTER]] JOIN without ON or USING",
                  "a comma join, padded", "SELECT c.name FROM customers c JOIN orders o WHERE o.id = c.id"),
    SqliteRewrite("bracket_identifiers", "[bracketed] identifiers", "`backquoted`",
                  "SELECT [name] FROM customers"),
    SqliteRewrite("keyword_names", "names that are keywords for tree-sitter-sql but not for SQLite (object_id, "
                  "interval, array, any, some, only, ...), except function names and CAST types",
                  "x and underscores", "SELECT object_id, interval FROM events WHERE array IS NOT NULL"),
)

# Valid SQLite that tree-sitter-sql still flags after the rewrites (kept here so that the tests keep the
# list true). grammars/sqlite_select.lark produces none of them: its SELECTs always have a FROM, write AS
# before every alias, and use none of these forms.
SQL_KNOWN_FALSE_POSITIVES: tuple[tuple[str, str], ...] = (
    ("a VALUES statement", "VALUES (1), (2)"),
    ("IN followed by a table name instead of a list", "SELECT name FROM customers WHERE id IN orders"),
    ("CAST with no type name", "SELECT CAST(price AS) FROM products"),
    ("SELECT without FROM but with WHERE, GROUP BY, ORDER BY or LIMIT", "SELECT 1 AS a ORDER BY a"),
    (("a table alias without AS that tree-sitter-sql takes for the start of another statement (end, "
      "replace, with, window, explain, ...)"), "SELECT name FROM customers end"),
    ("TRUE or FALSE as a table name or alias", "SELECT true.name FROM customers AS true"),
)


def _blank(buf: list[str], start: int, end: int, fill: str = "") -> None:
    """Overwrite ``buf[start:end]`` with ``fill`` then spaces; newlines stay so line numbers hold."""
    for i in range(start, end):
        k = i - start
        if k < len(fill):
            buf[i] = fill[k]
        elif buf[i] not in "\r\n":
            buf[i] = " "


def sqlite_rewrite(text: str, only: frozenset[str] | set[str] | None = None) -> str:
    """``text`` with the SQLite constructs of :data:`SQLITE_REWRITES` replaced by same-length text that
    tree-sitter-sql parses (``only``: apply just the rewrites of these names). Strings, quoted names and
    comments are never touched."""
    toks = _tokens(text)
    if not toks:
        return text
    on = (lambda name: True) if only is None else (lambda name: name in only)
    buf = list(text)
    n = len(toks)
    renamed = _ts_only_keywords() if on("keyword_names") else frozenset()
    openers: list[str] = []  # for each open bracket, the word before it ("CAST", a function name, "")
    covered = 0  # the text before this offset has been rewritten: its tokens are left alone
    for i, t in enumerate(toks):
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < n else None
        if t.text == "(":
            openers.append(prev.up if prev is not None and prev.kind == "word" else "")
        elif t.text == ")" and openers:
            openers.pop()
        if t.start < covered:
            continue
        if t.kind == "word" and t.up in renamed:
            is_call = nxt is not None and nxt.text == "("
            is_cast_type = bool(openers) and openers[-1] == "CAST" and prev is not None and prev.up == "AS"
            if not is_call and not is_cast_type:
                _blank(buf, t.start, t.end, "x" + "_" * (t.end - t.start - 1))
        elif t.kind == "op" and t.text == "==" and on("double_equals"):
            _blank(buf, t.start, t.end, "=")
        elif t.kind == "word" and t.up in ("GLOB", "REGEXP", "MATCH") and on("glob_regexp_match") and (
                _ends_operand(prev) or (prev is not None and prev.up == "NOT" and i >= 2
                                        and _ends_operand(toks[i - 2]))):
            _blank(buf, t.start, t.end, "LIKE")
        elif t.kind == "word" and t.up in ("ISNULL", "NOTNULL") and on("null_tests") and _ends_operand(prev):
            _blank(buf, t.start, t.end)
        elif t.kind == "word" and t.up == "NOT" and nxt is not None and nxt.up == "NULL" and on("null_tests") \
                and _ends_operand(prev):
            _blank(buf, t.start, nxt.end)
            covered = nxt.end
        elif t.kind == "word" and t.up == "COLLATE" and on("collate") and nxt is not None and \
                nxt.kind in ("word", "qident", "string"):
            _blank(buf, t.start, nxt.end)
            covered = nxt.end
        elif t.kind == "number" and on("exponent_case") and "E" in t.text and t.text[:2] not in ("0x", "0X"):
            _blank(buf, t.start, t.end, t.text.replace("E", "e"))
        elif t.kind == "param" and t.text != "?" and on("parameters"):
            _blank(buf, t.start, t.end, "?")
        elif t.kind == "qident" and t.text.startswith("[") and "`" not in t.text and on("bracket_identifiers"):
            _blank(buf, t.start, t.end, "`" + t.text[1:-1] + "`")
        elif t.kind == "word" and t.up == "LIMIT" and on("limit_expressions"):
            covered = _rewrite_limit(buf, toks, i)
        elif t.kind == "word" and t.up == "JOIN" and on("join_without_constraint"):
            _rewrite_bare_join(buf, toks, i)
    return "".join(buf)


def _arg_extent(toks: list[_Tok], i: int, stop_comma: bool) -> int:
    """Index one past the last token of the expression that starts at ``toks[i]`` (same bracket depth)."""
    d = toks[i].depth if i < len(toks) else 0
    j = i
    while j < len(toks):
        t = toks[j]
        if t.depth == d and (t.text == ";" or (stop_comma and t.text == ",") or
                             (t.kind == "word" and t.up in _ARG_STOP)):
            break
        if t.depth < d:
            break
        j += 1
    return j


def _simple_number(toks: list[_Tok]) -> bool:
    if len(toks) == 1:
        return toks[0].kind == "number"
    return len(toks) == 2 and toks[0].text in ("-", "+") and toks[1].kind == "number"


def _rewrite_limit(buf: list[str], toks: list[_Tok], i: int) -> int:
    """``LIMIT a``, ``LIMIT a, b``, ``LIMIT a OFFSET b``: each expression that is not a plain number becomes
    ``1`` (``, b`` goes), provided its brackets balance. Returns the offset where the rewrite ended."""
    a = i + 1
    b = _arg_extent(toks, a, stop_comma=True)
    arg = toks[a:b]
    if not arg or not _balanced(arg):
        return toks[i].end
    if not _simple_number(arg):
        _blank(buf, arg[0].start, arg[-1].end, "1")
    if b >= len(toks) or toks[b].depth != toks[i].depth or not (toks[b].text == "," or toks[b].up == "OFFSET"):
        return arg[-1].end
    c = _arg_extent(toks, b + 1, stop_comma=True)
    second = toks[b + 1:c]
    if not second or not _balanced(second):
        return arg[-1].end
    if toks[b].text == ",":
        _blank(buf, toks[b].start, second[-1].end)
    elif not _simple_number(second):
        _blank(buf, second[0].start, second[-1].end, "1")
    return second[-1].end


def _rewrite_bare_join(buf: list[str], toks: list[_Tok], i: int) -> None:
    d = toks[i].depth
    first = i
    while first > 0 and toks[first - 1].up in _JOIN_KIND and toks[first - 1].depth == d:
        first -= 1
    kinds = {t.up for t in toks[first:i]}
    if kinds & {"CROSS", "NATURAL"}:  # tree-sitter-sql parses these without a constraint
        return
    j = i + 1
    while j < len(toks):
        t = toks[j]
        if t.depth < d or (t.depth == d and (t.text in (",", ";") or t.up in _JOIN_STOP)):
            break
        if t.depth == d and t.up in ("ON", "USING"):
            return
        j += 1
    if j == i + 1:  # nothing joined: leave the error
        return
    _blank(buf, toks[first].start, toks[i].end, ",")


# -- reserved words taken for names ---------------------------------------------------------------------
_IDENTIFIERS: dict[str, tuple[Any, Any]] = {}  # grammar name -> (language, query finding identifiers)


def _identifier_query(lang):
    """The query that finds identifier nodes, built once per language (a Query is read-only: shareable)."""
    hit = _IDENTIFIERS.get(lang.name)
    if hit is None or hit[0] is not lang:
        import tree_sitter

        hit = _IDENTIFIERS[lang.name] = (lang, tree_sitter.Query(lang, "(identifier) @id"))
    return hit[1]


_OPERATOR_CHARS = frozenset("+-*/%|&<>=~!,")


def _sql_extra(text: str, issues: list[Issue], who: str, *, tree, offsets: _Offsets, parsed: str) -> list[Issue]:
    """Add an issue for each reserved word that tree-sitter-sql took for a name (``SELECT FROM t``)."""
    import tree_sitter

    from .base import spans_overlap
    from .code import _line_col

    captures = tree_sitter.QueryCursor(_identifier_query(tree.language)).captures(tree.root_node)
    found = []
    for node in captures.get("id", ()):
        if node.end_byte - node.start_byte > 17 or not node.text.isalpha():  # longest reserved word: 13
            continue
        if node.text.decode("ascii", "replace").upper() not in SQLITE_RESERVED:
            continue
        start, end = offsets.char(node.start_byte), offsets.char(node.end_byte)
        # an operator or comma right before it is part of the mistake ("a + FROM", "a, FROM")
        k = start
        while k > 0 and parsed[k - 1].isspace():
            k -= 1
        op_start = k
        while op_start > 0 and parsed[op_start - 1] in _OPERATOR_CHARS and k - op_start < 2:
            op_start -= 1
        span = (op_start if op_start < k else start, end)
        if any(spans_overlap(span, i.span) for i in issues):
            continue
        word = text[start:end]
        line, col = _line_col(text, start)
        ctx = node.parent.type if node.parent is not None else ""
        found.append((start, Issue(
            f'line {line} column {col}: "{word}" is a reserved word, not a name: something is missing before '
            f'it (a column, a table or an operand), or write "{word}" in double quotes if it really is a name',
            span, ctx, who)))
    if not found:
        return issues
    found.sort(key=lambda x: x[0])
    return sorted([*issues, *(i for _, i in found)], key=lambda i: i.span[0] if i.span else -1)

