"""Code syntax checks with tree-sitter: :class:`CodeSyntaxValidator` turns every syntax error in a piece of
code into an :class:`~.base.Issue` whose span the repair can re-mask.

This module owns the language registry (a language name -> the per-language tree-sitter wheel that holds
its parser; :func:`register_language` adds more), the per-thread parsers, the conversion of tree-sitter's
ERROR and MISSING nodes into issues with *character* spans, and the per-language adjustments below. The
wheels are optional dependencies (``pip install "structgen[sql]"``); ``tree-sitter-language-pack`` is not
used because it downloads parsers at run time.

**SQL** (``tree-sitter-sql``, one grammar for many dialects) is a second opinion on SQLite SELECT
statements: :mod:`.code_sqlite` holds what makes it one (:func:`sqlite_rewrite`, which hides the SQLite
constructs tree-sitter-sql wrongly flags, with :data:`SQLITE_REWRITES` and :data:`SQL_KNOWN_FALSE_POSITIVES`,
and the check that no word SQLite reserves, :data:`SQLITE_RESERVED`, stands where a name goes); its public
names are re-exported here.

**Python** (``tree-sitter-python``): tree-sitter locates the errors and CPython's own parser is the
referee (:mod:`.code_python`).
"""

from __future__ import annotations

import bisect
import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from structgen.errors import SpecError

from .base import Issue, Span, tail_span
from .code_python import _python_extra
from .code_sqlite import (  # code_sqlite imports this module's helpers only when first used
    SQL_KNOWN_FALSE_POSITIVES,
    SQLITE_KEYWORDS,
    SQLITE_RESERVED,
    SQLITE_REWRITES,
    SqliteRewrite,
    _sql_extra,
    _ts_only_keywords,  # noqa: F401  (re-exported: the tests read code._ts_only_keywords)
    sqlite_rewrite,
)

__all__ = [
    "CodeSyntaxValidator",
    "LanguageEntry",
    "register_language",
    "languages",
    "sqlite_rewrite",
    "SQLITE_REWRITES",
    "SQLITE_RESERVED",
    "SQLITE_KEYWORDS",
    "SQL_KNOWN_FALSE_POSITIVES",
    "SqliteRewrite",
]

MAX_ISSUES = 20  # beyond this, one last issue covers the rest of the text
_SNIPPET = 24  # characters of the offending text quoted in a message


# -- the language registry -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LanguageEntry:
    """Where a language's tree-sitter parser lives, and what to do around it.

    ``module`` is imported and ``getattr(module, attr)()`` must return the language pointer (the
    convention of the per-language ``tree-sitter-<lang>`` wheels); ``package`` is what ``pip install``
    needs. Built-in entries may add ``rewrite`` (text -> text of the same length, parsed instead of the
    text) and ``extra`` (``extra(text, issues, validator_name, tree=, offsets=, parsed=)`` -> the final
    issues), which run before and after tree-sitter.
    """

    name: str
    module: str
    package: str
    attr: str = "language"
    rewrite: Callable[[str], str] | None = None
    extra: Callable[..., list[Issue]] | None = None


_REGISTRY: dict[str, LanguageEntry] = {}
_REGISTRY_LOCK = threading.Lock()
_LANGUAGES: dict[str, Any] = {}  # name -> tree_sitter.Language (immutable, shared by all threads)


def register_language(name: str, module: str, package: str, attr: str = "language", *,
                      replace: bool = False) -> LanguageEntry:
    """Make ``CodeSyntaxValidator(name)`` available, e.g.
    ``register_language("javascript", "tree_sitter_javascript", "tree-sitter-javascript")``.

    ``module`` is imported when a validator for the language is first built; ``getattr(module, attr)()``
    must return the language (the convention of the ``tree-sitter-<lang>`` wheels); ``package`` is named
    in the error when the module is missing.
    """
    return _register(LanguageEntry(_key(name), module, package, attr), replace)


def _register(entry: LanguageEntry, replace: bool = False) -> LanguageEntry:
    key = entry.name
    if not key or not re.fullmatch(r"[a-z0-9_+#.-]+", key):
        raise SpecError(f"language name {entry.name!r} must be a non-empty word such as 'javascript'")
    with _REGISTRY_LOCK:
        if key in _REGISTRY and not replace:
            raise SpecError(f"language {key!r} is already registered; pass replace=True to replace it")
        _REGISTRY[key] = entry
        _LANGUAGES.pop(key, None)
    return entry


def languages() -> list[str]:
    """The registered language names."""
    with _REGISTRY_LOCK:
        return sorted(_REGISTRY)


def _key(name: Any) -> str:
    return name.strip().lower() if isinstance(name, str) else ""


def _entry(name: str) -> LanguageEntry:
    with _REGISTRY_LOCK:
        entry = _REGISTRY.get(_key(name))
        known = ", ".join(sorted(_REGISTRY))
    if entry is None:
        raise SpecError(
            f"no tree-sitter language named {name!r}; known: {known}. Register another with "
            "structgen.validators.code.register_language(name, module, pip_package)"
        )
    return entry


