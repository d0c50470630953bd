"""Proper names: a free-text field whose name says it holds a proper name is a capitalised name of the request.

A grounded free-text value is any part of the request made of whole words (``constraints.quote_automaton``),
and a small model fills a name field with the wrong part of it: ``"shelterCity": "home at our Paris"``,
``"model": "grey"``, ``"home": "the final"``, ``"visitors": "2026"``, ``"place": "A magnitude"``,
``"organisation": "dana.ivanova@mail.example.net"``. Where the field's own name says what it holds, a person,
a place, a team, a make, an organisation (``holds_name``: ``city``, ``shelter_city``, ``homeTeam``,
``patient_name``, ``make``, ``employer``; not ``event_name``, ``file_name``, ``title``, ``model_year``, nor a
bare ``name``, which is as often a product's, unless a sibling field that only a person or a pet has says
whose it is: ``age``, ``birthday``, ``gender``; ``person_key``), its value is one of the request's **proper
names** (``proper_names``): a run of at most ``MAX_NAME_WORDS`` words of one line and one clause, each
capitalised (a letter in upper case: ``Malmö FF``, ``XC60``, ``Dr.``) or, inside the run, a particle (``de``,
``van``, ``of``, ``&``: ``Pão & Cia``, ``Head of Sales``), whose first word is no function word (``A``,
``I'm``, ``This``) nor one that opens a sentence as a greeting, request or heading (``STARTER_WORDS``:
``Meet``, ``Call``, ``Thanks``, ``BREAKING``), none of which is a bare number (``Benfica 0-4``), an address or
a path (``@``, ``/``, ``\\``), that is no date word alone (``July``, ``Aug``), no label or heading
(``Attendance:``, ``FOR SALE:``, ``NEW THIS TERM >>``), no currency code of an amount (``EUR``) and longer
than one letter (the ``M`` of ``M: ana@...``). A title's period stays (``Dr. Weber``); a person's field takes
the name with the title the request writes it with (``Dr. Weber``, not ``Weber``; a part of a name,
``surname``, takes the bare one), a doctor's field a name written with "Dr." where there is one, and another
person's field (``patient``) none. A person's or a pet's field (``patient``, ``pet_name``, ``full_name``)
takes no name the request writes only right after "in", "near" or "at" (``only_placed``: "the shelter in
Praha" is a place), unless it writes no other; a field of a name of its own (``full_name``, ``pet_name``, a
bare ``name``, not a part of one: ``introduced_for``) takes a name the request introduces ("I'm Milo", "Meet
Kira!", "this is Ana Park") where it introduces one, and a person's field (not a part of a name) no name
written only as the first or the last words of a longer one (``only_opening``; a surname, ``only_closing``:
not "Jonas" nor "García" of "Jonas García teaches it"); a team's field (``TEAM_WORDS``: ``homeTeam``,
``away``, ``visitors``) takes a name whole (``whole``: not "Malmö" of "Malmö FF 3-3 Brøndby", where a make
takes "Volvo" of "Volvo XC60"), and an organisation's (``company``) no name written only as the start of a
longer one (``only_opening``: not "Tanaka" of "Tanaka Seiki"). Where an e-mail address spells a name before
its ``@`` (``addressed``: ``jose.weber@acme.test``), a person's field takes such a name and any other name
field (``company``, ``organisation``, ``city``) none, nor a name the request introduces, unless that leaves
none ("José Weber | Head of Sales, Café Müller": no ``full_name`` "Café Müller", no ``company`` "José Weber").

``ground_schema`` makes such a field a choice of those names (``structgen.stated_spans``: the validators, the
constraint and the repeat pass read them as the stated values they are: ``"home": "Malmö FF", "away":
"Malmö FF"`` is a value written more often than the request states it, and the repeat pass redoes it). A
request with no proper name leaves the field free text. The rule reads English cues: a request that
writes names in lower case ("book it for john") leaves the field free text only when it
writes no other capitalised word; otherwise the name cannot be written (a known limit).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, NamedTuple

__all__ = ["addressed", "holds_name", "introduced_for", "person_key", "proper_names", "names_for",
           "word_places", "MAX_NAME_WORDS"]

#: the most words of a proper name
MAX_NAME_WORDS = 5

#: a key word that says a field holds a proper name (a person, a place, a team, a make, an organisation)
NAME_WORDS = frozenset("""surname city town country nationality place location region birthplace station
    headquarters venue company organisation organization employer client customer buyer seller vendor
    supplier brand make model manufacturer team home away visitors opponent club hotel airline airport
    doctor physician patient teacher instructor student applicant author sender recipient addressee
    passenger guest person contact owner driver player""".split())
#: words that, beside ``name``, make it a proper name's field (``full_name``, ``pet_name``; ``company_name``
#: through ``NAME_WORDS``); a bare ``name`` is as often a product's ("Pixel Pro camera", "candle")
NAME_QUALIFIERS = frozenset("full first last given family middle maiden nick pet".split())
#: fields only a person or a pet has (their key's words exactly): beside one, a bare ``name`` is that person's or
#: pet's own (``person_key``), as a ``full_name`` is; "age_rating" or "minimum_age" is a film's or an event's
PERSON_FIELDS = frozenset(tuple(k.split()) for k in (
    "age", "age years", "years old", "birthday", "birthdate", "birth date", "date of birth", "dob", "born",
    "birth year", "year of birth", "gender", "sex", "nationality"))
#: a key word that says the value is something else (an event's name, a file, a date, an address, a code)
NOT_NAME_WORDS = frozenset("""file filename path user username host hostname domain event product item course
    book title subject project task tag label branch package repo app display screen variable field column
    table key id code number date time year age count email mail phone url address street line handle
    login type status""".split())
#: lower-case words a proper name may hold between its capitalised words
PARTICLES = frozenset("de da do dos das di du del della der den van von la le las los y e of and & al bin zu"
                      .split())
#: titles and abbreviations whose period belongs to the name ("Dr. Weber", "St. Pauli")
ABBREVIATIONS = frozenset("dr mr mrs ms mx prof st mt ft jr sr co".split())
#: titles a person's name is written with: a name the request writes only after one is written with it
TITLES = frozenset("dr mr mrs ms mx prof".split())
#: key words of a doctor's field: it holds a name written with "Dr." where the request writes one, and a
#: person's field of another kind ("patient", "caller") holds none (no "patient": "Dr. Dubois")
DOCTOR_WORDS = frozenset("doctor physician dentist surgeon vet veterinarian gp specialist".split())
PERSON_WORDS = frozenset("""patient person contact customer client buyer seller guest passenger student
    applicant sender recipient addressee author owner driver player teacher instructor""".split())
#: key words of a team's field: a team's name is written whole ("Malmö FF", never "Malmö" of it)
TEAM_WORDS = frozenset("team home away visitors visiting opponent club hosts guests".split())
#: key words of an organisation's field: it takes no first words of a longer name ("Tanaka" of "Tanaka Seiki")
ORGANISATION_WORDS = frozenset("company organisation organization employer firm business agency".split())
#: keys of a part of a name (``surname``, ``last_name``): those take the bare name ("Weber" of "Dr. Weber")
NAME_PARTS = frozenset("surname first last given family middle maiden nick".split())
#: words capitalised because they open a sentence (greetings, requests, sign-offs, headlines): no name
#: starts with one ("Meet Kira!", "Call after 6pm", "Selling my ...", "Thanks for your help", "BREAKING")
STARTER_WORDS = frozenset("""hi hello hey dear thanks thank please pls kindly regards best cheers meet call find
    adopt selling sell buy book send get check need looking breaking good perfect sure yes ok okay extract
    parse fill turn order request note update ask tell show give let see""".split())
#: months and weekdays (and their short forms): a date, never a name on their own
CALENDAR_WORDS = frozenset("""january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday
    sunday mon tue tues wed thu thur thurs fri sat sun""".split())

_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_TOKEN = re.compile(r"[^\s=|<>\u2192]+")  # "Country=Finland", "Ana|CTO": two words
_EDGE = ".,;:!?()[]{}'\"`\u201c\u201d\u2018\u2019*"
_BREAK = ",;:!?)(]["  # punctuation at a token's edge that ends a name there (a period: ``_ends_clause``)
_OPEN = "([{\"'`\u201c\u2018"


def _title_before(titles) -> re.Pattern:
    """A title of ``titles`` (its period optional) and the space after it, right at the end of a text."""
    return re.compile(r"(?<!\w)(?:" + "|".join(titles) + r")\.?\s+$", re.IGNORECASE)


_TITLED = _title_before(TITLES)
_DOCTOR_TITLE = _title_before(["dr"])
_DOCTOR = re.compile(r"Dr\.?\s", re.IGNORECASE)
_NUMBER = re.compile(r"[\d.,:/+-]+")


def key_words(key: str) -> list[str]:
    """The words of a property name, lower case: ``shelterCity`` -> ``shelter``, ``city``;
    ``place_of_birth`` -> ``place``, ``of``, ``birth``."""
    return [w.lower() for w in _KEY_WORDS.findall(key)]


def holds_name(key: str) -> bool:
    """Whether a property's name says it holds a proper name (module doc)."""
    words = set(key_words(key)) if isinstance(key, str) else set()
    named = words & NAME_WORDS or ("name" in words and words & NAME_QUALIFIERS)
    return bool(named) and not words & NOT_NAME_WORDS


