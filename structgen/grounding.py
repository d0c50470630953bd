"""Grounding: string values that must come from a source text (the request), by construction.

An extraction or a tool call copies most of its text values from the request: a name, a city, a path, a
subject line. A small model writes them with a neighbouring word stuck on (``"Accra you"``), an edge
lost (``"tmp/dump.sql"``) or text that is nowhere in the request at all. ``generate(..., ground=True)``
restricts the strings of a JSON Schema spec to what the request states:

* a **free-text** string (``type: "string"`` with no ``enum``, ``const``, ``pattern`` or ``format``) is a
  non-empty part of the request made of whole words (``constraints.quote_automaton``), or of its request
  notes' values (``quotable``: "£4,847" notes ``4847 GBP``, so a currency held as free text can be ``GBP``)
  (``GROUND_KEY``);
* an ``email`` string is one of the request's addresses (that its ``pattern`` allows) (``GROUND_KEY``);
* a ``date`` or ``date-time`` string is one the request states: an ISO value of its request notes
  (``structgen.request_notes``, the newest version: "January 22nd 2027" states ``2027-01-22``; one date, one
  clock time and one UTC offset state a date-time) or an ISO value written in it (``STATED_KEY``);
* a string with a ``pattern`` (and no format) is one of the request's words, or of its notes' values, that the
  pattern matches: ``SEK`` for "Swedish kronor", ``14:15`` (``STATED_KEY``);
* an ``integer`` or ``number`` is one the request states (``structgen.stated_numbers``: ``117,000``, ``3.4``,
  ``117k``, ``three``; ``two hours`` states 2 and 120, its minutes) that its bounds allow (``STATED_KEY``);
* a string ``enum`` is one of the choices the request names in words (``stated_choices``: "in Fahrenheit"
  names ``fahrenheit``, "premium economy" ``premium_economy`` and not ``economy``) (``STATED_KEY``);
* of a pair of direction fields (``origin``/``destination``, ``from_currency``/``to_currency``), each allows
  no stated value the request gives the other role ("based in Wien (VIE)" is an origin, "the CHF
  equivalent" a target currency: ``structgen.roles``); of a pair of home and away fields, each allows no
  team, and no score, the request gives the other side ("Atlético 5-1 Ajax": ``structgen.sides``);
* a free-text field whose name says it holds a proper name (``city``, ``homeTeam``, ``patient_name``,
  ``make``) is one of the request's capitalised names (``"Malmö FF"``, ``"Dr. Weber"``; never ``"the final"``
  or ``"2026"``) while it has any (``structgen.proper_names``), and one that holds a file path one of the
  paths it writes (``"/tmp/dump.sql"``, never ``"/tmp/dump.sql should"``: ``structgen.stated_paths``), and
  one that holds a phone number one of its phone numbers (``structgen.stated_phones``), a stated choice of
  spans (``structgen.stated_spans``);
* a free-text field the request names a double-quoted span as ("put "Flight change" in the subject line") is
  that span (``const``: ``structgen.named_quotes``);
* a schema's only e-mail field, a list, is every address the request states, in its order (``const``, and
  required: ``structgen.every_address``);
* a boolean whose name word the request writes only right after a negation is ``false``, one whose word it
  writes otherwise, giving it no value of its own, ``true``; either is written (``structgen.stated_booleans``);
* an optional ``enum`` property of which the request names a choice is written; of a union of objects (a
  tool-call schema's tools), a branch that requires a value of a stated kind the request states none of is
  dropped while another is left (``structgen.grounding_fields``);
* an optional property with a ``default`` whose value would be a number, an e-mail, a date or a patterned
  string (or a list of them) of which the request states none (``unstated``) is its default alone
  (``const``): "It's for Car service" states no duration, so ``duration_minutes`` is left out or 30; one
  with no ``default`` is left out (the object then closed to other keys), and so is a number field whose
  every stated value another field names, or is a duration in a unit its name does not say ("11 weeks" is
  77 days, no ``capacity``; "7 people were hurt" no ``depth_km``: ``structgen.named_numbers``).

Each is left as the schema has it when the request states no such value (an enum whose choices it names in
other words, "°F", is left whole); other formats are never touched. The caveat of the pattern rule: a code
the request does not state while it states another of the same form (an airport's code for a city it only
names, beside another city's code) can only be the wrong one.

What a counting rule across fields needs (a value the request states once, written in two places) is a
pass after decoding, ``Generator._spread_repeats`` with ``structgen.repeats``; ``EXCLUDE_KEY`` is how it
rules a value out at one place, and ``Grounded.narrowed`` the spec the redo is decoded with.

How: ``ground_schema`` marks each such subschema with its keyword, whose value is the source text, so the
spec's key (hence the constraint cache), the automaton (``constraints.grounded_dfa``: free text through the
product with the source's quote automaton; e-mails and stated values as alternations,
``constraints.placeholders``) and the validator (``validators/json_schema.py``: each keyword asserted; a
failing value is a span repair redoes) all read the same schema. ``Grounded`` wraps a ``JsonSchema`` (a
tool-call spec included) with its marked schema while the prompt, the pydantic model and ``parse`` stay the
wrapped spec's: the model sees the schema it was trained with.

The source is the prompt's text (a string prompt, or the user messages' contents, one per line), or a text
given as ``ground="..."`` (a document the values must come from).

Other specs ground themselves: ``ground`` hands the source to a spec's own ``grounded(source)`` method when
it has one, ``sg.Sql`` (its string literals, ``structgen.sql.grounded``) and the alert rules of
``alerts_spec`` (channels, teams and label values, ``validators.alerts.grounded``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .errors import ConfigError
from .every_address import address_lists, every_address
from .grounding_fields import feasible_branches, ground_properties
from .stated_spans import KIND_KEY, SPANS_KEY, spans_of
from .spec import JsonSchema
from .stated_numbers import stated_numbers

GROUND_KEY = "x-structgen-quoted-from"
STATED_KEY = "x-structgen-stated-in"  # a date, date-time, patterned or number value the source states
EXCLUDE_KEY = "x-structgen-not"  # stated values ruled out at one place (``ruled_out``: the repeat pass)
_TEXT_KEYS = {"type", "minLength", "maxLength", "description", "title", "default", "examples", "$comment"}
_NUMBER_KEYS = _TEXT_KEYS - {"minLength", "maxLength"} | {"minimum", "maximum", "exclusiveMinimum",
                                                           "exclusiveMaximum", "multipleOf"}
_DATA_KEYS = {"enum", "const", "default", "examples", "required", "description", "title", GROUND_KEY, STATED_KEY,
              SPANS_KEY, KIND_KEY}
_EDGES = ".,;:!?()[]{}'\"`"  # punctuation around a word
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


@functools.lru_cache(maxsize=256)
def noted(source: str) -> tuple[str, ...]:
    """The distinct values of ``source``'s request notes (the newest version of ``structgen.request_notes``),
    in order: what every stated-value rule and ``quotable`` read beside the text."""
    from .request_notes import notes

    return tuple(dict.fromkeys(n[2] for n in notes(source)))


#: note values that are dates, clock times, UTC offsets or date-times: stated values, never free text
_ISO_NOTE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}|[+-]\d{2}:\d{2}$|Z$")


@functools.lru_cache(maxsize=256)
def quotable(source: str) -> str:
    """The text a free-text string may quote: ``source``, then its request notes' values one per line, so
    that a currency code a field holds as free text ("£4,847" notes ``4847 GBP``) is a part of it too, while
    every span of ``source`` stays whole. The notes' ISO dates, times and offsets are not: a free-text field
    quotes a date as the request writes it, and the ISO form was run 11's way to write a date into a name
    (``"patient": "2027-09-02"``)."""
    return "\n".join([source, *(v for v in noted(source) if not _ISO_NOTE.match(v))])


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


def stated_choices(source: str, choices: list) -> list[str]:
    """The string ``choices`` (an ``enum``) that ``source`` names as words, in the enum's order: whole words,
    any case, ``_``/``-``/space alike (``premium_economy`` is named by "premium economy"); a choice named
    only inside a longer one's name is not (the ``economy`` of "premium economy")."""
    spans = []
    for c in choices:
        words = [w for w in re.split(r"[\s_-]+", c) if w] if isinstance(c, str) else []
        if words:
            rx = r"(?<!\w)" + r"[\s_-]+".join(map(re.escape, words)) + r"(?!\w)"
            spans += [(m.start(), m.end(), c) for m in re.finditer(rx, source, re.IGNORECASE)]
    named = {c for a, b, c in spans if not any(a2 <= a and b <= b2 and b2 - a2 > b - a for a2, b2, _ in spans)}
    return [c for c in choices if c in named]


