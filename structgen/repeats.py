"""Stated once, written once: the values a grounded answer writes more often than the request states them.

A grounded answer (``structgen.grounding``) may still put one stated value in two places: ``"from_currency":
"SEK", "to_currency": "SEK"`` for "Convert 1,250 Swedish kronor to euros", the model year as a car's price.
No regular language holds "each value at most as often as stated" cheaply, so ``Generator._spread_repeats``
redoes such answers after decoding; this module is what it reads:

* ``stated_leaves``: every stated value of an answer (dates, codes, numbers, choices, e-mails) and its path;
* ``mentions`` / ``repeated_values``: how often the request states each, and the ones written more often;
  two proper names that are parts of one mention of the request count as one value written twice ("home":
  "Malmö FF" beside "away": "Malmö", "make": "Škoda" beside "model": "Škoda Octavia";
  ``overlapping_values``);
* ``sole_values``: the places whose subschema allows that one value only (they keep it: "injuries" can only
  be 16 when the request states 16 and 5.9);
* ``ruled_out``: the marked schema narrowed so that a redone place cannot hold its value again, however the
  model would tokenise it (``grounding.EXCLUDE_KEY``).
"""

from __future__ import annotations

from typing import Any

from .grounding import EXCLUDE_KEY, GROUND_KEY, STATED_KEY, emails_in, noted, source_of, stated_for
from .stated_numbers import number_mentions
from .stated_spans import SPANS_KEY


def stated_leaves(schema: Any, value: Any, path: tuple = ()):
    """``(path, value)`` of every value in ``value`` that a marked ``schema`` holds to what its source states
    (``STATED_KEY``: a date, code, number or choice; an e-mail under ``GROUND_KEY``), found through
    ``properties``, ``items``, local ``$ref``s, ``allOf`` and the first ``anyOf``/``oneOf`` branch the value
    is valid against."""
    for at, v, _ in _marked_leaves(schema, value, path):
        yield at, v


def sole_values(schema: Any, value: Any) -> set[tuple]:
    """The paths of ``stated_leaves`` whose subschema allows one stated value only: ``"injuries": 16`` when
    the request states 16 and 5.9 (an integer can only be 16), so a repeat pass redoes the other place."""
    out = set()
    for at, _, node in _marked_leaves(schema, value):
        values = (stated_for(node, node[STATED_KEY]) if STATED_KEY in node
                  else emails_in(node[GROUND_KEY], node.get("pattern")))
        if len(values) == 1:
            out.add(at)
    return out


def _marked_leaves(schema: Any, value: Any, path: tuple = ()):
    """``(path, value, subschema)`` of ``stated_leaves``."""
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
            yield at, v, node
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


def ruled_out(schema: Any, value: Any, places: list[tuple[tuple, Any]]) -> dict | None:
    """A copy of a marked ``schema`` in which the stated subschema that holds ``value`` at each ``(path, v)``
    of ``places`` no longer allows ``v`` (``EXCLUDE_KEY``), reached as ``stated_leaves`` reaches it (a local
    ``$ref`` on the way is inlined, so no other place that shares it changes); None when no place could be
    reached that way (an array's items and e-mails are shared or unmarked: the repeat pass then rules the
    value's tokens out only)."""
    from jsonschema import Draft202012Validator

    from .constraints.json_regex import AutomatonUnsupported, resolve_ref

    root = Draft202012Validator(schema)  # which branch a value takes: EXCLUDE_KEY changes no validity

    def down(node: Any, v: Any, path: tuple, bad: Any) -> dict | None:
        if not isinstance(node, dict):
            return None
        if isinstance(node.get("$ref"), str):
            try:
                target = resolve_ref(node["$ref"], schema)
            except AutomatonUnsupported:
                return None
            if not isinstance(target, dict):
                return None
            return down({**{k: x for k, x in node.items() if k != "$ref"}, **target}, v, path, bad)
        if not path:
            return {**node, EXCLUDE_KEY: [*node.get(EXCLUDE_KEY, []), bad]} if STATED_KEY in node else None
        for key in ("anyOf", "oneOf", "allOf"):
            branches = node.get(key)
            if not isinstance(branches, list):
                continue
            for i, b in enumerate(branches):
                if key != "allOf" and not root.evolve(schema=b).is_valid(v):
                    continue
                new = down(b, v, path, bad)
                if new is not None:
                    return {**node, key: [new if j == i else x for j, x in enumerate(branches)]}
                if key != "allOf":
                    break  # the first branch the value is valid against, as stated_leaves reads it
        props, k = node.get("properties"), path[0]
        if isinstance(v, dict) and isinstance(props, dict) and k in props and k in v:
            new = down(props[k], v[k], path[1:], bad)
            if new is not None:
                return {**node, "properties": {**props, k: new}}
        return None

    out, changed = schema, False
    for path, bad in places:
        new = down(out, value, tuple(path), bad)
        if new is not None:
            out, changed = new, True
    return out if changed else None


def mentions(value: Any, source: str) -> int:
    """How many times ``source`` states ``value`` (a number: ``stated_numbers.number_mentions``; a string:
    its occurrences in the text, else in its notes' values, which restate the text's: "3,440 CAD" notes
    ``3440 CAD``, one mention of ``CAD``); at least 1."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return max(1, number_mentions(source).get(value, 1))
    if not isinstance(value, str):
        return 1
    return max(1, source.count(value) or "\n".join(noted(source)).count(value))


def repeated_values(schema: Any, value: Any) -> list[tuple[Any, int, list[tuple]]]:
    """``(value, mentions, paths)`` of each stated value (``stated_leaves``) written more often than its
    source states it, its paths in document order: ``{"from": "SEK", "to": "SEK"}`` for "Convert 1,250
    Swedish kronor to euros" gives ``[("SEK", 1, [("from",), ("to",)])]``. A value stated twice ("3-3") may
    be written twice. Then each pair of ``overlapping_values``, as ``(the longer value, 1, both paths)``:
    one of the two places keeps its value."""
    source = source_of(schema, (STATED_KEY, GROUND_KEY))
    if source is None:
        return []
    leaves = list(_marked_leaves(schema, value))
    groups: dict[str, tuple[Any, list[tuple]]] = {}
    for at, v, _ in leaves:
        key = repr(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else repr(float(v))
        groups.setdefault(key, (v, []))[1].append(at)
    out = [(v, n, paths) for v, paths in groups.values() if len(paths) > (n := mentions(v, source))]
    return out + overlapping_values(leaves, source)


def overlapping_values(leaves: list[tuple[tuple, Any, dict]], source: str) -> list[tuple[str, int, list[tuple]]]:
    """``(longer value, 1, [path, path])`` for each two different span values (proper names, paths:
    ``structgen.stated_spans``) of ``leaves`` (``(path, value, subschema)``) that the request states only
    as parts of one mention: every place it writes the one overlaps every place it writes the other
    ("home": "Malmö FF", "away": "Malmö" of "Malmö FF 3-3 Brøndby"; "make": "Škoda", "model": "Škoda
    Octavia"). Two parts of a mention that do not overlap are fine ("make": "Volvo", "model": "XC60")."""
    from .proper_names import word_places

    spans = [(at, v, word_places(v, source)) for at, v, node in leaves
             if isinstance(v, str) and v.strip() and SPANS_KEY in node]
    out = []
    for i, (at_a, a, places_a) in enumerate(spans):
        for at_b, b, places_b in spans[i + 1:]:
            if a != b and places_a and places_b and all(x < y_end and y < x_end for x, x_end in places_a
                                                        for y, y_end in places_b):
                out.append((max(a, b, key=len), 1, [at_a, at_b]))
    return out