def person_key(key: Any, keys: Iterable[Any]) -> Any:
    """The key whose name rules a bare ``name`` property follows among sibling properties ``keys``: a person's
    own name's (``full_name``) beside a field only a person or a pet has (``PERSON_FIELDS``: ``age``,
    ``birthday``, ``gender``), where "in Boston" of "John Smith is 52 and lives in Boston" is a place; else
    ``key`` itself (a bare ``name`` is as often a product's)."""
    if not isinstance(key, str) or key_words(key) != ["name"]:
        return key
    person = any(isinstance(k, str) and tuple(key_words(k)) in PERSON_FIELDS for k in keys)
    return "full_name" if person else key


def _capitalised(word: str) -> bool:
    """Whether a word may be a name's: it starts with a letter or digit, holds a capital, and is no address
    or path (``@``, ``/``, ``\\``)."""
    return word[:1].isalnum() and any(c.isupper() for c in word) and not any(c in word for c in "@/\\")


def _ends_clause(token: str) -> bool:
    """Whether a name cannot go on past ``token``: it ends with breaking punctuation, or with a period that
    is not an abbreviation's."""
    tail = token.rstrip("\"'`\u201d\u2019*")
    if not tail or tail[-1] in _BREAK:
        return True
    return tail.endswith(".") and tail.rstrip(".").lower() not in ABBREVIATIONS


