"""Numbers the request names: "a depth of 66 km" is the ``depth_km``, "24 injuries" the ``injuries``.

An extraction schema with several number fields takes several numbers from one text, and a small model puts
them in the wrong fields ("magnitude 7.5 ... 66 km ... 24 injuries" written as ``magnitude: 24``).
Grounding (``structgen.grounding_fields``) reads which field the text names each number as: the words of a
field's name (``depth_km``: *depth*, *km*; ``maxStudents``: *max*, *students*; any case, plurals alike,
compared on their first five letters; a word of ``SYNONYMS`` as its synonyms: ``spectators`` is named by
"fans") against the word right before the number (past "of", "a", "the",
"is", "was", "at", "to", within its clause: not past ", ") and the first word after it. A number named by
one field only, at each of its mentions, is that field's: the field then allows only the numbers it names,
and every other number field excludes them (``EXCLUDE_KEY``).
A number named by two fields, or by none at one of its mentions, stays open to all of them. A field that
names a number is written (``split_by_name`` returns it: "Attendance: 46,711" states the optional
``attendance``, and "party of seven" the ``passengers`` of a flight search), also when it is the object's
only number field, which stays open to every stated number ("3 out of 5 stars" is one rating).

A duration's converted value ("11 weeks" states 77 days, "two hours" 120 minutes:
``stated_numbers.converted_numbers``) is named by its unit: it is the value of a field whose name says that
unit (``days``, ``duration_minutes``) or only says it is a duration (``duration``, ``length``), and of no
other field ("runs 11 weeks" states no ``capacity`` of 77). A field whose every stated number is excluded so is
returned too: it states none (an optional one is then left out, ``grounding_fields``).

A field whose name says a measure unit (``depth_km``, ``weight_kg``, ``discount_pct``: ``MEASURES``) holds
only numbers the request writes in that unit ("66 km", "12.5 kilograms", "15%"): "7 people were hurt"
states no ``depth_km`` (``measured``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["name_words", "named_numbers", "split_by_name", "stem"]

_SKIP = frozenset({"of", "a", "an", "the", "is", "was", "at", "to", "are", "were"})
#: the name words (stems) of a converted duration's unit, and those of a field that holds any duration
UNIT_STEMS = {"days": frozenset({"day", "daily"}), "minutes": frozenset({"minut", "min"})}
DURATION_STEMS = frozenset({"durat", "lengt"})
#: measure units a field's name may say (its words, whole) and how a request writes a number in each
MEASURES = (("km kilometers kilometres", r"km|kilomet(?:er|re)s?"),
            ("kg kilos kilograms", r"kg|kilo(?:gram(?:me)?)?s?"),
            ("cm centimeters centimetres", r"cm|centimet(?:er|re)s?"),
            ("mm millimeters millimetres", r"mm|millimet(?:er|re)s?"),
            ("mi miles", r"mi|miles?"), ("pct percent percentage", r"%|percent|per\s?cent|pct"),
            ("kwh", r"kwh"), ("mph", r"mph"), ("kmh kph", r"km/h|kmh|kph"),
            ("gb", r"gb|gigabytes?"), ("mb", r"mb|megabytes?"))
_WORD = re.compile(r"[^\W\d_]+")


def stem(word: str) -> str:
    """A word's stem as field names are compared: lower case, a plural's s off, the first five letters."""
    return word.lower().rstrip("s")[:5]


def _name_parts(name: str) -> list[str]:
    """A field name's words as written: ``depthKm`` and ``depth_km`` give ``depth``/``Km``, ``km``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w for w in re.split(r"[\s_\-.]+", spaced) if w]


#: words that name the same count: a field named by one is named by the others ("in front of 5,355 fans" is
#: the ``attendance``, "Attendance: 43,781" the ``spectators``)
SYNONYMS = tuple(frozenset(stem(w) for w in group.split()) for group in (
    "attendance attendees spectators crowd fans audience viewers",
    "capacity places seats spots",
    "injuries injured hurt wounded",
    "deaths dead killed fatalities",
    "employees staff headcount workers",
    "passengers travellers travelers party"))


def name_words(name: str) -> set[str]:
    """The stems of a field name's words and of their synonyms (``SYNONYMS``): ``depthKm`` and ``depth_km``
    give ``depth``, ``km``; ``spectators`` gives *spect*, *atten*, *fan*..."""
    stems = {stem(w) for w in _name_parts(name)}
    return stems.union(*(group for group in SYNONYMS if group & stems))


