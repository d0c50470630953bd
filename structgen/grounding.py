"""Grounding: string values that must come from a source text (the request), by construction.

An extraction or a tool call copies most of its text values from the request: a name, a city, a path, a
subject line. A small model writes them with a neighbouring word stuck on (``"Accra you"``), an edge
lost (``"tmp/dump.sql"``) or text that is nowhere in the request at all. ``generate(..., ground=True)``
restricts the strings of a JSON Schema spec to what the request states:

* a **free-text** string (``type: "string"`` with no ``enum``, ``const``, ``pattern`` or ``format``) is a
  part of the request made of whole words (``constraints.quote_automaton``), or of its request notes'
  values (``quotable``: "£4,847" notes ``4847 GBP``, so a currency held as free text can be ``GBP``)
  (``GROUND_KEY``);
* an ``email`` string is one of the request's addresses (that its ``pattern`` allows) (``GROUND_KEY``);
* a ``date`` or ``date-time`` string is one the request states: an ISO value of its request notes
  (``structgen.request_notes``, the newest version: "January 22nd 2027" states ``2027-01-22``; one date, one
  clock time and one UTC offset state a date-time) or an ISO value written in it (``STATED_KEY``);
* a string with a ``pattern`` (and no format) is one of the request's words, or of its notes' values, that the
  pattern matches: ``SEK`` for "Swedish kronor", ``14:15`` (``STATED_KEY``);
* an ``integer`` or ``number`` is one the request states (``structgen.stated_numbers``: ``117,000``, ``3.4``,
  ``117k``, ``three``; ``two hours`` states 2 and 120, its minutes) that its bounds allow (``STATED_KEY``).

Each is left as the schema has it when the request states no such value; enums and other formats are never
touched. The caveat of the last rule: a code the request does not state while it states another of the same
form (an airport's code for a city it only names, beside another city's code) can only be the wrong one.

How: ``ground_schema`` marks each such subschema with its keyword, whose value is the source text, so the
spec's key (hence the constraint cache), the automaton (``constraints.grounded_dfa``: free text through the
product with the source's quote automaton; e-mails and stated values as alternations,
``constraints.placeholders``) and the validator (``validators/json_schema.py``: each keyword asserted; a
failing value is a span repair redoes) all read the same schema. ``Grounded`` wraps a ``JsonSchema`` (a
tool-call spec included) with its marked schema while the prompt, the pydantic model and ``parse`` stay the
wrapped spec's: the model sees the schema it was trained with.

The source is the prompt's text (a string prompt, or the user messages' contents, one per line), or a text
given as ``ground="..."`` (a document the values must come from).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .errors import ConfigError
from .spec import JsonSchema
from .stated_numbers import number_mentions, stated_numbers

GROUND_KEY = "x-structgen-quoted-from"
STATED_KEY = "x-structgen-stated-in"  # a date, date-time, patterned or number value the source states
_TEXT_KEYS = {"type", "minLength", "maxLength", "description", "title", "default", "examples", "$comment"}
_NUMBER_KEYS = _TEXT_KEYS - {"minLength", "maxLength"} | {"minimum", "maximum", "exclusiveMinimum",
                                                           "exclusiveMaximum", "multipleOf"}
_DATA_KEYS = {"enum", "const", "default", "examples", "required", "description", "title", GROUND_KEY, STATED_KEY}
_EDGES = ".,;:!?()[]{}'\"`"  # punctuation around a word
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


@functools.lru_cache(maxsize=256)
def noted(source: str) -> tuple[str, ...]:
    """The distinct values of ``source``'s request notes (the newest version of ``structgen.request_notes``),
    in order: what every stated-value rule and ``quotable`` read beside the text."""
    from .request_notes import notes

    return tuple(dict.fromkeys(n[2] for n in notes(source)))


@functools.lru_cache(maxsize=256)
def quotable(source: str) -> str:
    """The text a free-text string may quote: ``source``, then its request notes' values one per line, so
    that a currency code a field holds as free text ("£4,847" notes ``4847 GBP``) is a part of it too, while
    every span of ``source`` stays whole."""
    return "\n".join([source, *noted(source)])


def emails_in(source: str, pattern: str | None = None) -> list[str]:
    """The e-mail addresses in ``source`` in order of first appearance, in the automaton's own e-mail form
    (``constraints.placeholders``; those ``pattern`` matches, as JSON Schema's ``pattern`` does, when one is
    given)."""
    from .constraints.placeholders import EMAIL

    found = dict.fromkeys(m.group(0) for m in re.finditer(EMAIL, source))
    return [e for e in found if pattern is None or re.search(pattern, e)]


_ISO = {"date": re.compile(r"(?<![\w:+-])[0-9]{4}-[0-9]{2}-[0-9]{2}(?![\w:])"),
        "date-time": re.compile(r"(?<![\w:+-])[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                                r"(?:Z|[+-][0-9]{2}:[0-9]{2})(?![\w:])")}


def stated_values(source: str, fmt: str) -> list[str]:
    """The ``fmt`` values (``date`` or ``date-time``) ``source`` states: its request notes' ISO values
    (``structgen.request_notes``, the newest version: "February 22nd 2027" -> ``2027-02-22``; a date-time
    when it states one date, one time and one UTC offset) and the ISO values written in it, in order."""
    rx = _ISO[fmt]
    found = [m.group(0) for iso in [*noted(source), source] for m in rx.finditer(iso)]
    return [v for v in dict.fromkeys(found) if _valid(v, fmt)]


def stated_for(node: dict, source: str) -> list:
    """The values ``source`` states for a ``date``/``date-time`` subschema (those its ``pattern`` allows), a
    ``pattern`` string (its words and its notes' values that the pattern matches) or a number subschema (its
    numbers, ``structgen.stated_numbers``, that the subschema's type, bounds and ``multipleOf`` allow), in
    order."""
    if _number_only(node):
        return [v for v in stated_numbers(source) if _fits(node, v)]
    pattern = node.get("pattern")
    if "format" in node:
        found = stated_values(source, node["format"])
    else:
        texts = [*noted(source), source]
        found = [w for t in texts for w in re.findall(r"\w+", t) + [x.strip(_EDGES) for x in t.split()]]
    try:
        return [v for v in dict.fromkeys(found) if v and (pattern is None or re.search(pattern, v))]
    except re.error:  # an ECMA pattern Python cannot read: nothing stated (the validators still check it)
        return []


def _valid(value: str, fmt: str) -> bool:
    import datetime as dt

    try:
        (dt.date if fmt == "date" else dt.datetime).fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _string_only(node: dict) -> bool:
    t = node.get("type")
    return t == "string" or t == ["string"]


def _number_only(node: dict) -> bool:
    t = node.get("type")
    return t in ("integer", "number", ["integer"], ["number"])


def _fits(node: dict, v: int | float) -> bool:
    """Whether a number subschema's type, bounds and ``multipleOf`` allow ``v``."""
    if "integer" in node.get("type") and v != int(v):
        return False
    for key, ok in (("minimum", lambda b: v >= b), ("maximum", lambda b: v <= b),
                    ("exclusiveMinimum", lambda b: v > b), ("exclusiveMaximum", lambda b: v < b),
                    ("multipleOf", lambda b: b > 0 and abs(v / b - round(v / b)) < 1e-9)):
        bound = node.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and not ok(bound):
            return False
    return True


def groundable(node: Any, source: str) -> bool:
    """Whether a subschema is a free-text string (or an e-mail string, when ``source`` holds addresses)."""
    if not isinstance(node, dict) or not _string_only(node):
        return False
    keys = set(node) - {GROUND_KEY}
    if keys <= _TEXT_KEYS:
        return True
    return (keys <= _TEXT_KEYS | {"format", "pattern"} and node.get("format") == "email"
            and bool(emails_in(source, node.get("pattern"))))


def statable(node: Any, source: str) -> bool:
    """Whether a subschema is a ``date``/``date-time`` string (a ``pattern`` beside allowed), a ``pattern``
    string or a number (bounds and ``multipleOf`` allowed) of which ``source`` states a value."""
    if not isinstance(node, dict):
        return False
    keys = set(node) - {STATED_KEY}
    if _number_only(node):
        return keys <= _NUMBER_KEYS and bool(stated_for(node, source))
    if not _string_only(node):
        return False
    shaped = keys <= _TEXT_KEYS | {"format", "pattern"} and node.get("format") in _ISO
    shaped = shaped or (keys <= _TEXT_KEYS | {"pattern"} and "pattern" in node)
    return shaped and bool(stated_for(node, source))


def ground_schema(schema: Any, source: str, exempt: tuple = ()) -> Any:
    """A copy of ``schema`` with every groundable string subschema marked with ``GROUND_KEY: source`` and every
    statable one with ``STATED_KEY: source``; a subschema equal to one of ``exempt`` is left whole (a turn's
    free reply, ``agent.turn.CONTENT_SCHEMA``)."""

    def walk(node: Any, is_schema: bool) -> Any:
        if isinstance(node, list):
            return [walk(x, is_schema) for x in node]
        if not isinstance(node, dict) or (is_schema and any(node == e for e in exempt)):
            return node
        if not is_schema:  # a map of name -> schema
            return {k: walk(v, True) for k, v in node.items()}
        if groundable(node, source):
            return {**node, GROUND_KEY: source}
        if statable(node, source):
            return {**node, STATED_KEY: source}
        return {k: v if k in _DATA_KEYS else walk(v, k not in _SCHEMA_MAPS) for k, v in node.items()}

    return walk(schema, True)


def stated_leaves(schema: Any, value: Any, path: tuple = ()):
    """``(path, value)`` of every value in ``value`` that a marked ``schema`` holds to what its source states
    (``STATED_KEY``: a date, code or number; an e-mail under ``GROUND_KEY``), found through ``properties``,
    ``items``, local ``$ref``s, ``allOf`` and the first ``anyOf``/``oneOf`` branch the value is valid
    against."""
    from jsonschema import Draft202012Validator

    from .constraints.json_regex import AutomatonUnsupported, resolve_ref

    root = Draft202012Validator(schema)

    def walk(node: Any, v: Any, at: tuple):
        if not isinstance(node, dict):
            return
        if isinstance(node.get("$ref"), str):
            try:
                yield from walk(resolve_ref(node["$ref"], schema), v, at)
            except AutomatonUnsupported:  # not a local reference: nothing grounded behind it
                pass
        if STATED_KEY in node or (GROUND_KEY in node and node.get("format") == "email"):
            yield at, v
            return
        for branch in node.get("allOf", []):
            yield from walk(branch, v, at)
        for key in ("anyOf", "oneOf"):
            branch = next((b for b in node.get(key, []) if root.evolve(schema=b).is_valid(v)), None)
            if branch is not None:
                yield from walk(branch, v, at)
        if isinstance(v, dict):
            for k, sub in node.get("properties", {}).items():
                if k in v:
                    yield from walk(sub, v[k], at + (k,))
        elif isinstance(v, list) and isinstance(node.get("items"), dict):
            for i, x in enumerate(v):
                yield from walk(node["items"], x, at + (i,))

    yield from walk(schema, value, path)


def mentions(value: Any, source: str) -> int:
    """How many times ``source`` states ``value`` (a number: ``stated_numbers.number_mentions``; a string:
    its occurrences in the text and its notes' values, ``quotable``); at least 1."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return max(1, number_mentions(source).get(value, 1))
    return max(1, quotable(source).count(value)) if isinstance(value, str) else 1


def repeated_values(schema: Any, value: Any) -> list[tuple[Any, int, list[tuple]]]:
    """``(value, mentions, paths)`` of each stated value (``stated_leaves``) written more often than its
    source states it, its paths in document order: ``{"from": "SEK", "to": "SEK"}`` for "Convert 1,250
    Swedish kronor to euros" gives ``[("SEK", 1, [("from",), ("to",)])]``. A value stated twice ("3-3") may
    be written twice."""
    source = source_of(schema, (STATED_KEY, GROUND_KEY))
    if source is None:
        return []
    groups: dict[str, tuple[Any, list[tuple]]] = {}
    for at, v in stated_leaves(schema, value):
        key = repr(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else repr(float(v))
        groups.setdefault(key, (v, []))[1].append(at)
    return [(v, n, paths) for v, paths in groups.values() if len(paths) > (n := mentions(v, source))]


def source_of(schema: Any, keys: tuple[str, ...] = (GROUND_KEY, STATED_KEY)) -> str | None:
    """The source text a marked schema quotes from or reads values in (None when nothing in it is marked
    with one of ``keys``)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in keys:
                if isinstance(node.get(key), str):
                    return node[key]
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
    the pydantic model and any other attribute (``parse``, ``tools``) are ``inner``'s. Subschemas in
    ``inner.ground_exempt`` (a turn's free-text reply) are not grounded."""

    def __init__(self, inner: JsonSchema, source: str):
        if not isinstance(inner, JsonSchema):
            raise ConfigError(f"grounding applies to JSON Schema specs and tool calls, not {inner!r}; "
                              "leave ground off for regexes, grammars and choices")
        if not isinstance(source, str):
            raise ConfigError(f"the grounding source must be text, got {type(source).__name__}")
        if not source.strip():
            raise ConfigError("ground=True needs text to quote from, and the prompt has none (no user message "
                              "with text); pass the text as ground=\"...\" or leave ground off")
        while isinstance(inner, Grounded):
            inner = inner.inner
        marked = ground_schema(inner.schema, source, tuple(getattr(inner, "ground_exempt", ())))
        for name, value in (("source", inner.source), ("schema", marked),
                            ("model", inner.model), ("in_prompt", inner.in_prompt), ("inner", inner),
                            ("quoted_from", source)):
            object.__setattr__(self, name, value)

    def render_prompt(self, prompt):
        return self.inner.render_prompt(prompt)

    @property
    def fallback(self) -> JsonSchema:
        """The generator's last resort when repair cannot make a grounded answer valid: the wrapped spec,
        ungrounded, whose automaton holds the length bounds grounding leaves to the validators
        (``Result.fallback`` says the answer came from it)."""
        return self.inner

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