class _Word(NamedTuple):
    """A word of a line as a name may hold it: its span (edge punctuation off, a title's period on), its
    core text, whether a name cannot go on past it (``_ends_clause``), whether it opens a bracket or quote,
    whether it is a label (``Attendance:``, ``Country=``) and whether it ends a sentence."""
    start: int
    end: int
    core: str
    ends: bool
    opens: bool
    label: bool
    sentence: bool  # it ends a sentence (".", "!", "?", ";" after it)


def _words(line: str) -> list[_Word | None]:
    """The words of ``line``, with None for a separator that ends a name (``-``, ``|``, ``=``, ``>>``)."""
    words: list[_Word | None] = []
    end = 0
    for m in _TOKEN.finditer(line):
        gap = line[end:m.start()]
        if gap.strip(" \t"):
            if gap.strip().startswith("=") and words and words[-1] is not None:
                words[-1] = words[-1]._replace(label=True)  # "Country=Finland": Country is a label
            words.append(None)
        end = m.end()
        raw = m.group(0)
        core = raw.strip(_EDGE)
        if not core:
            words.append(None)
            continue
        a = m.start() + raw.index(core)
        b = a + len(core)
        if core.rstrip(".").lower() in ABBREVIATIONS and line[b:b + 1] == ".":
            b += 1  # "Dr." keeps its period
        ends = _ends_clause(raw)
        tail = raw.rstrip("\"'`\u201d\u2019*)")
        words.append(_Word(a, b, core, ends, raw[0] in _OPEN, raw.endswith(":"),
                           ends and tail[-1:] in ".!?;" and not tail.endswith(",")))
    return words


def _heading(words: list, i: int, j: int) -> bool:
    """Whether words ``i..j`` are (in) a label or a heading that opens its clause, not a name: a label ends
    with ``:`` or ``=`` ("Attendance: 62,596", "Receptionist: Good morning", "FOR SALE: ..."), a heading
    is a run of capitals before a separator ("BREAKING - A magnitude", "NEW THIS TERM >> ..."); a label
    right after another ("Extract the details: FOR SALE: ...") is one too."""
    def caps(k: int) -> bool:
        return 0 <= k < len(words) and words[k] is not None and words[k].core.isupper() and len(words[k].core) > 1

    start, end = i, j
    if all(caps(k) for k in range(i, j + 1)):  # the whole run of capitals the words are in
        while caps(start - 1) and not words[start - 1].ends:
            start -= 1
        while caps(end + 1) and not words[end].ends and not words[end].label:
            end += 1
    labelled = words[j].label or (end > j and words[end].label)
    if labelled and end == len(words) - 1:
        return True  # a line that ends with ":" introduces what follows ("Turn this into JSON:")
    before = words[start - 1] if start > 0 else None
    if before is not None and not (before.ends and (not labelled or before.sentence or before.label)):
        return False  # a label opens a line, a sentence or follows one ("2025, Dublin: rainy" is a name)
    return labelled or (end + 1 < len(words) and words[end + 1] is None
                        and all(caps(k) for k in range(start, end + 1)))


