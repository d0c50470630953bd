"""Phone numbers the request states: a phone field is one of them, never a greeting or a name.

A grounded free-text value may be any part of the request, and run 11 filled a signature block's
``direct_line`` with ``"Thanks for your help"`` and its ``phone`` with ``"Thanks"``. A field whose name says
it holds a phone number (``holds_phone``: a key word of ``PHONE_WORDS``, ``phone``, ``tel``, ``mobile``,
``fax``, or ``direct_line``; none of ``NOT_PHONE_WORDS``, ``phone_type``, ``phone_verified``) is one of the
request's **phone numbers** (``stated_phones``): digits in groups, each group separated by one space, dash
or dot, an area code in brackets allowed, a ``+`` before the first (``+45 381 51708``, ``(555) 123-4567``,
``0471074736``), with ``MIN_DIGITS`` to 15 digits, within one line and not part of a longer word or number.
A date written with dashes or dots (``2025-10-01``, ``01.10.2025``) and an amount with a decimal part
(``53083.20``) are no phone numbers. ``ground_schema`` makes such a field a choice of those numbers
(``structgen.stated_spans``); a request that writes none leaves it free text.
"""

from __future__ import annotations

import functools
import re

__all__ = ["holds_phone", "stated_phones", "phones_for", "MIN_DIGITS"]

#: the fewest digits of a phone number (a local number without its area code has seven)
MIN_DIGITS = 7
#: a key word that says a field holds a phone number
PHONE_WORDS = frozenset("phone telephone tel mobile cell cellphone fax landline whatsapp".split())
#: a key word that says the value is something about a phone, not its number
NOT_PHONE_WORDS = frozenset("type kind verified count model brand make id code country ext extension".split())

_PHONE = re.compile(r"(?<![\w+.,\-])(?:\+\s?)?(?:\(\d{1,5}\)[ \-.]?)?\d+(?:[ \-.]\d+)*(?![\w\-]|[.,]\d)")
_DATE = re.compile(r"\d{4}([\-./])\d{1,2}\1\d{1,2}|\d{1,2}([\-./])\d{1,2}\2\d{2,4}")


def holds_phone(key: str) -> bool:
    """Whether a property's name says it holds a phone number (module doc)."""
    from .proper_names import key_words

    words = set(key_words(key)) if isinstance(key, str) else set()
    return bool(words & PHONE_WORDS or {"direct", "line"} <= words) and not words & NOT_PHONE_WORDS


@functools.lru_cache(maxsize=256)
def stated_phones(source: str) -> tuple[str, ...]:
    """The phone numbers of ``source`` (module doc), in order of first appearance."""
    out: list[str] = []
    for line in source.splitlines():
        for m in _PHONE.finditer(line):
            text = m.group(0).strip()
            digits = sum(c.isdigit() for c in text)
            if MIN_DIGITS <= digits <= 15 and not _DATE.fullmatch(text) and not re.fullmatch(r"\d+\.\d{1,2}", text):
                out.append(text)
    return tuple(dict.fromkeys(out))


def phones_for(key: str, source: str) -> list[str]:
    """The phone numbers of ``source`` that property ``key`` may hold, or ``[]`` when ``key`` holds none."""
    return list(stated_phones(source)) if holds_phone(key) else []