def _neighbours(source: str, start: int) -> tuple[list[str], list[str]]:
    """The word right before the number at ``start`` (past ``_SKIP`` words, within its sentence) and the
    first word after its digits or number word (a duration's unit: "6 weeks" gives *weeks*), each a list
    of at most one."""
    from .stated_numbers import WORDS

    clause = _CLAUSE.split(_SENTENCE.split(source[max(0, start - 60):start])[-1])[-1]
    before = [w for w in _WORD.findall(clause) if w.lower() not in _SKIP][-1:]
    after = [w for w in _WORD.findall(_SENTENCE.split(source[start:start + 40])[0])
             if w.lower() not in WORDS][:1]
    return before, after


_SENTENCE = re.compile(r"[.;!?\n]\s+(?=[A-Z])|\n")
_CLAUSE = re.compile(r",\s")  # "four bedrooms, 3,027.00 EUR": the bedrooms are not the rent


def named_numbers(fields: dict[str, Any], source: str) -> dict[Any, str]:
    """The numbers of ``source`` that exactly one of ``fields`` (name -> anything) names, and its name."""
    from .stated_numbers import unit_places

    stems = {name: name_words(name) for name in fields}
    claims: dict[Any, set[str | None]] = {}
    for start, _, value, unit in unit_places(source):
        before, after = _neighbours(source, start)
        if unit:  # 77 of "11 weeks" is named by its unit, days, and not by "weeks"
            near = {stem(w) for w in before} | UNIT_STEMS[unit]
        else:
            near = {stem(w) for w in before + after}
        # a mention no field names leaves its value open ("runs 11 weeks. Only 11 places!")
        claims.setdefault(value, set()).update({n for n, words in stems.items() if words & near} or {None})
    return {v: next(iter(names)) for v, names in claims.items() if len(names) == 1 and None not in names}


def measured(key: str, source: str) -> set | None:
    """The numbers ``source`` writes in the measure unit a field's name words say ("66 km" for
    ``depth_km``), or None when they say none: such a field holds no other ("7 people were hurt" is no
    depth)."""
    from .stated_numbers import unit_places

    words = {w.lower() for w in _name_parts(key)}
    units = [pattern for names, pattern in MEASURES if words & set(names.split())]
    if not units:
        return None
    after = re.compile(r"\s?-?(?:" + "|".join(units) + r")(?![^\W\d_])", re.IGNORECASE)
    return {value for _, end, value, unit in unit_places(source) if unit is None and after.match(source, end)}


def split_by_name(properties: dict, source: str) -> tuple[dict, list[str], list[str]]:
    """``properties`` (marked) with the rules of the module docstring applied to its stated number fields, the
    fields that name a number (an optional one is then written), and those left with no stated number."""
    from .grounding import EXCLUDE_KEY, STATED_KEY, _number_only, stated_for
    from .stated_numbers import converted_numbers

    numeric = {k: n for k, n in properties.items() if isinstance(k, str) and isinstance(n, dict)
               and STATED_KEY in n and _number_only(n)}
    if not numeric:
        return properties, [], []
    owner = named_numbers(numeric, source)
    several = len(numeric) > 1  # "3 out of 5 stars": a field alone stays open to every number
    converted = converted_numbers(source)
    out, named, empty = dict(properties), [], []
    for key, node in numeric.items():
        values = stated_for(node, source)
        words = name_words(key)
        own = [v for v in values if owner.get(v) == key]
        if own:  # written ("party of seven" states the passengers)
            named.append(key)
        if own and several:  # the numbers it names, and no other
            barred = [v for v in values if v not in own]
        else:  # any but those another field names, and no duration in a unit it does not hold
            barred = [v for v in values if owner.get(v) not in (None, key)
                      or v in converted and not words & (UNIT_STEMS[converted[v]] | DURATION_STEMS)]
        written = measured(key, source)
        if written is not None:  # a field in a measure unit: only numbers written in it
            barred += [v for v in values if v not in written and v not in barred]
        if values and len(barred) == len(values):
            empty.append(key)
        elif barred:
            out[key] = {**node, EXCLUDE_KEY: [*node.get(EXCLUDE_KEY, []), *barred]}
    return out, named, empty
