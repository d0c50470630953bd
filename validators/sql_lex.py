"""SQLite's tokens, and finding things in SQL text: the lexing half of the SQL validators.

- :func:`sql_tokens` splits text into SQLite :class:`Token` s (comments and whitespace skipped); an
  unterminated string or quoted identifier is a ``bad`` token at its opening quote.
- :func:`find_name` / :func:`find_token` turn a name or token in an error message (SQLite's or sqlglot's)
  into a span of the text; :func:`split_point` finds where a second statement starts.
- The issue builders here need only the text and its tokens: :func:`precheck` (not text, a NUL or unpaired
  surrogate, no statement), a statement that is not a SELECT, several statements, and sqlglot's tokenizer
  and parser errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

from .base import Issue, Span, tail_span

__all__ = [
    "Token", "sql_tokens", "split_point", "find_name", "find_token", "bad_character", "precheck",
    "empty_issue", "not_read_issue", "multi_issues", "token_error_issue", "parse_error_issue",
]


@dataclass(frozen=True)
class Token:
    """One SQLite token: ``kind`` (ident, qident, string, blob, number, var, op, bad), ``[start, end)``."""

    kind: str
    start: int
    end: int
    text: str

    @property
    def value(self) -> str:
        """An identifier's name without its quotes (``""``/ ``` `` ``` doubled quotes undone)."""
        if self.kind != "qident":
            return self.text
        q = self.text[0]
        inner = self.text[1:-1]
        return inner if q == "[" else inner.replace(q * 2, q)


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
   |(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
   |(?P<blob>[xX]'[0-9a-fA-F]*')
   |(?P<string>'(?:[^']|'')*')
   |(?P<qident>"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\])
   |(?P<number>0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
   |(?P<ident>(?:[^\W\d]|[^\x00-\x7f])(?:\w|[^\x00-\x7f]|\$)*)
   |(?P<var>\?\d*|[:@$]\w+)
   |(?P<op>->>|->|\|\||<<|>>|<=|>=|==|!=|<>|[-+*/%&|~<>=(),;.])
   |(?P<bad>.)
    """,
    re.S | re.X,
)


def sql_tokens(text: str, start: int = 0) -> Iterator[Token]:
    """SQLite's tokens in ``text`` (from offset ``start``), comments and whitespace skipped. An unterminated
    string or quoted identifier shows as a ``bad`` token at its opening quote (the rest then lexes as
    ordinary tokens)."""
    for m in _TOKEN.finditer(text, start):
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        yield Token(kind, m.start(), m.end(), m.group(0))


def _tokens_of(text: str, tokens: list[Token] | None) -> list[Token]:
    return tokens if tokens is not None else list(sql_tokens(text))


def split_point(tokens: list[Token]) -> int | None:
    """Where a second statement starts: the first token after the first ``;`` (``None``: one statement)."""
    for i, t in enumerate(tokens):
        if t.kind == "op" and t.text == ";":
            return tokens[i + 1].start if i + 1 < len(tokens) else None
    return None


def find_name(text: str, name: str, tokens: list[Token] | None = None, *, qualifier: bool = False) -> Span | None:
    """The span of the first reference to ``name`` (``a``, ``t.a`` or ``main.t.a``; case-insensitive) in
    ``text``, outside strings and comments, preferring a reference that is not itself part of a longer
    dotted name (SQLite's ``no such column: id`` means a bare ``id``, not the one in ``c.id``). A qualified
    name that is not found is tried without its leading parts (SQLite says ``main.c.id`` for ``c.id``).
    With ``qualifier``, a reference followed by ``.`` (``t`` in ``t.*``) is preferred instead."""
    toks = _tokens_of(text, tokens)
    parts = [p for p in name.split(".") if p] if name else []

    def dot(i: int) -> bool:
        return 0 <= i < len(toks) and toks[i].text == "."

    while parts:
        want = [p.lower() for p in parts]
        n = len(want)
        loose = None
        for i, t in enumerate(toks):
            if t.kind not in ("ident", "qident") or t.value.lower() != want[0]:
                continue
            j, k = i, 1
            while k < n:
                if dot(j + 1) and j + 2 < len(toks) and toks[j + 2].kind in ("ident", "qident") \
                        and toks[j + 2].value.lower() == want[k]:
                    j, k = j + 2, k + 1
                else:
                    break
            if k < n:
                continue
            if (not dot(i - 1) and dot(j + 1)) if qualifier else (not dot(i - 1) and not dot(j + 1)):
                return (t.start, toks[j].end)
            if loose is None:
                loose = (t.start, toks[j].end)
        if loose is not None:
            return loose
        parts = parts[1:]
    return None


def find_token(text: str, raw: str, tokens: list[Token] | None = None) -> int | None:
    """The start of the first token whose text is ``raw`` (case-insensitive), or of ``raw`` in the text."""
    toks = _tokens_of(text, tokens)
    low = raw.lower()
    for t in toks:
        if t.text.lower() == low:
            return t.start
    for t in toks:  # SQLite may quote only part of a token (a prefix of an unterminated string)
        if t.text.lower().startswith(low) and low:
            return t.start
    i = text.lower().find(low) if low else -1
    return i if i >= 0 else None


def bad_character(text: str, validator: str = "") -> Issue | None:
    """NUL characters and unpaired surrogates cannot reach SQLite at all: name the first one."""
    for i, ch in enumerate(text):
        if ch == "\x00" or "\ud800" <= ch <= "\udfff":
            what = "a NUL character" if ch == "\x00" else f"an unpaired surrogate {ch!r}"
            return Issue(f"the SQL contains {what} at offset {i}; remove it", (i, i + 1), "", validator)
    return None


def precheck(text: Any, validator: str) -> tuple[list[Token], Issue | None]:
    """What both validators check first: ``text`` is a string, has no character SQLite cannot take, and
    holds a statement. Gives its tokens, and the issue that ends the check (``None``: go on)."""
    if not isinstance(text, str):
        return [], Issue(f"expected SQL text, got {type(text).__name__}", None, "", validator)
    bad = bad_character(text, validator)
    if bad:
        return [], bad
    tokens = list(sql_tokens(text))
    return tokens, None if tokens else empty_issue(validator)


def empty_issue(validator: str) -> Issue:
    return Issue("the output holds no SQL statement; write one SELECT statement", None, "", validator)


def not_read_issue(text: str, tokens: list[Token], validator: str, what: str) -> Issue:
    start = tokens[0].start if tokens else 0
    return Issue(
        f"{what}: only one read-only SELECT statement (or WITH ... SELECT) is allowed; rewrite it as a SELECT",
        (start, len(text)) if start < len(text) else None, "", validator)


def multi_issues(text: str, split: int | None, validator: str) -> list[Issue]:
    """The issue of a second statement starting at ``split`` (none when ``split`` is ``None``)."""
    if split is None:
        return []
    return [Issue(
        f"more than one statement: a second one starts at offset {split} ({text[split:split + 20]!r}); "
        "write exactly one SELECT statement and end it there",
        (split, len(text)), "", validator)]


def parse_error_issue(text: str, e: Exception, validator: str) -> Issue:
    """sqlglot's ``ParseError``, placed at the line, column and highlighted text it gives."""
    info = (getattr(e, "errors", None) or [{}])[0]
    desc = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", lambda m: m.group(1).upper(),
                  str(info.get("description") or e).split("\n")[0])
    line, col, hl = info.get("line"), info.get("col"), info.get("highlight") or ""
    offset = None
    if isinstance(line, int) and isinstance(col, int) and line >= 1:
        starts = [0] + [m.end() for m in re.finditer("\n", text)]
        if line <= len(starts):
            end = starts[line - 1] + col
            offset = max(0, end - len(hl))
            if hl and text[offset:end] != hl:
                j = text.rfind(hl, 0, min(len(text), end + len(hl)))
                offset = j if j >= 0 else offset
    if offset is None:
        offset = len(text)
    offset = min(offset, len(text))
    where = f"near {hl!r}" if hl else "at the end"
    lineno = text.count("\n", 0, offset) + 1
    colno = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Issue(f"SQL syntax error {where} (line {lineno}, column {colno}): {desc}",
                 tail_span(text, offset), "", validator)


def token_error_issue(text: str, tokens: list[Token], e: Exception, validator: str) -> Issue:
    """sqlglot's ``TokenError``, placed at the first ``bad`` token (an unterminated string or name)."""
    bad = next((t for t in tokens if t.kind == "bad"), None)
    if bad is None:
        return Issue(f"SQL syntax error: {str(e)[:200]}", None, "", validator)
    what = {"'": "string", '"': "quoted name", "`": "quoted name", "[": "quoted name"}.get(bad.text, "token")
    msg = f"unterminated {what} starting at offset {bad.start}" if what != "token" else \
        f"unrecognised character {bad.text!r} at offset {bad.start}"
    return Issue(f"SQL syntax error: {msg}", tail_span(text, bad.start), "", validator)
