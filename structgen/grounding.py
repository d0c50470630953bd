"""Grounding: free-text values that must be quoted, word for word, from a source text (the request).

An extraction or a tool call copies most of its text values from the request: a name, a city, a path, a
subject line. A small model writes them with a neighbouring word stuck on (``"Accra you"``), an edge
lost (``"tmp/dump.sql"``) or text that is nowhere in the request at all. ``generate(..., ground=True)``
makes every free-text string of a JSON Schema spec (``type: "string"`` with no ``enum``, ``const``,
``pattern`` or ``format``) a substring of the request, by construction; an ``email`` string becomes one of
the request's e-mail addresses (left as it is when the request has none). Strings with a pattern, a
format or an enum are untouched: they are converted, not copied (``"2027-01-22"`` from "January 22nd").

How: ``ground_schema`` marks each such subschema with the keyword ``GROUND_KEY`` whose value is the source
text, so the spec's key (hence the constraint cache), the automaton (``constraints.grounded_dfa``: the
product with the source's suffix automaton) and the validator (the keyword asserts ``value in source``,
and a failing value is a span repair redoes) all read the same schema. ``Grounded`` wraps a ``JsonSchema``
(a tool-call spec included) with its marked schema while the prompt, the pydantic model and ``parse`` stay
the wrapped spec's: the model sees the schema it was trained with.

The source is the prompt's text (a string prompt, or the user messages' contents, one per line), or a text
given as ``ground="..."`` (a document the values must come from). Request notes are not part of it.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ConfigError
from .spec import JsonSchema

GROUND_KEY = "x-structgen-quoted-from"
_TEXT_KEYS = {"type", "minLength", "maxLength", "description", "title", "default", "examples", "$comment"}
_DATA_KEYS = {"enum", "const", "default", "examples", "required", "description", "title", GROUND_KEY}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
# the automaton's e-mail form (constraints.placeholders): a dot-atom local part and a host name
_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_EMAIL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@(?:{_LABEL}\.)+{_LABEL}")


def emails_in(source: str) -> list[str]:
    """The e-mail addresses in ``source`` in order of first appearance, as the automaton's form reads them."""
    return list(dict.fromkeys(m.group(0) for m in _EMAIL.finditer(source)))


def _string_only(node: dict) -> bool:
    t = node.get("type")
    return t == "string" or t == ["string"]


def groundable(node: Any, source: str) -> bool:
    """Whether a subschema is a free-text string (or an e-mail string, when ``source`` holds addresses)."""
    if not isinstance(node, dict) or not _string_only(node):
        return False
    keys = set(node) - {GROUND_KEY}
    if keys <= _TEXT_KEYS:
        return True
    return keys <= _TEXT_KEYS | {"format"} and node.get("format") == "email" and bool(emails_in(source))


def ground_schema(schema: Any, source: str) -> Any:
    """A copy of ``schema`` with every groundable string subschema marked with ``GROUND_KEY: source``."""

    def walk(node: Any, is_schema: bool) -> Any:
        if isinstance(node, list):
            return [walk(x, is_schema) for x in node]
        if not isinstance(node, dict):
            return node
        if not is_schema:  # a map of name -> schema
            return {k: walk(v, True) for k, v in node.items()}
        if groundable(node, source):
            return {**node, GROUND_KEY: source}
        return {k: v if k in _DATA_KEYS else walk(v, k not in _SCHEMA_MAPS) for k, v in node.items()}

    return walk(schema, True)


def source_of(schema: Any) -> str | None:
    """The source text a marked schema quotes from (None when nothing in it is grounded)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get(GROUND_KEY), str):
                return node[GROUND_KEY]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def source_text(prompt: Any) -> str:
    """The text a prompt's values are quoted from: a string prompt itself, or its user messages' contents."""
    from .models.base import _check_messages, _content_text

    if isinstance(prompt, str):
        return prompt
    return "\n".join(_content_text(m.get("content")) for m in _check_messages(prompt, "grounding")
                     if m.get("role") == "user")


class Grounded(JsonSchema):
    """``inner`` (a ``JsonSchema`` or a tool-call spec) with its free-text strings quoted from ``source``.

    ``schema`` is the marked schema (``key`` follows it, so each source gets its own constraint); the prompt,
    the pydantic model and any other attribute (``parse``, ``tools``) are ``inner``'s."""

    def __init__(self, inner: JsonSchema, source: str):
        if not isinstance(inner, JsonSchema):
            raise ConfigError(f"grounding applies to JSON Schema specs and tool calls, not {inner!r}; "
                              "leave ground off for regexes, grammars and choices")
        if not isinstance(source, str):
            raise ConfigError(f"the grounding source must be text, got {type(source).__name__}")
        while isinstance(inner, Grounded):
            inner = inner.inner
        for name, value in (("source", inner.source), ("schema", ground_schema(inner.schema, source)),
                            ("model", inner.model), ("in_prompt", inner.in_prompt), ("inner", inner),
                            ("quoted_from", source)):
            object.__setattr__(self, name, value)

    def render_prompt(self, prompt):
        return self.inner.render_prompt(prompt)

    def __getattr__(self, name: str):  # what only the wrapped spec has (parse, tools, ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"Grounded({self.inner!r})"


def ground(spec: Any, prompt: Any, how: bool | str) -> Any:
    """``spec`` grounded as ``generate(..., ground=how)`` asks: ``True`` quotes from the prompt's text, a
    string quotes from that text; ``False`` leaves the spec as it is."""
    if how is False or how is None:
        return spec
    if how is True:
        return Grounded(spec, source_text(prompt))
    if isinstance(how, str):
        return Grounded(spec, how)
    raise ConfigError(f"ground must be True, False or the source text, got {type(how).__name__}")
