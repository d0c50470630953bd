"""Direction roles: which stated value a request gives as where something comes from, and which as where it goes.

A tool call with a pair of direction fields (``origin``/``destination``, ``from_currency``/``to_currency``,
``source``/``target``) takes two values of one form from the request, and a small model swaps them as
often as not: "My meeting is in Madrid (MAD) ... I'm based in København (CPH)" is a flight from CPH to MAD.
Grounding (``structgen.grounding.ground_schema``) reads the role of each stated value here and rules each
value out of the field of the other role (``EXCLUDE_KEY``), so the swap cannot be written.

A value's role, from each place the request states it (its word, or a request note that writes it):

* **from** — the currency of an amount ("2720.51 Mexican pesos", "$7,441": a note ``7441 USD``); a value
  after "from", "out of", "leaving", "departing", "based in", "starting in";
* **to** — a value followed by "equivalent" ("the CHF equivalent"); after "to", "into", "towards",
  "heading to", "bound for", "arriving in", "in" ("come to in GBP", "my meeting is in Madrid (MAD)").

The nearest such words before the value, within its clause (up to 40 characters back, not across ``.``,
``;``, ``?`` or ``!``), decide; a value stated with both roles, or none, has no role and stays allowed in
both fields. Nothing changes unless the object has exactly one field of each role.
"""

from __future__ import annotations

import re
from typing import Any

from .request_notes import note_currency

__all__ = ["direction_pair", "value_roles", "split_by_role", "role_before", "rule_out"]

_FROM_FIELD = re.compile(r"(?:origin|source|src|from|departure)(?:_\w+)?|\w+_from", re.IGNORECASE)
_TO_FIELD = re.compile(r"(?:destination|dest|target|to|arrival)(?:_\w+)?|\w+_to", re.IGNORECASE)
_CUES = re.compile(r"(?<!\w)(?:(?P<from>from|out\s+of|leaving|departing|based\s+in|starting\s+(?:in|at))|"
                   r"(?P<to>heading\s+(?:to|for)|bound\s+for|arriving\s+(?:in|at)|to|into|towards?|in))(?!\w)",
                   re.IGNORECASE)
_AFTER_TO = re.compile(r"\s*(?:equivalent|value)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.;?!](?:\s|$)")


def direction_pair(properties: dict) -> tuple[str, str] | None:
    """The (from, to) property names of an object whose ``properties`` have exactly one of each role."""
    names = [k for k in properties if isinstance(k, str)]
    froms = [k for k in names if _FROM_FIELD.fullmatch(k)]
    tos = [k for k in names if _TO_FIELD.fullmatch(k) and k not in froms]
    return (froms[0], tos[0]) if len(froms) == 1 and len(tos) == 1 else None


def role_before(source: str, start: int, cues: re.Pattern = _CUES) -> str | None:
    """The role the nearest cue words before ``start`` give, within its clause (up to 40 characters back):
    the name of the group of ``cues`` that matched ("from" or "to" for the direction cues)."""
    lo = max(0, start - 40)
    ends = [m.end() for m in _CLAUSE_END.finditer(source, lo, start)]
    found = list(cues.finditer(source, ends[-1] if ends else lo, start))
    if not found:
        return None
    return next(k for k, v in found[-1].groupdict().items() if v is not None)


def _places(value: str, source: str, notes: list[tuple[int, int, str]]) -> list[tuple[int, int, bool]]:
    """(start, end, is an amount's currency) of each place ``source`` states ``value``."""
    out = [(m.start(), m.end(), False) for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", source)]
    for a, b, note in notes:
        if note_currency(note) == value:
            out.append((a, b, True))
        elif note == value and not any(a <= s < b for s, _, _ in out):
            out.append((a, b, False))
    return out


def value_roles(values: list[Any], source: str) -> dict[Any, str]:
    """The role ("from" or "to") of each of ``values`` (strings) that ``source`` states with one role only."""
    from .request_notes import notes

    found = notes(source)
    out: dict[Any, str] = {}
    for v in values:
        if not isinstance(v, str) or not v:
            continue
        roles = set()
        for start, end, amount in _places(v, source, found):
            if amount:
                roles.add("from")
            elif _AFTER_TO.match(source, end):
                roles.add("to")
            else:
                roles.add(role_before(source, start))
        roles.discard(None)
        if len(roles) == 1:
            out[v] = roles.pop()
    return out


def split_by_role(properties: dict, source: str) -> dict:
    """``properties`` (marked by ``ground_schema``) with each field of a direction pair no longer allowing the
    stated values of the other role (``EXCLUDE_KEY``), where it keeps a value to write; unchanged otherwise."""
    from .grounding import STATED_KEY, stated_for

    pair = direction_pair(properties)
    nodes = [properties.get(k) for k in pair or ()]
    if pair is None or not all(isinstance(n, dict) and STATED_KEY in n for n in nodes):
        return properties
    stated = [stated_for(n, source) for n in nodes]
    roles = value_roles(list(dict.fromkeys(v for vs in stated for v in vs if isinstance(v, str))), source)
    out = dict(properties)
    for key, node, values, other in zip(pair, nodes, stated, ("to", "from")):
        out[key] = rule_out(node, values, [v for v in values if roles.get(v) == other])
    return out


def rule_out(node: dict, values: list, barred: list) -> dict:
    """``node`` (a stated subschema that allows ``values``) no longer allowing ``barred`` (``EXCLUDE_KEY``),
    where it keeps a value to write; ``node`` itself otherwise."""
    from .grounding import EXCLUDE_KEY

    if not barred or len(barred) >= len(values):
        return node
    return {**node, EXCLUDE_KEY: [*node.get(EXCLUDE_KEY, []), *barred]}
