"""Booleans the request states in words: "not yet vaccinated" is ``is_vaccinated: false``, "teaches it online"
``online: true``.

A small model reads a field's word in the request and writes ``true``, the negation before it unread
(``"isVaccinated": true`` for "This 12-year-old rabbit is not yet vaccinated"), or reads it and writes
``false`` ("teaches it online": ``"online": false``). Grounding (``structgen.grounding_fields``) reads the
request instead. The field's words are those of its name (``structgen.named_numbers.name_words``: first five
letters, any case), less the ones that say nothing of what is stated (``is``, ``has``, ``allowed``,
``included``, ``in``, ``out``...). Where the request writes one of them, each time right after a negation
(``not``, ``no``, ``non``, ``never``, ``without``, "out of", "not yet", "isn't"), it states ``false``
(``negated``); where it writes one, never after a negation nor before a value of its own (a label's ``:``,
``=``, ``;``, `` - ``, a table's tab, "is n", "yes", "false"...; "false (in stock)"), it states ``true``
(``affirmed``). A request that writes none of them but a phrase that is their opposite (``OPPOSITES``: "in
person" for ``online``, "on site" for ``remote``) states ``false``; one that writes both states nothing.
Either way the field becomes ``const`` and is written. A request that does neither leaves the field as the
schema has it: "paid: no", "in stock: n" and a table's column are left to the model.
"""

from __future__ import annotations

import re

__all__ = ["affirmed", "negated", "stated_value"]

#: name words that say nothing about what is stated ("is_vaccinated", "pets_allowed", "in_stock")
_VAGUE = "is has have can allowed included ok possible available enabled in on at of for the a to by with out".split()
_NEGATION = re.compile(r"(?:\b(?:not|no|non|never|without|out\s+of)|n't)(?:\s+(?:yet|fully|really|a|any|in))?[\s-]+$",
                       re.IGNORECASE)
#: what follows a word that is a label or a column, not a statement: a separator (a word between at most:
#: "paid with - transfer"), or a value of its own
_VALUED = re.compile(r"[ ]?(?:(?:[^\W\d_]+[ ]?)?[:=;|\t\n-]"
                     r"|\s*(?:(?:is|was|are)\s+)?(?:no|n|yes|y|true|false|off|on)\b)", re.IGNORECASE)
#: a value written right before the word, a word between at most ("false (in stock)", "No (works remotely)")
_VALUE_BEFORE = re.compile(r"\b(?:yes|y|true|false|no|n)\W*(?:[^\W\d_]+\s+)?$", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+")


def _places(key: str, source: str) -> list[re.Match]:
    """The words of ``source`` that are one of the field's words (module doc)."""
    from .named_numbers import name_words, stem

    stems = name_words(key) - {stem(w) for w in _VAGUE}
    return [m for m in _WORD.finditer(source) if stem(m.group(0)) in stems]


#: phrases that state a field's word false without naming it ("teaches it in person": ``online`` false)
OPPOSITES = {
    "onlin": re.compile(r"\b(?:in[\s-]person|on[\s-]?site|offline|face[\s-]to[\s-]face)\b", re.IGNORECASE),
    "remot": re.compile(r"\b(?:on[\s-]?site|in[\s-]office|in\s+the\s+office)\b", re.IGNORECASE),
}


def _opposed(key: str, source: str) -> bool:
    """Whether ``source`` writes a phrase of ``OPPOSITES`` for one of the field's words."""
    from .named_numbers import name_words

    return any(OPPOSITES[s].search(source) for s in name_words(key) & set(OPPOSITES))


def stated_value(key: str, source: str) -> bool | None:
    """``False`` where ``source`` negates the boolean property ``key`` or writes only its opposite
    (``OPPOSITES``), ``True`` where it affirms it, None where it does neither (module doc)."""
    places = _places(key, source)
    if not places:
        return False if _opposed(key, source) else None
    if _opposed(key, source):
        return None
    after_negation = [bool(_NEGATION.search(source[max(0, m.start() - 24):m.start()])) for m in places]
    if all(after_negation):
        return False
    if any(after_negation) or any(_VALUED.match(source, m.end())
                                  or _VALUE_BEFORE.search(source[max(0, m.start() - 16):m.start()]) for m in places):
        return None
    return True


def negated(key: str, source: str) -> bool:
    """Whether ``source`` states ``false`` for the boolean property ``key``: it writes one of its words, each
    time right after a negation (module doc)."""
    return stated_value(key, source) is False


def affirmed(key: str, source: str) -> bool:
    """Whether ``source`` states ``true`` for the boolean property ``key``: it writes one of its words, never
    after a negation nor beside a value of its own (module doc)."""
    return stated_value(key, source) is True
