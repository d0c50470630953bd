"""Subschemas outlines-core writes inexactly, replaced by placeholders and put back as exact regexes.

Before outlines-core builds the regex, each such subschema becomes a unique placeholder (a string
constant, or a property name) and, afterwards, the placeholder's literal in the regex is replaced by an
exact regex:

* bounded integers: outlines-core writes ``-?(0|[1-9][0-9]*)`` whatever the bounds; we write the exact
  digit-range regex (``int_range_regex``). Numbers with ``minimum >= 0`` lose their minus sign;
* ``format: date-time`` / ``time``: outlines-core allows a year of any length and no UTC offset, while
  RFC 3339 (and jsonschema's checker) needs a 4-digit year and ``Z`` or ``±hh:mm``;
* ``format: email``: outlines-core's regex allows RFC 5322's quoted local part (``"a b"@x.org``) and
  address literals with control characters, written *raw* inside the JSON string, so a model could write
  ``"email": ""x"@acme.test"`` — not JSON. We write the dot-atom local part and a host name or IPv4
  literal only (the same character classes otherwise), which is JSON as it stands;
* property names with characters JSON escapes (quotes, backslashes, control characters) or regex
  metacharacters: outlines-core writes them raw into the regex; we write ``re.escape(json.dumps(name))``.

What the automaton still does not hold (``multipleOf``, float ranges, ``uniqueItems``, impossible calendar
dates) is left to the validators and repair.
"""

from __future__ import annotations

import json
import math
import re

from ..grounding import GROUND_KEY, STATED_KEY

_DATA_KEYS = {"enum", "const", "default", "examples", "required", "description", "title"}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
_DATE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_TIME = r"([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?"
_OFFSET = r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
EMAIL = rf"{_ATOM}(\.{_ATOM})*@(({_LABEL}\.)+{_LABEL}|\[({_OCTET}\.){{3}}{_OCTET}\])"  # grounding.emails_in too
FORMATS = {"date-time": f'"{_DATE}T{_TIME}{_OFFSET}"', "date": f'"{_DATE}"', "time": f'"{_TIME}"',
           "email": f'"{EMAIL}"'}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_\- ]*")
_ANNOTATIONS = {"description", "title", "default", "examples", "$comment"}
_NONNEG_NUMBER = r"(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-][0-9]+)?"


def _same_length(lo: str, hi: str) -> str:
    """Regex for the decimal numbers of one length between ``lo`` and ``hi`` (inclusive)."""
    n = len(lo)
    if n == 0:
        return ""
    if lo == hi:
        return lo
    if n == 1:
        return f"[{lo}-{hi}]"
    a, b = int(lo[0]), int(hi[0])
    if a == b:
        return lo[0] + _same_length(lo[1:], hi[1:])
    parts = [lo[0] + _same_length(lo[1:], "9" * (n - 1))]
    if a + 1 <= b - 1:
        mid = str(a + 1) if a + 1 == b - 1 else f"[{a + 1}-{b - 1}]"
        parts.append(f"{mid}[0-9]{{{n - 1}}}")
    parts.append(hi[0] + _same_length("0" * (n - 1), hi[1:]))
    return "(" + "|".join(parts) + ")"


def _nonneg_range(lo: int, hi: int | None) -> str:
    """Regex for integers ``lo <= n <= hi`` (``hi`` None: unbounded), ``lo >= 0``, no leading zeros."""
    parts = []
    top_len = len(str(hi)) if hi is not None else len(str(lo))
    for length in range(len(str(lo)), top_len + 1):
        a = max(lo, 0 if length == 1 else 10 ** (length - 1))
        b = 10**length - 1 if hi is None else min(hi, 10**length - 1)
        if a <= b:
            parts.append(_same_length(str(a), str(b)))
    if hi is None:
        parts.append(f"[1-9][0-9]{{{top_len},}}")
    return "(" + "|".join(parts) + ")" if len(parts) > 1 else parts[0]


