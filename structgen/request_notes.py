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

What is noted (English; a value already in its ISO form is left alone, an impossible date is skipped):

* dates with a month name and a year: ``February 22nd 2027``, ``Sep 3, 2027``, ``14 Jan 2027``,
  ``the 24th of February 2027``, ``Friday, September 18, 2026`` -> ``(2027-02-22)``;
* clock times written with am/pm, with a one-digit hour or as ``at 18h``: ``1:45 pm``, ``11am``, ``6:15PM``,
  ``9:05``, ``at 18h`` -> ``(13:45)``, ``(11:00)``, ``(18:15)``, ``(09:05)``, ``(18:00)`` (``for 2h`` is a
  duration and stays as it is);
* UTC offsets: ``UTC+9``, ``GMT-8``, ``UTC+05:30``, ``UTC`` -> ``(+09:00)``, ``(-08:00)``, ``(+05:30)``,
  ``(Z)``.

Plain regular expressions: ``dateparser`` reads the same spans (``tests/test_request_notes.py`` holds the
notes to it) but takes about 4 ms a request (``benchmarks/request_notes.py``), over ten minutes for a
training set's 160,000 rows; this takes tens of microseconds.
"""

from __future__ import annotations

import datetime as _dt
import re

from .errors import ConfigError

__all__ = ["VERSION", "annotate", "check_version", "notes"]

#: the rules below; a model records the version it was trained with (1: dates, clock times, UTC offsets)
VERSION = 1

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


def _date(m: re.Match) -> str | None:
    g = m.groupdict()
    month, day, year = (g["m1"], g["d1"], g["y1"]) if g["m1"] else (g["m2"], g["d2"], g["y2"])
    try:
        return _dt.date(int(year), MONTH_NUMBERS[month.lower()], int(day)).isoformat()
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
    found: list[tuple[int, int, str]] = []
    for pattern, value in ((_OFFSET, _offset), (_DATE, _date), (_CLOCK, _clock)):
        for m in pattern.finditer(text):
            iso = value(m)
            if iso is None or any(m.start() < e and s < m.end() for s, e, _ in found):
                continue
            found.append((m.start(), m.end(), iso))
    return sorted(found)


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
