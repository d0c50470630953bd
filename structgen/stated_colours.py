"""Colours the request states: a colour field is one of them, or left out where the request names none.

A grounded free-text value may be any part of the request, and run 11 filled a vehicle ad's ``colour`` with
``"EUR"``, ``"km"`` or ``"Selling my Volvo"``, and left it out where the ad said "in grey". A field whose
name says it holds a colour (``holds_colour``: ``color``, ``colour``, ``paint_colour``; not
``colour_code`` nor ``color_count``) is one of the request's **colours** (``stated_colours``): a colour
word of ``COLOURS`` as a whole word, with a shade before it where one is written ("dark blue", "metallic
grey"). ``ground_schema`` makes such a field a choice of those colours (``structgen.stated_spans``) and
writes an optional one; an optional colour field of a request that names no colour is left out
(``structgen.grounding_fields``). A colour the list lacks ("puce") is not read: the field stays free text
when it is required, and is left out when it is optional. The words are English ones.
"""

from __future__ import annotations

import functools
import re

__all__ = ["COLOURS", "holds_colour", "stated_colours", "colours_for", "uncoloured"]

#: colour words
COLOURS = frozenset("""black white red blue green yellow orange purple pink brown grey gray silver gold golden
    navy beige teal turquoise maroon burgundy olive cream ivory violet lilac lavender magenta cyan crimson
    charcoal bronze copper tan khaki mint coral indigo amber champagne""".split())
#: words written before a colour that belong to it
SHADES = frozenset("dark light pale bright deep metallic matte matt pastel navy sky royal".split())
#: a key word that says the value is something about a colour, not the colour
NOT_COLOUR_WORDS = frozenset("code hex rgb count id scheme depth space mode profile".split())

_WORD = re.compile(r"[^\W\d_]+")


def holds_colour(key: str) -> bool:
    """Whether a property's name says it holds a colour (module doc)."""
    from .proper_names import key_words

    words = set(key_words(key)) if isinstance(key, str) else set()
    return bool(words & {"color", "colour"}) and not words & NOT_COLOUR_WORDS


@functools.lru_cache(maxsize=256)
def stated_colours(source: str) -> tuple[str, ...]:
    """The colours of ``source`` (module doc), as it writes them, in order of first appearance."""
    out: list[str] = []
    words = list(_WORD.finditer(source))
    for i, m in enumerate(words):
        if m.group(0).lower() not in COLOURS:
            continue
        start = m.start()
        before = words[i - 1] if i else None
        if before is not None and before.group(0).lower() in SHADES and source[before.end():start] == " ":
            start = before.start()
        out.append(source[start:m.end()])
    return tuple(dict.fromkeys(out))


def colours_for(key: str, source: str) -> list[str]:
    """The colours of ``source`` that property ``key`` may hold, or ``[]`` when ``key`` holds none."""
    return list(stated_colours(source)) if holds_colour(key) else []


def uncoloured(key: str, node: object, source: str) -> bool:
    """Whether property ``key`` (subschema ``node``) is a free-text colour field and ``source`` names no
    colour: an optional one is then left out."""
    from .grounding import GROUND_KEY

    return isinstance(node, dict) and GROUND_KEY in node and holds_colour(key) and not stated_colours(source)
