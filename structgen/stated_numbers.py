"""The numbers a text states: what ``generate(..., ground=True)`` lets a number field hold (``structgen.grounding``).

    >>> stated_numbers("Volvo XC60, 117,000 km, 3 owners, asking €28,220.12; viewing for an hour and a half")
    [117000, 3, 28220.12, 90, 1.5]

Read, in order of appearance (each value once; the converted forms of a duration first):

* numerals: ``3``, ``-4``, ``28,220.12``, ``3.4``, ``48.2kg``, ``x2`` (a count); with a multiplier, ``117k``
  and ``12 thousand`` -> 117000, 12000, ``2.5 million`` -> 2500000;
* number words up to ninety-nine: ``three`` (``a three day forecast`` too), ``twenty-five``, ``a dozen``
  -> 12, ``no`` and ``none`` -> 0;
* durations in hours or weeks, beside their count: ``two hours`` -> 2 and 120 (minutes), ``an hour and a half``
  -> 1.5 and 90, ``half an hour`` -> 30, ``a quarter of an hour`` -> 15, ``2h`` -> 2 and 120, ``two weeks``
  -> 2 and 14 (days).

Not numbers: the parts of a date, a clock time or a UTC offset (``2027-03-19``, ``12:15PM``, ``September 29,
2027``, ``UTC+9``: what the request notes read as such, ``structgen.request_notes``), and digits inside a
word or an address (``berg62@example.com``, ``XC60``, ``A4``, ``web-3``; a unit after the digits is fine:
``48.2kg``).
"""

from __future__ import annotations

import functools
import re

__all__ = ["COUNT", "count_of", "converted_numbers", "number_mentions", "number_places", "stated_numbers",
           "unit_places"]

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
WORDS: dict[str, int] = {**{w: i for i, w in enumerate(_UNITS)}, **_TENS, "dozen": 12, "no": 0, "none": 0}
for _t, _v in _TENS.items():
    for _u in range(1, 10):
        WORDS[f"{_t}-{_UNITS[_u]}"] = _v + _u

_MULTIPLIERS = {"k": 1_000, "thousand": 1_000, "million": 1_000_000, "bn": 1_000_000_000, "billion": 1_000_000_000}
_NUMERAL = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_WORD = "|".join(sorted(WORDS, key=len, reverse=True))
#: a count: a numeral (its sign apart), a number word, or "a"/"an" (one, before a unit)
COUNT = rf"(?P<num>{_NUMERAL})|(?P<word>a\s+dozen|{_WORD})|(?P<one>an?)"
#: a number starts a word (not the end of a hyphenated one: "web-3", "COVID-19"), or follows the "x" of a
#: count ("x2": two passengers)
_NUMBER = re.compile(rf"(?:(?<![\w.,])(?<![^\W\d_]-)|(?<=\bx)(?=\d))(?P<sign>-(?=\d))?(?:{COUNT})"
                     rf"(?:\s?(?P<mult>k|thousand|million|bn|billion)(?!\w)|(?(num)(?!\d)|(?!\w)))",
                     re.IGNORECASE)
_DURATION = re.compile(rf"(?<![\w.,])(?:(?P<half>half\s+an?)|(?P<quarter>(?:an?\s+)?quarter\s+of\s+an?)|{COUNT})"
                       rf"\s*(?P<unit>h|hrs?|hours?|weeks?)(?![\w])(?P<and_half>\s+and\s+a\s+half)?", re.IGNORECASE)
#: spans whose digits are no count: ISO dates and date-times, clock times (and e-mail addresses: the
#: automaton's own form, ``constraints.placeholders.EMAIL``)
_NOT_COUNTS = re.compile(r"\d{4}-\d{2}-\d{2}(?:T[\d:]+(?:Z|[+-]\d{2}:\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?")
_NOTED_NOT_COUNTS = re.compile(r"\d{4}-|\d{2}:|[+-]\d{2}:|Z$")