@functools.lru_cache(maxsize=256)
def proper_names(source: str, particles: frozenset = PARTICLES) -> tuple[str, ...]:
    """The proper names of ``source`` (module doc), in order of first appearance: each run of capitalised
    words and inner ``particles``, every sub-run that starts and ends at a capitalised word included, except
    a label or heading (``_heading``)."""
    from .constraints.quote_automaton import FUNCTION_WORDS

    out: list[str] = []
    for line in source.splitlines():
        words = _words(line)
        for i, first in enumerate(words):
            if first is None or not _capitalised(first.core) \
                    or first.core.lower().replace("\u2019", "'") in FUNCTION_WORDS | STARTER_WORDS:
                continue
            for j in range(i, min(i + MAX_NAME_WORDS, len(words))):
                w = words[j]
                if w is None or _NUMBER.fullmatch(w.core) or (j > i and w.opens):
                    break
                if _capitalised(w.core):
                    lowered = [x.core.rstrip(".").lower() for x in words[i:j + 1]]
                    if not (all(x in ABBREVIATIONS for x in lowered) or all(x in CALENDAR_WORDS for x in lowered)
                            or w.end - first.start < 2 or _heading(words, i, j)):
                        out.append(line[first.start:w.end])  # (no "Dr.", "July", "Aug", "M" of "M: ...")
                elif not (j > i and w.core.lower() in particles):
                    break
                if w.ends:
                    break
    return tuple(dict.fromkeys(out))


def names_for(key: str, source: str) -> list[str]:
    """The proper names of ``source`` that property ``key`` may hold (module doc: no currency code; a
    person's field the titled name, a doctor's the "Dr." one), or ``[]`` when ``key`` holds no name."""
    if not holds_name(key):
        return []
    codes, words = amount_codes(source), set(key_words(key))
    bare = bool(words & NAME_PARTS)
    names = [n for n in proper_names(source) if n not in codes and (bare or not only_titled(n, source))]
    doctors = [n for n in names if _DOCTOR.match(n)]
    if words & DOCTOR_WORDS and doctors:
        return doctors
    if words & TEAM_WORDS:
        names = [n for n in names if whole(n, names, source)] or names
    elif words & ORGANISATION_WORDS:
        names = [n for n in names if not only_opening(n, names, source)] or names
    if words & PERSON_WORDS or words & NAME_PARTS or "name" in words and words & NAME_QUALIFIERS:  # a person's
        names = [n for n in names if not only_placed(n, source)] or names
        if "name" in words and words & NAME_QUALIFIERS and not words & NAME_PARTS:  # one the request introduces
            names = [n for n in names if introduced(n, source)] or names
        names = [n for n in names if addressed(n, source)] or names
        if not words & NAME_PARTS:  # a person's name whole: not "Jonas" nor "García" of "Jonas García teaches"
            names = [n for n in names if not only_opening(n, names, source) and not only_closing(n, names, source)] \
                or names
    else:  # a company's, a place's, a team's: no name an address spells or the request introduces
        names = [n for n in names if not addressed(n, source) and not introduced(n, source)] or names
    if words & PERSON_WORDS:
        return [n for n in names if not _DOCTOR.match(n) and not only_titled(n, source, _DOCTOR_TITLE)]
    return names


def whole(name: str, names: list[str], source: str) -> bool:
    """Whether ``source`` writes ``name`` somewhere other than inside a longer one of ``names`` ("Malmö" of
    "Malmö FF 3-3 Brøndby" is only a part of a name)."""
    longer = [word_places(n, source) for n in names if len(n) > len(name) and name in n]
    return any(not any(a <= x and y <= b for spans in longer for a, b in spans)
               for x, y in word_places(name, source))


def only_opening(name: str, names: list[str], source: str) -> bool:
    """Whether ``source`` writes ``name`` only as the first words of a longer one of ``names`` ("Tanaka" of
    "Tanaka Seiki"; not "Globex" of "Firm Globex", where a label may stand before an organisation)."""
    longer = [p for n in names if len(n) > len(name) and n.startswith(name + " ") for p in word_places(n, source)]
    places = word_places(name, source)
    return bool(places) and all(any(x == a and y > b for x, y in longer) for a, b in places)