def _language(entry: LanguageEntry):
    """The ``tree_sitter.Language`` of an entry, loaded once."""
    lang = _LANGUAGES.get(entry.name)
    if lang is not None:
        return lang
    try:
        import tree_sitter
    except ImportError:
        raise SpecError(
            "code syntax checks need the tree-sitter package: pip install tree-sitter "
            f"{entry.package} (or pip install \"structgen[sql]\")"
        ) from None
    try:
        mod = importlib.import_module(entry.module)
    except ImportError:
        raise SpecError(
            f"the tree-sitter grammar for {entry.name!r} is not installed: pip install {entry.package}"
        ) from None
    fn = getattr(mod, entry.attr, None)
    if not callable(fn):
        raise SpecError(
            f"module {entry.module} (from {entry.package}) has no {entry.attr}() returning a tree-sitter "
            f"language; check the name given to register_language or upgrade {entry.package}"
        )
    try:
        lang = tree_sitter.Language(fn())
    except Exception as e:  # an ABI mismatch between the wheel and the tree-sitter runtime, usually
        raise SpecError(
            f"cannot load the tree-sitter grammar from {entry.package}: {e}. Install versions of "
            f"tree-sitter and {entry.package} that match (pip install -U tree-sitter {entry.package})"
        ) from None
    with _REGISTRY_LOCK:
        return _LANGUAGES.setdefault(entry.name, lang)


_LOCAL = threading.local()  # tree-sitter Parser objects are not thread-safe: one per thread and language


