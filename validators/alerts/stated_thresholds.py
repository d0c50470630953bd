"""The thresholds an alert description states: each number, the unit written after it and the comparison
written before it.

``ground_catalog`` (``validators.alerts.grounded``) reads them to narrow a rule's thresholds and comparison
operators:

* **By unit** (:func:`thresholds_by_unit`): "p95 latency above 500 ms or more than 10 errors" states 500 in
  ``ms`` and 10 without a unit, so the latency (in ms) is compared with 500 and the error count with 10,
  never the other way round. A metric in a unit the description writes takes the numbers written with it;
  any other takes the numbers written without a unit (all of them when there are none).
* **Comparison** (:func:`stated_comparators`): the words right before each number ("exceeds", "drops
  below", "at least", "<=") say how it is compared: ``>``, ``<``, ``>=``, ``<=`` or ``==``. A rule compares
  with the operators the description writes; when a number has no such words before it ("CPU 90%"), any.

Not thresholds: the counts of durations ("for 2 minutes", "over 30 seconds"), and digits glued to a word
that is no unit ("5xx", "p95", "web-3").
"""

from __future__ import annotations

import re
from decimal import Decimal

from structgen.stated_numbers import stated_numbers

__all__ = ["UNIT_WORDS", "thresholds_by_unit", "stated_comparators", "threshold_text"]

#: how a description writes the units of a threshold, by the rule language's unit
UNIT_WORDS = {"%": r"%|percent|per\s*cent", "ms": r"ms|milliseconds?", "s": r"s|secs?|seconds?",
              "KB": r"kb|kilobytes?", "MB": r"mb|megabytes?", "GB": r"gb|gigabytes?"}
_UNIT = re.compile("|".join(UNIT_WORDS.values()), re.IGNORECASE)
_NUMERAL = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
#: a numeral standing as a word (not inside ``p95``, ``web-3`` or ``1.5``), its multiplier and unit
_MENTION = re.compile(rf"(?<![\w.,-])(?P<n>{_NUMERAL})(?:\s?(?P<mult>k|thousand|million)(?![\w]))?"
                      rf"(?:\s*(?P<unit>{_UNIT.pattern})(?![\w%]))?", re.IGNORECASE)
#: digits glued to a word that is no unit: "5xx", "4xx", "2nd"
_GLUED = re.compile(rf"(?<![\w.,-])\d+(?!(?:{_UNIT.pattern}|k|thousand|million)(?![\w%]))(?=[a-z])\w*",
                    re.IGNORECASE)
_MULTIPLIERS = {"k": 1000, "thousand": 1000, "million": 1000000}

#: the words before a number that say how it is compared, by operator (the longest phrase wins)
_COMPARATOR_WORDS = {
    ">=": r"at\s+least|no\s+less\s+than|reach(?:es|ed)?|hits?|>=",
    "<=": r"at\s+most|no\s+more\s+than|gets?\s+down\s+to|<=",
    ">": r"above|over|exceed(?:s|ed|ing)?|more\s+than|greater\s+than|higher\s+than|beyond|tops?|"
         r"surpass(?:es)?|>",
    "<": r"below|under|less\s+than|fewer\s+than|lower\s+than|beneath|<",
    "==": r"equals?|exactly|==",
}
_BEFORE = re.compile(r"(?:^|(?<=[^\w<>=]))(?:" + "|".join(f"(?P<op{i}>{w})" for i, w in
                                                         enumerate(_COMPARATOR_WORDS.values())) +
                     r")\s*(?:of\s+|about\s+|roughly\s+|around\s+)?$", re.IGNORECASE)
_OPS = tuple(_COMPARATOR_WORDS)


def threshold_text(source: str, durations: re.Pattern) -> str:
    """``source`` with its durations (matches of ``durations``) and its glued digits ("5xx") blanked, at the
    same length, so what is left states thresholds only."""
    blank = lambda m: " " * len(m.group(0))
    return _GLUED.sub(blank, durations.sub(blank, source))


def _mentions(text: str):
    """(start, value, unit or None) of each numeral of ``text`` (a threshold text)."""
    for m in _MENTION.finditer(text):
        values = stated_numbers(m["n"])
        if not values:
            continue
        value = Decimal(str(values[0])) * _MULTIPLIERS.get((m["mult"] or "").lower(), 1)
        yield m.start(), value, _unit_of(m["unit"])


def _unit_of(word: str | None) -> str | None:
    """The rule language's unit that ``word`` writes ("milliseconds": ``ms``)."""
    return next((u for u, words in UNIT_WORDS.items() if word and re.fullmatch(words, word, re.IGNORECASE)),
                None)


def thresholds_by_unit(text: str) -> dict[str | None, tuple[Decimal, ...]]:
    """The numbers a threshold text states, by the unit written after them (``None``: no unit), each once,
    in order."""
    out: dict[str | None, dict[Decimal, None]] = {}
    for _, value, unit in _mentions(text):
        out.setdefault(unit, {})[value] = None
    return {u: tuple(vs) for u, vs in out.items()}


def stated_comparators(text: str) -> tuple[str, ...] | None:
    """The comparison operators the words before each number of a threshold text state, in the order of
    ``>=, <=, >, <, ==``; ``None`` when some number has none before it, or there is no number."""
    found: set[str] = set()
    mentions = list(_mentions(text))
    for start, _, _ in mentions:
        m = _BEFORE.search(text, max(0, start - 40), start)
        if m is None:
            return None
        found.add(_OPS[int(next(k for k, v in m.groupdict().items() if v is not None)[2:])])
    return tuple(op for op in _OPS if op in found) or None
