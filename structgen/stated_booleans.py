"""Booleans the request negates: "not yet vaccinated" is ``is_vaccinated: false``, "no pets" ``pets_allowed: false``.

A small model reads a field's word in the request and writes ``true``, the negation before it unread
(``"isVaccinated": true`` for "This 12-year-old rabbit is not yet vaccinated"). Grounding
(``structgen.grounding_fields``) reads it: a boolean field one of whose name words (``structgen.named_numbers.
name_words``: first five letters, any case; not ``is``, ``has``, ``allowed``, ``included``...) the request
writes, each time right after a negation (``not``, ``no``, ``non``, ``never``, ``without``, "not yet", "isn't")
states ``false`` (``negated``); the field becomes ``const: false`` and is written. A request that writes the
word once without a negation, or not at all, leaves the field as the schema has it: "paid: no" and "in stock:
n" are left to the model, as is every ``true``.
"""

from __future__ import annotations

import re

__all__ = ["negated"]

#: name words that say nothing about what is negated ("is_vaccinated", "pets_allowed", "breakfast_included")
_VAGUE = "is has have can allowed included ok possible available enabled".split()
_NEGATION = re.compile(r"(?:\b(?:not|no|non|never|without)|n't)(?:\s+(?:yet|fully|really|a|any))?[\s-]+$",
                       re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+")


def negated(key: str, source: str) -> bool:
    """Whether ``source`` states ``false`` for the boolean property ``key`` (module doc)."""
    from .named_numbers import name_words, stem

    stems = name_words(key) - {stem(w) for w in _VAGUE}
    places = [m.start() for m in _WORD.finditer(source) if stem(m.group(0)) in stems]
    return bool(places) and all(_NEGATION.search(source[max(0, a - 24):a]) for a in places)
