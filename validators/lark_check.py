"""Validators for text specs: a Lark grammar, a regex, a fixed list of choices.

:class:`LarkValidator` parses with Lark's Earley parser (any context-free grammar works, ambiguous ones
included); parsers are built once per ``(grammar text, start rule)`` and cached. A parse error becomes an
:class:`~.base.Issue` spanning from the failing character to the end of the text, naming the terminals
the grammar expected there. :class:`RegexValidator` requires a full match and :class:`ChoiceValidator`
one of the options exactly; neither can say which part is wrong, so their issues redo the whole output.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

import lark
from lark.exceptions import GrammarError, LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput
from lark.exceptions import UnexpectedToken

from structgen.errors import GrammarSyntaxError, SpecError

from .base import Issue, tail_span


@functools.lru_cache(maxsize=64)
def _parser(grammar_text: str, start: str) -> lark.Lark:
    try:
        return lark.Lark(grammar_text, start=start, parser="earley")
    except GrammarError as e:
        raise GrammarSyntaxError(f"Lark grammar is invalid: {e}") from None
    except LarkError as e:
        raise GrammarSyntaxError(f"Lark grammar has a syntax error: {str(e).strip()}") from None


class LarkValidator:
    """Checks that the whole text parses with a Lark grammar from rule ``start``."""

    name = "lark"

    def __init__(self, grammar_text: str, start: str = "start"):
        self.grammar_text = grammar_text
        self.start = start
        self._lark = _parser(grammar_text, start)

    def __repr__(self) -> str:
        return f"LarkValidator(start={self.start!r})"

    def __call__(self, text: str) -> list[Issue]:
        try:
            self._lark.parse(text)
        except UnexpectedInput as e:
            offset = _error_offset(e, text)
            expected = self._describe(_expected_terminals(e))
            if offset >= len(text):
                what = "the text ended early"
            else:
                what = f"unexpected {text[offset : offset + 10]!r}"
                what += "..." if len(text) > offset + 10 else ""
            line = text.count("\n", 0, offset) + 1
            col = offset - (text.rfind("\n", 0, offset) + 1) + 1
            msg = f"line {line} column {col}: {what}"
            if expected:
                msg += f"; expected one of: {expected}"
            return [Issue(msg, tail_span(text, offset), self.start, self.name)]
        return []

    def _describe(self, names: Iterable[str]) -> str:
        shown = []
        for name in sorted(set(names)):
            try:
                pattern = self._lark.get_terminal(name).pattern
            except KeyError:
                shown.append(name)
                continue
            if pattern.type == "str":
                shown.append(repr(pattern.value))
            elif name.startswith("__"):
                shown.append(f"/{pattern.value}/")
            else:
                shown.append(f"{name} /{pattern.value}/")
        return ", ".join(shown)


def _error_offset(e: UnexpectedInput, text: str) -> int:
    """The character offset where the parse failed (the end of the text for an unexpected end)."""
    if isinstance(e, UnexpectedEOF):
        return len(text)
    if isinstance(e, UnexpectedToken):
        pos = getattr(e.token, "start_pos", None)
        if e.token.type == "$END" or pos is None:
            return len(text)
        return pos
    pos = getattr(e, "pos_in_stream", None)
    return len(text) if pos is None or pos < 0 else pos


def _expected_terminals(e: UnexpectedInput) -> set[str]:
    if isinstance(e, UnexpectedCharacters):
        return set(e.allowed or ())
    if isinstance(e, UnexpectedToken):
        return set(e.accepts or e.expected or ())
    if isinstance(e, UnexpectedEOF):
        return set(e.expected or ())
    return set()


class RegexValidator:
    """Checks that the whole text matches a regular expression (``re.fullmatch``)."""

    name = "regex"

    def __init__(self, pattern: str):
        try:
            self._re = re.compile(pattern)
        except re.error as e:
            raise SpecError(f"invalid regex {pattern!r}: {e}") from None
        self.pattern = pattern

    def __repr__(self) -> str:
        return f"RegexValidator({self.pattern!r})"

    def __call__(self, text: str) -> list[Issue]:
        if self._re.fullmatch(text):
            return []
        return [Issue(f"the output does not match the regex {self.pattern!r}", None, "", self.name)]


class ChoiceValidator:
    """Checks that the text is exactly one of the options."""

    name = "choice"

    def __init__(self, options: Iterable[str]):
        self.options = tuple(dict.fromkeys(options))
        if not self.options:
            raise SpecError("ChoiceValidator needs at least one option")
        self._set = frozenset(self.options)

    def __repr__(self) -> str:
        return f"ChoiceValidator({list(self.options)!r})"

    def __call__(self, text: str) -> list[Issue]:
        if text in self._set:
            return []
        shown = ", ".join(map(repr, self.options[:10])) + (", ..." if len(self.options) > 10 else "")
        return [Issue(f"the output {text[:40]!r} is not one of: {shown}", None, "", self.name)]