def _parser(entry: LanguageEntry, lang):
    parsers = getattr(_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _LOCAL.parsers = {}
    p = parsers.get(entry.name)
    if p is None or p[0] is not lang:
        import tree_sitter

        p = parsers[entry.name] = (lang, tree_sitter.Parser(lang))
    return p[1]


# -- byte offsets <-> characters --------------------------------------------------------------------------
class _Offsets:
    """Maps tree-sitter's byte offsets in the UTF-8 encoding of a text to character offsets and back.

    Lone surrogates (not encodable) are encoded as ``?``, one byte, so the parse still sees one character.
    """

    def __init__(self, text: str):
        self.text = text
        try:
            self.data = text.encode("utf-8")
        except UnicodeEncodeError:
            self.data = text.encode("utf-8", "replace")
        self.ascii = len(self.data) == len(text)
        self._starts: list[int] | None = None

    def _table(self) -> list[int]:
        if self._starts is None:
            starts, b = [], 0
            for ch in self.text:
                starts.append(b)
                o = ord(ch)
                b += 1 if o < 0x80 or 0xD800 <= o < 0xE000 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
            starts.append(b)
            self._starts = starts
        return self._starts

    def char(self, byte: int) -> int:
        if self.ascii:
            return max(0, min(byte, len(self.text)))
        return min(bisect.bisect_left(self._table(), byte), len(self.text))

    def byte(self, char: int) -> int:
        if self.ascii:
            return char
        return self._table()[max(0, min(char, len(self.text)))]


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _snippet(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= _SNIPPET else s[: _SNIPPET - 3] + "..."


def _point_span(text: str, pos: int) -> Span | None:
    """A span the repair can act on for an empty error at ``pos`` (a MISSING token): the characters on
    both sides of it, or the last word when it sits at the end of the text."""
    n = len(text)
    if pos >= n:
        return tail_span(text, n)
    return (max(0, pos - 1), min(n, pos + 1))


_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def _bracket_problem(node) -> tuple[Any, bool] | None:
    """The first bracket among an ERROR node's tokens (its leaves) that is never closed or that closes
    nothing, and whether it is an opening one; None when the brackets match."""
    stack, todo, stray = [], [node], None
    while todo:
        n = todo.pop()
        if n.child_count:
            todo.extend(reversed(n.children))
            continue
        t = n.type
        if t in _OPEN:
            stack.append(n)
        elif t in _CLOSE:
            if stack and stack[-1].type == _CLOSE[t]:
                stack.pop()
            elif stray is None:
                stray = n
    first_open = stack[0] if stack else None
    if first_open is not None and (stray is None or first_open.start_byte < stray.start_byte):
        return first_open, True
    return (stray, False) if stray is not None else None


def _missing_name(node_type: str) -> str:
    m = re.fullmatch(r"keyword_([a-z_]+?)(?:_token\d+)?", node_type)
    if m:
        return f"the keyword {m.group(1).upper()}"
    if re.fullmatch(r"_?[A-Za-z_][A-Za-z0-9_]*", node_type):
        words = node_type.strip("_").replace("_", " ")
        return f"{'an' if words[:1] in 'aeiou' else 'a'} {words}"
    return f'"{node_type}"'


def _context(node) -> str:
    """The type of the nearest ancestor that covers some text (a MISSING node's parent is often empty)."""
    p = node.parent
    while p is not None and p.start_byte == p.end_byte and p.parent is not None:
        p = p.parent
    return p.type if p is not None else ""


def _tree_issues(tree, original: str, offs: _Offsets, who: str) -> list[Issue]:
    """One issue per ERROR node (not looking inside it) and per MISSING node, in text order."""
    issues: list[tuple[int, Issue]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_missing or (node.has_error and not node.is_error and node.child_count == 0):
            # (a MISSING token inside a hidden rule shows as an empty leaf that has an error)
            pos = offs.char(node.start_byte)
            line, col = _line_col(original, pos)
            msg = f"line {line} column {col}: missing {_missing_name(node.type)}"
            issues.append((pos, Issue(msg, _point_span(original, pos), _context(node), who)))
        elif node.is_error:
            start, end = offs.char(node.start_byte), offs.char(node.end_byte)
            problem = _bracket_problem(node)
            if problem is not None:
                bracket, opening = problem
                start = offs.char(bracket.start_byte)
                line, col = _line_col(original, start)
                what = "is never closed" if opening else "closes no open bracket"
                msg = f'line {line} column {col}: "{bracket.type}" {what}'
                span: Span | None = (start, max(end, start + 1))
            else:
                line, col = _line_col(original, start)
                if end > start:
                    msg = f'line {line} column {col}: unexpected "{_snippet(original[start:end])}"'
                    span = (start, end)
                    tail = original[start:end].rstrip()
                    if end >= len(original.rstrip()) and tail and tail[-1] not in ")]};":
                        msg += " (the text ends before this is complete)"
                else:
                    msg = f"line {line} column {col}: unexpected text here"
                    span = _point_span(original, start)
            issues.append((start, Issue(msg, span, node.parent.type if node.parent else "", who)))
        elif node.has_error:
            stack.extend(reversed(node.children))
    issues.sort(key=lambda x: x[0])
    return [i for _, i in issues]


def _cap(issues: list[Issue], text: str, who: str) -> list[Issue]:
    """At most :data:`MAX_ISSUES` issues: the last one stands for all the rest, up to the end of the text."""
    if len(issues) <= MAX_ISSUES:
        return issues
    rest = issues[MAX_ISSUES - 1:]
    first = min((i.span[0] for i in rest if i.span is not None), default=None)
    if first is None or any(i.span is None for i in rest):
        span = None
    else:
        span = (first, len(text)) if len(text) > first else rest[0].span
    line = _line_col(text, first)[0] if first is not None else 1
    return issues[: MAX_ISSUES - 1] + [
        Issue(f"{len(rest)} syntax errors from line {line} on, the first: {rest[0].message}", span,
              rest[0].path, who)
    ]


# -- the validator ----------------------------------------------------------------------------------------
class CodeSyntaxValidator:
    """Checks that a text is syntactically valid code in ``language`` ("sql", "python", or any language
    added with :func:`register_language`), using tree-sitter.

    Each ERROR node becomes an issue spanning it (from its first unclosed bracket when it has one), each
    MISSING node an issue spanning the characters on both sides of where the token should be; messages
    give the line and column. Parsers are built once per language and thread and reused. Calling the
    validator never raises: an unexpected failure becomes an issue that redoes the whole output.
    """

    def __init__(self, language: str):
        self._entry = _entry(language)
        self.language = self._entry.name
        self.name = f"tree-sitter:{self.language}"
        self._lang = _language(self._entry)

    def __repr__(self) -> str:
        return f"CodeSyntaxValidator({self.language!r})"

    def __call__(self, text: str) -> list[Issue]:
        if not isinstance(text, str):
            return [Issue(f"expected the decoded text (str), got {type(text).__name__}", None, "", self.name)]
        try:
            return self._check(text)
        except Exception as e:  # never crash generation: redo the whole output instead
            return [Issue(f"the {self.language} syntax check failed ({type(e).__name__}: {e}); redoing the "
                          "whole output", None, "", self.name)]

    def _check(self, text: str) -> list[Issue]:
        entry = self._entry
        issues = self._parse_issues(text, text)
        if issues and entry.rewrite is not None:
            # the rewrite only hides false positives, so it is needed only when the text as written is flagged
            rewritten = entry.rewrite(text)
            if len(rewritten) != len(text):  # a rewrite must keep every offset; a bug otherwise
                raise AssertionError(f"the {entry.name} rewrite changed the text's length")
            if rewritten != text:
                issues = self._parse_issues(text, rewritten)
        return _cap(issues, text, self.name)

    def _parse_issues(self, text: str, parsed: str) -> list[Issue]:
        """The issues of ``text``, parsing ``parsed`` (``text`` or its same-length rewrite)."""
        offs = _Offsets(parsed)
        tree = _parser(self._entry, self._lang).parse(offs.data)
        issues = _tree_issues(tree, text, offs, self.name) if tree.root_node.has_error else []
        if self._entry.extra is not None:
            issues = self._entry.extra(text, issues, self.name, tree=tree, offsets=offs, parsed=parsed)
        return issues


# -- the built-in languages (SQL: code_sqlite.py; Python: code_python.py) ---------------------------------
_register(LanguageEntry("sql", "tree_sitter_sql", "tree-sitter-sql", rewrite=sqlite_rewrite, extra=_sql_extra))
_register(LanguageEntry("python", "tree_sitter_python", "tree-sitter-python", extra=_python_extra))