def only_closing(name: str, names: list[str], source: str) -> bool:
    """Whether ``source`` writes the one word ``name`` only as the last of a name of two of ``names`` that
    reads as one person's (no digit, no role word first): a surname, "García" of "Jonas García", but not
    "Sharma" of "Student Sharma". A longer run is left alone: "Buenos Aires Hugo Ivanova" may end with a
    person's whole name."""
    def one_person(n: str) -> bool:
        return not any(c.isdigit() for c in n) and not set(key_words(n.split()[0])) & (PERSON_WORDS | NAME_WORDS)

    if len(name.split()) != 1:
        return False
    longer = [(x, y) for n in names if len(n.split()) == 2 and n.endswith(" " + name) and one_person(n)
              for x, y in word_places(n, source) if "\t" not in source[x:y]]
    places = word_places(name, source)
    return bool(places) and all(any(y == b and x < a for x, y in longer) for a, b in places)


def word_places(text: str, source: str) -> list[tuple[int, int]]:
    """(start, end) of each place ``source`` writes ``text`` as whole words."""
    return [m.span() for m in re.finditer(rf"(?<!\w){re.escape(text)}(?!\w)", source)]


def _letters(text: str) -> list[str]:
    """The runs of letters of ``text``, lower case and with their accents off ("José Müller": jose, muller)."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", text.lower().translate(_FOLD))
    return re.findall(r"[a-z]+", "".join(c for c in plain if not unicodedata.combining(c)))


_FOLD = str.maketrans({"ı": "i", "ø": "o", "æ": "ae", "ß": "ss", "ł": "l", "đ": "d", "œ": "oe", "þ": "th"})


def addressed(name: str, source: str) -> bool:
    """Whether an e-mail address of ``source`` spells ``name`` before its ``@``: a word of it, its first word
    or that word's initial among them (``jose.weber@`` and ``j.weber@`` spell "José Weber" and "Weber";
    ``siobhan.muller@`` no "Café Müller"; a title not counted): a person's name."""
    from .grounding import emails_in

    words = [w for w in _letters(name) if w not in TITLES]
    for address in emails_in(source):
        spelt = set(_letters(address.split("@")[0]))
        if words and any(len(w) > 1 and w in spelt for w in words) and (words[0] in spelt or words[0][0] in spelt):
            return True
    return False


_PLACE_CUE = re.compile(r"(?<!\w)(?:in|near|at)\s+(?:(?:our|the)\s+)?$", re.IGNORECASE)


def only_placed(name: str, source: str) -> bool:
    """Whether ``source`` writes ``name`` only right after "in", "near" or "at" (past "our", "the"): a place
    ("the shelter in Praha", "at our Tokyo shelter"), never a person's or a pet's name."""
    at = [a for a, _ in word_places(name, source)]
    return bool(at) and all(_PLACE_CUE.search(source[max(0, a - 12):a]) for a in at)


_INTRO_CUE = re.compile(r"(?<!\w)(?:I['\u2019]m|I\s+am|meet|this\s+is|named|called)\s+$", re.IGNORECASE)


def introduced(name: str, source: str) -> bool:
    """Whether ``source`` introduces ``name`` somewhere: right after "I'm", "I am", "meet", "this is",
    "named" or "called" (not "Family name is Martín": a label's value)."""
    return any(_INTRO_CUE.search(source[max(0, a - 16):a]) for a, _ in word_places(name, source))


def introduced_for(key: str, source: str) -> list[str]:
    """The proper names ``source`` introduces (``introduced``), for a bare ``name`` field (otherwise free
    text: a product's name too), or ``[]``."""
    if not isinstance(key, str) or key_words(key) != ["name"]:
        return []
    return [n for n in proper_names(source) if introduced(n, source)]


def only_titled(name: str, source: str, title: re.Pattern | None = None) -> bool:
    """Whether ``source`` writes ``name`` only right after a title ("Weber" of "see Dr. Weber"): the field
    of a person then holds the titled name, ``Dr. Weber`` (a part of a name, ``surname``, the bare one)."""
    at = [a for a, _ in word_places(name, source)]
    return bool(at) and all((title or _TITLED).search(source[max(0, a - 8):a]) for a in at)


def amount_codes(source: str) -> set[str]:
    """The currency codes ``source`` states or its request notes give an amount (``EUR`` of "asking EUR
    3,843" and of "€28,220"): a currency, no name."""
    from .grounding import noted
    from .request_notes import CURRENCY_NAMES, note_currency

    codes = {note_currency(n) for n in noted(source)} - {None}
    return codes | {c for c in CURRENCY_NAMES if re.search(rf"(?<!\w){c}(?!\w)", source)}
