"""Request notes: the ISO form of every absolute date, clock time and UTC offset a request spells out in
words, written beside it, so that a small model copies a value instead of converting it.

    >>> annotate("Nudge me at 1:45 pm on the 24th of February 2027? Times are GMT-8.")
    'Nudge me at 1:45 pm (13:45) on the 24th of February 2027 (2027-02-24)? Times are GMT-8 (-08:00).'

Why: a 4 x 256 model trained for an hour on a CPU copies a value from the request almost without fault (the
copy head, ``models/copy_head.py``), but never learnt to turn a month's *name* into its number in 36
training runs (docs/training-log.md): every held-out call with a date had it wrong. Rule-based entity
normalisation beside a small learnt model is the classic pipeline of task-oriented assistants (Duckling in
Rasa); here the notes are part of the model's prompt format. A model trained with them
(``structgen train --request-notes``) records the notes' version (``VERSION``) as ``structgen_request_notes``
in its ``config.json``, and ``DiffusionModel.encode_prompt`` then annotates every prompt it encodes with
that version's rules, in training and at inference alike; other models never see them. A change to what is
noted must come as a new version, so that a model keeps reading the notes it was trained on.

What version 1 notes (English; a value already in its ISO form is left alone, an impossible date is skipped):

* dates with a month name and a year: ``February 22nd 2027``, ``Sep 3, 2027``, ``14 Jan 2027``,
  ``the 24th of February 2027``, ``Friday, September 18, 2026`` -> ``(2027-02-22)``;
* clock times written with am/pm, with a one-digit hour or as ``at 18h``: ``1:45 pm``, ``11am``, ``6:15PM``,
  ``9:05``, ``at 18h`` -> ``(13:45)``, ``(11:00)``, ``(18:15)``, ``(09:05)``, ``(18:00)`` (``for 2h`` is a
  duration and stays as it is);
* UTC offsets: ``UTC+9``, ``GMT-8``, ``UTC+05:30``, ``UTC`` -> ``(+09:00)``, ``(-08:00)``, ``(+05:30)``,
  ``(Z)``.

Version 2 adds (version 1's rules are kept as they were, so a model trained with them reads what it learnt):

* amounts with a currency symbol, name or code: ``$7,441``, ``€82.40``, ``1,250 Swedish kronor``,
  ``82.40 EUR`` -> ``(7441 USD)``, ``(82.4 EUR)``, ``(1250 SEK)``, ``(82.4 EUR)`` (an amount already written
  as its note is left alone); a currency's name on its own: ``into Swedish kronor`` -> ``(SEK)``;
* one date, one clock time and one UTC offset in a request: the offset's note is the whole ISO date-time,
  ``1:30PM (13:30) UTC+9 (2027-02-24T13:30:00+09:00)``, a value no part of which passes for another (a
  version-1 model copied the offset's ``09:00`` as the time in 4 of 6 wrong reminders); a date or time
  already in ISO form (``2027-02-24``, ``08:20``) is one of the parts;
* ``noon`` and ``midnight`` -> ``(12:00)``, ``(00:00)``;
* nothing inside double quotes (an e-mail subject or an event title is copied as it stands).

Plain regular expressions: ``dateparser`` reads the same spans (``tests/test_request_notes.py`` holds the
notes to it) but takes about 4 ms a request (``benchmarks/request_notes.py``), over ten minutes for a
training set's 160,000 rows; this takes tens of microseconds.
"""

from __future__ import annotations

import datetime as _dt
import re

from .errors import ConfigError

__all__ = ["VERSION", "annotate", "check_version", "notes", "note_currency"]

#: the rules below; a model records the version it was trained with (1: dates, clock times, UTC offsets;
#: 2: and amounts, currencies, whole date-times, nothing in quotes)
VERSION = 2

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
#: month spellings -> number (full names and the usual abbreviations, "Sept" included)
MONTH_NUMBERS: dict[str, int] = {**{m: i + 1 for i, m in enumerate(_MONTHS)},
                                 **{m[:3]: i + 1 for i, m in enumerate(_MONTHS)}, "sept": 9}
_MONTH = r"(?P<{g}>" + "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{g}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{g}>\d{{4}})"

_DATE = re.compile(
    r"\b(?:" + _MONTH.format(g="m1") + r"\s+" + _DAY.format(g="d1") + r",?\s+" + _YEAR.format(g="y1")
    + r"|(?:the\s+)?" + _DAY.format(g="d2") + r"\s+(?:of\s+)?" + _MONTH.format(g="m2") + r",?\s+"
    + _YEAR.format(g="y2") + r")\b",
    re.IGNORECASE)