def stated_for(node: dict, source: str) -> list:
    """The values ``source`` states for a ``date``/``date-time`` subschema (those its ``pattern`` allows), a
    ``pattern`` string (its words and its notes' values that the pattern matches), a number subschema (its
    numbers, ``structgen.stated_numbers``, that the subschema's type, bounds and ``multipleOf`` allow), a
    string ``enum`` (the choices it names, ``stated_choices``) or a name or path field (its spans,
    ``structgen.stated_spans``), in order; none of ``EXCLUDE_KEY``'s."""
    excluded = node.get(EXCLUDE_KEY)
    if excluded:
        rest = {k: v for k, v in node.items() if k != EXCLUDE_KEY}
        return [v for v in stated_for(rest, source) if not any(_same_value(v, x) for x in excluded)]
    spans = spans_of(node)
    if spans is not None:  # structgen.stated_spans: the names or paths are the stated values
        return list(spans["values"])
    if "enum" in node:
        return stated_choices(source, node["enum"])
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


def _same_value(a: Any, b: Any) -> bool:
    """JSON equality of two stated values (``2`` and ``2.0`` alike, ``True`` and ``1`` not)."""
    if isinstance(a, bool) or isinstance(b, bool) or not all(isinstance(x, (int, float)) for x in (a, b)):
        return a == b and type(a) is type(b)
    return float(a) == float(b)


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
    if set(node) - {GROUND_KEY} <= _TEXT_KEYS:
        return True
    return _email_only(node) and bool(emails_in(source, node.get("pattern")))


