"""Python's syntax check around tree-sitter: CPython's own parser is the referee.

tree-sitter-python locates the errors (``code.CodeSyntaxValidator``), but its grammar accepts text that
Python rejects (any inconsistent indentation, Python 2 ``print x``, ``a +* b``), and the running
interpreter's parser (``compile``, AST only) is at hand. So the text is valid exactly when it compiles;
Python's own error is added when tree-sitter found nothing overlapping it, and tree-sitter's issues are
dropped when the text compiles (syntax newer than tree-sitter's grammar). :func:`_python_extra` is the
``extra`` step of the built-in ``python`` entry of the language registry.
"""

from __future__ import annotations

import ast
import re

from .base import Issue, Span, spans_overlap, tail_span

_NEWLINE = re.compile(r"\r\n|\r|\n")


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def _python_extra(text: str, issues: list[Issue], who: str, **_) -> list[Issue]:
    try:
        compile(text, "<code>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return []
    except SyntaxError as e:
        own = _syntax_error_issue(text, e, who)
    except (ValueError, UnicodeError) as e:  # null bytes; lone surrogates
        pos = getattr(e, "start", None) if isinstance(e, UnicodeError) else text.find("\x00")
        span = (pos, pos + 1) if isinstance(pos, int) and 0 <= pos < len(text) else None
        own = Issue(f"Python cannot read this text: {e}", span, type(e).__name__, who)
    except (RecursionError, MemoryError) as e:
        own = Issue(f"Python's parser gave up: the code is nested too deeply ({type(e).__name__})", None,
                    type(e).__name__, who)
    if any(spans_overlap(own.span, i.span) for i in issues):
        return issues
    return sorted([*issues, own], key=lambda i: i.span[0] if i.span else -1)


def _syntax_error_issue(text: str, e: SyntaxError, who: str) -> Issue:
    starts = _line_starts(text)
    n = len(text)
    lineno = e.lineno or 1
    if lineno > len(starts):
        span = tail_span(text, n)
        return Issue(f"{e.msg} (at the end of the text)", span, type(e).__name__, who)
    line_start = starts[lineno - 1]
    line_end = starts[lineno] if lineno < len(starts) else n
    line_end_stripped = line_start + len(text[line_start:line_end].rstrip("\r\n"))
    col = max(1, e.offset or 1)
    start = min(line_start + col - 1, n)
    if isinstance(e, IndentationError):
        # the whole line: its indentation and its first tokens are what must change
        span: Span | None = (line_start, max(line_end_stripped, line_start + 1))
    else:
        end = None
        if e.end_lineno and e.end_offset and e.end_offset > 0 and e.end_lineno <= len(starts):
            end = starts[e.end_lineno - 1] + e.end_offset - 1
        if end is None or end <= start:
            end = start + 1
        span = (start, min(end, n)) if start < n else tail_span(text, n)
    if span is not None and span[0] >= span[1]:
        span = tail_span(text, n)
    if isinstance(e, IndentationError):
        line_text = text[line_start:line_end_stripped]
        start = line_start + len(line_text) - len(line_text.lstrip())
    msg = f"line {lineno} column {start - line_start + 1}: {e.msg}"
    return Issue(msg, span, type(e).__name__, who)
