"""Numbers the request names: "a depth of 66 km" is the ``depth_km``, "24 injuries" the ``injuries``.

An extraction schema with several number fields takes several numbers from one text, and a small model puts
them in the wrong fields ("magnitude 7.5 ... 66 km ... 24 injuries" written as ``magnitude: 24``).
Grounding (``structgen.grounding_fields``) reads which field the text names each number as: the words of a
field's name (``depth_km``: *depth*, *km*; ``maxStudents``: *max*, *students*; any case, plurals alike,
compared on their first five letters) against the word right before the number (past "of", "a", "the",
"is", "was", "at", "to", within its clause: not past ", ") and the first word after it. A number named by
one field only is that field's: the field then allows only the numbers it names, and every other number
field excludes them (``EXCLUDE_KEY``).
A number named by two fields, or by none, stays open to all of them. A field that names a number is
written (``split_by_name`` returns it: "Attendance: 46,711" states the optional ``attendance``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["name_words", "named_numbers", "split_by_name"]

_SKIP = frozenset({"of", "a", "an", "the", "is", "was", "at", "to", "are", "were"})
_WORD = re.compile(r"[^\W\d_]+")


def _stem(word: str) -> str:
    return word.lower().rstrip("s")[:5]


def name_words(name: str) -> set[str]:
    """The stems of a field name's words: ``depthKm`` and ``depth_km`` give ``depth``, ``km``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return {_stem(w) for w in re.split(r"[\s_\-.]+", spaced) if w}


def _neighbours(source: str, start: int) -> list[str]:
    """The word right before the number at ``start`` (past ``_SKIP`` words, within its sentence) and the
    first word after its digits or number word (a duration's unit: "6 weeks" gives *weeks*)."""
    from .stated_numbers import WORDS

    clause = _CLAUSE.split(_SENTENCE.split(source[max(0, start - 60):start])[-1])[-1]
    before = [w for w in _WORD.findall(clause) if w.lower() not in _SKIP][-1:]
    after = [w for w in _WORD.findall(_SENTENCE.split(source[start:start + 40])[0])
             if w.lower() not in WORDS][:1]
    return before + after


_SENTENCE = re.compile(r"[.;!?\n]\s+(?=[A-Z])|\n")
_CLAUSE = re.compile(r",\s")  # "four bedrooms, 3,027.00 EUR": the bedrooms are not the rent


def named_numbers(fields: dict[str, Any], source: str) -> dict[Any, str]:
    """The numbers of ``source`` that exactly one of ``fields`` (name -> anything) names, and its name."""
    from .stated_numbers import number_places

    stems = {name: name_words(name) for name in fields}
    claims: dict[Any, set[str]] = {}
    for start, _, value in number_places(source):
        near = {_stem(w) for w in _neighbours(source, start)}
        for name, words in stems.items():
            if words & near:
                claims.setdefault(value, set()).add(name)
    return {v: next(iter(names)) for v, names in claims.items() if len(names) == 1}


def split_by_name(properties: dict, source: str) -> tuple[dict, list[str]]:
    """``properties`` (marked) with the rule of the module docstring applied to its stated number fields, and
    the fields that name a number (an optional one is then written)."""
    from .grounding import EXCLUDE_KEY, STATED_KEY, _number_only, stated_for

    numeric = {k: n for k, n in properties.items() if isinstance(k, str) and isinstance(n, dict)
               and STATED_KEY in n and _number_only(n)}
    if len(numeric) < 2:
        return properties, []
    owner = named_numbers(numeric, source)
    out, named = dict(properties), []
    for key, node in numeric.items():
        values = stated_for(node, source)
        own = [v for v in values if owner.get(v) == key]
        if own:  # the numbers it names, and no other
            named.append(key)
            barred = [v for v in values if v not in own]
        else:  # any but those another field names
            barred = [v for v in values if owner.get(v) not in (None, key)]
        if barred and len(barred) < len(values):
            out[key] = {**node, EXCLUDE_KEY: [*node.get(EXCLUDE_KEY, []), *barred]}
    return out, named