_CLOCK = re.compile(
    r"(?<![\w:.+\-−])(?P<h>[01]?\d)(?::(?P<min>[0-5]\d))?\s?(?P<ap>[ap])\.?\s?m\b\.?"  # 1:45 pm, 11am, 6:15PM
    r"|(?<![\w:.+\-−])(?P<h1>\d):(?P<m1>[0-5]\d)(?![\w:])"  # 9:05 (a one-digit hour)
    r"|(?<=\bat )(?P<h2>[01]?\d|2[0-3])h(?P<m2>[0-5]\d)?\b",  # at 18h, at 7h30 (not "for 2h", a duration)
    re.IGNORECASE)
_OFFSET = re.compile(r"\b(?:UTC|GMT)(?:\s?(?P<sign>[+\-−])(?P<oh>\d{1,2})(?::?(?P<om>\d{2}))?)?(?![\w+-])")


#: ISO 4217 code -> names a request may use for it (lower case; "dollars" alone is left out, as no one
#: dollar is meant, but "$" is read as USD, the usual convention; "pounds" is read as money, weight aside)
CURRENCY_NAMES: dict[str, tuple[str, ...]] = {
    "EUR": ("euros", "euro"), "USD": ("us dollars", "u.s. dollars", "american dollars"),
    "GBP": ("british pounds", "pounds sterling", "pound sterling", "sterling", "pounds"),
    "JPY": ("japanese yen", "yen"), "CHF": ("swiss francs", "swiss franc"), "SEK": ("swedish kronor", "swedish krona"),
    "PLN": ("polish złoty", "polish zloty", "złoty", "zloty"), "BRL": ("brazilian reais", "brazilian real"),
    "INR": ("indian rupees", "indian rupee", "rupees"), "CAD": ("canadian dollars", "canadian dollar"),
    "NOK": ("norwegian kroner", "norwegian krone"), "MXN": ("mexican pesos", "mexican peso"),
    "DKK": ("danish kroner", "danish krone"), "AUD": ("australian dollars", "australian dollar"),
    "CNY": ("chinese yuan", "yuan", "renminbi"), "NZD": ("new zealand dollars",), "ZAR": ("south african rand",),
}
_CODE_OF = {name: code for code, names in CURRENCY_NAMES.items() for name in names}
_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}
_CODES = "|".join(CURRENCY_NAMES)
_NAMES = "|".join(re.escape(n) for n in sorted(_CODE_OF, key=len, reverse=True))
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_AMOUNT = re.compile(  # $7,441 (not £3.5m) | 1,250 Swedish kronor, 82.40 EUR
    r"(?<![\w.,])(?P<sym>[" + "".join(_SYMBOLS) + r"])\s?(?P<n1>" + _NUMBER + r")(?![\w]|[.,]\d)"
    r"|(?<![\w.,$€£¥₹])(?P<n2>" + _NUMBER + r")\s?(?:(?P<code>" + _CODES + r")\b|(?P<name>" + _NAMES + r")(?!\w))",
    re.IGNORECASE)
_CURRENCY = re.compile(r"(?<!\w)(?:" + _NAMES + r")(?!\w)", re.IGNORECASE)
_NOON = re.compile(r"(?<![\w-])(?:noon|midnight)(?![\w-])", re.IGNORECASE)
#: a date or time already in ISO form (not one in parentheses: that is a note, or reads like one)
_ISO_DATE = re.compile(r"(?<![\w(-])\d{4}-\d{2}-\d{2}(?![\w)-])")
_ISO_CLOCK = re.compile(r"(?<![\w(:.+\-−])(?:[01]\d|2[0-3]):[0-5]\d(?![\w):])")
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')


def _number(text: str) -> str:
    """``"1,250.00"`` -> ``"1250"``, ``"82.40"`` -> ``"82.4"``: the amount as JSON writes it."""
    n = text.replace(",", "")
    return n.rstrip("0").rstrip(".") if "." in n else n


_AMOUNT_NOTE = re.compile(r"-?\d[\d.]*\s+(?P<code>[A-Z]{3})")


def note_currency(note: str) -> str | None:
    """The currency code of an amount note (``"4847 GBP"`` -> ``GBP``, as ``_amount`` writes it), else None."""
    m = _AMOUNT_NOTE.fullmatch(note)
    return m["code"] if m else None


