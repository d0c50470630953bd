"""Titles: a course's, a book's or a talk's title is a title-case phrase of the request, and no person's name.

A course listing writes its title and its teacher as two capitalised phrases ("Python for Beginners with Anna
Novák"), and a small model writes the teacher into both fields (``"course": "Anna Novák", "teacher": "Anna
Novák"``). A field whose name says it holds a work's title (``holds_title``: ``course``, ``course_title``,
``book``, ``talk_title``; not a bare ``title``, which an event, a task or a job has too) is one of the
request's **titles** (``titles``): a run of capitalised words with the small words a title keeps inside it
(``TITLE_WORDS``: "Intro to Statistics", "Python for Beginners") or a quoted phrase, with an article before it
where one is written ("The Silent Fjord"), whole (not "Python" of it), that no e-mail address spells and the
request does not introduce, write with "Dr." or "Mr." (a person's) nor write only after "by" or "with" (the
work's maker or host: "Python for Beginners with Anna Novák", "a book by Ali Brown"); and of those, the ones
not written only as the first words of a sentence that follows another on its line, where there are any (a
capital there says nothing: "... with Anna Novák. Starts 22 Oct", "A: On May 23, 2026. Jonas García teaches
it"; a line's first words may well be a title: "Northern Lights - Olivia Kovács"). ``ground_schema`` makes
such a field a choice of those titles (``structgen.stated_spans``). A request with no title-case phrase leaves
the field free text.
"""

from __future__ import annotations

import re

from .proper_names import (ABBREVIATIONS, PARTICLES, addressed, introduced, key_words, only_titled, proper_names,
                           word_places)

__all__ = ["holds_title", "titles", "titles_for", "TITLE_KEYS"]

#: key words of a field that holds a work's title
TITLE_KEYS = frozenset("""course book film movie song album talk lecture workshop seminar novel podcast
    episode""".split())
#: key words that say the field holds something else about the work (its date, its code, its teacher)
NOT_TITLE_KEYS = frozenset("""date time start end id code number count length duration weeks price fee url
    teacher instructor author speaker host lecturer director artist level capacity online""".split())
#: small words a title keeps between its capitalised words ("Intro to Statistics", "Kaze no Uta"); not
#: "with", which joins a course to its teacher
TITLE_WORDS = PARTICLES | frozenset("for to the a an in on at without from into vs no".split())

_QUOTED = re.compile(r"\u201c([^\u201d\n]+)\u201d|\"([^\"\n]+)\"|\u2018([^\u2019\n]+)\u2019")
_ARTICLE = re.compile(r"(?:The|A|An)\s+$")
#: words right before a work's maker or host: "a book by Ali Brown", "a course with Ana"
_MAKER = re.compile(r"(?<!\w)(?:by|with)\s+$", re.IGNORECASE)
#: the end of a sentence on the same line (a word of two letters or more, or a number; no "Dr.")
_SENTENCE = re.compile(r"(?<!\w)(?!(?:" + "|".join(ABBREVIATIONS) + r")\.)\w{2,}[.!?][ \t]+$", re.IGNORECASE)


def holds_title(key: str) -> bool:
    """Whether a property's name says it holds a work's title (module doc)."""
    words = set(key_words(key)) if isinstance(key, str) else set()
    return bool(words & TITLE_KEYS) and not words & NOT_TITLE_KEYS


def titles(source: str) -> list[str]:
    """The titles of ``source`` (module doc), in order of first appearance; a quoted phrase is one whatever
    its case ("Kaze no Uta"), and a title keeps an article before it ("The Silent Fjord")."""
    found = [*proper_names(source, TITLE_WORDS), *(next(g for g in m.groups() if g) for m in _QUOTED.finditer(source))]
    found += [source[a - len(art.group(0)):b] for t in found for a, b in word_places(t, source)
              if (art := _ARTICLE.search(source[max(0, a - 4):a]))]
    found = sorted(dict.fromkeys(t.strip() for t in found if t.strip()), key=source.find)
    places = {t: word_places(t, source) for t in found}

    def inside(t: str, a: int, b: int) -> bool:  # a place of t within a longer title's
        return any(len(m) > len(t) and x <= a and b <= y for m in found for x, y in places[m])

    whole = [t for t in found if any(not inside(t, a, b) for a, b in places[t])]
    named = [t for t in whole if not (addressed(t, source) or introduced(t, source) or only_titled(t, source)
                                      or _only_after(_MAKER, t, source))]
    return [t for t in named if not _only_after(_SENTENCE, t, source)] or named


def _only_after(cue: re.Pattern, title: str, source: str) -> bool:
    """Whether ``source`` writes ``title`` only right after ``cue`` (searched in the 24 characters before it)."""
    places = word_places(title, source)
    return bool(places) and all(cue.search(source[max(0, a - 24):a]) for a, _ in places)


def titles_for(key: str, source: str) -> list[str]:
    """The titles of ``source`` that property ``key`` may hold, or ``[]`` when ``key`` holds no title."""
    return titles(source) if holds_title(key) else []
