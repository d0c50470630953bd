"""Hypothesis strategies for random JSON Schemas (draft 2020-12) and for sampler settings.

``json_schemas()`` builds schemas from the keywords structgen's automaton engine is meant to hold:

* ``object`` with ``properties`` (1-4), ``required`` (any subset) and optionally ``additionalProperties: false``;
* ``string`` with ``minLength``/``maxLength``, ``enum``, ``format`` (date, email, uuid) or a simple ``pattern``;
* ``integer`` with ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (never an empty range);
* ``number`` with ``minimum >= 0``; ``boolean``; ``null``;
* ``array`` with ``items``, ``minItems``/``maxItems``;
* ``anyOf`` of two subschemas; ``enum`` and ``const`` of JSON values;

nested to ``max_depth`` levels of containers (objects, arrays, ``anyOf``). Every schema drawn passes
``Draft202012Validator.check_schema`` and has at least one instance.

``inexact_keywords(schema)`` names what a schema uses that the token automaton does *not* encode exactly
(so the validators, and repair, must catch it): a ``number`` ``minimum`` above 0 (the automaton only
drops the minus sign), ``format: date`` (the regex allows e.g. February 30), ``format: email`` (the
regex's quoted local part holds a raw ``"``, which cannot sit inside a JSON string), and property names
that JSON must escape (outlines-core writes them into the regex unescaped, so ``"quo"te"`` comes out; the
validators reject it). Schemas for which it returns nothing must never end in a ``GenerationError``.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

#: Property names: ordinary identifiers, plus a few that need escaping or are not ASCII.
PROPERTY_NAMES = st.one_of(
    st.sampled_from(["id", "name", "age", "tags", "a", "b", "x_1", "value", "ok", "meta", "when", "kind"]),
    st.sampled_from(["full name", "quo\"te", "back\\slash", "naïve", "日付", "a/b", "tab\tbed", "$ref"]),
)

#: Short strings for enum/const values, with characters JSON must escape.
SHORT_TEXT = st.text(
    alphabet=st.sampled_from(list("abcxyz019 -_.") + ["\"", "\\", "/", "é", "€", "\n", "\t", "😀"]),
    min_size=0, max_size=6,
)

#: Simple patterns: anchored, no characters that would need escaping inside a JSON string.
PATTERNS = [
    r"^[a-z]{2,5}$",
    r"^[A-Z][a-z]{0,4}$",
    r"^[0-9]{3}-[0-9]{4}$",
    r"^(foo|bar|baz)[0-9]?$",
    r"^[a-f0-9]{4}$",
    r"^x+y*$",
    r"^[A-Z]{2}[0-9]{2,3}$",
    r"^(yes|no)$",
]

FORMATS = ["date", "email", "uuid"]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.sampled_from([0.5, -2.25, 3.75, 1e-07, 12.5]),
    SHORT_TEXT,
)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def json_values(max_leaves: int = 4) -> st.SearchStrategy:
    """Small JSON values (for ``const``)."""
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(["a", "b", "k", "z"]), inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )


@st.composite
def string_schemas(draw, formats: bool = True, patterns: bool = True) -> dict:
    kinds = ["plain", "length", "enum"] + (["format"] if formats else []) + (["pattern"] if patterns else [])
    kind = draw(st.sampled_from(kinds))
    s: dict = {"type": "string"}
    if kind == "length":
        lo = draw(st.one_of(st.none(), st.integers(0, 4)))
        hi = draw(st.one_of(st.none(), st.integers(lo or 0, (lo or 0) + 8)))
        if lo is not None:
            s["minLength"] = lo
        if hi is not None:
            s["maxLength"] = hi
    elif kind == "enum":
        s["enum"] = draw(st.lists(SHORT_TEXT, min_size=1, max_size=4, unique=True))
    elif kind == "format":
        s["format"] = draw(st.sampled_from(FORMATS))
    elif kind == "pattern":
        s["pattern"] = draw(st.sampled_from(PATTERNS))
    return s


@st.composite
def integer_schemas(draw) -> dict:
    s: dict = {"type": "integer"}
    lo = draw(st.one_of(st.none(), st.integers(-1000, 1000)))
    hi = draw(st.one_of(st.none(), st.integers(-1000, 1000)))
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    if lo is not None:
        if draw(st.booleans()) and (hi is None or hi - lo >= 2):
            s["exclusiveMinimum"] = lo
        else:
            s["minimum"] = lo
    if hi is not None:
        if draw(st.booleans()) and (lo is None or hi - lo >= 2):
            s["exclusiveMaximum"] = hi
        else:
            s["maximum"] = hi
    return s


@st.composite
def number_schemas(draw) -> dict:
    s: dict = {"type": "number"}
    m = draw(st.one_of(st.none(), st.sampled_from([0, 0, 0.0, 0.5, 1, 2.5, 10])))
    if m is not None:
        s["minimum"] = m
    return s


def enum_schemas() -> st.SearchStrategy:
    return st.lists(SCALARS, min_size=1, max_size=4, unique_by=_key).map(lambda vs: {"enum": vs})


def const_schemas() -> st.SearchStrategy:
    return json_values().map(lambda v: {"const": v})


def leaf_schemas(formats: bool = True, patterns: bool = True) -> st.SearchStrategy:
    return st.one_of(
        string_schemas(formats, patterns),
        integer_schemas(),
        number_schemas(),
        st.just({"type": "boolean"}),
        st.just({"type": "null"}),
        enum_schemas(),
        const_schemas(),
    )


@st.composite
def object_schemas(draw, child: st.SearchStrategy) -> dict:
    names = draw(st.lists(PROPERTY_NAMES, min_size=1, max_size=4, unique=True))
    props = {n: draw(child) for n in names}
    s: dict = {"type": "object", "properties": props}
    req = [n for n in names if draw(st.booleans())]
    if req:
        s["required"] = req
    if draw(st.booleans()):
        s["additionalProperties"] = False
    return s


@st.composite
def array_schemas(draw, child: st.SearchStrategy) -> dict:
    s: dict = {"type": "array", "items": draw(child)}
    lo = draw(st.one_of(st.none(), st.integers(0, 2)))
    hi = draw(st.one_of(st.none(), st.integers(max(lo or 0, 1), (lo or 0) + 3)))
    if lo is not None:
        s["minItems"] = lo
    if hi is not None:
        s["maxItems"] = hi
    return s


def any_of_schemas(child: st.SearchStrategy) -> st.SearchStrategy:
    return st.tuples(child, child).map(lambda ab: {"anyOf": [ab[0], ab[1]]})


def json_schemas(max_depth: int = 3, formats: bool = True, patterns: bool = True) -> st.SearchStrategy:
    """Random JSON Schemas nested to ``max_depth`` levels of objects, arrays and ``anyOf``."""
    leaves = leaf_schemas(formats, patterns)
    if max_depth <= 0:
        return leaves
    child = json_schemas(max_depth - 1, formats, patterns)
    return st.one_of(
        leaves,
        object_schemas(child),
        object_schemas(child),  # objects are the common case at the top
        array_schemas(child),
        any_of_schemas(child),
    )


def walk(schema: Any):
    """Every subschema of ``schema`` (this module's shapes: properties, items, anyOf), the root first."""
    if not isinstance(schema, dict):
        return
    yield schema
    for sub in (schema.get("properties") or {}).values():
        yield from walk(sub)
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"])
    for sub in schema.get("anyOf") or ():
        yield from walk(sub)


def inexact_keywords(schema: dict) -> set[str]:
    """Keywords of ``schema`` that the token automaton does not hold exactly (see the module docstring)."""
    out: set[str] = set()
    for s in walk(schema):
        if s.get("type") == "number" and isinstance(s.get("minimum"), (int, float)) and s["minimum"] > 0:
            out.add("number.minimum>0")
        if s.get("format") in ("date", "email"):
            out.add(f"format:{s['format']}")
        if any(needs_json_escape(n) for n in (s.get("properties") or {})):
            out.add("property-name-escape")
    return out


def needs_json_escape(name: str) -> bool:
    """Whether a property name must be escaped inside a JSON string (quote, backslash, control chars)."""
    return any(c in "\\\"" or ord(c) < 0x20 for c in name)


def features(schema: dict) -> set[str]:
    """A coarse description of what a schema uses (for reporting counts per feature)."""
    out: set[str] = set()
    for s in walk(schema):
        if "anyOf" in s:
            out.add("anyOf")
        if "enum" in s:
            out.add("enum")
        if "const" in s:
            out.add("const")
        if "format" in s:
            out.add(f"format:{s['format']}")
        if "pattern" in s:
            out.add("pattern")
        t = s.get("type")
        if t:
            out.add(t)
    return out


@st.composite
def sampler_settings(draw) -> dict:
    """Generator settings: block length, one of the two commit policies, greedy or sampled."""
    kw: dict = {"block_length": draw(st.sampled_from([4, 8, 16, 32, 64]))}
    if draw(st.booleans()):
        kw["threshold"] = draw(st.sampled_from([0.3, 0.6, 0.9, 1.0]))
        kw["tokens_per_step"] = None
    else:
        kw["threshold"] = None
        kw["tokens_per_step"] = draw(st.sampled_from([1, 2, 3, 8]))
    if draw(st.integers(0, 3)) == 0:
        kw["temperature"] = 1.0
        kw["seed"] = draw(st.integers(0, 10_000))
    return kw


def grounded_runs(max_examples: int = 8):
    """The hypothesis settings of the grounded-decoding properties (``tests/test_sql_grounded.py``,
    ``tests/test_alerts_grounded.py``): derandomized, no deadline, fixtures shared across examples;
    ``STRUCTGEN_SLOW=1`` runs four times the examples."""
    import os

    from hypothesis import HealthCheck, settings

    n = max_examples * (4 if os.environ.get("STRUCTGEN_SLOW") == "1" else 1)
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def grounded_decoding():
    """A random logits seed, a block length and a temperature: ``{"seed", "block_length", "temperature"}``."""
    return st.fixed_dictionaries({"seed": st.integers(0, 2**20), "block_length": st.sampled_from([8, 16, 32]),
                                  "temperature": st.sampled_from([0.0, 0.8])})