def count_of(m: re.Match) -> int | float:
    """The value of a match of :data:`COUNT`'s groups (``num``, ``word``, ``one``)."""
    if m["num"]:
        digits = m["num"].replace(",", "")
        return float(digits) if "." in digits else int(digits)  # an int keeps every digit of a long numeral
    if m["word"]:
        return WORDS[m["word"].lower().split()[-1]]
    return 1


def _plain(v: int | float) -> int | float:
    return v if isinstance(v, int) else int(v) if v == int(v) else round(v, 10)


def stated_numbers(text: str) -> list[int | float]:
    """The numbers ``text`` states (see the module doc), in order, each once: integers as ``int``."""
    return list(number_mentions(text))


@functools.lru_cache(maxsize=256)
def number_places(text: str) -> tuple[tuple[int, int, int | float], ...]:
    """(start, end, value) of each number ``text`` states (see the module doc), in order; a duration gives
    its count and its converted value at one place."""
    return tuple((a, b, v) for a, b, v, _ in unit_places(text))


@functools.lru_cache(maxsize=256)
def converted_numbers(text: str) -> dict[int | float, str]:
    """The numbers ``text`` states only as a duration's converted value, and that value's unit: "11 weeks"
    gives ``{77: "days"}``, "two hours" ``{120: "minutes"}``. A value it also states otherwise (a count, or
    another duration's count) is not one of them."""
    units: dict[int | float, set] = {}
    for _, _, v, unit in unit_places(text):
        units.setdefault(v, set()).add(unit)
    return {v: next(iter(u)) for v, u in units.items() if None not in u and len(u) == 1}


@functools.lru_cache(maxsize=256)
def unit_places(text: str) -> tuple[tuple[int, int, int | float, str | None], ...]:
    """``number_places`` with each value's unit: ``days`` or ``minutes`` for a duration's converted value
    (weeks, hours), ``None`` for every other number."""
    from .constraints.placeholders import EMAIL
    from .request_notes import notes

    blocked = [m.span() for m in _NOT_COUNTS.finditer(text)]
    blocked += [m.span() for m in re.finditer(EMAIL, text, re.IGNORECASE)]
    blocked += [(a, b) for a, b, value in notes(text) if _NOTED_NOT_COUNTS.match(value)]

    def free(m: re.Match) -> bool:
        return not any(a < m.end() and m.start() < b for a, b in blocked)

    found: list[tuple[int, int, int | float, str | None]] = []
    for m in _DURATION.finditer(text):
        if not free(m):
            continue
        n = 0.5 if m["half"] else 0.25 if m["quarter"] else count_of(m)
        n += 0.5 if m["and_half"] else 0.0
        weeks = m["unit"].lower().startswith("w")
        found += [(m.start(), m.end(), n * (7 if weeks else 60), "days" if weeks else "minutes"),
                  (m.start(), m.end(), n, None)]
    for m in _NUMBER.finditer(text):
        if m["one"] or not free(m):
            continue
        n = count_of(m) * _MULTIPLIERS.get((m["mult"] or "").lower(), 1)
        found.append((m.start(), m.end(), -n if m["sign"] else n, None))
    places: dict[tuple, tuple] = {}  # (start, value) -> (end, unit): one place per value at a start
    for a, b, v, unit in found:
        places.setdefault((a, _plain(v)), (b, unit))
    return tuple(sorted(((a, b, v, unit) for (a, v), (b, unit) in places.items()), key=lambda x: x[0]))


@functools.lru_cache(maxsize=256)
def number_mentions(text: str) -> dict[int | float, int]:
    """How many times ``text`` states each of its numbers, in order of first mention (a duration's count
    and its minutes are one mention each)."""
    counts: dict[int | float, int] = {}
    for _, _, v in number_places(text):
        counts[v] = counts.get(v, 0) + 1
    return counts
