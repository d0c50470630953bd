"""structgen.validators: parse and check decoded text, naming the span that must be redone.

A validator is a callable ``text -> list[Issue]`` with a ``name`` (an empty list means valid).
:func:`validators_for` gives the validators that check a spec's results:

- ``JsonSchema`` -> :class:`JsonSchemaValidator` (jsonschema draft 2020-12 with formats, plus pydantic);
  a spec with tools (``ToolCallSpec``, an agent's ``TurnSpec``, grounded or not) -> :class:`ToolCallValidator`
  when a tool has a pydantic model: the schema, then each call's arguments against its tool's model;
- ``Grammar``    -> :class:`LarkValidator`, then the grammar's own ``validators`` (user callables, wrapped
  so that an exception inside one becomes an :class:`Issue` naming it instead of a crash);
- ``Regex``      -> :class:`RegexValidator`;  ``Choice`` -> :class:`ChoiceValidator`.

:class:`CodeSyntaxValidator` (tree-sitter syntax checks of SQL, Python or a registered language) is added
by hand, e.g. to a ``Grammar``'s ``validators``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Any, Callable

from structgen.errors import SpecError

from .base import Issue, Span, Validator, run_validators, tail_span
from .code import CodeSyntaxValidator
from .json_schema import (JsonSchemaValidator, ToolCallValidator, dialect_for, parse_json_value, pydantic_issues,
                          unresolvable_refs)
from .json_spans import JsonSpans, JsonSyntaxIssue, json_pointer, parse_with_spans
from .lark_check import ChoiceValidator, LarkValidator, RegexValidator

__all__ = [
    "Issue",
    "Span",
    "Validator",
    "run_validators",
    "tail_span",
    "JsonSchemaValidator",
    "ToolCallValidator",
    "dialect_for",
    "parse_json_value",
    "pydantic_issues",
    "unresolvable_refs",
    "JsonSpans",
    "JsonSyntaxIssue",
    "json_pointer",
    "parse_with_spans",
    "LarkValidator",
    "RegexValidator",
    "ChoiceValidator",
    "CodeSyntaxValidator",
    "UserValidator",
    "validators_for",
]


class UserValidator:
    """Wraps a user callable ``text -> list[Issue]`` so that it can never crash generation.

    An exception raised inside it, or a return value that is not a list of issues, becomes one issue
    naming the validator (span ``None``: redo the whole output). Issues without a ``validator`` name get it.
    """

    def __init__(self, fn: Callable[[str], Any], name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__

    def __repr__(self) -> str:
        return f"UserValidator({self.name!r})"

    def __call__(self, text: str) -> list[Issue]:
        try:
            result = self.fn(text)
        except Exception as e:  # a user's bug must become a reported issue, not a crash
            return [Issue(f"validator {self.name!r} raised {type(e).__name__}: {e}", None, "", self.name)]
        if result is None:
            return []
        if not isinstance(result, (list, tuple)) or not all(isinstance(i, Issue) for i in result):
            return [
                Issue(
                    f"validator {self.name!r} returned {type(result).__name__}, expected a list of "
                    "structgen.validators.Issue (empty when the text is valid)",
                    None,
                    "",
                    self.name,
                )
            ]
        return [i if i.validator else dataclasses.replace(i, validator=self.name) for i in result]


_JSON_CACHE: OrderedDict[tuple[str, int], JsonSchemaValidator] = OrderedDict()
_JSON_CACHE_SIZE = 256
_JSON_CACHE_LOCK = threading.Lock()


def _json_validator(spec: Any) -> JsonSchemaValidator:
    """One validator per (schema, model, tool models), built once. ``JsonSchema`` has already checked its
    schema against the 2020-12 meta-schema, so only a schema declaring another draft is checked again."""
    from jsonschema import Draft202012Validator

    models = {t.name: t.model for t in getattr(spec, "tools", ()) if t.model is not None}
    key = (spec.key, id(spec.model), tuple((name, id(m)) for name, m in models.items()))
    with _JSON_CACHE_LOCK:
        v = _JSON_CACHE.get(key)
        if v is not None and v.model is spec.model and getattr(v, "models", {}) == models:
            _JSON_CACHE.move_to_end(key)
            return v
    check = dialect_for(spec.schema) is not Draft202012Validator
    v = (ToolCallValidator(spec.schema, models, check_schema=check) if models
         else JsonSchemaValidator(spec.schema, spec.model, check_schema=check))
    with _JSON_CACHE_LOCK:
        _JSON_CACHE[key] = v
        while len(_JSON_CACHE) > _JSON_CACHE_SIZE:
            _JSON_CACHE.popitem(last=False)
    return v


def validators_for(spec: Any) -> list[Validator]:
    """The validators that check results of ``spec`` (a ``structgen.spec`` spec)."""
    from structgen.spec import Choice, Grammar, JsonSchema, Regex

    if isinstance(spec, JsonSchema):
        return [_json_validator(spec)]
    if isinstance(spec, Grammar):
        # a spec may check its syntax with a simpler grammar of the same syntax (Sql: any identifier)
        syntax = getattr(spec, "syntax_grammar", None) or spec.text
        return [LarkValidator(syntax, spec.start), *(UserValidator(v) for v in spec.validators)]
    if isinstance(spec, Regex):
        return [RegexValidator(spec.pattern)]
    if isinstance(spec, Choice):
        return [ChoiceValidator(spec.options)]
    raise SpecError(
        f"no validators for {type(spec).__name__}; pass a JsonSchema, Grammar, Regex or Choice spec"
    )