def _email_only(node: dict) -> bool:
    """Whether a subschema is an ``email`` string (a ``pattern`` beside allowed)."""
    return (_string_only(node) and set(node) - {GROUND_KEY} <= _TEXT_KEYS | {"format", "pattern"}
            and node.get("format") == "email")


def _choices_only(node: dict) -> bool:
    """Whether a subschema is an ``enum`` of strings (and annotations)."""
    choices = node.get("enum")
    return (isinstance(choices, list) and bool(choices) and all(isinstance(c, str) for c in choices)
            and node.get("type", "string") in ("string", ["string"])
            and set(node) - {STATED_KEY} <= _TEXT_KEYS | {"enum"})


def _stated_kind(node: dict) -> bool:
    """Whether a subschema is a number (bounds and ``multipleOf`` allowed), a ``date``/``date-time`` string
    (a ``pattern`` beside allowed) or a ``pattern`` string: a kind whose value is one the source states."""
    keys = set(node) - {STATED_KEY}
    if _number_only(node):
        return keys <= _NUMBER_KEYS
    if not _string_only(node):
        return False
    return ((keys <= _TEXT_KEYS | {"format", "pattern"} and node.get("format") in _ISO)
            or (keys <= _TEXT_KEYS | {"pattern"} and "pattern" in node))


def statable(node: Any, source: str) -> bool:
    """Whether a subschema is a ``date``/``date-time`` string (a ``pattern`` beside allowed), a ``pattern``
    string, a number (bounds and ``multipleOf`` allowed) or a string ``enum`` of which ``source`` states a
    value."""
    if not isinstance(node, dict):
        return False
    return (_choices_only(node) or _stated_kind(node)) and bool(stated_for(node, source))


def unstated(node: Any, source: str) -> bool:
    """Whether a subschema is of a kind grounding reads off the request (a number, an e-mail, a date or
    date-time, a patterned string, or an array of one of these) and ``source`` states no value of it. An
    ``enum`` is not: a request names a choice in words its list need not hold ("°F" for ``fahrenheit``)."""
    if not isinstance(node, dict):
        return False
    if node.get("type") in ("array", ["array"]) and set(node) <= _TEXT_KEYS | {"items", "minItems", "maxItems",
                                                                                  "uniqueItems"}:
        return unstated(node.get("items"), source)
    if _stated_kind(node):
        return not stated_for(node, source)
    return _email_only(node) and not emails_in(source, node.get("pattern"))


def ground_schema(schema: Any, source: str, exempt: tuple = ()) -> Any:
    """A copy of ``schema`` with every groundable string subschema marked with ``GROUND_KEY: source`` and every
    statable one with ``STATED_KEY: source``, and the rules across fields and branches applied
    (``structgen.grounding_fields``: an optional property with a ``default`` whose value the source does not
    state, ``unstated``, may only be its default; direction roles; named quotes and choices; feasible
    branches); a subschema equal to one of ``exempt`` is left whole (a turn's free reply,
    ``agent.turn.CONTENT_SCHEMA``)."""

    lists = address_lists(schema)

    def walk(node: Any, is_schema: bool) -> Any:
        for obj, key in lists:
            if node is obj:
                node = every_address(node, key, source)
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
        out = {k: v if k in _DATA_KEYS else walk(v, k not in _SCHEMA_MAPS) for k, v in node.items()}
        if isinstance(node.get("properties"), dict):
            out = ground_properties(node, out, source)
        for key in ("anyOf", "oneOf"):
            if isinstance(out.get(key), list):
                out[key] = feasible_branches(out[key], source)
        return out

    return walk(schema, True)


def _default_only(node: dict) -> dict:
    """An optional property the request states no value for: its default, nothing else."""
    keep = {k: node[k] for k in ("description", "title", "default") if k in node}
    return {**keep, "const": node["default"], "$comment": "structgen grounding: the request states no value "
                                                          "for it, so it keeps its default"}


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
            raise ConfigError(f"grounding applies to JSON Schema specs, tool calls, sg.Sql and alert rules "
                              f"(alerts_spec), not {inner!r}; leave ground off for other regexes, grammars "
                              "and choices")
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

    def narrowed(self, schema: dict) -> "Grounded":
        """This spec with another marked schema (``ruled_out``'s): the same prompt, source and wrapped spec."""
        new = object.__new__(Grounded)
        for name, value in self.__dict__.items():
            object.__setattr__(new, name, value)
        object.__setattr__(new, "schema", schema)
        return new

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
    if how is not True and not isinstance(how, str):
        raise ConfigError(f"ground must be True, False or the source text, got {type(how).__name__}")
    source = source_text(prompt) if how is True else how
    if not isinstance(spec, JsonSchema) and callable(getattr(spec, "grounded", None)):
        return spec.grounded(source)  # sg.Sql (structgen.sql.grounded), alert rules (validators.alerts.grounded)
    return Grounded(spec, source)