def _amount(m: re.Match) -> str | None:
    if m["sym"]:
        return f"{_number(m['n1'])} {_SYMBOLS[m['sym']]}"
    if m["code"] and m["code"] != m["code"].upper():
        return None  # "100 eur" is too loose to read as a code; "100 euros" is a name
    code = m["code"] or _CODE_OF[m["name"].lower()]
    note = f"{_number(m['n2'])} {code}"
    return None if note == m.group() else note


def _date(m: re.Match) -> str | None:
    g = m.groupdict()
    month, day, year = (g["m1"], g["d1"], g["y1"]) if g["m1"] else (g["m2"], g["d2"], g["y2"])
    try:
        return _dt.date(int(year), MONTH_NUMBERS[month.lower()], int(day)).isoformat()
    except ValueError:
        return None


def _iso_date(m: re.Match) -> str | None:
    try:
        return _dt.date.fromisoformat(m.group()).isoformat()
    except ValueError:
        return None


def _clock(m: re.Match) -> str | None:
    if m["h1"] is not None:
        return f"0{m['h1']}:{m['m1']}"
    if m["h2"] is not None:
        return f"{int(m['h2']):02d}:{m['m2'] or '00'}"
    h, minute = int(m["h"]), int(m["min"] or 0)
    if not 1 <= h <= 12:
        return None
    h = h % 12 + (12 if m["ap"].lower() == "p" else 0)
    return f"{h:02d}:{minute:02d}"


def _offset(m: re.Match) -> str | None:
    if m["sign"] is None:
        return "Z"
    h, minute = int(m["oh"]), int(m["om"] or 0)
    if h > 14 or minute >= 60:
        return None
    if h == 0 and minute == 0:
        return "Z"
    return f"{'-' if m['sign'] in '-−' else '+'}{h:02d}:{minute:02d}"


def check_version(version: int) -> int:
    """``version`` if this structgen knows it (0 = no notes); ConfigError otherwise."""
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= VERSION:
        raise ConfigError(f"request notes version {version!r} is unknown to this structgen (it knows 0, none, "
                          f"to {VERSION}); upgrade structgen to use a model trained with them")
    return version


def notes(text: str, version: int = VERSION) -> list[tuple[int, int, str]]:
    """``(start, end, iso)`` for every span of ``text`` that ``version``'s rules note, in order, none
    overlapping."""
    if check_version(version) == 0:
        return []
    rules = [(_OFFSET, _offset, "offset"), (_DATE, _date, "date"), (_CLOCK, _clock, "clock")]
    taken: list[tuple[int, int]] = []
    if version >= 2:
        rules += [(_NOON, lambda m: "12:00" if m.group().lower() == "noon" else "00:00", "clock"),
                  (_ISO_DATE, _iso_date, "date="), (_ISO_CLOCK, lambda m: m.group(), "clock="),  # parts, no notes
                  (_AMOUNT, _amount, "amount"), (_CURRENCY, lambda m: _CODE_OF[m.group().lower()], "currency")]
        taken = [m.span() for m in _QUOTED.finditer(text)]  # quoted text is copied as it stands: no notes there
    found: list[tuple[int, int, str, str]] = []
    for pattern, value, kind in rules:
        for m in pattern.finditer(text):
            iso = value(m)
            if iso is None or any(m.start() < e and s < m.end() for s, e in taken):
                continue
            found.append((m.start(), m.end(), iso, kind))
            taken.append(m.span())
    if version >= 2:
        found = _whole_date_time(found)
    return sorted((s, e, iso) for s, e, iso, kind in found if not kind.endswith("="))


def _whole_date_time(found: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """With exactly one date, one clock time and one offset, the offset's note becomes the whole date-time."""
    kinds = [kind.rstrip("=") for *_, kind in found]  # a value already in ISO form is a part as well
    if not all(kinds.count(k) == 1 for k in ("date", "clock", "offset")):
        return found
    value = {kind.rstrip("="): iso for _, _, iso, kind in found}
    whole = f"{value['date']}T{value['clock']}:00{value['offset']}"
    return [(s, e, whole if kind == "offset" else iso, kind) for s, e, iso, kind in found]


def annotate(text: str, version: int = VERSION) -> str:
    """``text`` with `` (iso)`` after every span :func:`notes` finds (unchanged when there is none; a span
    already followed by its note keeps the one it has, so annotating twice changes nothing)."""
    out, last = [], 0
    for _, end, iso in notes(text, version):
        note = f" ({iso})"
        if text.startswith(note, end):
            continue
        out += [text[last:end], note]
        last = end
    return "".join(out) + text[last:]