def int_range_regex(lo: int | None, hi: int | None) -> str:
    """Regex for the JSON integers in ``[lo, hi]`` (either bound may be None)."""
    parts = []
    if hi is None or hi >= 0:
        parts.append(_nonneg_range(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:
        neg_lo = 1 if hi is None or hi >= 0 else -hi  # magnitudes
        neg_hi = None if lo is None else -lo
        parts.append("-" + _nonneg_range(neg_lo, neg_hi))
    return "(" + "|".join(parts) + ")"


def _int_bounds(s: dict) -> tuple[int | None, int | None]:
    lo = s.get("minimum")
    hi = s.get("maximum")
    xlo, xhi = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    lo = math.ceil(lo) if isinstance(lo, (int, float)) and not isinstance(lo, bool) else None
    hi = math.floor(hi) if isinstance(hi, (int, float)) and not isinstance(hi, bool) else None
    if isinstance(xlo, (int, float)) and not isinstance(xlo, bool):
        v = math.floor(xlo) + 1
        lo = v if lo is None else max(lo, v)
    if isinstance(xhi, (int, float)) and not isinstance(xhi, bool):
        v = math.ceil(xhi) - 1
        hi = v if hi is None else min(hi, v)
    return lo, hi


def substitute(schema):
    """A copy of ``schema`` with inexact subschemas replaced by placeholders, and the map
    placeholder literal → regex to put back into outlines-core's output (see ``put_back``)."""
    subs: dict[str, str] = {}
    names: dict[str, str] = {}

    def key_for(name: str) -> str:
        if _PLAIN_NAME.fullmatch(name):
            return name
        if name not in names:
            names[name] = key = f"SGKEY{len(subs)}X"
            subs[f'"{key}"'] = re.escape(json.dumps(name))
        return names[name]

    def walk(node, is_schema: bool):
        if isinstance(node, list):
            return [walk(x, is_schema) for x in node]
        if not isinstance(node, dict):
            return node
        if is_schema and (GROUND_KEY in node or STATED_KEY in node):  # structgen.grounding
            key = f"SGGRD{len(subs)}X"
            subs[f'"{key}"'] = _grounded_regex(node)
            return {"const": key}
        if is_schema and node.get("type") == "string" and node.get("format") in FORMATS \
                and not (set(node) - {"type", "format"} - _ANNOTATIONS):
            key = f"SGFMT{len(subs)}X"
            subs[f'"{key}"'] = FORMATS[node["format"]]
            return {"const": key}
        if is_schema and not ({"enum", "const", "multipleOf"} & node.keys()):
            t = node.get("type")
            bounded = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} & node.keys()
            only_type = set(node) - {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                     "description", "title", "default", "examples", "format", "$comment"}
            if bounded and not only_type and t in ("integer", "number"):
                lo, hi = _int_bounds(node)
                rx = None
                if t == "integer":
                    if lo is not None and hi is not None and lo > hi:
                        return node  # empty range: leave it to outlines-core / the validators
                    if (lo is None or abs(lo) < 10**15) and (hi is None or abs(hi) < 10**15):
                        rx = int_range_regex(lo, hi)
                elif node.get("minimum", -1) >= 0 or node.get("exclusiveMinimum", -1) >= 0:
                    rx = _NONNEG_NUMBER
                if rx is not None:
                    key = f"SGNUM{len(subs)}X"
                    subs[f'"{key}"'] = f"({rx})"
                    return {"const": key}
        if not is_schema:  # a map of name -> schema (properties, $defs, ...)
            return {k: walk(v, True) for k, v in node.items()}
        out = {}
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                out[k] = {key_for(name): walk(sub, True) for name, sub in v.items()}
            elif k == "required" and isinstance(v, list):
                out[k] = [key_for(n) if isinstance(n, str) else n for n in v]
            else:
                out[k] = v if k in _DATA_KEYS else walk(v, k not in _SCHEMA_MAPS)
        return out

    return walk(schema, True), subs


def _grounded_regex(node: dict) -> str:
    """A grounded value's regex (``structgen.grounding``): one of the values the source states for a stated
    one (a string or a number), one of its e-mail addresses for an ``email`` string, else the marked body
    whose product with the source's quote automaton ``grounded_dfa`` takes. Values are written as JSON
    writes them."""
    from ..grounding import emails_in, stated_for
    from .grounded_dfa import body_regex

    if STATED_KEY in node:
        values = stated_for(node, node[STATED_KEY])
    elif node.get("format") == "email":
        values = emails_in(node[GROUND_KEY], node.get("pattern"))
    else:
        return body_regex()
    return "(" + "|".join(re.escape(json.dumps(v, ensure_ascii=False)) for v in values) + ")"


def put_back(regex: str, subs: dict[str, str]) -> str:
    """Replace each placeholder literal (with its quotes) in outlines-core's regex by its exact regex."""
    for literal, rx in subs.items():
        regex = regex.replace(literal, rx)
    return regex
